"""The WGSL FFT kernel (radix-2, one dispatch per pass) on cases the conformance suite's layout does not reach:
in place (the bit reversal by swaps), the input in the output's buffer at another offset (read through the
output's binding), a large n (many dispatches, grid-stride loops), forward then inverse giving the input back;
each within the contract's normwise bound of np.fft (tests/conformance/conv_fft_cases)."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import FFT, OPCODE_TABLE, Address, Type

from tests.conformance.conv_fft_cases import ConvCase, compare, fft_bound, run_case

ROW = next(info for info in OPCODE_TABLE if info.name == "FFT")


def _signal(batch: int, n: int, seed: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (batch, n)) + 1j * rng.uniform(-1, 1, (batch, n))).astype(np.complex64)


def _launch(backend, words: np.ndarray, out_at: int, in_at: int, n: int, batch: int, inverse: bool) -> np.ndarray:
    handle = backend.allocate_typed(words.astype(np.float32), Type.F32)
    instr = FFT(output=Address.BufferOffset(handle, 4 * out_at), input=Address.BufferOffset(handle, 4 * in_at), n=n,
                inverse=inverse, batch=batch)
    backend.execute_program(ProgramBuilder().add(instr).build(), LaunchConfig())
    out = np.asarray(backend.copy_typed_from(handle, Type.F32, len(words)), dtype=np.float32)
    backend.free_buffer(handle)
    return out


def _within(z: np.ndarray, got: np.ndarray, inverse: bool) -> bool:
    want = (np.fft.ifft if inverse else np.fft.fft)(z.astype(np.complex128), axis=-1)
    error = np.linalg.norm(got.astype(np.complex128) - want, axis=-1)
    return bool((error <= fft_bound(Type.F32, z.shape[1], want)).all())


@pytest.mark.parametrize("n, batch", [(1, 3), (8, 2), (1024, 2)])
def test_fft_in_place_and_back(webgpu, n, batch):
    z = _signal(batch, n)
    y = _launch(webgpu, z.view(np.float32).ravel(), 0, 0, n, batch, False).view(np.complex64).reshape(batch, n)
    assert _within(z, y, False)
    back = _launch(webgpu, y.view(np.float32).ravel(), 0, 0, n, batch, True).view(np.complex64).reshape(batch, n)
    assert _within(y, back, True) and np.allclose(back, z, atol=1e-5)


def test_fft_input_in_the_outputs_buffer(webgpu):
    n, batch = 64, 2
    z = _signal(batch, n, 5)
    words = np.concatenate([np.full(2 * n * batch, 7.0, np.float32), z.view(np.float32).ravel()])
    got = _launch(webgpu, words, 0, 2 * n * batch, n, batch, False)[:2 * n * batch]
    assert _within(z, got.view(np.complex64).reshape(batch, n), False)


@pytest.mark.parametrize("inverse", [False, True])
def test_fft_large_n(webgpu, inverse):
    case = ConvCase("FFT.F32.65536", ROW, Type.F32, dict(n=1 << 16, batch=1, inverse=inverse))
    inputs, got, trap = run_case(webgpu, case)
    assert trap is None and not compare(case, inputs, got)
