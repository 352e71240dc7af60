"""The reference's normalization kernels (rows of category "normalization"): each row and type against NumPy
(float64, rounded once), in place, a row holding NaN or an infinity, the array checks (all before any write, in
operand order, lane -1), and GroupNorm's requirement (channels a multiple of groups) refused by the verifier."""

from __future__ import annotations

import math

import numpy as np
import pytest

from atlas_web import ProgramError, TrapCode
from atlas_web.isa import MOV_IMM, Address, BatchNorm, GroupNorm, LayerNorm, Register, RMSNorm, Type
from atlas_web.reference import CpuBackend
from atlas_web.verify import verify

from .executor_helpers import decode, load_arrays, prog, run, trap_of, typed_bytes

TYPES = [Type.F16, Type.BF16, Type.F32, Type.F64]
COVERS = [(name, ty) for name in ("LayerNorm", "RMSNorm", "BatchNorm", "GroupNorm") for ty in TYPES]
EPS = 1e-5
N, ROWS = 9, 3


def _rounded(ty: Type, values: np.ndarray) -> list:
    """float64 ``values`` rounded once to ``ty``, as Python floats (through the reference's bytes)."""
    return decode(ty, typed_bytes(ty, list(values)))


def _standardized(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + EPS)


def _case(name: str, ty: Type, rng) -> tuple:
    """(instruction class, shape fields, inputs as values of ty, expected float64 output)."""
    def values(count, lo=-3.0, hi=3.0):
        return np.array(_rounded(ty, rng.uniform(lo, hi, count)))

    if name in ("LayerNorm", "RMSNorm"):
        x = values(ROWS * N).reshape(ROWS, N)
        if name == "LayerNorm":
            g, b = values(N), values(N)
            return LayerNorm, dict(n=N, rows=ROWS), dict(input=x.ravel(), gamma=g, beta=b), _standardized(x) * g + b
        w = values(N)
        return RMSNorm, dict(n=N, rows=ROWS), dict(input=x.ravel(), weight=w), \
            x / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS) * w
    batch, channels, spatial = 2, 6, 5
    x = values(batch * channels * spatial).reshape(batch, channels, spatial)
    g, b = values(channels), values(channels)
    if name == "BatchNorm":
        mean, var = values(channels), values(channels, 0.1, 2.0)
        y = (x - mean[:, None]) / np.sqrt(var[:, None] + EPS) * g[:, None] + b[:, None]
        return BatchNorm, dict(batch=batch, channels=channels, spatial=spatial), \
            dict(input=x.ravel(), gamma=g, beta=b, mean=mean, variance=var), y
    y = _standardized(x.reshape(batch, 3, -1)).reshape(x.shape) * g[:, None] + b[:, None]
    return GroupNorm, dict(batch=batch, channels=channels, groups=3, spatial=spatial), \
        dict(input=x.ravel(), gamma=g, beta=b), y


def _run(name: str, ty: Type, in_place: bool = False):
    backend = CpuBackend()
    cls, fields, inputs, want = _case(name, ty, np.random.default_rng(11))
    handles = load_arrays(backend, ty, {**inputs, "output": [0.0] * want.size})
    if in_place:
        handles["output"] = handles["input"]
    addresses = {k: Address.BufferOffset(h) for k, h in handles.items()}
    run(backend, prog(cls(**addresses, **fields, eps=EPS, ty=ty)), 1)
    return decode(ty, backend.copy_from_buffer(handles["output"])), want


@pytest.mark.parametrize("ty", TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("name", ["LayerNorm", "RMSNorm", "BatchNorm", "GroupNorm"])
def test_norm_matches_numpy_rounded_once(name, ty):
    got, want = _run(name, ty)
    expected = _rounded(ty, want.ravel())
    if ty is Type.F64:   # both float64: NumPy's var and division may differ from the rule's in the last bits
        assert np.allclose(got, expected, rtol=1e-13, atol=1e-13)
    else:
        assert got == expected


@pytest.mark.parametrize("name", ["LayerNorm", "GroupNorm"])
def test_norm_in_place(name):
    got, want = _run(name, Type.F32, in_place=True)
    assert got == _rounded(Type.F32, want.ravel())


@pytest.mark.parametrize("special", [math.nan, math.inf, -math.inf])
def test_a_layer_norm_row_with_nan_or_infinity_is_all_nan(special):
    backend, ty = CpuBackend(), Type.F32
    x = np.arange(2 * N, dtype=np.float64)
    x[3] = special
    handles = load_arrays(backend, ty, dict(input=x, gamma=np.ones(N), beta=np.zeros(N), output=[0.0] * (2 * N)))
    run(backend, prog(LayerNorm(**{k: Address.BufferOffset(h) for k, h in handles.items()}, n=N, eps=EPS, rows=2)), 1)
    got = decode(ty, backend.copy_from_buffer(handles["output"]))
    assert all(math.isnan(v) for v in got[:N]) and not any(math.isnan(v) for v in got[N:])


def test_an_rms_norm_row_with_an_infinity_gives_zeros_and_nan_there():
    backend, ty = CpuBackend(), Type.F32
    x = np.arange(1.0, N + 1.0)
    x[2] = math.inf
    handles = load_arrays(backend, ty, dict(input=x, weight=np.ones(N), output=[7.0] * N))
    run(backend, prog(RMSNorm(**{k: Address.BufferOffset(h) for k, h in handles.items()}, n=N, eps=EPS)), 1)
    got = decode(ty, backend.copy_from_buffer(handles["output"]))
    assert math.isnan(got[2]) and [v for i, v in enumerate(got) if i != 2] == [0.0] * (N - 1)


def test_a_constant_row_gives_beta():
    backend, ty = CpuBackend(), Type.F32
    beta = np.linspace(-1, 1, N)
    handles = load_arrays(backend, ty, dict(input=[2.5] * N, gamma=np.full(N, 3.0), beta=beta, output=[0.0] * N))
    run(backend, prog(LayerNorm(**{k: Address.BufferOffset(h) for k, h in handles.items()}, n=N, eps=EPS)), 1)
    assert decode(ty, backend.copy_from_buffer(handles["output"])) == _rounded(ty, beta)


def test_norm_checks_every_array_before_writing():
    backend, ty = CpuBackend(), Type.F32
    handles = load_arrays(backend, ty, dict(input=[1.0] * (ROWS * N), gamma=[1.0] * N, output=[0.0] * (ROWS * N)))
    short = int(backend.allocate_buffer((N - 1) * 4))   # beta one element short: checked last
    layer = LayerNorm(output=Address.BufferOffset(handles["output"]), input=Address.BufferOffset(handles["input"]),
                      gamma=Address.BufferOffset(handles["gamma"]), beta=Address.RegisterIndirect(Register(1), 0),
                      n=N, eps=EPS, rows=ROWS)
    program = prog(MOV_IMM(dst=Register(1), value=short << 32, ty=Type.U64), layer)
    assert trap_of(backend, program, 2) == (TrapCode.OUT_OF_BOUNDS, 1, -1)
    assert decode(ty, backend.copy_from_buffer(handles["output"])) == [0.0] * (ROWS * N)


def test_group_norm_needs_channels_a_multiple_of_groups():
    a = Address.BufferOffset(2)
    with pytest.raises(ProgramError, match="groups"):
        verify(prog(GroupNorm(output=a, input=a, gamma=a, beta=a, batch=1, channels=6, groups=4, spatial=2,
                              eps=EPS)))
    with pytest.raises(ProgramError, match="groups"):
        verify(prog(GroupNorm(output=a, input=a, gamma=a, beta=a, batch=1, channels=0, groups=0, spatial=2,
                              eps=EPS)))
    verify(prog(GroupNorm(output=a, input=a, gamma=a, beta=a, batch=1, channels=6, groups=3, spatial=2, eps=EPS)))


@pytest.mark.parametrize("name", ["LayerNorm", "RMSNorm", "BatchNorm", "GroupNorm"])
def test_a_negative_or_nan_eps_is_refused_naming_eps(name):
    """eps is added to a variance: a negative one made v + eps negative (NaN rows) or zero; the verifier's
    requires column refuses it (and NaN) with ProgramError naming the operand; 0 and +inf stay allowed."""
    a = Address.BufferOffset(2)
    cls, fields, inputs, _ = _case(name, Type.F32, np.random.default_rng(1))

    def instr(eps):
        return cls(output=a, **dict.fromkeys(inputs, a), **fields, eps=eps, ty=Type.F32)

    for bad in (-1e-5, -1.0, math.nan, -math.inf):
        with pytest.raises(ProgramError, match=r"operand 'eps': eps is negative or NaN .*eps="):
            verify(prog(instr(bad)))
    for good in (0.0, EPS, math.inf):
        verify(prog(instr(good)))
