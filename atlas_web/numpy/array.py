"""``Array``: a contiguous row-major n-dimensional array in one backend's memory.

An array has a ``shape``, a ``dtype`` (an atlas ``Type``; boolean arrays store U8 0/1 and say
``is_bool``) and a ``device`` (the backend holding it). Operations run on the device as generated
programs and give new arrays; ``reshape`` shares the buffer, everything else copies. Results come back
with ``to_host()`` (NumPy where installed, else ``array.array``), ``tolist()``, ``item()`` or
``await to_host_async()``. Standard library only.
"""

from __future__ import annotations

from typing import Any

from ..backend import Backend
from ..errors import ArrayError
from ..isa.types import Type
from .dtypes import dtype_name
from .host import nested, numpy_module
from .runtime import TRACES, DeviceBuffer
from .shapes import size_of

__all__ = ["Array"]


class Array:
    """An n-dimensional array on a device (make one with ``atlas_web.numpy.array`` and friends).

    Arithmetic, comparisons, ``@``, indexing and the reductions are methods and operators as in NumPy;
    they raise ArrayError naming the operation and the shapes/dtypes that do not fit, and
    UnsupportedOperation where the device has no instruction for the dtype (float64 on WebGPU).
    """

    __slots__ = ("buffer", "shape", "dtype", "is_bool", "__weakref__")
    __array_priority__ = 100  # NumPy defers to our operators: ndarray + Array gives an Array

    def __init__(self, buffer: DeviceBuffer, shape: tuple[int, ...], dtype: Type, is_bool: bool = False) -> None:
        self.buffer = buffer
        self.shape = shape
        self.dtype = dtype
        self.is_bool = is_bool

    @classmethod
    def empty(cls, device: Backend, shape: tuple[int, ...], dtype: Type, is_bool: bool = False,
              zeroed: bool = False) -> "Array":
        """A new array whose values are unspecified (its buffer may be recycled) unless ``zeroed``.
        Raises AllocationFailed."""
        return cls(DeviceBuffer(device, size_of(shape) * dtype.size_bytes(), zeroed), shape, dtype, is_bool)

    # ---- properties ----------------------------------------------------------------------------
    @property
    def device(self) -> Backend:
        """The backend holding the array."""
        return self.buffer.device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return size_of(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.size_bytes()

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def dtype_name(self) -> str:
        """NumPy's name of the element type ("float32", "bool", ...)."""
        return dtype_name(self.dtype, self.is_bool)

    @property
    def T(self) -> "Array":
        return self.transpose()

    def describe(self) -> str:
        """``float32[2, 3]``: the dtype and shape, as error messages name arrays."""
        return f"{self.dtype_name}[{', '.join(map(str, self.shape))}]"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        """The sub-arrays along the first axis (as NumPy iterates), each a copy."""
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"Array({self.tolist()!r}, dtype={self.dtype_name}, device={self.device.name})"

    # ---- results on the host ---------------------------------------------------------------------
    def _flat_host(self) -> Any:
        if TRACES:
            TRACES[-1].check_read(self)
        return self.device.copy_typed_from(self.buffer.handle, self.dtype, self.size)

    def _shaped(self, flat: Any) -> Any:
        np = numpy_module()
        if np is not None and isinstance(flat, np.ndarray):
            flat = flat.reshape(self.shape)
            return flat.astype(bool) if self.is_bool else flat
        return flat

    def to_host(self) -> Any:
        """A copy on the host: a NumPy array of this shape and dtype where NumPy is installed, else a flat
        ``array.array`` in row-major order (0/1 bytes for a boolean array). One copy."""
        return self._shaped(self._flat_host())

    async def to_host_async(self) -> Any:
        """As ``to_host``, awaiting the device without blocking the event loop (WebGPU in the browser)."""
        if TRACES:
            TRACES[-1].check_read(self)
        flat = await self.device.copy_typed_from_async(self.buffer.handle, self.dtype, self.size)
        return self._shaped(flat)

    def tolist(self) -> Any:
        """The values as nested Python lists (a Python number for a 0-d array)."""
        flat = self._flat_host().tolist()
        if self.is_bool:
            flat = [bool(v) for v in flat]
        return nested(flat, self.shape)

    def item(self) -> Any:
        """The one value of a size-1 array as a Python number; raises ArrayError for another size."""
        if self.size != 1:
            raise ArrayError(f"item: the array {self.describe()} has {self.size} elements, not 1")
        value = self._flat_host().tolist()[0]
        return bool(value) if self.is_bool else value

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        host = self.to_host()
        return host if dtype is None else host.astype(dtype)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        return bool(self.item())

    def __index__(self) -> int:
        if self.dtype.is_float() or self.is_bool:
            raise TypeError(f"only integer arrays can be used as an index, not {self.describe()}")
        return int(self.item())

    # ---- operators (atlas_web/numpy/elementwise.py) --------------------------------------------------
    def _ew(self, name: str, *args: Any) -> "Array":
        return _elementwise.apply(name, *args)

    def __add__(self, other): return self._ew("add", self, other)
    def __radd__(self, other): return self._ew("add", other, self)
    def __sub__(self, other): return self._ew("subtract", self, other)
    def __rsub__(self, other): return self._ew("subtract", other, self)
    def __mul__(self, other): return self._ew("multiply", self, other)
    def __rmul__(self, other): return self._ew("multiply", other, self)
    def __truediv__(self, other): return self._ew("divide", self, other)
    def __rtruediv__(self, other): return self._ew("divide", other, self)
    def __pow__(self, other): return self._ew("power", self, other)
    def __rpow__(self, other): return self._ew("power", other, self)
    def __neg__(self): return self._ew("negative", self)
    def __pos__(self): return self
    def __abs__(self): return self._ew("abs", self)
    def __eq__(self, other): return self._ew("equal", self, other)  # type: ignore[override]
    def __ne__(self, other): return self._ew("not_equal", self, other)  # type: ignore[override]
    def __lt__(self, other): return self._ew("less", self, other)
    def __le__(self, other): return self._ew("less_equal", self, other)
    def __gt__(self, other): return self._ew("greater", self, other)
    def __ge__(self, other): return self._ew("greater_equal", self, other)
    __hash__ = None  # type: ignore[assignment]  # == is elementwise, as in NumPy

    def __matmul__(self, other):
        from .linalg import matmul
        return matmul(self, other)

    def __rmatmul__(self, other):
        from .linalg import matmul
        return matmul(other, self)

    def astype(self, dtype: Any) -> "Array":
        """A copy converted to ``dtype`` (values, as NumPy's astype; to bool: ``!= 0``)."""
        from .manipulation import astype
        return astype(self, dtype)

    # ---- shape (atlas_web/numpy/manipulation.py) ---------------------------------------------------
    def reshape(self, *shape: Any) -> "Array":
        from .manipulation import reshape
        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes: Any) -> "Array":
        from .manipulation import transpose
        return transpose(self, axes[0] if len(axes) == 1 else (axes or None))

    def swapaxes(self, axis1: int, axis2: int) -> "Array":
        from .manipulation import swapaxes
        return swapaxes(self, axis1, axis2)

    def ravel(self) -> "Array":
        return self.reshape(-1)

    flatten = ravel

    def __getitem__(self, key: Any) -> "Array":
        from .indexing import getitem
        return getitem(self, key)

    # ---- reductions (atlas_web/numpy/reductions.py) ------------------------------------------------
    # ``out`` is NumPy's parameter (np.sum(a) passes out=None to a.sum: Dask's reductions of atlas chunks do);
    # only None is taken: an atlas array is a new array, never written into another (ArrayError otherwise)
    def sum(self, axis=None, keepdims=False, dtype=None, out=None):
        from .reductions import sum as f
        return f(self, axis, keepdims=keepdims, dtype=dtype) if _no_out("sum", out) else None

    def prod(self, axis=None, keepdims=False, dtype=None, out=None):
        from .reductions import prod as f
        return f(self, axis, keepdims=keepdims, dtype=dtype) if _no_out("prod", out) else None

    def max(self, axis=None, keepdims=False, out=None):
        from .reductions import max as f
        return f(self, axis, keepdims=keepdims) if _no_out("max", out) else None

    def min(self, axis=None, keepdims=False, out=None):
        from .reductions import min as f
        return f(self, axis, keepdims=keepdims) if _no_out("min", out) else None

    def mean(self, axis=None, keepdims=False, dtype=None, out=None):
        from .reductions import mean as f
        return f(self, axis, keepdims=keepdims, dtype=dtype) if _no_out("mean", out) else None

    def var(self, axis=None, keepdims=False, ddof=0):
        from .reductions import var as f
        return f(self, axis, keepdims=keepdims, ddof=ddof)

    def argmax(self, axis=None, keepdims=False):
        from .reductions import argmax as f
        return f(self, axis, keepdims=keepdims)

    def argmin(self, axis=None, keepdims=False):
        from .reductions import argmin as f
        return f(self, axis, keepdims=keepdims)


def _no_out(method: str, out: Any) -> bool:
    """True for ``out=None``; raises ArrayError naming ``method`` for anything else."""
    if out is not None:
        raise ArrayError(f"Array.{method}: out= is not supported (atlas arrays are never written into); got "
                         f"{type(out).__name__}")
    return True


# the operators' module imports this one: bound on first use of atlas_web.numpy (its __init__ imports both)
from . import elementwise as _elementwise  # noqa: E402
