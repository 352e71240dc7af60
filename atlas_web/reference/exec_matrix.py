"""Executor rules of the matrix kernels (rows of category "matrix"): GEMM and BatchedGEMM.

The executable form of docs/semantics.md, "Matrix kernels". Row-major; a matrix
operand covers the elements its extent in the opcode table names
(``matrix(rows, cols, ld)``): element (r, c) of a stored matrix sits ``r * ld + c``
elements from its start (ld 0: packed, the row length). Each output element is

    alpha * sum_l op(A)[i, l] * op(B)[l, j] + beta * C[i, j]

computed in float64 and rounded once to f32 for F32 (each product of two f32 is
exact there, so the only error before that rounding is float64 summation's), and
with float64 arithmetic for F64. The sums use ``np.einsum`` (no BLAS: its loops
multiply every pair, so ``0 * inf`` is NaN as IEEE says, where some BLAS skip a
zero). beta == 0 does not read C (a NaN there does not propagate); k == 0 gives
``beta * C``. Only the m x n elements of C are written (the padding between rows
when ldc > n keeps its bytes). The arrays are checked (handle, bounds, alignment)
over their whole extents, in operand order, before anything is written, by
``exec_cooperative.checked_arrays``; the inputs are copied out before C is written.
"""

from __future__ import annotations

import numpy as np

from ..isa.types import Type
from .exec_address import scatter
from .exec_cooperative import CheckedArray, CooperativeStep, checked_arrays

__all__ = ["MATRIX_RULES", "gemm_values", "matrix_view"]

#: rows of einsum's contraction: one GEMM item (i x l times l x j)
_PRODUCT = "il,lj->ij"


def matrix_view(flat: np.ndarray, rows: int, cols: int, ld: int, start: int = 0) -> np.ndarray:
    """The ``rows`` x ``cols`` matrix stored row-major in ``flat`` from element ``start`` with leading
    dimension ``ld`` (0: packed), as a new array."""
    ld = ld or cols
    index = start + np.arange(rows, dtype=np.int64)[:, None] * ld + np.arange(cols, dtype=np.int64)
    return flat[index]


def _operand(flat: np.ndarray, rows: int, cols: int, ld: int, start: int, transposed: bool) -> np.ndarray:
    """op(X): the matrix stored ``cols`` x ``rows`` when ``transposed`` (then transposed), else ``rows`` x ``cols``."""
    if transposed:
        return matrix_view(flat, cols, rows, ld, start).T
    return matrix_view(flat, rows, cols, ld, start)


def gemm_values(ty: Type, alpha: float, beta: float, a: np.ndarray, b: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    """alpha * a @ b + beta * c for an m x k ``a`` and a k x n ``b`` (``c``: m x n, or None when beta == 0), as
    the rule computes it: in float64, rounded once to f32 for F32. Returns the m x n result in ``ty``'s dtype."""
    dtype = np.float32 if ty is Type.F32 else np.float64
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if a64.shape[1] == 0:   # k == 0: beta * C (alpha times an empty sum is not formed: alpha = inf gives no NaN)
        result = np.zeros((a64.shape[0], b64.shape[1]))
    else:
        result = np.float64(alpha) * np.einsum(_PRODUCT, a64, b64)
    if c is not None:
        result = result + np.float64(beta) * c.astype(np.float64)
    return result.astype(dtype)


def _gemm_item(instr, arrays: dict[str, np.ndarray], item: int, strides: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """One GEMM item: (the element indices of C it writes, its values)."""
    m, n, k = instr.m, instr.n, instr.k
    a = _operand(arrays["a"], m, k, instr.lda, item * strides["a"], instr.trans_a)
    b = _operand(arrays["b"], k, n, instr.ldb, item * strides["b"], instr.trans_b)
    ldc = instr.ldc or n
    index = item * strides["c"] + np.arange(m, dtype=np.int64)[:, None] * ldc + np.arange(n, dtype=np.int64)
    c = arrays["c"][index] if instr.beta != 0 else None
    return index.reshape(-1), gemm_values(instr.ty, instr.alpha, instr.beta, a, b, c).reshape(-1)


def _packed_stride(rows: int, cols: int, ld: int) -> int:
    return rows * (ld or cols)


def _strides(instr, batched: bool) -> dict[str, int]:
    """The element distance between consecutive items of each matrix (0 for one GEMM; stride 0: packed)."""
    if not batched:
        return {"a": 0, "b": 0, "c": 0}
    m, n, k = instr.m, instr.n, instr.k
    a_rows, a_cols = (k, m) if instr.trans_a else (m, k)
    b_rows, b_cols = (n, k) if instr.trans_b else (k, n)
    return {"a": instr.stride_a or _packed_stride(a_rows, a_cols, instr.lda),
            "b": instr.stride_b or _packed_stride(b_rows, b_cols, instr.ldb),
            "c": instr.stride_c or _packed_stride(m, n, instr.ldc)}


def _write(array: CheckedArray, index: np.ndarray, values: np.ndarray) -> None:
    """Store ``values`` at element ``index`` of the (checked) array."""
    size = array.array.ty.size_bytes()
    scatter(array.data, array.offset + size * index, array.array.ty, values)


def _run_gemm(step: CooperativeStep, batched: bool) -> None:
    instr = step.instr
    checked = checked_arrays(step)
    items = instr.batch if batched else 1
    if instr.m == 0 or instr.n == 0 or items == 0:
        return
    arrays = {name: array.read() for name, array in checked.items()}   # copies: C is written after all reads
    strides = _strides(instr, batched)
    results = [_gemm_item(instr, arrays, item, strides) for item in range(items)]
    for index, values in results:
        _write(checked["c"], index, values)


def _gemm(step: CooperativeStep) -> None:
    _run_gemm(step, batched=False)


def _batched_gemm(step: CooperativeStep) -> None:
    _run_gemm(step, batched=True)


MATRIX_RULES = {"GEMM": _gemm, "BatchedGEMM": _batched_gemm}
