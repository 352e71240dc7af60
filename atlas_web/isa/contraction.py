"""TensorContract's shapes: what a contraction of ``a`` (``shape_a``) and ``b`` (``shape_b``) over the axis pairs
``contract_dims`` computes, and how it maps onto one GEMM.

The output's axes are ``a``'s free (unpaired) axes in order, then ``b``'s (NumPy's ``tensordot``). With ``m`` the
product of ``a``'s free sizes, ``n`` of ``b``'s and ``k`` of the paired sizes (1 for no pairs: an outer product),
the contraction is the m x k by k x n product of ``a`` with its axes ordered (free, paired) and ``b`` ordered
(paired, free), row-major. :func:`gemm_plan` says, for one order of the pairs, whether each operand already
lies that way (no copy), transposed (the GEMM's ``trans_a``/``trans_b``, no copy), or must be copied in that
axis order first; axes of size 1 never force a copy. The extent language (atlas_web.isa.extents) calls
:func:`size`, :func:`output_size` and the three checks of the row's ``requires``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import permutations

__all__ = ["size", "output_shape", "output_size", "axes_in_rank", "axes_once", "paired_sizes_equal",
           "OperandLayout", "GemmPlan", "gemm_plan"]

#: orders of the pairs tried by gemm_plan beyond a's and b's (every order for at most this many pairs)
_ALL_ORDERS_UP_TO = 4


def size(shape: tuple) -> int:
    """The number of elements of a tensor of ``shape`` (1 for the empty shape)."""
    return math.prod(shape)


def axes_in_rank(shape_a: tuple, shape_b: tuple, pairs: tuple) -> bool:
    """Every pair names an axis of ``a`` (below its rank) and one of ``b``."""
    return all(i < len(shape_a) and j < len(shape_b) for i, j in pairs)


def axes_once(pairs: tuple) -> bool:
    """No axis of ``a``, and none of ``b``, appears in two pairs."""
    return len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})


def paired_sizes_equal(shape_a: tuple, shape_b: tuple, pairs: tuple) -> bool:
    """The two axes of every pair (within the ranks) have the same size."""
    return all(shape_a[i] == shape_b[j] for i, j in pairs if i < len(shape_a) and j < len(shape_b))


def _free(shape: tuple, paired) -> list[int]:
    paired = set(paired)
    return [axis for axis in range(len(shape)) if axis not in paired]


def output_shape(shape_a: tuple, shape_b: tuple, pairs: tuple) -> tuple:
    """The output's shape: ``a``'s free sizes, then ``b``'s."""
    return (tuple(shape_a[x] for x in _free(shape_a, (i for i, _ in pairs)))
            + tuple(shape_b[x] for x in _free(shape_b, (j for _, j in pairs))))


def output_size(shape_a: tuple, shape_b: tuple, pairs: tuple) -> int:
    """The output's number of elements."""
    return size(output_shape(shape_a, shape_b, pairs))


def _in_order(shape: tuple, axes: list[int]) -> bool:
    """Whether listing ``shape``'s axes in the order ``axes`` keeps the row-major layout (the axes of size
    above 1 are increasing)."""
    big = [axis for axis in axes if shape[axis] != 1]
    return big == sorted(big)


@dataclass(frozen=True)
class OperandLayout:
    """How one operand reaches the GEMM: ``order``, its axes in the order the GEMM reads them ((free, paired)
    for a, (paired, free) for b); ``transposed``: it lies as the other order, stored (paired, free) for a or
    (free, paired) for b (the GEMM's trans flag, no copy); ``copied``: it lies neither way and is copied in
    ``order`` first."""

    order: tuple[int, ...]
    transposed: bool
    copied: bool


def _layout(shape: tuple, first: list[int], second: list[int]) -> OperandLayout:
    """The layout of an operand the GEMM reads as ``first + second`` (rows, columns)."""
    if _in_order(shape, first + second):
        return OperandLayout(tuple(first + second), False, False)
    if _in_order(shape, second + first):
        return OperandLayout(tuple(first + second), True, False)
    return OperandLayout(tuple(first + second), False, True)


@dataclass(frozen=True)
class GemmPlan:
    """One GEMM computing the contraction: C (m x n, the output) = A (m x k) times B (k x n)."""

    m: int
    n: int
    k: int
    a: OperandLayout
    b: OperandLayout

    def copied_elements(self) -> int:
        """The elements copied before the GEMM (0 when both operands are read in place)."""
        return self.m * self.k * self.a.copied + self.k * self.n * self.b.copied


def gemm_plan(shape_a: tuple, shape_b: tuple, pairs: tuple) -> GemmPlan:
    """The GEMM of a valid contraction (``requires`` met) that copies the fewest elements: the pairs are tried
    in a's axis order, in b's, and (for at most 4 pairs) in every order."""
    orders = [sorted(pairs), sorted(pairs, key=lambda p: p[1]), list(pairs)]
    if len(pairs) <= _ALL_ORDERS_UP_TO:
        orders += [list(p) for p in permutations(pairs)]
    free_a = _free(shape_a, (i for i, _ in pairs))
    free_b = _free(shape_b, (j for _, j in pairs))
    m = size(tuple(shape_a[x] for x in free_a))
    n = size(tuple(shape_b[x] for x in free_b))
    k = size(tuple(shape_a[i] for i, _ in pairs))
    plans = [GemmPlan(m, n, k, _layout(shape_a, free_a, [i for i, _ in order]),
                      _layout(shape_b, [j for _, j in order], free_b)) for order in orders]
    return min(plans, key=GemmPlan.copied_elements)
