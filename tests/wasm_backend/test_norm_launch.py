"""LayerNorm, RMSNorm, GroupNorm and BatchNorm launched on the wasm backend: every row length around the kernels'
blocks (8 elements in the reductions, 4 in the passes, then one by one) for each type, F32 rows that take the f32x4
pass and rows that must take the f64 one (huge values, a mean below f32's normal range, NaN), and in place.
Outputs are compared with NumPy within the contract's bound (tests/conformance's ``compare``); the conformance
suite runs the rows' generated cases and their traps (a short array traps with the reference's numbers and
writes nothing)."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import Address
from atlas_web.isa import OPCODE_TABLE, Type
from atlas_web.isa.instructions import LayerNorm, RMSNorm

from tests.conformance.case_tools import launch_alone
from tests.conformance.matrix_cases import decode_array, encode_array, run_with_arrays
from tests.conformance.norm_cases import EPS, NormCase, compare

_ROWS = {info.name: info for info in OPCODE_TABLE if info.category == "normalization"}
_DTYPE = {Type.F32: np.float32, Type.F64: np.float64}


def _run(backend, name: str, ty: Type, fields: dict, inputs: dict):
    case = NormCase(f"{name}.{ty.name}", _ROWS[name], ty, {**fields, "eps": EPS})
    arrays = case.arrays()
    inputs = {key: decode_array(arrays[key].ty, encode_array(arrays[key].ty, values)) for key, values in
              inputs.items()}
    raw, trap = run_with_arrays(backend, case, arrays, inputs, "output")
    assert trap is None, trap
    return case, inputs, decode_array(ty, raw)


def _norm_inputs(name: str, rng, x: np.ndarray, n: int, channels: int = 0) -> dict:
    size = channels or n
    inputs = {"output": np.full(x.size, 7.0), "input": x.reshape(-1)}
    names = {"LayerNorm": ("gamma", "beta"), "RMSNorm": ("weight",), "GroupNorm": ("gamma", "beta"),
             "BatchNorm": ("gamma", "beta", "mean", "variance")}[name]
    for key in names:
        inputs[key] = rng.uniform(0.05, 4.0, size) if key == "variance" else rng.uniform(-2, 2, size)
    return inputs


@pytest.mark.parametrize("ty", [Type.F32, Type.F64, Type.F16, Type.BF16])
@pytest.mark.parametrize("name", ["LayerNorm", "RMSNorm"])
def test_rows_of_every_length_around_the_blocks(backends, name, ty):
    rng = np.random.default_rng(3)
    for n in (1, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 33):
        x = rng.uniform(-3, 5, (3, n))
        case, inputs, got = _run(backends[1], name, ty, dict(n=n, rows=3), _norm_inputs(name, rng, x, n))
        assert not compare(case, inputs, got), (n, compare(case, inputs, got)[:3])


@pytest.mark.parametrize("name", ["LayerNorm", "RMSNorm"])
def test_f32_rows_on_both_passes(backends, name):
    """Row 0 ordinary (f32x4 pass); 1 huge (n * v past 2**250: f64 pass); 2 tiny, its mean below 2**-100
    (f64 pass); 3 offset (mean 1000, spread 0.01); 4 holds a NaN; 5 constant."""
    rng = np.random.default_rng(8)
    n = 37
    x = rng.uniform(-4, 4, (6, n))
    x[1] = rng.uniform(-1, 1, n) * 3e38
    x[2] = rng.uniform(0, 1, n) * 1e-35
    x[3] = 1000 + rng.uniform(-0.01, 0.01, n)
    x[4, 5] = np.nan
    x[5] = 2.5
    case, inputs, got = _run(backends[1], name, Type.F32, dict(n=n, rows=6), _norm_inputs(name, rng, x, n))
    assert not compare(case, inputs, got), compare(case, inputs, got)[:3]
    assert np.isnan(got[4 * n:5 * n]).all() and np.isfinite(np.delete(got, np.s_[4 * n:5 * n])).all()


@pytest.mark.parametrize("ty", [Type.F32, Type.F64, Type.F16])
def test_group_and_batch_norm_channel_runs(backends, ty):
    rng = np.random.default_rng(4)
    for batch, channels, groups, spatial in ((1, 1, 1, 1), (2, 6, 3, 5), (3, 4, 2, 9), (1, 8, 8, 13)):
        x = rng.uniform(-3, 3, batch * channels * spatial)
        for name, fields in (("GroupNorm", dict(batch=batch, channels=channels, groups=groups, spatial=spatial)),
                             ("BatchNorm", dict(batch=batch, channels=channels, spatial=spatial))):
            case, inputs, got = _run(backends[1], name, ty, fields,
                                     _norm_inputs(name, rng, x, spatial, channels))
            assert not compare(case, inputs, got), (name, fields, compare(case, inputs, got)[:3])


def _in_place(backend, cls, ty, x, params: dict, **fields):
    handles = {}
    for key, data in (("input", x), *params.items()):
        handles[key] = int(backend.allocate_buffer(data.nbytes))
        backend.copy_to_buffer(handles[key], data.tobytes())
    trap = launch_alone(backend, cls(output=Address.BufferOffset(handles["input"]),
                                     **{key: Address.BufferOffset(h) for key, h in handles.items()}, ty=ty, eps=EPS,
                                     **fields))
    out = np.frombuffer(bytes(backend.copy_from_buffer(handles["input"]))[:x.nbytes], x.dtype).copy()
    for handle in handles.values():
        backend.free_buffer(handle)
    return out, trap


@pytest.mark.parametrize("ty", [Type.F32, Type.F64])
def test_in_place_matches_the_reference(backends, reference, ty):
    rng = np.random.default_rng(6)
    n, rows = 21, 4
    x = rng.uniform(-2, 3, rows * n).astype(_DTYPE[ty])
    gamma, beta = (rng.uniform(-2, 2, n).astype(_DTYPE[ty]) for _ in range(2))
    for cls, params in ((LayerNorm, {"gamma": gamma, "beta": beta}), (RMSNorm, {"weight": gamma})):
        got, trap = _in_place(backends[1], cls, ty, x, params, n=n, rows=rows)
        want, _ = _in_place(reference, cls, ty, x, params, n=n, rows=rows)
        assert trap is None
        tolerance = 1e-5 if ty is Type.F32 else 1e-12
        assert np.allclose(got, want, rtol=tolerance, atol=tolerance), cls.__name__

