"""Independent oracles for the numeric tests, and tests of the oracles themselves.

The numeric tests compare ``atlas_web.reference.numeric`` with values
computed here by other means: Python ints for integers, ``fractions.Fraction``
for exact float arithmetic, and ``round_fraction`` (exact rounding of a
rational to any ISA float format) for every rounding.
"""

from __future__ import annotations

import math
import random
import struct
from fractions import Fraction

import numpy as np
import pytest

from atlas_web.isa import INSTRUCTION_CLASSES, OperandKind, Predicate, Register, Type
from atlas_web.isa.enums import Condition
from atlas_web.isa.floats import round_float
from atlas_web.reference import numeric

#: this module tests the oracles only
COVERS: list = []

# significand bits (with the hidden one), minimum normal exponent, maximum exponent
FORMATS = {Type.F16: (11, -14, 15), Type.BF16: (8, -126, 127), Type.F32: (24, -126, 127), Type.F64: (53, -1022, 1023)}
FLOAT_TYPES = (Type.F16, Type.BF16, Type.F32, Type.F64)


def largest_finite(ty: Type) -> Fraction:
    p, _, emax = FORMATS[ty]
    return (2 - Fraction(1, 2 ** (p - 1))) * Fraction(2) ** emax


def round_fraction(x: Fraction, ty: Type, zero_sign: float = 1.0) -> float:
    """The exact rational ``x`` rounded to nearest even in ``ty`` (±inf beyond); a zero gets ``zero_sign``'s sign."""
    if x == 0:
        return math.copysign(0.0, zero_sign)
    p, emin, emax = FORMATS[ty]
    negative = x < 0
    m = -x if negative else x
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if Fraction(2) ** e > m:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - p + 1)
    r = round(m / quantum) * quantum  # round() of a Fraction is half to even
    if r > largest_finite(ty):
        value = math.inf
    else:
        value = float(r)  # exact: r is representable
    return -value if negative else value


def exact(x: float) -> Fraction:
    return Fraction(x)


def same_float(a: float, b: float) -> bool:
    """Equal as IEEE data: both NaN, or equal with the same sign (so -0 differs from +0)."""
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def to_format(x: float, ty: Type) -> float:
    """A Python float (f64) rounded once to ``ty``."""
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x
    return round_fraction(Fraction(x), ty)  # a nonzero value that underflows keeps its sign


def ulp(x: float, ty: Type) -> float:
    """The spacing of ``ty`` at |x| (the distance to the next representable magnitude)."""
    p, emin, _ = FORMATS[ty]
    if x == 0 or not math.isfinite(x):
        return math.ldexp(1.0, emin - p + 1)
    e = math.frexp(abs(x))[1] - 1
    return math.ldexp(1.0, max(e, emin) - p + 1)


# --- value sets ------------------------------------------------------------------------------


def float_specials(ty: Type) -> list[float]:
    p, emin, emax = FORMATS[ty]
    tiny = math.ldexp(1.0, emin - p + 1)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, 0.25, 100.0, -7.0,
              math.inf, -math.inf, math.nan, tiny, -tiny, math.ldexp(1.0, emin), -math.ldexp(1.0, emin),
              math.ldexp(1.0, emin) - tiny, float(largest_finite(ty)), -float(largest_finite(ty)),
              1.0 + math.ldexp(1.0, 1 - p), 1.0 - math.ldexp(1.0, -p)]
    return [to_format(v, ty) for v in values]


def random_floats(ty: Type, count: int, seed: int, *, finite: bool = False) -> list[float]:
    """Random values of ``ty``: half from random bit patterns (any class), half moderate normals."""
    rng = np.random.default_rng(seed)
    half = count // 2
    if ty is Type.F64:
        pattern = rng.integers(0, 2 ** 64, half, dtype=np.uint64).view(np.float64)
    elif ty is Type.F32:
        pattern = rng.integers(0, 2 ** 32, half, dtype=np.uint64).astype(np.uint32).view(np.float32)
    elif ty is Type.F16:
        pattern = rng.integers(0, 2 ** 16, half, dtype=np.uint64).astype(np.uint16).view(np.float16)
    else:
        pattern = (rng.integers(0, 2 ** 16, half, dtype=np.uint64).astype(np.uint32) << np.uint32(16)).view(np.float32)
    moderate = rng.standard_normal(count - half) * 10.0 ** rng.integers(-3, 4, count - half)
    values = [float(v) for v in pattern.tolist()] + [to_format(float(v), ty) for v in moderate.tolist()]
    if finite:
        values = [v for v in values if math.isfinite(v)]
    return values


def float_values(ty: Type, count: int = 60, seed: int = 1) -> list[float]:
    return float_specials(ty) + random_floats(ty, count, seed)


def int_values(ty: Type, count: int = 40, seed: int = 1) -> list[int]:
    lo, hi = ty.int_range()
    rng = random.Random(seed * 1000 + ty.code)
    edges = [0, 1, 2, 3, 7, hi, hi - 1, ty.wrap(-1), ty.wrap(-2), lo, lo + 1, hi // 2, ty.wrap(hi // 2 + 1)]
    randoms = [ty.wrap(rng.getrandbits(ty.bits)) for _ in range(count)]
    smalls = [ty.wrap(rng.randint(-300, 300)) for _ in range(count // 4)]
    return list(dict.fromkeys(edges + randoms + smalls))


def values_of(ty: Type, count: int = 60, seed: int = 1) -> list:
    return float_values(ty, count, seed) if ty.is_float() else int_values(ty, count, seed)


def array_of(ty: Type, values: list) -> np.ndarray:
    """Python values (representable in ``ty``) as an array in ``ty``'s storage dtype."""
    if ty.is_extended():
        out = np.empty(len(values), dtype=object)
        out[:] = [int(v) for v in values]
        return out
    return np.array(values, dtype=numeric.storage_dtype(ty))


def python_values(values: np.ndarray) -> list:
    """An array's values as Python floats/ints."""
    return [v if isinstance(v, int) else (float(v) if isinstance(v, float) else v) for v in values.tolist()]


# --- instructions ----------------------------------------------------------------------------


def instruction(name: str, ty: Type | None = None, **fields):
    """An instruction of class ``name`` with registers r1…, predicate p1 and ``ty`` (fields override)."""
    cls = INSTRUCTION_CLASSES[name]
    info = cls.INFO
    kwargs: dict = {}
    for number, operand in enumerate(info.operands, start=1):
        if operand.kind is OperandKind.REG:
            kwargs[operand.name] = Register(number)
        elif operand.kind is OperandKind.PRED:
            kwargs[operand.name] = Predicate(number)
        elif operand.kind is OperandKind.ENUM and operand.rule is Condition:
            kwargs[operand.name] = Condition.EQ
        elif operand.kind is OperandKind.IMM:
            kwargs[operand.name] = 0
    if info.type_fields == ("ty",):
        kwargs["ty"] = ty
    kwargs.update(fields)
    return cls(**kwargs)


def run(name: str, ty: Type | None, operands: dict, n: int | None = None, **fields) -> numeric.Outcome:
    """Run PURE_LANE_RULES[name] on the operand arrays; checks the result's shape and returns the Outcome."""
    instr = instruction(name, ty, **fields)
    if n is None:
        n = len(next(iter(operands.values())))
    outcome = numeric.PURE_LANE_RULES[name](instr, operands, n)
    assert isinstance(outcome, numeric.Outcome)
    assert outcome.value.shape == (n,)
    return outcome


def trap_of(outcome: numeric.Outcome, lane: int):
    """The first trap code whose mask holds ``lane``, or None."""
    for code, mask in outcome.traps:
        assert mask.dtype == np.bool_
        if mask[lane]:
            return code
    return None


# --- tests of the oracles ---------------------------------------------------------------------


@pytest.mark.parametrize("ty, fmt", [(Type.F32, "<f"), (Type.F16, "<e")])
def test_round_fraction_matches_struct(ty, fmt):
    rng = np.random.default_rng(5)
    xs = list(rng.standard_normal(2000) * 10.0 ** rng.integers(-8, 5, 2000))
    xs += [1 + 2.0 ** -11 + 2.0 ** -30, 1 + 2.0 ** -24, 1 + 2.0 ** -24 + 2.0 ** -50, 65519.0, 65520.0]
    for x in xs:
        expected = struct.unpack(fmt, struct.pack(fmt, x))[0] if abs(x) < 65504 or ty is Type.F32 else None
        got = round_fraction(Fraction(x), ty)
        if expected is not None:
            assert same_float(got, expected), (x, got, expected)
        assert same_float(got, round_float(x, ty)), x


def test_round_fraction_overflow_and_ties():
    assert round_fraction(Fraction(65520), Type.F16) == math.inf  # the tie above 65504 rounds to even: overflow
    assert round_fraction(Fraction(65519), Type.F16) == 65504.0
    assert round_fraction(Fraction(1) + Fraction(1, 2 ** 24), Type.F32) == 1.0
    assert round_fraction(Fraction(1) + Fraction(3, 2 ** 24), Type.F32) == 1.0 + 2.0 ** -22
    assert round_fraction(Fraction(1, 2 ** 150), Type.F32) == 0.0  # the tie at half the smallest subnormal
    assert round_fraction(Fraction(3, 2 ** 151), Type.F32) == 2.0 ** -149
    assert same_float(round_fraction(Fraction(-1, 2 ** 200), Type.F32), -0.0)
    assert round_fraction(Fraction(257), Type.BF16) == 256.0 and round_fraction(Fraction(259), Type.BF16) == 260.0


def test_value_sets_are_representable():
    for ty in FLOAT_TYPES:
        for v in float_values(ty, 40):
            if math.isfinite(v):
                assert same_float(round_fraction(Fraction(v), ty, v), v)
    for ty in (Type.I8, Type.U64, Type.I4096):
        lo, hi = ty.int_range()
        assert all(lo <= v <= hi for v in int_values(ty))
