"""Float lane rules (F16, BF16, F32, F64) against exact rational arithmetic rounded by the oracle.

F16 and BF16 are computed in f32 and rounded to the format after every
instruction, so the oracle rounds the exact result to F32 first, then to the
format; F32 and F64 round once.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from atlas_web.isa import Type
from atlas_web.isa.enums import Condition
from atlas_web.isa.opcodes import FLOATS, OPCODE_TABLE

from .test_numeric_oracle import array_of, float_values, random_floats, round_fraction, run, same_float, to_format

F64 = np.float64


def compute_type(ty: Type) -> Type:
    return Type.F32 if ty in (Type.F16, Type.BF16) else ty


def finish(ty: Type, value: float) -> float:
    """A value of the compute type rounded to ``ty``."""
    return to_format(value, ty)


def rounded(ty: Type, exact: Fraction, zero_sign: float) -> float:
    return round_fraction(exact, ty, zero_sign)


def ieee_binary(name: str, ty: Type, a: float, b: float) -> float:
    """a name b rounded once to ``ty`` (IEEE special cases from binary64, exact values from Fractions)."""
    with np.errstate(all="ignore"):
        special = {"ADD": F64(a) + F64(b), "SUB": F64(a) - F64(b), "MUL": F64(a) * F64(b),
                   "DIV": F64(a) / F64(b), "REM": np.fmod(F64(a), F64(b))}[name]
    if not (math.isfinite(a) and math.isfinite(b)) or (name in ("DIV", "REM") and b == 0):
        return float(special)  # an infinity, NaN, or (for REM by inf) a itself: exact
    x, y = Fraction(a), Fraction(b)
    if name == "REM":
        return rounded(ty, x - int(x / y) * y, a)  # the remainder has the sign of a, zero included
    exact = {"ADD": lambda: x + y, "SUB": lambda: x - y, "MUL": lambda: x * y, "DIV": lambda: x / y}[name]()
    return rounded(ty, exact, float(special) if special == 0 else 1.0)


def ieee_min(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == 0 and b == 0:
        return -0.0 if (math.copysign(1, a) < 0 or math.copysign(1, b) < 0) else 0.0
    return a if a < b else b


def ieee_max(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == 0 and b == 0:
        return 0.0 if (math.copysign(1, a) > 0 or math.copysign(1, b) > 0) else -0.0
    return a if a > b else b


def binary_oracle(name: str, ty: Type, a: float, b: float) -> float:
    ct = compute_type(ty)
    if name == "MIN":
        return ieee_min(a, b)
    if name == "MAX":
        return ieee_max(a, b)
    return finish(ty, ieee_binary(name, ct, a, b))


def correctly_rounded_sqrt(x: float, ty: Type) -> float:
    """sqrt(x) rounded once to ``ty``, via an integer square root with a sticky bit."""
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0 or math.isinf(x):
        return x
    scaled = Fraction(x) * 2 ** 2400  # an integer: every float's denominator divides 2**1074
    assert scaled.denominator == 1
    root = math.isqrt(scaled.numerator)
    sticky = 1 if root * root != scaled.numerator else 0
    return round_fraction(Fraction(2 * root + sticky, 2 ** 1201), ty)


def _integral(fn, x: float) -> float:
    if not math.isfinite(x):
        return x
    return math.copysign(float(fn(x)), x)  # a zero result keeps the sign of x


def unary_oracle(name: str, ty: Type, x: float) -> float:
    ct = compute_type(ty)
    if name == "ABS":
        return abs(x)
    if name == "NEG":
        return -x
    if name == "SIGN":
        return 1.0 if x > 0 else (-1.0 if x < 0 else x)
    if name == "RCP":
        return finish(ty, ieee_binary("DIV", ct, 1.0, x))
    if name == "RSQRT":
        return finish(ty, ieee_binary("DIV", ct, 1.0, correctly_rounded_sqrt(x, ct)))
    fn = {"FLOOR": math.floor, "CEIL": math.ceil, "ROUND": round, "TRUNC": math.trunc}[name]
    return _integral(fn, x)  # Python's round() of a float is half to even


def ternary_oracle(name: str, ty: Type, a: float, b: float, c: float) -> float:
    ct = compute_type(ty)
    if name == "CLAMP":
        return ieee_min(ieee_max(a, b), c)
    # LERP(a, b, t) = a + t*(b - a), each step rounded in the compute type
    diff = ieee_binary("SUB", ct, b, a)
    return finish(ty, ieee_binary("ADD", ct, a, ieee_binary("MUL", ct, c, diff)))


BINARY = ("ADD", "SUB", "MUL", "DIV", "REM", "MIN", "MAX")
UNARY = ("ABS", "NEG", "SIGN", "RCP", "RSQRT", "FLOOR", "CEIL", "ROUND", "TRUNC")
TERNARY = {"CLAMP": ("src", "min", "max"), "LERP": ("a", "b", "t")}

COVERS = [(row.name, ty) for row in OPCODE_TABLE if row.name in set(BINARY) | set(UNARY) | set(TERNARY) | {"SETcc"}
          for ty in sorted(row.types & FLOATS, key=lambda t: t.code)]


def _covers(names) -> list:
    return [pytest.param(name, ty, id=f"{name}-{ty.name}") for name, ty in COVERS if name in names]


def _pairs(ty: Type) -> tuple[list[float], list[float]]:
    specials = float_values(ty, count=0)
    pairs = list(itertools.product(specials, specials))
    xs = random_floats(ty, 300, seed=11)
    ys = random_floats(ty, 300, seed=12)
    pairs += list(zip(xs, ys))
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _assert_lanes(ty: Type, got: np.ndarray, expected: list[float], inputs: list[tuple]) -> None:
    assert got.dtype == array_of(ty, [0.0]).dtype
    for value, want, args in zip(got.tolist(), expected, inputs):
        assert same_float(value, want), (args, value, want)


@pytest.mark.parametrize("name, ty", _covers(BINARY))
def test_binary(name, ty):
    xs, ys = _pairs(ty)
    out = run(name, ty, {"lhs": array_of(ty, xs), "rhs": array_of(ty, ys)})
    assert out.traps == ()
    _assert_lanes(ty, out.value, [binary_oracle(name, ty, a, b) for a, b in zip(xs, ys)], list(zip(xs, ys)))


@pytest.mark.parametrize("name, ty", _covers(UNARY))
def test_unary(name, ty):
    xs = float_values(ty, count=400, seed=13) + [0.5, -0.5, 1.5, 2.5, -2.5, 3.5, -3.5, 0.49999997, 4.5]
    xs = [to_format(x, ty) for x in xs]
    out = run(name, ty, {"src": array_of(ty, xs)})
    _assert_lanes(ty, out.value, [unary_oracle(name, ty, x) for x in xs], [(x,) for x in xs])


@pytest.mark.parametrize("name, ty", _covers(TERNARY))
def test_ternary(name, ty):
    specials = float_values(ty, count=0)[:12]
    triples = list(itertools.product(specials, specials, specials))
    triples += list(zip(random_floats(ty, 300, 14), random_floats(ty, 300, 15), random_floats(ty, 300, 16)))
    columns = [list(c) for c in zip(*triples)]
    out = run(name, ty, {f: array_of(ty, c) for f, c in zip(TERNARY[name], columns)})
    _assert_lanes(ty, out.value, [ternary_oracle(name, ty, *t) for t in triples], triples)


@pytest.mark.parametrize("name, ty", _covers({"SETcc"}))
def test_setcc(name, ty):
    xs, ys = _pairs(ty)
    for cond in Condition:
        out = run("SETcc", ty, {"lhs": array_of(ty, xs), "rhs": array_of(ty, ys)}, cond=cond)
        assert out.value.dtype == np.bool_
        for got, a, b in zip(out.value.tolist(), xs, ys):
            unordered = math.isnan(a) or math.isnan(b)
            relation = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
                        "ltu": a < b, "leu": a <= b, "gtu": a > b, "geu": a >= b}[cond.text]
            want = (unordered or relation) if cond.text.endswith("u") else relation
            assert got == want, (cond, a, b)


def test_min_max_signed_zero_and_nan():
    ty = Type.F32
    a = array_of(ty, [0.0, -0.0, math.nan, 1.0, -0.0])
    b = array_of(ty, [-0.0, 0.0, 1.0, math.nan, -0.0])
    lo = run("MIN", ty, {"lhs": a, "rhs": b}).value.tolist()
    hi = run("MAX", ty, {"lhs": a, "rhs": b}).value.tolist()
    assert [math.copysign(1, v) for v in lo[:2]] == [-1, -1] and math.isnan(lo[2]) and math.isnan(lo[3])
    assert [math.copysign(1, v) for v in hi[:2]] == [1, 1] and math.copysign(1, hi[4]) == -1


def test_f16_double_rounding_is_by_definition():
    # 2049 * 1 in f16: the f32 product is exact and then rounds to f16's 2048 (ties to even)
    ty = Type.F16
    out = run("MUL", ty, {"lhs": array_of(ty, [2048.0, 65504.0]), "rhs": array_of(ty, [1.0009765625, 2.0])})
    assert out.value.tolist() == [2050.0, math.inf]


def test_bf16_results_are_representable():
    ty = Type.BF16
    xs, ys = _pairs(ty)
    out = run("DIV", ty, {"lhs": array_of(ty, xs), "rhs": array_of(ty, ys)})
    bits = out.value.view(np.uint32)
    finite_or_inf = ~np.isnan(out.value)
    assert ((bits[finite_or_inf] & 0xFFFF) == 0).all()
    assert np.isnan(out.value[~finite_or_inf]).all() and ((bits[~finite_or_inf] & 0x7F800000) == 0x7F800000).all()
