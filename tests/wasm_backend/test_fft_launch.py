"""FFT launched on the wasm backend (coop_fft: radix-2 on SIMD128), on what only the wasm kernel has: n past its
cache BLOCK (stages over whole items after the blocked ones), the first stages (F32's twiddle-free stage, the
smallest n), in place (the bit reversal by swaps) and out of place, batches, inverse (1/n), F64, and twiddle
tables of every split; n not a power of two (coop_fft_bluestein: odd n, a padded length past BLOCK, in place);
results within the contract's normwise bound against np.fft (the conformance suite's
``compare``), a trapped launch writing nothing and the backend going on."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import EXIT, FFT, OPCODE_TABLE, Type
from wasm_backend import WasmBackend
from wasm_backend.lowering.coop_fft import BLOCK, twiddle_split

from tests.conformance.conv_fft_cases import ConvCase, compare, fft_bound, run_case

ROW = next(info for info in OPCODE_TABLE if info.name == "FFT")


@pytest.fixture(scope="module")
def wasm():
    backend = WasmBackend(threads=1)
    yield backend
    backend.close()


def test_twiddle_split_covers_half_of_n():
    for bits in range(1, 24):
        low, high = twiddle_split(1 << bits)
        assert low * high == 1 << (bits - 1) and high <= low <= 2 * high


@pytest.mark.parametrize("ty", [Type.F32, Type.F64], ids=lambda t: t.name)
@pytest.mark.parametrize("n, batch, inverse", [(2, 5, False), (4, 2, True), (32, 3, False), (2 * BLOCK, 1, False),
                                               (4 * BLOCK, 1, True), (BLOCK, 2, True),
                                               # Bluestein: odd n (F32's last complex value alone), a padded
                                               # length past BLOCK, n just past a power of two
                                               (3, 4, True), (5, 3, False), (BLOCK + 3, 1, True),
                                               (1025, 2, False), (6, 1, False)])
def test_fft_within_the_contract(wasm, ty, n, batch, inverse):
    case = ConvCase(f"FFT.{ty.name}.{n}x{batch}", ROW, ty, dict(n=n, batch=batch, inverse=inverse))
    inputs, got, trap = run_case(wasm, case)
    assert trap is None
    bad = compare(case, inputs, got)
    assert not bad, f"{len(bad)} items outside the bound; first (item, |y|, error, allowed) {bad[:3]}"


def _in_place(backend, z: np.ndarray, inverse: bool) -> np.ndarray:
    data = z.astype(np.complex64).view(np.float32).tobytes()
    handle = int(backend.allocate_buffer(len(data)))
    backend.copy_to_buffer(handle, data)
    b = ProgramBuilder()
    b.add(FFT(output=Address.BufferOffset(handle), input=Address.BufferOffset(handle), n=z.shape[1],
              inverse=inverse, batch=z.shape[0]))
    b.add(EXIT())
    backend.execute_program(b.build(), LaunchConfig())
    out = np.frombuffer(bytes(backend.copy_from_buffer(handle)), np.complex64).reshape(z.shape)
    backend.free_buffer(handle)
    return out


@pytest.mark.parametrize("n", [1, 8, 2 * BLOCK, 7, 1000])
def test_fft_in_place_and_back(wasm, n):
    rng = np.random.default_rng(n)
    z = (rng.uniform(-1, 1, (2, n)) + 1j * rng.uniform(-1, 1, (2, n))).astype(np.complex64)
    y = _in_place(wasm, z, False)
    want = np.fft.fft(z.astype(np.complex128), axis=-1)
    assert (np.linalg.norm(y - want, axis=-1) <= fft_bound(Type.F32, max(n, 2), want)).all()
    back = _in_place(wasm, y, True)
    assert np.allclose(back, z, atol=1e-5)


def test_a_trapped_fft_writes_nothing_and_the_backend_goes_on(wasm):
    fields = dict(n=64, batch=2, inverse=False)
    inputs, output, trap = run_case(wasm, ConvCase("FFT.F32.input_short", ROW, Type.F32, fields, short="input"))
    assert trap is not None and np.array_equal(output, inputs["output"])
    case = ConvCase("FFT.F32.after", ROW, Type.F32, fields)
    inputs, got, trap = run_case(wasm, case)
    assert trap is None and not compare(case, inputs, got)
