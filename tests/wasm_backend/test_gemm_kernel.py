"""The blocked GEMM kernel of wasm_backend.lowering.coop_gemm_kernel and the GEMV kernel of coop_gemm_vector,
run directly under wasmtime.

Small tilings put every block boundary (register tile, kc, mc, nc) inside small shapes, so the tails and the
edges of the blocks are exercised in milliseconds; each result is checked against NumPy (float64) with the
contract's bound, and the memory around the operands and the scratch against sentinels (nothing outside
C's m x n block and the scratch is written). Both micro-kernel forms (relaxed_madd and mul+add) run.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from atlas_web.isa.types import Type
from wasm_backend.lowering.coop_gemm_kernel import (
    DEFAULT_TILING, ELEMENTS, GemmShape, Tiling, build_gemm_driver, row_step, scratch_bytes,
)
from wasm_backend.lowering.coop_gemm_vector import (
    AXPY_BLOCK, AXPY_ROWS, build_gemv_driver, gemv_output_step, gemv_plan, gemv_scratch_bytes,
)
from wasm_backend.lowering.module_context import ModuleContext
from wasm_backend.runners import create_runner

DTYPES = {Type.F32: np.float32, Type.F64: np.float64}
SENTINEL = 0x5A
#: every block boundary inside a few dozen rows and columns
SMALL = Tiling(mr=4, nr=8, kc=8, mc=8, nc=16, unroll=2)


@pytest.fixture(scope="module")
def runner():
    return create_runner("wasmtime", budgeted=False)


def _gamma(k: int, ty: Type) -> float:
    u = float(np.finfo(DTYPES[ty]).eps) / 2
    return (k + 2) * u / (1 - (k + 2) * u)


def run_gemm(runner, shape: GemmShape, tiling: Tiling | None, a: np.ndarray, b: np.ndarray, c: np.ndarray,
             rows: list[tuple[int, int]] | None = None, *, relaxed: bool = True) -> tuple[np.ndarray, bytes, bytes]:
    """Run the driver of ``shape`` (tiling None: the GEMV driver) on flat arrays a, b, c (each followed by 64
    sentinel bytes), over the row (output) ranges ``rows`` (default: all of them, one call); returns (c after,
    the bytes after a/b/c and the scratch, the bytes of a and b after)."""
    m = ModuleContext("gemm_test")
    if tiling is None:
        plan = gemv_plan(shape)
        build_gemv_driver(m, "gemm", shape, plan, relaxed=relaxed, export=True)
        scratch_size, outputs = gemv_scratch_bytes(shape), plan.outputs
    else:
        build_gemm_driver(m, "gemm", shape, tiling, export=True)
        scratch_size, outputs = scratch_bytes(shape, tiling), shape.m
    arrays = [a, b, c, np.zeros(scratch_size, np.uint8)]
    offsets, at = [], 4096
    for array in arrays:
        offsets.append(at)
        at += (array.nbytes + 64 + 63) // 64 * 64
    memory = runner.create_memory(at // 65536 + 1, 65536)
    instance = runner.instantiate(runner.compile(m.to_bytes()), memory=memory)
    view = runner.memory_view(memory, np.uint8)
    view[:] = SENTINEL
    for offset, array in zip(offsets, arrays[:3]):
        view[offset:offset + array.nbytes] = np.frombuffer(array.tobytes(), np.uint8)
    for lo, hi in rows or [(0, outputs)]:
        runner.call(instance, "gemm", *offsets, lo, hi)
    view = runner.memory_view(memory, np.uint8)
    out = view[offsets[2]:offsets[2] + c.nbytes].copy().view(c.dtype)
    tails = b"".join(bytes(view[o + arr.nbytes:o + arr.nbytes + 64]) for o, arr in zip(offsets, arrays))
    inputs = bytes(view[offsets[0]:offsets[0] + a.nbytes]) + bytes(view[offsets[1]:offsets[1] + b.nbytes])
    return out, tails, inputs


def check_gemm(runner, ty, m, n, k, *, trans_a=False, trans_b=False, pad=(0, 0, 0), alpha=1.0, beta=0.0,
               tiling=SMALL, seed=0, nan_c=False, rows=None, relaxed=True):
    """Build random operands with leading dimensions packed + ``pad``, run, compare with NumPy."""
    dtype = DTYPES[ty]
    rng = np.random.default_rng(seed)
    a_rows, a_cols = (k, m) if trans_a else (m, k)
    b_rows, b_cols = (n, k) if trans_b else (k, n)
    lda, ldb, ldc = a_cols + pad[0], b_cols + pad[1], n + pad[2]
    a = rng.standard_normal(max(0, (a_rows - 1) * lda + a_cols) if a_rows and a_cols else 0).astype(dtype)
    b = rng.standard_normal(max(0, (b_rows - 1) * ldb + b_cols) if b_rows and b_cols else 0).astype(dtype)
    c = rng.standard_normal(max(0, (m - 1) * ldc + n) if m and n else 0).astype(dtype)
    if nan_c:
        c[:] = np.nan
    shape = GemmShape(ty, m, n, k, trans_a, trans_b, lda, ldb, ldc, alpha, beta)
    out, tails, inputs = run_gemm(runner, shape, tiling, a, b, c, rows, relaxed=relaxed)
    assert tails == bytes([SENTINEL]) * len(tails), "a write past an operand or the scratch"
    assert inputs == a.tobytes() + b.tobytes(), "A or B changed"

    def matrix(flat, r, cols, ld):
        return np.lib.stride_tricks.as_strided(flat, (r, cols), (ld * flat.itemsize, flat.itemsize)) \
            if r and cols else np.zeros((r, cols), dtype)

    am = matrix(a, a_rows, a_cols, lda).astype(np.float64)
    bm = matrix(b, b_rows, b_cols, ldb).astype(np.float64)
    am, bm = (am.T if trans_a else am), (bm.T if trans_b else bm)
    cm = matrix(c, m, n, ldc).astype(np.float64)
    expected = alpha * (am @ bm) + (beta * cm if beta != 0.0 else 0.0)
    bound = _gamma(k, ty) * (abs(alpha) * (np.abs(am) @ np.abs(bm)) + (abs(beta) * np.abs(cm) if beta else 0.0))
    got = matrix(out, m, n, ldc).astype(np.float64)
    assert np.all(np.abs(got - expected) <= bound + 1e-300), (m, n, k, np.abs(got - expected).max())
    # the gaps between rows of C (ldc > n) are untouched
    untouched = np.ones(out.size, bool)
    for i in range(m):
        untouched[i * ldc:i * ldc + n] = False
    assert out[untouched].tobytes() == c[untouched].tobytes()
    return got


SIZES = [(1, 1, 1), (3, 5, 2), (4, 8, 8), (5, 9, 9), (8, 16, 16), (9, 17, 17), (12, 31, 23), (17, 33, 40)]


@pytest.mark.parametrize("m,n,k", SIZES)
@pytest.mark.parametrize("trans_a,trans_b", list(itertools.product((False, True), repeat=2)))
def test_block_boundaries_and_transposes(runner, m, n, k, trans_a, trans_b):
    check_gemm(runner, Type.F32, m, n, k, trans_a=trans_a, trans_b=trans_b, alpha=1.5, beta=-0.5)


@pytest.mark.parametrize("pad", [(1, 3, 2), (5, 0, 7)])
def test_leading_dimensions_wider_than_the_rows(runner, pad):
    for trans_a, trans_b in itertools.product((False, True), repeat=2):
        check_gemm(runner, Type.F32, 13, 19, 21, trans_a=trans_a, trans_b=trans_b, pad=pad, beta=2.0)


def test_beta_zero_does_not_read_c(runner):
    got = check_gemm(runner, Type.F32, 9, 17, 20, nan_c=True, beta=0.0)
    assert np.isfinite(got).all()


def test_beta_nonzero_propagates_nan_from_c(runner):
    dtype = np.float32
    shape = GemmShape(Type.F32, 5, 9, 3, False, False, 3, 9, 9, 1.0, 0.5)
    c = np.zeros(45, dtype)
    c[7] = np.nan
    out, _, _ = run_gemm(runner, shape, SMALL, np.ones(15, dtype), np.ones(27, dtype), c)
    assert np.isnan(out[7]) and np.isfinite(np.delete(out, 7)).all()


def test_k_zero_scales_c_by_beta(runner):
    got = check_gemm(runner, Type.F32, 6, 10, 0, beta=0.25)
    assert got.shape == (6, 10)
    zero = check_gemm(runner, Type.F32, 6, 10, 0, beta=0.0, nan_c=True)
    assert not zero.any()


@pytest.mark.parametrize("m,n,k", [(0, 5, 3), (5, 0, 3), (0, 0, 0)])
def test_empty_output(runner, m, n, k):
    check_gemm(runner, Type.F32, m, n, k, beta=3.0)


@pytest.mark.parametrize("relaxed", [True, False])
@pytest.mark.parametrize("tile", [(4, 16), (4, 8), (6, 8), (8, 4)])
def test_micro_kernel_forms_and_tiles(runner, relaxed, tile):
    mr, nr = tile
    tiling = Tiling(mr=mr, nr=nr, kc=16, mc=2 * mr, nc=3 * nr, unroll=2, relaxed=relaxed)
    for m, n, k in ((mr + 1, nr + 3, 33), (3 * mr, 4 * nr - 1, 16)):
        check_gemm(runner, Type.F32, m, n, k, tiling=tiling, alpha=0.75, beta=1.0, trans_b=True)


def test_relaxed_and_plain_agree_within_the_bound_with_the_default_tiling(runner):
    plain = Tiling(**{**DEFAULT_TILING.__dict__, "relaxed": False})
    one = check_gemm(runner, Type.F32, 37, 70, 300, tiling=DEFAULT_TILING)
    two = check_gemm(runner, Type.F32, 37, 70, 300, tiling=plain)
    assert one.shape == two.shape


def test_f64(runner):
    for trans_a, trans_b in ((False, False), (True, True)):
        check_gemm(runner, Type.F64, 11, 13, 19, trans_a=trans_a, trans_b=trans_b, alpha=2.0, beta=0.5,
                   tiling=Tiling(mr=4, nr=4, kc=8, mc=8, nc=8))


def test_row_ranges_split_like_threads(runner):
    """Disjoint row ranges (multiples of the row step) give the rows one call gives."""
    step = row_step(SMALL)
    check_gemm(runner, Type.F32, 23, 18, 19, beta=0.5, rows=[(0, 2 * step), (2 * step, 5 * step), (5 * step, 23)])


def test_scratch_is_sized_from_the_shape():
    small = GemmShape(Type.F32, 3, 5, 7, False, False, 7, 5, 5, 1.0, 0.0)
    big = GemmShape(Type.F32, 1024, 1024, 1024, False, False, 1024, 1024, 1024, 1.0, 0.0)
    assert scratch_bytes(small) < 8192 < scratch_bytes(big)
    assert scratch_bytes(big) % 16 == 0
    assert ELEMENTS[Type.F32].lanes == 4 and ELEMENTS[Type.F64].lanes == 2


#: small ones, and a few over one axpy block of outputs (AXPY_BLOCK) with depths around AXPY_ROWS
GEMV_SHAPES = [(1, 1, 1), (1, 1, 9), (1, 37, 13), (1, 70, 5), (45, 1, 17), (6, 1, 3), (1, 33, 0), (7, 1, 0),
               (1, AXPY_BLOCK + 37, AXPY_ROWS + 1), (AXPY_BLOCK + 5, 1, 2 * AXPY_ROWS)]


@pytest.mark.parametrize("m,n,k", GEMV_SHAPES)
@pytest.mark.parametrize("trans_a,trans_b", list(itertools.product((False, True), repeat=2)))
def test_gemv_forms(runner, m, n, k, trans_a, trans_b):
    """Every (dot, axpy) x (contiguous, strided vector) case, wide leading dimensions, both madd forms."""
    for relaxed in (True, False):
        check_gemm(runner, Type.F32, m, n, k, trans_a=trans_a, trans_b=trans_b, pad=(2, 3, 1), alpha=-1.5,
                   beta=0.5, tiling=None, relaxed=relaxed)


def test_gemv_beta_zero_does_not_read_c_and_f64(runner):
    assert np.isfinite(check_gemm(runner, Type.F32, 1, 40, 11, beta=0.0, nan_c=True, tiling=None)).all()
    check_gemm(runner, Type.F64, 29, 1, 21, trans_a=True, beta=2.0, tiling=None)
    check_gemm(runner, Type.F64, 1, 29, 21, trans_b=True, tiling=None)


def test_gemv_output_ranges_give_the_bits_of_one_call(runner):
    for m, n in ((1, 150), (150, 1)):
        shape = GemmShape(Type.F32, m, n, 37, False, False, 37, n, n, 1.0, 0.0)
        step = gemv_output_step(shape, gemv_plan(shape))
        rng = np.random.default_rng(2)
        a, b = rng.standard_normal(m * 37).astype(np.float32), rng.standard_normal(37 * n).astype(np.float32)
        c = np.zeros(m * n, np.float32)
        whole, _, _ = run_gemm(runner, shape, None, a, b, c)
        cut, _, _ = run_gemm(runner, shape, None, a, b, c, [(0, step), (step, 3 * step), (3 * step, max(m, n))])
        assert whole.tobytes() == cut.tobytes()
