"""The WGSL normalization kernels on cases the conformance suite's layout (one buffer per array) does not reach:
every array in one buffer (sources read through the output's read-write binding), in place (output = input),
more groups than a workgroup has invocations, rows longer than a workgroup's stride, rows of subnormals (the
largest scale), and F16/BF16 arrays packed at odd half-word offsets and in place (neighbouring halves of one word
written by different invocations and workgroups). Outputs are compared with
NumPy within the contract's bound (tests/conformance's ``compare``)."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import OPCODE_TABLE, Address, Type

from tests.conformance.matrix_cases import decode_array, encode_array
from tests.conformance.norm_cases import EPS, NormCase, compare

_ROWS = {info.name: info for info in OPCODE_TABLE if info.category == "normalization"}
_PARAMS = {"LayerNorm": ("gamma", "beta"), "RMSNorm": ("weight",), "GroupNorm": ("gamma", "beta"),
           "BatchNorm": ("gamma", "beta", "mean", "variance")}


def _inputs(case: NormCase, x: np.ndarray, rng) -> dict:
    arrays = case.arrays()
    out = {"output": np.full(arrays["output"].elements, 7.0), "input": x}
    for name in _PARAMS[case.info.name]:
        count = arrays[name].elements
        out[name] = rng.uniform(0.05, 4.0, count) if name == "variance" else rng.uniform(-2, 2, count)
    return {name: decode_array(case.ty, encode_array(case.ty, values.astype(np.float32).astype(np.float64)))
            for name, values in out.items()}


def _run_one_buffer(backend, case: NormCase, inputs: dict, in_place: bool = False) -> np.ndarray:
    """Run ``case`` with every array packed in one buffer (odd word offsets between them); the output's
    values. The elements between the arrays (3.0) must keep their values."""
    names = [op.name for op in case.info.address_operands]
    size = case.ty.size_bytes()
    offsets, words = {}, []
    for name in names:
        if in_place and name == "input":
            offsets[name] = offsets["output"]
            continue
        offsets[name] = size * (len(words) + 1)
        words += [3.0] + list(inputs["input" if in_place and name == "output" else name])
    raw = encode_array(case.ty, np.array(words + [3.0]))
    handle = backend.allocate_buffer(-(-len(raw) // 4) * 4)
    backend.copy_to_buffer(handle, raw)
    instr = case.instruction({name: Address.BufferOffset(handle, offsets[name]) for name in names})
    backend.execute_program(ProgramBuilder().add(instr).build(), LaunchConfig())
    got = decode_array(case.ty, bytes(backend.copy_from_buffer(handle))[:len(raw)])
    backend.free_buffer(handle)
    start = offsets["output"] // size
    gaps = [offsets[name] // size - 1 for name in names if not (in_place and name == "input")] + [len(words)]
    assert np.array_equal(got[gaps], [3.0] * len(gaps)), "an element between the arrays was written"
    return got[start:start + len(inputs["output"])]


def _case(name: str, ty: Type = Type.F32, **fields) -> NormCase:
    return NormCase(name, _ROWS[name], ty, {**fields, "eps": EPS})


_SHAPES = [("LayerNorm", dict(n=300, rows=5)), ("RMSNorm", dict(n=7, rows=300)),
           ("GroupNorm", dict(batch=2, channels=6, groups=3, spatial=70)),
           ("BatchNorm", dict(batch=3, channels=5, spatial=9))]


@pytest.mark.parametrize("ty", [Type.F32, Type.F16, Type.BF16], ids=str)
@pytest.mark.parametrize("in_place", [False, True], ids=["packed", "in_place"])
@pytest.mark.parametrize("name, fields", _SHAPES, ids=[s[0] for s in _SHAPES])
def test_every_array_in_one_buffer(webgpu, name, fields, in_place, ty):
    case = _case(name, ty, **fields)
    rng = np.random.default_rng(len(name))
    x = rng.uniform(-3, 5, case.arrays()["input"].elements)
    inputs = _inputs(case, x, rng)
    got = _run_one_buffer(webgpu, case, inputs, in_place)
    bad = compare(case, inputs, got)
    assert not bad, bad[:3]


def test_rows_of_subnormals_and_of_huge_values(webgpu):
    """Row 0 subnormal (scaled by 2**126), 1 near f32's largest, 2 holding +inf (all NaN), 3 ordinary."""
    case = _case("LayerNorm", n=513, rows=4)
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (4, 513))
    x[0] *= 1e-40
    x[1] *= 3e38
    x[2, 100] = np.inf
    inputs = _inputs(case, x.reshape(-1), rng)
    got = _run_one_buffer(webgpu, case, inputs)
    assert not compare(case, inputs, got), compare(case, inputs, got)[:3]
    assert np.isnan(got[2 * 513:3 * 513]).all() and np.isfinite(np.delete(got, np.s_[2 * 513:3 * 513])).all()



def test_group_workgroup_and_loop_limit_refusal_as_softmax():
    """Norm groups take Softmax's workgroups (16, 64 past 2^19 elements) and past the engine's loop limit both
    shaders are refused, naming the instruction, the type and the row or group length."""
    from atlas_web.errors import UnsupportedOperation
    from webgpu_backend.wgsl.emitter import ShaderFeatures
    from webgpu_backend.wgsl.kernels.norm import NormSpec
    from webgpu_backend.wgsl.kernels.row_walk import LONG_ROW, LONG_WORKGROUP, WORKGROUP
    from webgpu_backend.wgsl.kernels.softmax import SoftmaxSpec

    def spec(size):
        return NormSpec("LayerNorm", 1, size, 0, 0, 0, 0, 0, (0, 1, 2, 3), kind="bf16")
    assert (spec(LONG_ROW).workgroup, spec(LONG_ROW + 1).workgroup) == (WORKGROUP, LONG_WORKGROUP)
    limited = ShaderFeatures(loop_limit=4)
    assert f"@workgroup_size({WORKGROUP})" in spec(4 * WORKGROUP).source(limited)
    with pytest.raises(UnsupportedOperation, match=r"LayerNorm.*BF16.*a group of 65 elements.*4 loop iterations"):
        spec(4 * WORKGROUP + 1).source(limited)
    with pytest.raises(UnsupportedOperation, match=r"LogSoftmax.*F16.*a row of 65 elements.*(16 per workgroup)"):
        SoftmaxSpec(1, 65, True, kind="f16").source(limited)
