"""QuantizedGEMM launched on the wasm backend, bit for bit against the reference, on what only the wasm kernel
has: shapes around its register tile and cache blocks (several depth blocks with i32 partial sums, an odd
depth, edge tiles of an i8 C), the SIMD packing path and the scalar one (every transpose), the requantizing
steps at their edges (ties to even, saturation, infinities and NaN from the scales, i32 wrapping of the sum)
and row ranges on threads giving the bits of one thread. The conformance suite checks the row's cases."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import EXIT, Type
from atlas_web.isa.instructions import QuantizedGEMM
from wasm_backend.lowering.coop_qgemm_kernel import QTILING
from wasm_backend.thread_policy import PARALLEL_GEMM_THRESHOLD

from tests.wasm_backend.thread_counts import THREAD_COUNTS

T = QTILING
_DTYPE = {Type.I8: np.int8, Type.F32: np.float32}


def qgemm(backend, a: np.ndarray, b: np.ndarray, ty: Type, m: int, n: int, k: int, *, c_fill: int = 0x5A,
          ldc: int = 0, **fields) -> bytes:
    """C's bytes after one QuantizedGEMM (C's buffer filled with ``c_fill`` bytes first: padding must keep it)."""
    c_bytes = ((m - 1) * (ldc or n) + n) * ty.size_bytes() if m and n else 0
    handles = []
    for data in (bytes([c_fill]) * c_bytes, a.astype(np.int8).tobytes(), b.astype(np.int8).tobytes()):
        handle = backend.allocate_buffer(max(4, len(data)))
        backend.copy_to_buffer(handle, data)
        handles.append(int(handle))
    builder = ProgramBuilder()
    builder.add(QuantizedGEMM(c=Address.BufferOffset(handles[0]), a=Address.BufferOffset(handles[1]),
                              b=Address.BufferOffset(handles[2]), m=m, n=n, k=k, ldc=ldc, ty=ty,
                              **{"a_scale": 0.02, "b_scale": 0.03, "c_scale": 0.05, **fields}))
    builder.add(EXIT())
    backend.execute_program(builder.build(), LaunchConfig())
    out = bytes(backend.copy_from_buffer(handles[0]))[:c_bytes]
    for handle in handles:
        backend.free_buffer(handle)
    return out


def _operands(rng, m, n, k, trans_a=False, trans_b=False, low=-128, high=128):
    a = rng.integers(low, high, (k, m) if trans_a else (m, k))
    b = rng.integers(low, high, (n, k) if trans_b else (k, n))
    return a, b


def same_as_reference(reference, backend, a, b, ty, m, n, k, **fields) -> bytes:
    got = qgemm(backend, a, b, ty, m, n, k, **fields)
    want = qgemm(reference, a, b, ty, m, n, k, **fields)
    assert got == want, f"first differing byte {next(i for i in range(len(got)) if got[i] != want[i])}"
    return got


@pytest.mark.parametrize("ty", [Type.I8, Type.F32])
@pytest.mark.parametrize("m,n,k,trans_a,trans_b", [
    (T.mr - 1, T.nr + 1, T.kc + 1, False, False),          # two depth blocks, the second one step long
    (T.mc + 1, T.nr - 1, 2 * T.kc + 3, True, True),        # three depth blocks, an odd depth, edge tiles
    (2 * T.mr + 1, 2 * T.nr, 31, False, True),             # whole slivers of B through the SIMD packer
    (T.mc + T.mr, T.nc + T.nr + 5, 16, True, False),       # two column blocks
    (5, 3, 0, False, False),                               # k == 0: C from zero sums
])
def test_sizes_around_the_blocks(backends, reference, ty, m, n, k, trans_a, trans_b):
    a, b = _operands(np.random.default_rng(m * 7 + k), m, n, k, trans_a, trans_b)
    same_as_reference(reference, backends[1], a, b, ty, m, n, k, trans_a=trans_a, trans_b=trans_b,
                      ldc=n + 3 if ty is Type.I8 else 0)


def test_leading_dimensions_past_packed(backends, reference):
    m, n, k, lda, ldb = 9, 21, 13, 20, 33
    rng = np.random.default_rng(1)
    a, b = rng.integers(-128, 128, m * lda), rng.integers(-128, 128, k * ldb)
    same_as_reference(reference, backends[1], a, b, Type.I8, m, n, k, lda=lda, ldb=ldb, ldc=n + 1)


@pytest.mark.parametrize("scales", [
    dict(a_scale=0.5, b_scale=1.0, c_scale=1.0),      # acc / 2: every odd sum is a tie, rounded to even
    dict(a_scale=1.0, b_scale=1.0, c_scale=1e-3),     # saturation both ways
    dict(a_scale=3e38, b_scale=10.0, c_scale=1.0),    # scale overflows to inf: saturated, 0 * inf = NaN -> 0
    dict(a_scale=0.0, b_scale=1.0, c_scale=0.0),      # 0 / 0: NaN multiplier, every element 0
    dict(a_scale=1.0, b_scale=-1.0, c_scale=0.0),     # -inf multiplier
])
@pytest.mark.parametrize("ty", [Type.I8, Type.F32])
def test_requantizing_edges(backends, reference, scales, ty):
    m, n, k = 6, 20, 5
    a, b = _operands(np.random.default_rng(2), m, n, k, low=-3, high=4)   # small sums: ties and zeros
    a[0, :] = 0
    same_as_reference(reference, backends[1], a, b, ty, m, n, k, **scales)


def test_the_sum_wraps_in_i32(backends, reference):
    """k * 128 * 128 past 2**31: the sum wraps modulo 2**32 (F32 C shows its value)."""
    k = (1 << 31) // (128 * 128) + 4
    a = np.full(k, -128)
    b = np.concatenate([np.full((k, 1), -128), np.full((k, 1), 127)], axis=1)
    got = np.frombuffer(same_as_reference(reference, backends[1], a, b, Type.F32, 1, 2, k, a_scale=1.0,
                                          b_scale=1.0), np.float32)
    assert got[0] == np.float32(np.int64(k * 128 * 128 - (1 << 32)))


def test_threads_give_the_bits_of_one_thread(backends):
    side = round(PARALLEL_GEMM_THRESHOLD ** (1 / 3)) + 3
    a, b = _operands(np.random.default_rng(4), side, side, side, trans_a=True)
    results = set()
    for threads in THREAD_COUNTS:
        before = backends[threads].device_info()["parallel_dispatches"]
        results.add(qgemm(backends[threads], a, b, Type.I8, side, side, side, trans_a=True))
        assert backends[threads].device_info()["parallel_dispatches"] - before == (1 if threads > 1 else 0)
    assert len(results) == 1
