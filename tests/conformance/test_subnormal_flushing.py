"""What the conformance suite accepts from a device that flushes f32 subnormals (docs/semantics.md, Numbers),
and that every backend says whether its device does (``device_info()["subnormals"]``).

The allowance is narrow: a reference subnormal may come back as a zero of its sign, and a result may be the
reference's over the inputs with their subnormals flushed or the flush-mode reference's
(``CpuBackend(subnormals="flushed")``, where an intermediate may be flushed); nothing else, and only for a
backend that says it flushes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings

from atlas_web import LaunchConfig, Program
from atlas_web.isa import LDG, MAD, MOV_IMM, STG, Address, ReduceMul, Register as R, Type
from atlas_web.reference import CpuBackend

from .backends import compiled_backends
from .harness import Buffer, Case, Result, compare, compare_with_reference, run_case, with_subnormals_flushed
from .random_cases import random_program_cases
from .test_float_products import fold_flushing
from .values import decode, encode

SUB = 2.0 ** -130          # an f32 subnormal
NORMAL = 2.0 ** -100


def _case(*buffers: Buffer) -> Case:
    return Case("flush", "MUL", Type.F32, buffers, lambda handles: Program([]), LaunchConfig())


def _result(*values: float) -> Result:
    return Result([encode(Type.F32, list(values))], None)


def test_a_subnormal_result_matches_a_zero_of_its_sign_only_when_flushed():
    case = _case(Buffer(Type.F32, encode(Type.F32, [0.0, 0.0]), output=True))
    want = _result(SUB, -SUB)
    assert compare(case, want, _result(0.0, -0.0), 0.0, flushed=True) == []
    assert compare(case, want, _result(0.0, -0.0), 0.0) != []            # a device that keeps them
    assert compare(case, want, _result(-0.0, -0.0), 0.0, flushed=True) != []   # the sign is kept
    assert compare(_case(Buffer(Type.F32, bytes(8), output=True)), _result(NORMAL, 1.0), _result(0.0, 1.0), 0.0,
                   flushed=True) != []                                      # a normal result is never flushed


def test_flushing_the_inputs_zeroes_f32_and_bf16_subnormals_only():
    case = _case(Buffer(Type.F32, encode(Type.F32, [SUB, -SUB, NORMAL, 1.5])),
                 Buffer(Type.BF16, encode(Type.BF16, [SUB, 3.0])),
                 Buffer(Type.F16, encode(Type.F16, [2.0 ** -20])),          # an f16 subnormal is a normal f32
                 Buffer(Type.F32, encode(Type.F32, [SUB]), output=True))
    flushed = with_subnormals_flushed(case)
    assert flushed.buffers[0].data == encode(Type.F32, [0.0, -0.0, NORMAL, 1.5])
    assert flushed.buffers[1].data == encode(Type.BF16, [0.0, 3.0])
    assert flushed.buffers[2].data == case.buffers[2].data
    assert flushed.buffers[3].data == case.buffers[3].data                  # outputs are not inputs


def test_the_flushing_fold_zeroes_subnormal_operands_and_partials():
    assert fold_flushing(Type.F32, [2.0 ** -70, 2.0 ** -70, 2.0 ** 100]) == 0.0         # the partial 2^-140
    assert math.isnan(fold_flushing(Type.F32, [SUB, -math.inf]))                     # 0 * inf
    assert fold_flushing(Type.F32, [2.0 ** -60, 2.0 ** -60, 2.0 ** 100]) == 2.0 ** -20  # no subnormal on the way


@pytest.mark.parametrize("name", sorted(compiled_backends()))
def test_every_backend_says_whether_its_device_flushes_subnormals(name):
    info = compiled_backends()[name].device_info()
    assert info["subnormals"] in ("preserved", "flushed")


# ---- the flush-mode reference: the two results an NVIDIA H200 (which flushes) gave, reconstructed ----------------

class _SaysPreserved(CpuBackend):
    """The flush-mode reference saying its device keeps subnormals: a backend whose flushed results the
    suite must refuse."""

    def device_info(self) -> dict:
        return {**super().device_info(), "subnormals": "preserved"}


class _SaysFlushed(CpuBackend):
    """The exact reference saying its device flushes (a flushing device whose arithmetic kept the subnormal)."""

    def device_info(self) -> dict:
        return {**super().device_info(), "subnormals": "flushed"}


def _intermediate_case() -> Case:
    """An f32 loaded from bits 0x00000200 (2^-140, in a u32 buffer: the inputs' flushing cannot see it), times
    2^32 by MAD: 2^-108 (3.08e-33) exactly, 0.0 where the MAD reads it as zero (test_random_programs on the
    H200: reference 3.08e-33, GPU 0.0)."""
    def build(handles: list[int]) -> Program:
        src, out = (h << 32 for h in handles)
        return Program([MOV_IMM(dst=R(1), value=src, ty=Type.U64), MOV_IMM(dst=R(2), value=out, ty=Type.U64),
                        LDG(dst=R(3), src=Address.RegisterIndirect(R(1), 0), ty=Type.F32),
                        MOV_IMM(dst=R(4), value=2.0 ** 32, ty=Type.F32), MOV_IMM(dst=R(5), value=0.0, ty=Type.F32),
                        MAD(dst=R(6), a=R(3), b=R(4), c=R(5), ty=Type.F32),
                        STG(dst=Address.RegisterIndirect(R(2), 0), src=R(6), ty=Type.F32)])
    return Case("subnormal bits through MAD", "MAD", Type.F32,
                (Buffer(Type.U32, encode(Type.U32, [0x200])), Buffer(Type.F32, bytes(4), output=True)),
                build, LaunchConfig(), (("MAD", Type.F32),))


def _partial_product_case() -> Case:
    """A per-lane reduce.mul.bf16 whose partial product -2^-127 is subnormal, the product -1.5 * 2^-117
    (-9.4e-36) normal: -0.0 where the partial is flushed (test_per_lane_reductions_for_every_scalar_type
    [ReduceMul] on the H200: reference -7.58e-37, GPU -0.0)."""
    def build(handles: list[int]) -> Program:
        src, out = (h << 32 for h in handles)
        return Program([MOV_IMM(dst=R(1), value=src, ty=Type.U64), MOV_IMM(dst=R(2), value=out, ty=Type.U64),
                        ReduceMul(dst=R(3), src_array=Address.RegisterIndirect(R(1), 0), count=3, ty=Type.BF16),
                        STG(dst=Address.RegisterIndirect(R(2), 0), src=R(3), ty=Type.BF16)])
    return Case("a subnormal partial product", "ReduceMul", Type.BF16,
                (Buffer(Type.BF16, encode(Type.BF16, [-(2.0 ** -63), 2.0 ** -64, 1.5 * 2.0 ** 10])),
                 Buffer(Type.BF16, bytes(2), output=True)),
                build, LaunchConfig(), (("ReduceMul", Type.BF16),))


@pytest.mark.parametrize("case, exact, flushed", [(_intermediate_case(), 2.0 ** -108, 0.0),
                                                  (_partial_product_case(), -1.5 * 2.0 ** -117, -0.0)],
                         ids=["MAD", "ReduceMul"])
def test_a_flushed_intermediate_is_accepted_only_from_a_device_that_says_it_flushes(case, exact, flushed):
    reference, flush_mode = CpuBackend(), CpuBackend(subnormals="flushed")
    assert decode(case.ty, run_case(reference, case).outputs[0]) == [exact]
    got = run_case(flush_mode, case)
    assert [math.copysign(1, v) for v in decode(case.ty, got.outputs[0])] == [math.copysign(1, flushed)]
    assert decode(case.ty, got.outputs[0]) == [flushed]
    # the allowances without the flush mode (subnormal outputs as zeros, inputs flushed) do not cover it
    expected = run_case(reference, case)
    assert compare(case, expected, got, 0.0, flushed=True)
    assert compare(case, run_case(reference, with_subnormals_flushed(case)), got, 0.0, flushed=True)
    # the harness: accepted from the flushing backend, refused from one that says it keeps subnormals
    assert compare_with_reference(reference, flush_mode, case, 0.0) == []
    assert compare_with_reference(reference, _SaysPreserved(subnormals="flushed"), case, 0.0)
    # and the exact result stays accepted from a device that says it flushes
    assert compare_with_reference(reference, _SaysFlushed(), case, 0.0) == []


def test_the_webgpu_harness_applies_the_same_rule():
    """tests/webgpu_backend/harness.value_problems (assert_matches_reference) through agrees_when_flushed."""
    from tests.webgpu_backend.harness import run_on, value_problems
    case = _partial_product_case()
    buffers = [buf.data for buf in case.buffers]
    program = case.program([2, 3])
    expected = run_on(CpuBackend(), program, case.config, buffers).buffers
    got = run_on(CpuBackend(subnormals="flushed"), program, case.config, buffers).buffers
    types = [buf.ty for buf in case.buffers]
    assert expected != got
    assert value_problems(True, types, expected, got, 0.0,
                          flush_mode_expected=lambda b: run_on(b, program, case.config, buffers).buffers) == []
    assert value_problems(False, types, expected, got, 0.0,
                          flush_mode_expected=lambda b: run_on(b, program, case.config, buffers).buffers)
    assert value_problems(True, types, expected, got, 0.0)      # without the flush-mode run: refused


@settings(max_examples=max(1, settings.default.max_examples // 4))
@given(random_program_cases())
def test_random_programs_run_in_the_flush_mode(case):
    """Every rule of the flush mode runs (a trap, if any, is an integer division's) and a flushing backend's
    result, its own, passes the harness."""
    result = run_case(CpuBackend(subnormals="flushed"), case)
    assert result.trap is None or result.trap[0] in (4, 5)
    assert compare_with_reference(CpuBackend(), CpuBackend(subnormals="flushed"), case, 0.0) == []
