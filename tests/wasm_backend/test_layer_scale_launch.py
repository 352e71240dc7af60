"""LayerScale on the wasm backend's kernel (coop_layer_scale, not the default expansion): every row length around
its vector step (4 F32, 2 F64, F16/BF16 one by one), bit for bit against the reference (the product rounded once
to the type), and in place. The conformance suite (test_kernels) runs the row's generated cases and traps."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import EXIT, Type
from atlas_web.isa.instructions import LayerScale
from wasm_backend.lowering.rules import COOPERATIVE_RULES

from tests.conformance.matrix_cases import decode_array, encode_array


def _launch(backend, ty, x: bytes, scale: bytes, n: int, rows: int, in_place: bool) -> bytes:
    handles = [int(backend.allocate_buffer(max(8, len(data)))) for data in (x, scale, x)]
    for handle, data in zip(handles, (x, scale, x)):
        backend.copy_to_buffer(handle, data)
    source, weights, out = handles
    builder = ProgramBuilder()
    builder.add(LayerScale(output=Address.BufferOffset(source if in_place else out), input=Address.BufferOffset(source),
                           scale=Address.BufferOffset(weights), n=n, rows=rows, ty=ty))
    builder.add(EXIT())
    backend.execute_program(builder.build(), LaunchConfig())
    got = bytes(backend.copy_from_buffer(source if in_place else out))[:len(x)]
    for handle in handles:
        backend.free_buffer(handle)
    return got


def test_layer_scale_has_a_kernel():
    assert "LayerScale" in COOPERATIVE_RULES


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("ty", [Type.F32, Type.F64, Type.F16, Type.BF16])
def test_rows_bit_for_bit(backends, reference, ty, in_place):
    rng = np.random.default_rng(ty.code)
    for n in (1, 2, 3, 4, 5, 9, 17):
        rows = 3
        x = decode_array(ty, encode_array(ty, rng.uniform(-300, 300, rows * n)))
        scale = decode_array(ty, encode_array(ty, rng.uniform(-3, 3, n)))
        x[0] = np.inf
        got = _launch(backends[1], ty, encode_array(ty, x), encode_array(ty, scale), n, rows, in_place)
        want = _launch(reference, ty, encode_array(ty, x), encode_array(ty, scale), n, rows, in_place)
        assert got == want, (ty, n)
