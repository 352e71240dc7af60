"""Executor rules of the matrix kernels (rows of category "matrix"): GEMM, BatchedGEMM, MixedPrecisionGEMM,
QuantizedGEMM and SparseGEMM (CSR A: its value count read at launch, the CSR checked before C is written; bad
CSR traps INVALID_SPARSE).

The executable form of docs/semantics.md, "Matrix kernels". Row-major; a matrix
operand covers the elements its extent in the opcode table names
(``matrix(rows, cols, ld)``): element (r, c) of a stored matrix sits ``r * ld + c``
elements from its start (ld 0: packed, the row length). Each output element is

    alpha * sum_l op(A)[i, l] * op(B)[l, j] + beta * C[i, j]

computed in float64 and rounded once to f32 for an f32 C (each product of two
f32, f16 or bf16 values is exact there, so the only error before that rounding
is float64 summation's: MixedPrecisionGEMM is this with f16/bf16 A and B), and
with float64 arithmetic for F64. QuantizedGEMM is exact integer arithmetic and
f32 steps (``quantized_values``). The sums use ``np.einsum`` (no BLAS: its loops
multiply every pair, so ``0 * inf`` is NaN as IEEE says, where some BLAS skip a
zero). beta == 0 does not read C (a NaN there does not propagate); k == 0 gives
``beta * C``. Only the m x n elements of C are written (the padding between rows
when ldc > n keeps its bytes). The arrays are checked (handle, bounds, alignment)
over their whole extents, in operand order, before anything is written, by
``exec_cooperative.checked_arrays``; the inputs are copied out before C is written.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import TrapCode
from ..isa.types import Type
from ..trap_report import TrapRecord, operand_position, trap
from .exec_address import scatter
from .exec_cooperative import CheckedArray, CooperativeStep, checked_arrays

__all__ = ["MATRIX_RULES", "gemm_values", "quantized_values", "matrix_view"]

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
    the rule computes it: in float64, rounded once to ``ty`` (the type of C: F32 or F64). Returns the m x n result
    in ``ty``'s dtype."""
    dtype = np.float32 if ty is Type.F32 else np.float64
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if a64.shape[1] == 0:   # k == 0: beta * C (alpha times an empty sum is not formed: alpha = inf gives no NaN)
        result = np.zeros((a64.shape[0], b64.shape[1]))
    else:
        result = np.float64(alpha) * np.einsum(_PRODUCT, a64, b64)
    if c is not None:
        result = result + np.float64(beta) * c.astype(np.float64)
    return result.astype(dtype)


def quantized_values(ty: Type, a_scale: float, b_scale: float, c_scale: float, a: np.ndarray,
                     b: np.ndarray) -> np.ndarray:
    """QuantizedGEMM's C for i8 ``a`` (m x k) and ``b`` (k x n): the exact integer sums wrapped to i32, converted
    to f32 (nearest even), times f32(a_scale * b_scale) (F32 C), or times f32(that / c_scale), rounded half to
    even and saturated to -128..127 with NaN giving 0 (I8 C); every step rounded to f32."""
    exact = np.einsum(_PRODUCT, a.astype(np.int64), b.astype(np.int64))
    accumulated = (exact & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scale = np.float32(a_scale) * np.float32(b_scale)
        if ty is Type.F32:
            return accumulated * scale
        scaled = accumulated * (scale / np.float32(c_scale))
        rounded = np.rint(scaled)
    rounded[np.isnan(rounded)] = 0
    return np.clip(rounded, -128, 127).astype(np.int8)


#: the product of one item: (instr, op(A), op(B), read C, C's type) -> C's new values
Product = Callable[[object, np.ndarray, np.ndarray, Callable[[], np.ndarray], Type], np.ndarray]


def _float_product(instr, a: np.ndarray, b: np.ndarray, read_c: Callable[[], np.ndarray], c_ty: Type) -> np.ndarray:
    return gemm_values(c_ty, instr.alpha, instr.beta, a, b, read_c() if instr.beta != 0 else None)


def _quantized_product(instr, a: np.ndarray, b: np.ndarray, read_c: Callable[[], np.ndarray], c_ty: Type) -> np.ndarray:
    return quantized_values(c_ty, instr.a_scale, instr.b_scale, instr.c_scale, a, b)


def _item(instr, product: Product, arrays: dict[str, np.ndarray], item: int, strides: dict[str, int],
          c_ty: Type) -> tuple[np.ndarray, np.ndarray]:
    """One product: (the element indices of C it writes, its values)."""
    m, n, k = instr.m, instr.n, instr.k
    a = _operand(arrays["a"], m, k, instr.lda, item * strides["a"], instr.trans_a)
    b = _operand(arrays["b"], k, n, instr.ldb, item * strides["b"], instr.trans_b)
    ldc = instr.ldc or n
    index = item * strides["c"] + np.arange(m, dtype=np.int64)[:, None] * ldc + np.arange(n, dtype=np.int64)
    return index.reshape(-1), product(instr, a, b, lambda: arrays["c"][index], c_ty).reshape(-1)


def _packed_stride(rows: int, cols: int, ld: int) -> int:
    return rows * (ld or cols)


def _strides(instr) -> dict[str, int]:
    """The element distance between consecutive items of each matrix (stride 0 or no batch field: packed)."""
    m, n, k = instr.m, instr.n, instr.k
    a_rows, a_cols = (k, m) if instr.trans_a else (m, k)
    b_rows, b_cols = (n, k) if instr.trans_b else (k, n)
    return {"a": getattr(instr, "stride_a", 0) or _packed_stride(a_rows, a_cols, instr.lda),
            "b": getattr(instr, "stride_b", 0) or _packed_stride(b_rows, b_cols, instr.ldb),
            "c": getattr(instr, "stride_c", 0) or _packed_stride(m, n, instr.ldc)}


def _write(array: CheckedArray, index: np.ndarray, values: np.ndarray) -> None:
    """Store ``values`` at element ``index`` of the (checked) array."""
    size = array.array.ty.size_bytes()
    scatter(array.data, array.offset + size * index, array.array.ty, values)


def _rule(product: Product) -> Callable[[CooperativeStep], None]:
    """The executor rule of a matrix row whose items ``product`` computes (``batch`` items where the row has that
    field, else one)."""
    def run(step: CooperativeStep) -> None:
        instr = step.instr
        checked = checked_arrays(step)
        items = getattr(instr, "batch", 1)
        if instr.m == 0 or instr.n == 0 or items == 0:
            return
        arrays = {name: array.read() for name, array in checked.items()}   # copies: C is written after all reads
        strides, c_ty = _strides(instr), checked["c"].array.ty
        results = [_item(instr, product, arrays, item, strides, c_ty) for item in range(items)]
        for index, values in results:
            _write(checked["c"], index, values)
    return run


def _sparse_gemm(step: CooperativeStep) -> None:
    """SparseGEMM: the arrays checked (a_values and a_indices over a_ptr[m] elements), then the CSR (a_ptr
    non-decreasing, every used column index below k: else INVALID_SPARSE naming the first bad element), then
    C = alpha * A @ B + beta * C in float64 per element (an empty row's sum is 0: alpha is not multiplied in),
    rounded once to the type."""
    instr = step.instr
    checked = checked_arrays(step)
    m, n, k = instr.m, instr.n, instr.k
    pointers = checked["a_ptr"].read().astype(np.int64)
    drops = np.flatnonzero(pointers[1:] < pointers[:-1])
    if drops.size:
        i = int(drops[0]) + 1
        raise _sparse_trap(step, "a_ptr", i, pointers[i], pointers[i - 1])
    first, count = int(pointers[0]), int(pointers[m])
    columns = checked["a_indices"].read().astype(np.int64)
    bad = np.flatnonzero(columns[first:count] >= k)
    if bad.size:
        e = first + int(bad[0])
        raise _sparse_trap(step, "a_indices", e, columns[e], k)
    if m == 0 or n == 0:
        return
    ldc = instr.ldc or n
    index = np.arange(m, dtype=np.int64)[:, None] * ldc + np.arange(n, dtype=np.int64)
    b = matrix_view(checked["b"].read(), k, n, instr.ldb).astype(np.float64)
    values = checked["a_values"].read().astype(np.float64)
    rows = np.repeat(np.arange(m), np.diff(pointers))
    sums = np.zeros((m, n))
    np.add.at(sums, rows, values[first:count, None] * b[columns[first:count]])
    result = np.where((np.diff(pointers) > 0)[:, None], np.float64(instr.alpha) * sums, 0.0)
    if instr.beta != 0:
        result = result + np.float64(instr.beta) * checked["c"].read()[index].astype(np.float64)
    _write(checked["c"], index.reshape(-1), result.reshape(-1).astype(np.float32 if instr.ty is Type.F32
                                                                      else np.float64))


def _sparse_trap(step: CooperativeStep, operand: str, index: int, value, limit) -> Exception:
    record = TrapRecord(operand_position(step.instr, operand), 0, int(value), index, int(limit))
    return trap(TrapCode.INVALID_SPARSE, step.plan.index, -1, step.instr, record)


MATRIX_RULES = {"GEMM": _rule(_float_product), "BatchedGEMM": _rule(_float_product),
                "MixedPrecisionGEMM": _rule(_float_product), "QuantizedGEMM": _rule(_quantized_product),
                "SparseGEMM": _sparse_gemm}
