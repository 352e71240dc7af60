"""Shape arithmetic of arrays: sizes, row-major strides, NumPy broadcasting, axes, and the coalescing of
dimensions that lets one generated program serve many shapes. Strides here count elements, not bytes.
Standard library only; raises ArrayError naming the operation and the shapes.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from ..errors import ArrayError

__all__ = [
    "size_of", "row_major", "broadcast_shapes", "broadcast_strides", "normalize_axes", "as_shape", "coalesce",
]


def size_of(shape: Sequence[int]) -> int:
    """The number of elements of ``shape``."""
    n = 1
    for d in shape:
        n *= d
    return n


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a contiguous row-major array of ``shape``."""
    strides = []
    step = 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def as_shape(shape: object, what: str) -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of non-negative ints; raises ArrayError."""
    try:
        dims = (operator.index(shape),) if not isinstance(shape, Sequence) else tuple(operator.index(d) for d in shape)
    except TypeError:
        raise ArrayError(f"{what}: shape must be an int or a sequence of ints, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ArrayError(f"{what}: negative dimension in shape {dims}")
    return dims


def broadcast_shapes(what: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The NumPy broadcast of ``shapes``; raises ArrayError naming ``what`` and the shapes when they do
    not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim):
        dims = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            listed = ", ".join(str(s) for s in shapes)
            raise ArrayError(f"{what}: shapes {listed} do not broadcast (axis {axis - ndim}: sizes {sorted(dims)})")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def broadcast_strides(shape: tuple[int, ...], out: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides reading a contiguous array of ``shape`` broadcast to ``out`` (0 where repeated)."""
    own = row_major(shape)
    lead = len(out) - len(shape)
    return tuple(0 if axis < lead or shape[axis - lead] == 1 else own[axis - lead] for axis in range(len(out)))


def normalize_axes(axis: object, ndim: int, what: str) -> tuple[int, ...]:
    """``axis`` (None for all, an int or a tuple of ints, negative from the end) as sorted distinct axes;
    raises ArrayError naming ``what`` for one out of range or repeated."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for item in items:
        try:
            a = operator.index(item)
        except TypeError:
            raise ArrayError(f"{what}: axis must be an int or a tuple of ints, got {axis!r}") from None
        if not -ndim <= a < ndim:
            raise ArrayError(f"{what}: axis {a} is out of range for an array of {ndim} dimensions")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ArrayError(f"{what}: repeated axis in {axis!r}")
    return tuple(sorted(out))


def coalesce(shape: tuple[int, ...],
             strides: Sequence[tuple[int, ...]]) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """``shape`` and the operands' ``strides`` with dimensions of size 1 dropped and neighbours merged
    where every operand steps through them as one (so a contiguous copy of any shape is one dimension).
    The iteration order of the elements is unchanged."""
    dims = [(n, [s[i] for s in strides]) for i, n in enumerate(shape) if n != 1]
    merged: list[tuple[int, list[int]]] = []
    for n, st in dims:
        if merged:
            pn, pst = merged[-1]
            if all(p == q * n for p, q in zip(pst, st)):
                merged[-1] = (pn * n, st)
                continue
        merged.append((n, st))
    out_shape = tuple(n for n, _ in merged)
    return out_shape, tuple(tuple(st[k] for _, st in merged) for k in range(len(strides)))
