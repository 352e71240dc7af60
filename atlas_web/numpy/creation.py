"""Making arrays: from host data (``array``, ``asarray``) and filled (``zeros``, ``ones``, ``full``,
``arange``, ``linspace``, ``eye``). Values are computed on the host and copied to the device once;
``zeros`` copies nothing (a new buffer is zero-filled). Python floats default to float32
and Python ints to int32 (as in JAX), NumPy arrays keep their dtype. Standard library only.
"""

from __future__ import annotations

import math
from typing import Any

from ..backend import Backend
from ..errors import ArrayError
from .array import Array
from .dtypes import DEFAULT_FLOAT, DEFAULT_INT, as_dtype
from .host import element_bytes, from_host, from_host_values
from .runtime import as_device
from .shapes import as_shape, size_of

__all__ = ["array", "asarray", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange",
           "linspace", "eye"]


def array(data: Any, dtype: Any = None, device: Backend | str | None = None) -> Array:
    """A new array holding ``data`` (nested lists or tuples of numbers, a Python number, an
    ``array.array``, a memoryview or other buffer, a NumPy array, an Array), stored as ``dtype`` (default:
    the data's own element type) on ``device`` (default: ``default_device()``). One copy to the device
    (an Array on another device or of another dtype: through the host). Raises ArrayError for data that
    is not numbers, is ragged, or does not fit ``dtype``; AllocationFailed."""
    if isinstance(data, Array):
        if (dtype is None or as_dtype(dtype) == (data.dtype, data.is_bool)) and (
                device is None or as_device(device) is data.device):
            from .manipulation import copy
            return copy(data)
        data = data.to_host() if dtype is None else data.astype(dtype).to_host()
    raw, shape, ty, is_bool = from_host(data, dtype, "array")
    return _upload(raw, shape, ty, is_bool, device)


def asarray(data: Any, dtype: Any = None, device: Backend | str | None = None) -> Array:
    """``data`` itself when it is an Array of ``dtype`` on ``device`` (or those are None), else ``array(...)``."""
    if isinstance(data, Array) and (dtype is None or as_dtype(dtype) == (data.dtype, data.is_bool)) and (
            device is None or as_device(device) is data.device):
        return data
    return array(data, dtype, device)


def _upload(raw: Any, shape: tuple[int, ...], ty, is_bool: bool, device: Any) -> Array:
    out = Array.empty(as_device(device), shape, ty, is_bool)
    if len(raw):
        out.device.copy_to_buffer(out.buffer.handle, raw)
    return out


def zeros(shape: Any, dtype: Any = DEFAULT_FLOAT, device: Backend | str | None = None) -> Array:
    """A new array of zeros (float32 by default). Raises ArrayError for a bad shape or dtype."""
    ty, is_bool = as_dtype(dtype, "zeros")
    return Array.empty(as_device(device), as_shape(shape, "zeros"), ty, is_bool, zeroed=True)


def full(shape: Any, fill_value: Any, dtype: Any = None, device: Backend | str | None = None) -> Array:
    """A new array of ``fill_value`` (dtype default: float32 for a float, int32 for an int, bool for a
    bool). Raises ArrayError when the value does not fit the dtype."""
    dims = as_shape(shape, "full")
    if dtype is None:
        dtype = bool if isinstance(fill_value, bool) else DEFAULT_INT if isinstance(fill_value, int) else DEFAULT_FLOAT
    ty, is_bool = as_dtype(dtype, "full")
    value = (1 if fill_value else 0) if is_bool else float(fill_value) if ty.is_float() else fill_value
    return _upload(element_bytes(value, ty) * size_of(dims), dims, ty, is_bool, device)


def ones(shape: Any, dtype: Any = DEFAULT_FLOAT, device: Backend | str | None = None) -> Array:
    """A new array of ones (float32 by default)."""
    return full(shape, 1, dtype, device)


def zeros_like(a: Array, dtype: Any = None) -> Array:
    """Zeros of ``a``'s shape, dtype (or ``dtype``) and device."""
    return zeros(a.shape, (a.dtype if not a.is_bool else bool) if dtype is None else dtype, a.device)


def ones_like(a: Array, dtype: Any = None) -> Array:
    """Ones of ``a``'s shape, dtype (or ``dtype``) and device."""
    return full_like(a, 1, dtype)


def full_like(a: Array, fill_value: Any, dtype: Any = None) -> Array:
    """``fill_value`` in ``a``'s shape, dtype (or ``dtype``) and device."""
    return full(a.shape, fill_value, (a.dtype if not a.is_bool else bool) if dtype is None else dtype, a.device)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None,
           device: Backend | str | None = None) -> Array:
    """``start, start + step, ...`` below ``stop`` (as NumPy: ``arange(n)`` counts from 0). dtype default:
    int32 for int arguments, else float32. Raises ArrayError for a zero step."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ArrayError("arange: step must not be zero")
    count = max(0, math.ceil((stop - start) / step))
    if dtype is None:
        dtype = DEFAULT_INT if all(isinstance(v, int) for v in (start, stop, step)) else DEFAULT_FLOAT
    values = [start + i * step for i in range(count)]
    raw, shape, ty, is_bool = from_host_values(values, (count,), as_dtype(dtype, "arange"), "arange")
    return _upload(raw, shape, ty, is_bool, device)


def linspace(start: float, stop: float, num: int = 50, endpoint: bool = True, dtype: Any = DEFAULT_FLOAT,
             device: Backend | str | None = None) -> Array:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included when ``endpoint``), computed in
    float64 as NumPy does, then stored as ``dtype``. Raises ArrayError for a negative ``num``."""
    if not isinstance(num, int) or num < 0:
        raise ArrayError(f"linspace: num must be a non-negative int, got {num!r}")
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    values = [start + i * step for i in range(num)]
    if endpoint and num > 1:
        values[-1] = stop
    raw, shape, ty, is_bool = from_host_values(values, (num,), as_dtype(dtype, "linspace"), "linspace")
    return _upload(raw, shape, ty, is_bool, device)


def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = DEFAULT_FLOAT,
        device: Backend | str | None = None) -> Array:
    """The ``n`` x ``m`` (default square) matrix with ones on diagonal ``k``."""
    rows, cols = as_shape((n, n if m is None else m), "eye")
    values = [1 if j - i == k else 0 for i in range(rows) for j in range(cols)]
    raw, shape, ty, is_bool = from_host_values(values, (rows, cols), as_dtype(dtype, "eye"), "eye")
    return _upload(raw, shape, ty, is_bool, device)
