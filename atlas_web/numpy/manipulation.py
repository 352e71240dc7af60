"""Changing shapes and types: ``reshape`` (shares the buffer), and the copies ``transpose``, ``swapaxes``,
``broadcast_to``, ``concatenate``, ``stack``, ``astype``. Every copy is one per-lane program (the "copy"
row of ops_table.OPS) reading its source at strides and writing its destination at strides, so the
program depends on shapes and types only. Standard library only.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ..errors import ArrayError
from .array import Array
from .dtypes import as_dtype, promote
from .elementwise import apply, common_device
from .nodes import MapNode, Operand
from .runtime import TRACES, launch
from .shapes import broadcast_shapes, broadcast_strides, coalesce, normalize_axes, row_major, size_of

__all__ = ["reshape", "transpose", "swapaxes", "broadcast_to", "concatenate", "stack", "astype", "copy",
           "expand_dims", "squeeze", "strided_copy"]


def strided_copy(what: str, src: Array, shape: tuple[int, ...], strides: Sequence[int], base: int,
                 dst: Array, dst_strides: Sequence[int], dst_base: int) -> None:
    """Copy the elements of ``src`` seen as ``shape`` at element ``strides`` from element ``base`` into
    ``dst`` at ``dst_strides`` from ``dst_base``, converting to ``dst``'s dtype. Launches one program
    (none for an empty shape); bases are preset registers, so views at other offsets share it."""
    if size_of(shape) == 0:
        return
    dims, (src_strides, out_strides) = coalesce(tuple(shape), [tuple(strides), tuple(dst_strides)])
    node = MapNode("copy", dims, (Operand(src.dtype, src_strides, based=base != 0),), dst.dtype, dst.dtype,
                   out_strides, out_based=dst_base != 0)
    launch(what, node, dst.device, [(src.buffer, base)], (dst.buffer, dst_base))


def copy(a: Array) -> Array:
    """A new array with ``a``'s values."""
    out = Array.empty(a.device, a.shape, a.dtype, a.is_bool)
    strided_copy("copy", a, a.shape, row_major(a.shape), 0, out, row_major(a.shape), 0)
    return out


def astype(a: Array, dtype: Any) -> Array:
    """``a`` converted to ``dtype`` (as NumPy's astype: floats to ints truncate; to bool is ``a != 0``)."""
    ty, is_bool = as_dtype(dtype, f"astype({a.describe()})")
    if is_bool:
        return a if a.is_bool else apply("not_equal", a, 0)
    out = Array.empty(a.device, a.shape, ty)
    if TRACES:
        TRACES[-1].note(("astype", a, out))
    strided_copy(f"astype({a.describe()}, {ty.name.lower()})", a, a.shape, row_major(a.shape), 0,
                 out, row_major(a.shape), 0)
    return out


def reshape(a: Array, shape: Any) -> Array:
    """``a`` with a new shape of the same size (one dimension may be -1); shares ``a``'s buffer.
    Raises ArrayError when the sizes differ."""
    try:
        dims = [operator.index(shape)] if not isinstance(shape, Sequence) else [operator.index(d) for d in shape]
    except TypeError:
        raise ArrayError(f"reshape: shape must be ints, got {shape!r}") from None
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise ArrayError(f"reshape({a.describe()}, {tuple(dims)}): at most one -1 and no other negative size")
    if -1 in dims:
        known = size_of([d for d in dims if d != -1])
        if known == 0 or a.size % known:
            raise ArrayError(f"reshape: cannot reshape {a.describe()} into {tuple(dims)}")
        dims[dims.index(-1)] = a.size // known
    if size_of(dims) != a.size:
        raise ArrayError(f"reshape: cannot reshape {a.describe()} ({a.size} elements) into {tuple(dims)}")
    return Array(a.buffer, tuple(dims), a.dtype, a.is_bool)


def transpose(a: Array, axes: Any = None) -> Array:
    """``a`` with its axes permuted (reversed by default), as a new contiguous array. Raises ArrayError
    for ``axes`` that are not a permutation of ``a``'s axes."""
    if axes is None:
        order = tuple(reversed(range(a.ndim)))
    else:
        order = tuple(axes) if isinstance(axes, Sequence) else (axes,)
        if len(order) != a.ndim or normalize_axes(order, a.ndim, "transpose") != tuple(range(a.ndim)):
            raise ArrayError(f"transpose: axes {order} are not a permutation of the axes of {a.describe()}")
        order = tuple(o % a.ndim for o in order)
    shape = tuple(a.shape[o] for o in order)
    own = row_major(a.shape)
    out = Array.empty(a.device, shape, a.dtype, a.is_bool)
    strided_copy(f"transpose({a.describe()}, {order})", a, shape, [own[o] for o in order], 0,
                 out, row_major(shape), 0)
    return out


def swapaxes(a: Array, axis1: int, axis2: int) -> Array:
    """``a`` with two axes exchanged (a copy)."""
    order = list(range(a.ndim))
    i, j = (normalize_axes(x, a.ndim, "swapaxes")[0] for x in (axis1, axis2))
    order[i], order[j] = order[j], order[i]
    return transpose(a, order)


def broadcast_to(a: Array, shape: Any) -> Array:
    """``a`` repeated to ``shape`` by NumPy's broadcasting rules (a copy). Raises ArrayError when it does
    not broadcast to exactly ``shape``."""
    shape = tuple(shape)
    what = f"broadcast_to({a.describe()}, {shape})"
    if broadcast_shapes(what, a.shape, shape) != shape:
        raise ArrayError(f"{what}: the array does not broadcast to that shape")
    out = Array.empty(a.device, shape, a.dtype, a.is_bool)
    strided_copy(what, a, shape, broadcast_strides(a.shape, shape), 0, out, row_major(shape), 0)
    return out


def expand_dims(a: Array, axis: int) -> Array:
    """``a`` with a new axis of size 1 at ``axis`` (shares the buffer)."""
    ndim = a.ndim + 1
    where = normalize_axes(axis, ndim, "expand_dims")[0]
    return reshape(a, a.shape[:where] + (1,) + a.shape[where:])


def squeeze(a: Array, axis: Any = None) -> Array:
    """``a`` without axes of size 1 (those of ``axis``, or all); shares the buffer."""
    axes = [i for i, d in enumerate(a.shape) if d == 1] if axis is None else normalize_axes(axis, a.ndim, "squeeze")
    if any(a.shape[i] != 1 for i in axes):
        raise ArrayError(f"squeeze: axis {axis} of {a.describe()} is not of size 1")
    return reshape(a, tuple(d for i, d in enumerate(a.shape) if i not in axes))


def concatenate(arrays: Sequence[Array], axis: int | None = 0) -> Array:
    """The arrays joined along ``axis`` (None: flattened first), in their promoted dtype. Raises ArrayError
    for no arrays, different numbers of dimensions or other sizes off ``axis``."""
    arrays = list(arrays)
    if not arrays or not all(isinstance(a, Array) for a in arrays):
        raise ArrayError("concatenate needs a non-empty sequence of Arrays")
    if axis is None:
        arrays, axis = [reshape(a, -1) for a in arrays], 0
    what = f"concatenate({', '.join(a.describe() for a in arrays)}, axis={axis})"
    device = common_device(what, arrays)
    first = arrays[0]
    if any(a.ndim != first.ndim for a in arrays) or first.ndim == 0:
        raise ArrayError(f"{what}: the arrays must have the same number (at least 1) of dimensions")
    axis = normalize_axes(axis, first.ndim, what)[0]
    if any(a.shape[:axis] + a.shape[axis + 1:] != first.shape[:axis] + first.shape[axis + 1:] for a in arrays):
        raise ArrayError(f"{what}: the sizes off axis {axis} differ")
    dtype = (first.dtype, first.is_bool)
    for a in arrays[1:]:
        dtype = promote(dtype, (a.dtype, a.is_bool))
    shape = first.shape[:axis] + (sum(a.shape[axis] for a in arrays),) + first.shape[axis + 1:]
    out = Array.empty(device, shape, dtype[0], dtype[1])
    out_strides = row_major(shape)
    start = 0
    for a in arrays:
        strided_copy(what, a, a.shape, row_major(a.shape), 0, out, out_strides, start * out_strides[axis])
        start += a.shape[axis]
    return out


def stack(arrays: Sequence[Array], axis: int = 0) -> Array:
    """The arrays (all of one shape) joined along a new axis ``axis``. Raises ArrayError for different
    shapes."""
    arrays = list(arrays)
    if not arrays or not all(isinstance(a, Array) for a in arrays):
        raise ArrayError("stack needs a non-empty sequence of Arrays")
    if any(a.shape != arrays[0].shape for a in arrays):
        raise ArrayError(f"stack: the arrays have different shapes ({', '.join(a.describe() for a in arrays)})")
    where = normalize_axes(axis, arrays[0].ndim + 1, "stack")[0]
    return concatenate([expand_dims(a, where) for a in arrays], where)
