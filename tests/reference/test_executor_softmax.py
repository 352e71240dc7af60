"""The reference's softmax kernels (rows of category "softmax"): each row and type against NumPy (float64, rounded
once), in place, huge logits, rows holding NaN, +inf, -inf elements or only -inf, empty shapes, and the array
checks (all before any write, in operand order, lane -1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from atlas_web import TrapCode
from atlas_web.isa import MOV_IMM, Address, LogSoftmax, Register, Softmax, Type
from atlas_web.reference import CpuBackend

from .executor_helpers import decode, prog, run, trap_of, typed_bytes

TYPES = [Type.F16, Type.BF16, Type.F32, Type.F64]
COVERS = [(name, ty) for name in ("Softmax", "LogSoftmax") for ty in TYPES]
CLASSES = {"Softmax": Softmax, "LogSoftmax": LogSoftmax}
N, ROWS = 9, 3


def _rounded(ty: Type, values: np.ndarray) -> list:
    """float64 ``values`` rounded once to ``ty``, as Python floats (through the reference's bytes)."""
    return decode(ty, typed_bytes(ty, list(values)))


def _numpy(name: str, x: np.ndarray) -> np.ndarray:
    d = x - x.max(axis=-1, keepdims=True)
    if name == "Softmax":
        return np.exp(d) / np.exp(d).sum(axis=-1, keepdims=True)
    return d - np.log(np.exp(d).sum(axis=-1, keepdims=True))


def _run(name: str, ty: Type, x: np.ndarray, *, in_place: bool = False, n: int = N, rows: int = ROWS) -> list:
    """The output of ``name`` over ``x`` (values of ty) on the reference, as Python floats."""
    backend = CpuBackend()
    handles = {}
    for key, values in (("input", list(x.reshape(-1))), ("output", [7.0] * x.size)):
        handles[key] = int(backend.allocate_buffer(max(1, len(values) * ty.size_bytes())))
        backend.copy_to_buffer(handles[key], typed_bytes(ty, values))
    if in_place:
        handles["output"] = handles["input"]
    addresses = {k: Address.BufferOffset(h) for k, h in handles.items()}
    run(backend, prog(CLASSES[name](**addresses, n=n, rows=rows, ty=ty)), 1)
    return decode(ty, backend.copy_from_buffer(handles["output"]))


def _logits(ty: Type, scale: float = 6.0) -> np.ndarray:
    x = np.random.default_rng(11).uniform(-scale, scale, (ROWS, N))
    return np.array(_rounded(ty, x.reshape(-1))).reshape(ROWS, N)


@pytest.mark.parametrize("ty", TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_softmax_matches_numpy_rounded_once(name, ty):
    x = _logits(ty)
    got = _run(name, ty, x)
    expected = _rounded(ty, _numpy(name, x).reshape(-1))
    if ty is Type.F64:   # both float64: NumPy's sum order may differ from the rule's in the last bits
        assert np.allclose(got, expected, rtol=1e-14, atol=1e-15)
    else:
        assert got == expected


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_softmax_in_place(name):
    x = _logits(Type.F32)
    assert _run(name, Type.F32, x, in_place=True) == _rounded(Type.F32, _numpy(name, x).reshape(-1))


def test_softmax_rows_sum_to_one_and_huge_logits_do_not_overflow():
    x = _logits(Type.F32, 3e38)   # exp(x) alone overflows; max-subtracted it does not
    got = np.array(_run("Softmax", Type.F32, x)).reshape(ROWS, N)
    assert np.all(np.isfinite(got)) and np.allclose(got.sum(axis=1), 1.0, rtol=1e-6)
    log = np.array(_run("LogSoftmax", Type.F32, x)).reshape(ROWS, N)
    assert np.max(log) == 0.0 and np.all(log[np.isfinite(log)] <= 0)


@pytest.mark.parametrize("special", [math.nan, math.inf])
@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_a_row_with_nan_or_plus_infinity_is_all_nan(name, special):
    x = _logits(Type.F32)
    x[1, 4] = special
    got = np.array(_run(name, Type.F32, x)).reshape(ROWS, N)
    assert np.all(np.isnan(got[1])) and not np.any(np.isnan(got[[0, 2]]))


def test_minus_infinity_gives_zero_and_a_row_of_only_minus_infinity_is_nan():
    x = _logits(Type.F32)
    x[0, 2] = -math.inf
    x[2, :] = -math.inf
    soft = np.array(_run("Softmax", Type.F32, x)).reshape(ROWS, N)
    log = np.array(_run("LogSoftmax", Type.F32, x)).reshape(ROWS, N)
    assert soft[0, 2] == 0.0 and log[0, 2] == -math.inf and np.isclose(soft[0].sum(), 1.0)
    assert np.all(np.isnan(soft[2])) and np.all(np.isnan(log[2])) and not np.any(np.isnan(soft[:2]))


@pytest.mark.parametrize("n, rows", [(0, 3), (4, 0)])
def test_an_empty_shape_writes_nothing(n, rows):
    got = _run("Softmax", Type.F32, np.ones(12), n=n, rows=rows)
    assert got == [7.0] * 12


def test_softmax_checks_every_array_before_writing():
    backend, ty = CpuBackend(), Type.F32
    output = int(backend.allocate_buffer(ROWS * N * 4))
    backend.copy_to_buffer(output, typed_bytes(ty, [0.0] * (ROWS * N)))
    short = int(backend.allocate_buffer((ROWS * N - 1) * 4))   # the input one element short: checked second
    program = prog(MOV_IMM(dst=Register(1), value=short << 32, ty=Type.U64),
                   Softmax(output=Address.BufferOffset(output), input=Address.RegisterIndirect(Register(1), 0),
                           n=N, rows=ROWS))
    assert trap_of(backend, program, 2) == (TrapCode.OUT_OF_BOUNDS, 1, -1)
    assert decode(ty, backend.copy_from_buffer(output)) == [0.0] * (ROWS * N)
