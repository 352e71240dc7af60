"""Host data in and out of arrays: lists, Python scalars, ``array.array``, memoryviews and NumPy arrays to
``(bytes, shape, dtype)``, and flat results back to nested lists. A NumPy array or ``array.array`` keeps
its own element type (never reinterpreted: a float64 array stays float64 unless ``dtype`` asks for a
conversion, which converts values, not bytes). Standard library only; NumPy is used where it is given.
"""

from __future__ import annotations

import array
import struct
import sys
from typing import Any

from ..backend import typed_bytes, typed_format
from ..errors import ArrayError, InvalidBuffer
from ..isa.types import Type
from .dtypes import BOOL, DEFAULT_FLOAT, DEFAULT_INT, as_dtype

__all__ = ["from_host", "nested", "numpy_module", "element_bytes"]

#: struct / array.array format character -> Type (sizes as on every supported host)
_FORMATS = {"f": Type.F32, "d": Type.F64, "e": Type.F16, "b": Type.I8, "B": Type.U8, "h": Type.I16,
            "H": Type.U16, "i": Type.I32, "I": Type.U32, "q": Type.I64, "Q": Type.U64,
            "l": Type.I64 if struct.calcsize("l") == 8 else Type.I32,
            "L": Type.U64 if struct.calcsize("L") == 8 else Type.U32}


def numpy_module() -> Any:
    """NumPy when it is imported or installed, else None (Pyodide offline has none)."""
    np = sys.modules.get("numpy")
    if np is not None:
        return np
    try:
        import numpy
        return numpy
    except ImportError:
        return None


def element_bytes(value: object, ty: Type) -> bytes:
    """The little-endian bytes of one element ``value`` stored as ``ty``; raises ArrayError when it does
    not fit."""
    code = typed_format(ty)[0]
    try:
        return struct.pack("<" + code, value)
    except (struct.error, OverflowError, TypeError) as exc:
        raise ArrayError(f"{value!r} cannot be stored as {ty.name.lower()}: {exc}") from None


def _shape_of(data: Any, what: str) -> tuple[tuple[int, ...], list]:
    """The shape of nested lists/tuples and their leaves in row-major order; raises ArrayError for ragged
    data."""
    if not isinstance(data, (list, tuple)):
        return (), [data]
    if not data:
        return (0,), []
    parts = [_shape_of(item, what) for item in data]
    inner = parts[0][0]
    if any(shape != inner for shape, _ in parts):
        raise ArrayError(f"{what}: the nested sequences are ragged (shapes {sorted({s for s, _ in parts})})")
    return (len(data), *inner), [leaf for _, leaves in parts for leaf in leaves]


def _python_dtype(leaves: list, what: str) -> tuple[Type, bool]:
    if all(isinstance(v, bool) for v in leaves) and leaves:
        return BOOL, True
    if all(isinstance(v, int) for v in leaves):
        low, high = Type.I32.int_range()
        return (DEFAULT_INT if all(low <= v <= high for v in leaves) else Type.I64), False
    if all(isinstance(v, (int, float)) for v in leaves):
        return DEFAULT_FLOAT, False
    bad = next(v for v in leaves if not isinstance(v, (int, float)))
    raise ArrayError(f"{what}: {bad!r} is not a number (bool, int or float)")


def from_host(data: Any, dtype: object, what: str) -> tuple[Any, tuple[int, ...], Type, bool]:
    """``(bytes-like, shape, Type, is_bool)`` of host ``data`` stored as ``dtype`` (None: its own type, or
    for Python numbers bool/int32/float32, int64 for ints beyond int32). One conversion at most.
    Raises ArrayError for data that is not numbers or does not fit ``dtype``."""
    want = None if dtype is None else as_dtype(dtype, what)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(data, (np.ndarray, np.generic)):
        data = np.asarray(data)
        own = as_dtype(data.dtype, what)
        ty, is_bool = want or own
        if is_bool:
            data = data != 0
        try:
            raw = typed_bytes(data.astype(np.uint8 if is_bool else typed_format(ty)[1], copy=False), None, what)
        except InvalidBuffer as error:
            raise ArrayError(str(error)) from None
        return raw, tuple(data.shape), ty, is_bool
    if isinstance(data, (array.array, memoryview, bytes, bytearray)):
        view = memoryview(data)
        fmt = view.format.lstrip("<=@")
        own = (BOOL, True) if fmt == "?" else (_FORMATS.get(fmt), False)
        if own[0] is None:
            raise ArrayError(f"{what}: a buffer of format {view.format!r} is not an array element type")
        shape = tuple(view.shape or ())
        flat = view.cast("B").cast(fmt) if view.ndim != 1 else view
        if want is None or want == own:
            return view.tobytes() if not view.c_contiguous else view.cast("B"), shape, own[0], own[1]
        return from_host_values(list(flat), shape, want, what)
    shape, leaves = _shape_of(data, what)
    return from_host_values(leaves, shape, want or _python_dtype(leaves, what), what)


def from_host_values(leaves: list, shape: tuple[int, ...], dtype: tuple[Type, bool], what: str):
    """``from_host`` of flat Python numbers ``leaves`` of ``shape`` stored as ``dtype``."""
    ty, is_bool = dtype
    if is_bool:
        leaves = [1 if v else 0 for v in leaves]
    elif ty.is_float():
        leaves = [float(v) for v in leaves]
    try:
        return typed_bytes(leaves, ty, what), shape, ty, is_bool
    except InvalidBuffer as error:
        raise ArrayError(str(error)) from None


def nested(flat: list, shape: tuple[int, ...]) -> Any:
    """Row-major ``flat`` values as nested lists of ``shape`` (the one value for shape ``()``)."""
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0] if shape[0] else 0
    return [nested(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]
