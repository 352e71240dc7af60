"""The WGSL FFT kernel (radix-2, one dispatch per pass) on cases the conformance suite's layout does not reach:
in place (the bit reversal by swaps), the input in the output's buffer at another offset (read through the
output's binding), a large n (many dispatches, grid-stride loops), forward then inverse giving the input back;
the same for n not a power of two (Bluestein's algorithm in the launcher's work buffer), and its refusal, naming
the work memory and the limit, where that buffer would pass the device's binding limit; each within the
contract's normwise bound of np.fft (tests/conformance/conv_fft_cases)."""

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


@pytest.mark.parametrize("n, batch", [(1, 3), (8, 2), (1024, 2), (3, 2), (100, 3), (1031, 1)])
def test_fft_in_place_and_back(webgpu, n, batch):
    z = _signal(batch, n)
    y = _launch(webgpu, z.view(np.float32).ravel(), 0, 0, n, batch, False).view(np.complex64).reshape(batch, n)
    assert _within(z, y, False)
    back = _launch(webgpu, y.view(np.float32).ravel(), 0, 0, n, batch, True).view(np.complex64).reshape(batch, n)
    assert _within(y, back, True) and np.allclose(back, z, atol=1e-5)


@pytest.mark.parametrize("n", [64, 45])
def test_fft_input_in_the_outputs_buffer(webgpu, n):
    batch = 2
    z = _signal(batch, n, 5)
    words = np.concatenate([np.full(2 * n * batch, 7.0, np.float32), z.view(np.float32).ravel()])
    got = _launch(webgpu, words, 0, 2 * n * batch, n, batch, False)[:2 * n * batch]
    assert _within(z, got.view(np.complex64).reshape(batch, n), False)


@pytest.mark.parametrize("inverse", [False, True])
def test_fft_large_n(webgpu, inverse):
    case = ConvCase("FFT.F32.65536", ROW, Type.F32, dict(n=1 << 16, batch=1, inverse=inverse))
    inputs, got, trap = run_case(webgpu, case)
    assert trap is None and not compare(case, inputs, got)


@pytest.mark.parametrize("inverse", [False, True])
def test_bluestein_large_prime_n(webgpu, inverse):
    """65,537: a padded length of 2^18 (j^2 modulo 2n past 2^32 before its reduction, grid-stride loops)."""
    case = ConvCase("FFT.F32.65537", ROW, Type.F32, dict(n=65537, batch=1, inverse=inverse))
    inputs, got, trap = run_case(webgpu, case)
    assert trap is None and not compare(case, inputs, got)


def test_bluestein_past_the_binding_limit_is_refused_and_the_backend_goes_on(gpu_driver, monkeypatch):
    from atlas_web import ExecutionFailed
    from webgpu_backend import WebGpuBackend
    backend = WebGpuBackend(driver=gpu_driver)
    try:
        # m 8192: 8 * 8192 * 201 = 13,172,736 bytes of work memory, past a limit of 12,000,000 (the memory's 8 MiB
        # chunk fits)
        case = ConvCase("FFT.F32.2049x200", ROW, Type.F32, dict(n=2049, batch=200, inverse=False))
        monkeypatch.setitem(gpu_driver._limits, "maxStorageBufferBindingSize", 12_000_000)
        with pytest.raises(ExecutionFailed, match=r"needs 13,172,736 bytes of kernel work memory \(FFT of an n that "
                                                  r"is not a power of two.*binds at most 12,000,000 bytes .* \(split the "
                                                  r"instruction's batch over several launches\)"):
            run_case(backend, case)
        monkeypatch.undo()
        inputs, got, trap = run_case(backend, case)
        assert trap is None and not compare(case, inputs, got)
    finally:
        backend.close()
