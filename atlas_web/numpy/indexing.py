"""Basic indexing: ints, slices (any step), ``...`` and ``None``, as in NumPy, giving a new contiguous
array (a copy, where NumPy gives a view). The selection is a strided copy whose base offset is a preset
register, so ``x[i]`` for every ``i`` shares one program. Standard library only.
"""

from __future__ import annotations

import operator
from typing import Any

from ..errors import ArrayError
from .array import Array
from .manipulation import strided_copy
from .shapes import row_major

__all__ = ["getitem", "view_of"]


def view_of(shape: tuple[int, ...], key: Any, what: str) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """``(shape, element strides, base element offset)`` that ``key`` selects from a contiguous array of
    ``shape``. Raises ArrayError for an index out of range or a key that is not basic indexing."""
    items = key if isinstance(key, tuple) else (key,)
    if sum(item is Ellipsis for item in items) > 1:
        raise ArrayError(f"{what}: an index can only have a single ellipsis")
    used = sum(1 for item in items if item is not None and item is not Ellipsis)
    if used > len(shape):
        raise ArrayError(f"{what}: too many indices for an array of {len(shape)} dimensions")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (len(shape) - used) + items[at + 1:]
    else:
        items = items + (slice(None),) * (len(shape) - used)
    own = row_major(shape)
    out_shape, out_strides, base, axis = [], [], 0, 0
    for item in items:
        if item is None:
            out_shape.append(1)
            out_strides.append(0)
            continue
        size, stride = shape[axis], own[axis]
        axis += 1
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            count = len(range(start, stop, step))
            out_shape.append(count)
            out_strides.append(stride * step)
            base += start * stride if count else 0
            continue
        try:
            index = operator.index(item)
        except TypeError:
            raise ArrayError(f"{what}: only ints, slices, ... and None are supported as indices, "
                             f"got {item!r}") from None
        if not -size <= index < size:
            raise ArrayError(f"{what}: index {index} is out of range for axis {axis - 1} of size {size}")
        base += (index % size) * stride
    return tuple(out_shape), tuple(out_strides), base


def getitem(a: Array, key: Any) -> Array:
    """``a[key]`` for basic indexing (see ``view_of``), as a new array."""
    what = f"{a.describe()}[{key!r}]"
    shape, strides, base = view_of(a.shape, key, what)
    out = Array.empty(a.device, shape, a.dtype, a.is_bool)
    strided_copy(what, a, shape, strides, base, out, row_major(shape), 0)
    return out
