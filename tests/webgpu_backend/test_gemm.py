"""The WGSL GEMM kernel on cases the conformance suite's layout does not reach: A, B and C in one buffer
(A and B read through C's binding), shapes over several 64 x 64 tiles and 16-deep slices with edges, batch
items, and alpha/beta that WGSL could not hold as constants (inf, NaN); each compared with the reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import Address, Type
from atlas_web.isa.instructions import INSTRUCTION_CLASSES
from atlas_web.reference import CpuBackend

GEMM, BATCHED = INSTRUCTION_CLASSES["GEMM"], INSTRUCTION_CLASSES["BatchedGEMM"]


def _run(backend, instr, words: np.ndarray) -> np.ndarray:
    handle = backend.allocate_typed(words, Type.F32)
    instr = _retarget(instr, handle)
    backend.execute_program(ProgramBuilder().add(instr).build(), LaunchConfig())
    return np.asarray(backend.copy_typed_from(handle, Type.F32, len(words)))


def _retarget(instr, handle):
    import dataclasses
    return dataclasses.replace(instr, **{name: Address.BufferOffset(handle, getattr(instr, name).offset)
                                         for name in ("c", "a", "b")})


def _one_buffer(m, n, k, batch=1):
    """Offsets (bytes) of C, A and B packed one after the other in one buffer, and random contents."""
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    c_len, a_len, b_len = batch * m * n, batch * m * k, batch * k * n
    words = rng.uniform(-2, 2, c_len + a_len + b_len + 7).astype(np.float32)
    return 0, 4 * c_len, 4 * (c_len + a_len), words


@pytest.mark.parametrize("m, n, k, trans_a, trans_b, alpha, beta", [
    (70, 130, 33, False, False, 1.0, 0.0),
    (65, 3, 17, True, False, -0.5, 2.0),
    (1, 129, 64, False, True, 1.0, 1.0),
    (17, 17, 0, False, False, math.inf, 0.5),       # k == 0: beta * C whatever alpha
    (5, 7, 9, False, False, math.inf, 0.0),
    (5, 7, 9, False, False, 1.0, math.nan),
])
def test_gemm_with_every_array_in_one_buffer_matches_the_reference(webgpu, m, n, k, trans_a, trans_b, alpha, beta):
    c, a, b, words = _one_buffer(m, n, k)
    instr = GEMM(c=Address.BufferOffset(1, c), a=Address.BufferOffset(1, a), b=Address.BufferOffset(1, b), m=m, n=n,
                 k=k, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b)
    want = _run(CpuBackend(), instr, words)
    got = _run(webgpu, instr, words)
    finite = [abs(x) if math.isfinite(x) else 0.0 for x in (alpha, beta)]
    bound = (k + 2) * 2.0 ** -24 * (finite[0] * k * 4 + finite[1] * 2 + 1)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got, want, rtol=0, atol=bound, equal_nan=True)


def test_batched_gemm_over_several_tiles_matches_the_reference(webgpu):
    m, n, k, batch = 66, 70, 40, 3
    c, a, b, words = _one_buffer(m, n, k, batch)
    instr = BATCHED(c=Address.BufferOffset(1, c), a=Address.BufferOffset(1, a), b=Address.BufferOffset(1, b),
                    batch=batch, m=m, n=n, k=k, alpha=0.75, beta=0.25)
    want = _run(CpuBackend(), instr, words)
    got = _run(webgpu, instr, words)
    np.testing.assert_allclose(got, want, rtol=0, atol=(k + 2) * 2.0 ** -24 * (k * 4 + 1))
