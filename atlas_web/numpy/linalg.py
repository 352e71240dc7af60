"""``matmul`` (the ``@`` operator) and ``dot`` as in NumPy: 1-D operands are promoted to a row or a
column and the added axis removed; leading axes broadcast as batches. Float32/float64 products run the
GEMM instruction (BatchedGEMM for equal batch shapes; a batch of A with a 2-D B is one GEMM of more rows);
where a backend has no GEMM kernel yet, or for other dtypes and broadcast batches, a per-lane program in
which each lane sums one output element over k in index order. Operands are converted to their promoted
dtype first. Standard library only.
"""

from __future__ import annotations

from typing import Any

from ..errors import ArrayError
from .array import Array
from .creation import asarray
from .elementwise import common_device, result_type
from ..isa.types import Type
from .nodes import DotNode, GemmNode
from .runtime import launch
from .shapes import broadcast_shapes, coalesce, row_major, size_of

__all__ = ["matmul", "dot"]


def matmul(a: Any, b: Any) -> Array:
    """The matrix product of ``a`` and ``b`` (Arrays, or host data made arrays on the other's device).
    Raises ArrayError for 0-d operands, inner sizes that differ or batch shapes that do not broadcast."""
    device = a.device if isinstance(a, Array) else b.device if isinstance(b, Array) else None
    a, b = asarray(a, device=device), asarray(b, device=device)
    what = f"matmul({a.describe()}, {b.describe()})"
    common_device(what, [a, b])
    if a.ndim == 0 or b.ndim == 0:
        raise ArrayError(f"{what}: matmul takes arrays of at least 1 dimension (use * for scalars)")
    ty, _ = result_type(what, (a, b))
    a = a if a.dtype == ty and not a.is_bool else a.astype(ty)
    b = b if b.dtype == ty and not b.is_bool else b.astype(ty)
    a2 = a.reshape(1, a.shape[0]) if a.ndim == 1 else a
    b2 = b.reshape(b.shape[0], 1) if b.ndim == 1 else b
    if a.ndim == 1 and b.ndim == 1 and a.shape == b.shape:
        # an inner product: one cooperative map and one cooperative reduction, not one lane looping over k
        from .elementwise import apply
        from .reductions import sum as total
        return total(apply("multiply", a, b), dtype=ty)
    (m, k), (k2, n) = a2.shape[-2:], b2.shape[-2:]
    if k != k2:
        raise ArrayError(f"{what}: the inner sizes differ ({k} and {k2})")
    batch = broadcast_shapes(what, a2.shape[:-2], b2.shape[:-2])
    shape = (*batch, m, n)
    out = Array.empty(a.device, shape, ty)
    if out.size:
        a_own, b_own = row_major(a2.shape), row_major(b2.shape)
        a_strides = _elements(a2, batch) + (a_own[-2], 0)
        b_strides = _elements(b2, batch) + (0, b_own[-1])
        dims, (sa, sb) = coalesce(shape, [a_strides, b_strides])
        per_lane = DotNode(dims, k, sa, sb, a_own[-1], b_own[-2], ty)
        gemm = _gemm(a2, b2, batch, m, n, k, ty)
        node, fallback = (gemm, per_lane) if gemm is not None else (per_lane, None)
        launch(what, node, a.device, [(a.buffer, 0), (b.buffer, 0)], (out.buffer, 0), fallback)
    if a.ndim == 1:
        out = out.reshape(shape[:-2] + shape[-1:])
    if b.ndim == 1:
        out = out.reshape(out.shape[:-1])
    return out


#: types the GEMM rows take
_GEMM_TYPES = (Type.F32, Type.F64)


def _gemm(a: Array, b: Array, batch: tuple[int, ...], m: int, n: int, k: int, ty: Type) -> GemmNode | None:
    """The GEMM (or BatchedGEMM) computing ``a @ b`` where one does: a 2-D ``b`` (any batch of ``a`` is
    more rows of one GEMM) or equal batch shapes; None for other types or broadcast batches."""
    if ty not in _GEMM_TYPES:
        return None
    if b.ndim == 2:
        return GemmNode(1, size_of(batch) * m, n, k, ty)
    if a.shape[:-2] == b.shape[:-2]:
        return GemmNode(size_of(batch), m, n, k, ty)
    return None


def _elements(x: Array, batch: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of ``x``'s batch axes broadcast to ``batch`` (0 where repeated)."""
    own = row_major(x.shape)[:-2]
    lead = len(batch) - len(own)
    return tuple(0 if i < lead or x.shape[i - lead] == 1 else own[i - lead] for i in range(len(batch)))


def dot(a: Any, b: Any) -> Array:
    """NumPy's ``dot`` for 1-D and 2-D operands (the inner product, or ``matmul``); a 0-d operand
    multiplies. Raises ArrayError for more than 2 dimensions (use ``matmul``)."""
    from .elementwise import apply
    a_nd = getattr(a, "ndim", 0)
    b_nd = getattr(b, "ndim", 0)
    if a_nd == 0 or b_nd == 0:
        return apply("multiply", a, b)
    if a_nd > 2 or b_nd > 2:
        raise ArrayError("dot: operands of more than 2 dimensions are not supported; use matmul")
    return matmul(a, b)
