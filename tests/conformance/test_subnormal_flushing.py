"""What the conformance suite accepts from a device that flushes f32 subnormals (docs/semantics.md, Numbers),
and that every backend says whether its device does (``device_info()["subnormals"]``).

The allowance is narrow: a reference subnormal may come back as a zero of its sign, and a result may be the
reference's over the inputs with their subnormals flushed; nothing else, and only for a backend that says it
flushes."""

from __future__ import annotations

import math

import pytest

from atlas_web import LaunchConfig, Program
from atlas_web.isa import Type

from .backends import compiled_backends
from .harness import Buffer, Case, Result, compare, with_subnormals_flushed
from .test_float_products import fold_flushing
from .values import encode

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
