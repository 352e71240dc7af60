"""Conv2D launched on the wasm backend (coop_conv: im2col chunks into the GEMM kernel), on what only the wasm
kernel has: output rows cut into chunks with a shorter tail chunk, a depth K past the GEMM's depth block with a
bias (the GEMM adding to the bias-filled output), the im2col's paths (memory.copy runs at stride_w 1, element
loops at other strides, rows and runs reading only padding, dilation), groups, F64, F16 and BF16 (through f32
scratch, rounded once); a trapped launch leaves the
output unchanged and the backend usable. Results within the contract's bound against NumPy (the conformance
suite's ``compare``); the conformance suite checks the row's generated cases."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web.isa import OPCODE_TABLE, Type
from wasm_backend import WasmBackend
from wasm_backend.lowering.coop_conv import CHUNK_COLUMNS, ConvShape
from wasm_backend.lowering.coop_gemm_kernel import TILINGS

from tests.conformance.conv_fft_cases import ConvCase, conv_fields, compare, run_case

CONV = next(info for info in OPCODE_TABLE if info.name == "Conv2D")
KC = TILINGS[Type.F32].kc

SHAPES = {
    "chunk_tail": conv_fields(1, 2, 3, 40, 33, 3, 3, padding=(1, 1), bias=True),              # 40 rows of 33: tail
    "deep_k_bias": conv_fields(1, KC // 9 + 3, 5, 6, 7, 3, 3, padding=(1, 1), bias=True),      # K past one depth block
    "stride_w_3": conv_fields(2, 3, 4, 9, 17, 3, 5, stride=(2, 3), padding=(2, 4), bias=True),
    "dilated": conv_fields(1, 2, 2, 11, 12, 3, 3, padding=(2, 2), dilation=(2, 3)),
    "padding_only": conv_fields(1, 1, 2, 2, 2, 2, 2, padding=(3, 3)),
    "wide_row": conv_fields(1, 2, 3, 1, 700, 1, 5, padding=(0, 2)),                            # one row past the chunk
    "groups": conv_fields(2, 6, 4, 7, 7, 3, 3, padding=(1, 1), groups=2, bias=True),
    "pointwise": conv_fields(1, 16, 24, 14, 14, 1, 1),
}


@pytest.fixture(scope="module")
def wasm():
    backend = WasmBackend(threads=1)
    yield backend
    backend.close()


def test_the_shapes_reach_the_kernels_paths():
    tail = ConvShape(ConvCase("t", CONV, Type.F32, SHAPES["chunk_tail"]).probe())
    assert tail.tail_rows and tail.chunk_rows * tail.ow <= CHUNK_COLUMNS
    assert ConvShape(ConvCase("k", CONV, Type.F32, SHAPES["deep_k_bias"]).probe()).k > KC


@pytest.mark.parametrize("ty", [Type.F32, Type.F64, Type.F16, Type.BF16], ids=lambda t: t.name)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_conv2d_within_the_contract(wasm, shape, ty):
    case = ConvCase(f"Conv2D.{ty.name}.{shape}", CONV, ty, SHAPES[shape])
    inputs, got, trap = run_case(wasm, case)
    assert trap is None
    bad = compare(case, inputs, got)
    assert not bad, f"{len(bad)} outside the bound; first (index, numpy, got, allowed) {bad[:3]}"


def test_a_trapped_conv2d_writes_nothing_and_the_backend_goes_on(wasm):
    short = ConvCase("Conv2D.F32.kernel_short", CONV, Type.F32, SHAPES["groups"], short="kernel")
    inputs, output, trap = run_case(wasm, short)
    assert trap is not None and np.array_equal(output, inputs["output"])
    case = ConvCase("Conv2D.F32.after", CONV, Type.F32, SHAPES["groups"])
    inputs, got, trap = run_case(wasm, case)
    assert trap is None and not compare(case, inputs, got)
