"""The WGSL Conv2D kernel (an implicit GEMM) on cases the conformance suite's layout does not reach: outputs past
one 64 x 64 tile in both directions with a depth past several staged slices, strides, dilation and padding-only
positions, groups, a bias; the input and the kernel in the output's buffer at other offsets (read through the
output's binding); each within the contract's bound of NumPy (tests/conformance/conv_fft_cases)."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import OPCODE_TABLE, Address, Conv2D, Type

from tests.conformance.conv_fft_cases import ConvCase, conv_fields, compare, run_case

CONV = next(info for info in OPCODE_TABLE if info.name == "Conv2D")
SHAPES = {
    "tiles": conv_fields(1, 5, 70, 10, 9, 3, 3, padding=(1, 1), bias=True),          # 70 channels, 90 positions, K 45
    "strided": conv_fields(2, 3, 4, 13, 17, 3, 5, stride=(2, 3), padding=(2, 4), dilation=(1, 2), bias=True),
    "groups": conv_fields(1, 6, 9, 7, 8, 2, 2, padding=(3, 1), groups=3),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_conv2d_within_the_contract(webgpu, shape):
    case = ConvCase(f"Conv2D.F32.{shape}", CONV, Type.F32, SHAPES[shape])
    inputs, got, trap = run_case(webgpu, case)
    assert trap is None
    bad = compare(case, inputs, got)
    assert not bad, f"{len(bad)} outside the bound; first (index, numpy, got, allowed) {bad[:3]}"


def test_conv2d_sources_in_the_outputs_buffer(webgpu):
    fields = SHAPES["groups"]
    case = ConvCase("Conv2D.F32.shared", CONV, Type.F32, fields)
    arrays = case.arrays()
    rng = np.random.default_rng(4)
    x = rng.uniform(-2, 2, arrays["input"].elements).astype(np.float32)
    w = rng.uniform(-2, 2, arrays["kernel"].elements).astype(np.float32)
    out_n = arrays["output"].elements
    words = np.concatenate([np.full(out_n, 7.0, np.float32), x, w])
    handle = webgpu.allocate_typed(words, Type.F32)
    instr = Conv2D(output=Address.BufferOffset(handle, 0), input=Address.BufferOffset(handle, 4 * out_n),
                   kernel=Address.BufferOffset(handle, 4 * (out_n + len(x))), **fields)
    webgpu.execute_program(ProgramBuilder().add(instr).build(), LaunchConfig())
    got = np.asarray(webgpu.copy_typed_from(handle, Type.F32, out_n), dtype=np.float64)
    webgpu.free_buffer(handle)
    inputs = {"input": x.astype(np.float64), "kernel": w.astype(np.float64), "bias": np.zeros(0)}
    assert not compare(case, inputs, got)


@pytest.mark.parametrize("ty, low, high", [(Type.F16, -14, 10), (Type.BF16, -70, 70)], ids=["F16", "BF16"])
def test_conv2d_halves_round_once_like_the_reference(webgpu, ty, low, high):
    """A 1 x 1 kernel on one channel: each output is one product, exact in f32, so the kernel's rounding to the
    type (ties, subnormals, overflow to infinity) must give the reference's bits."""
    from atlas_web.reference import CpuBackend

    from tests.conformance.matrix_cases import decode_array, encode_array
    rng = np.random.default_rng(9)
    n = 4096
    fields = conv_fields(1, 1, 1, 1, n, 1, 1)
    case = ConvCase(f"Conv2D.{ty.name}.one_product", CONV, ty, fields)

    def values(count):
        v = rng.choice([-1.0, 1.0], count) * rng.uniform(1, 2, count) * 2.0 ** rng.integers(low, high, count)
        return decode_array(ty, encode_array(ty, v))

    x, w = values(n), values(1)
    for scale in (w, values(1), values(1)):
        outputs = []
        for backend in (webgpu, CpuBackend()):
            handles = {name: int(backend.allocate_buffer(max(4, 2 * len(v)))) for name, v in
                       (("output", x), ("input", x), ("kernel", scale))}
            backend.copy_to_buffer(handles["input"], encode_array(ty, x))
            backend.copy_to_buffer(handles["kernel"], encode_array(ty, scale))
            instr = Conv2D(**{k: Address.BufferOffset(h) for k, h in handles.items()}, **fields, ty=ty)
            backend.execute_program(ProgramBuilder().add(instr).build(), LaunchConfig())
            outputs.append(bytes(backend.copy_from_buffer(handles["output"]))[:2 * n])
            for h in handles.values():
                backend.free_buffer(h)
        assert outputs[0] == outputs[1], f"{case}: the rounded products differ from the reference's"
