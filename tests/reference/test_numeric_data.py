"""Data movement (MOV, MOV_IMM, SEL) and the storage layer: dtypes, rounding, load/store, reinterpretation."""

from __future__ import annotations

import math
import random
import struct
from fractions import Fraction

import numpy as np
import pytest

from atlas_web.errors import ProgramError, TrapCode
from atlas_web.isa import Type
from atlas_web.isa.floats import float_to_bits
from atlas_web.isa.opcodes import OPCODE_TABLE
from atlas_web.reference import numeric

from .test_numeric_oracle import array_of, instruction, python_values, round_fraction, run, same_float, values_of

COVERS = [(row.name, ty) for row in OPCODE_TABLE if row.name in ("MOV", "MOV_IMM", "SEL")
          for ty in sorted(row.types, key=lambda t: t.code)]
ALL_TYPES = [pytest.param(ty, id=ty.name) for ty in Type]
_STRUCT = {Type.F16: "e", Type.F32: "f", Type.F64: "d", Type.I8: "b", Type.I16: "h", Type.I32: "i", Type.I64: "q",
           Type.U8: "B", Type.U16: "H", Type.U32: "I", Type.U64: "Q"}


def _covers(name: str) -> list:
    return [pytest.param(ty, id=ty.name) for n, ty in COVERS if n == name]


def _equal(ty: Type, got: list, want: list) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if ty.is_float():
            assert same_float(g, w), (g, w)
        else:
            assert type(g) is int and g == w, (g, w)


@pytest.mark.parametrize("ty", _covers("MOV"))
def test_mov_copies(ty):
    values = values_of(ty, count=30)
    src = array_of(ty, values)
    out = run("MOV", ty, {"src": src})
    assert out.value.dtype == src.dtype and out.value is not src and not np.shares_memory(out.value, src)
    _equal(ty, python_values(out.value), values)


@pytest.mark.parametrize("ty", _covers("MOV_IMM"))
def test_mov_imm(ty):
    immediates = [0, 1, -1, 3.75, -0.0, math.inf, math.nan, 1e300, 1.0 + 2.0 ** -30] if ty.is_float() else \
        [0, 1, ty.int_range()[1], ty.int_range()[0], -1, (1 << ty.bits) - 1]
    for immediate in immediates:
        instr = instruction("MOV_IMM", ty, value=immediate)
        out = numeric.PURE_LANE_RULES["MOV_IMM"](instr, {}, 4)
        assert out.value.shape == (4,) and out.value.dtype == numeric.storage_dtype(ty) and out.traps == ()
        if ty.is_float():
            want = immediate if not math.isfinite(immediate) else round_fraction(Fraction(immediate), ty, immediate)
        else:
            want = ty.wrap(immediate)
        _equal(ty, python_values(out.value), [want] * 4)
    assert numeric.PURE_LANE_RULES["MOV_IMM"](instruction("MOV_IMM", ty, value=1), {}, 0).value.shape == (0,)


@pytest.mark.parametrize("ty", _covers("SEL"))
def test_sel(ty):
    a, b = values_of(ty, 40, seed=2), values_of(ty, 40, seed=3)
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    rng = random.Random(ty.code)
    pred = [rng.random() < 0.5 for _ in range(n)]
    out = run("SEL", ty, {"pred": np.array(pred), "true_val": array_of(ty, a), "false_val": array_of(ty, b)})
    assert out.value.dtype == numeric.storage_dtype(ty)
    _equal(ty, python_values(out.value), [x if p else y for p, x, y in zip(pred, a, b)])


@pytest.mark.parametrize("ty", ALL_TYPES)
def test_zeros_and_constant(ty):
    z = numeric.zeros(ty, 3)
    assert z.dtype == numeric.storage_dtype(ty) and z.shape == (3,)
    _equal(ty, python_values(z), [0.0] * 3 if ty.is_float() else [0] * 3)
    if ty.is_extended():
        big = ty.int_range()[0]
        assert numeric.constant(ty, big, 2).tolist() == [big, big]


def test_storage_dtypes():
    assert numeric.storage_dtype(Type.F16) == np.float16
    assert numeric.storage_dtype(Type.BF16) == np.float32
    assert numeric.storage_dtype(Type.F64) == np.float64
    assert numeric.storage_dtype(Type.I8) == np.int8 and numeric.storage_dtype(Type.U64) == np.uint64
    assert numeric.storage_dtype(Type.I128) == np.dtype(object)
    assert numeric.storage_dtype(Type.U4096) == np.dtype(object)


def _bytes_of(ty: Type, value) -> bytes:
    if ty.is_extended():
        return int(value).to_bytes(ty.size_bytes(), "little", signed=ty.is_signed())
    if ty is Type.BF16:
        return struct.pack("<H", float_to_bits(value, Type.BF16))
    return struct.pack("<" + _STRUCT[ty], value)


@pytest.mark.parametrize("ty", ALL_TYPES)
def test_load_store_round_trip(ty):
    values = [v for v in values_of(ty, count=30, seed=4) if not (ty.is_float() and math.isnan(v))]
    raw = numeric.store(ty, array_of(ty, values))
    assert raw.dtype == np.uint8 and raw.shape == (len(values), ty.size_bytes())
    assert raw.tobytes() == b"".join(_bytes_of(ty, v) for v in values)
    loaded = numeric.load(ty, raw)
    assert loaded.dtype == numeric.storage_dtype(ty)
    _equal(ty, python_values(loaded), values)


def test_load_nan_and_bf16_bits():
    raw = np.array([[0xC0, 0x7F], [0x80, 0xFF], [0x80, 0x3F]], dtype=np.uint8)  # bf16 NaN, -inf, 1.0
    values = numeric.load(Type.BF16, raw)
    assert math.isnan(values[0]) and values[1] == -math.inf and values[2] == 1.0
    assert numeric.store(Type.BF16, values).tobytes() == raw.tobytes()


def test_load_rejects_bad_raw():
    with pytest.raises(ProgramError, match="I32"):
        numeric.load(Type.I32, np.zeros((2, 8), dtype=np.uint8))
    with pytest.raises(ProgramError):
        numeric.load(Type.I32, np.zeros((2, 4), dtype=np.int16))


@pytest.mark.parametrize("ty", [pytest.param(t, id=t.name) for t in Type if t.is_integer()])
def test_as_type_and_unsigned_index(ty):
    other = next(t for t in Type if t.is_integer() and t.bits == ty.bits and t is not ty)
    values = values_of(ty, count=20)
    reinterpreted = numeric.as_type(array_of(ty, values), ty, other)
    assert reinterpreted.dtype == numeric.storage_dtype(other)
    _equal(other, python_values(reinterpreted), [other.wrap(v) for v in values])
    unsigned = numeric.to_unsigned_index(array_of(ty, values), ty)
    assert unsigned.dtype == (object if ty.is_extended() else np.uint64)
    assert [int(v) for v in unsigned.tolist()] == [v % (1 << ty.bits) for v in values]


def test_as_type_rejects_other_widths_and_floats():
    with pytest.raises(ProgramError, match="I32"):
        numeric.as_type(np.zeros(1, np.int32), Type.I32, Type.I64)
    with pytest.raises(ProgramError):
        numeric.as_type(np.zeros(1, np.float32), Type.F32, Type.I32)
    with pytest.raises(ProgramError):
        numeric.to_unsigned_index(np.zeros(1, np.float32), Type.F32)


@pytest.mark.parametrize("ty", [pytest.param(t, id=t.name) for t in (Type.F16, Type.BF16, Type.F32, Type.F64)])
def test_round_to_and_round_once(ty):
    rng = np.random.default_rng(ty.code)
    xs = list(rng.standard_normal(300) * 10.0 ** rng.integers(-40, 40, 300))
    xs += [1.0 + 2.0 ** -8 + 2.0 ** -40, 1.0 + 2.0 ** -11 + 2.0 ** -40, 1.0 + 2.0 ** -24, 3.5e38, -1e300, 1e-50,
           -0.0, math.inf, -math.inf, math.nan, 65520.0, 65519.0, float.fromhex("0x1.ff8p127")]
    arr = np.array(xs, dtype=np.float64)
    once = numeric.round_once(ty, arr)
    through_f32 = numeric.round_to(ty, arr)
    assert once.dtype == through_f32.dtype == numeric.storage_dtype(ty)
    for x, a, b in zip(xs, once.tolist(), through_f32.tolist()):
        if math.isnan(x):
            assert math.isnan(a) and math.isnan(b)
            continue
        if math.isinf(x):
            assert a == b == x
            continue
        assert same_float(a, round_fraction(Fraction(x), ty, x if x == 0 else 1.0)), x
        if ty is Type.F64:
            want = x
        else:  # F32, F16 and BF16 results from binary64 round through f32
            via = round_fraction(Fraction(x), Type.F32, x if x == 0 else 1.0)
            want = via if math.isinf(via) else round_fraction(Fraction(via), ty, x if x == 0 else 1.0)
        assert same_float(b, want), x
    assert numeric.round_to(Type.BF16, np.array([1.0 + 2.0 ** -8 + 2.0 ** -40])).tolist() == [1.0]  # two steps
    assert numeric.round_once(Type.BF16, np.array([1.0 + 2.0 ** -8 + 2.0 ** -40])).tolist() == [1.0 + 2.0 ** -7]


def test_round_to_bf16_from_f32_keeps_nan_and_sign():
    bits = np.array([0x7F800001, 0xFF800001, 0x7FFFFFFF, 0x7F7FFFFF, 0x3F808000, 0x3F818000, 0x80000001],
                    dtype=np.uint32)
    out = numeric.round_to(Type.BF16, bits.view(np.float32)).view(np.uint32)
    assert np.isnan(out[:3].view(np.float32)).all()
    assert out[1] >> 31 == 1
    assert out[3:].tolist() == [0x7F800000, 0x3F800000, 0x3F820000, 0x80000000]


def test_outcome_shape():
    out = numeric.Outcome(np.zeros(2))
    assert out.traps == () and out.value.shape == (2,)
    out = run("DIV", Type.I32, {"lhs": array_of(Type.I32, [1, 2]), "rhs": array_of(Type.I32, [1, 1])})
    assert out.traps == ()  # masks with no lane set are left out
    out = run("DIV", Type.I32, {"lhs": array_of(Type.I32, [1, 2]), "rhs": array_of(Type.I32, [0, 1])})
    assert [code for code, _ in out.traps] == [TrapCode.DIVISION_BY_ZERO]
