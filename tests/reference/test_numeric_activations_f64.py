"""F64 SIGMOID, SWISH and GELU of the reference against the correctly rounded formulas (mpmath).

The contract (docs/semantics.md, Transcendentals): in F64 each is within 1 ulp
of the correctly rounded value of its formula (GELU with the real numbers
sqrt(2/pi) and 0.044715), over the whole range, subnormal results included;
the other float types round that f64 value. ``exact_activation`` is the
oracle other reference tests use: the formula evaluated by mpmath with
enough precision (more for tiny x, where the result is x/2 plus a term
2**-1075 smaller) and rounded to f64 exactly through a Fraction. The double-
double helpers are checked here too: exact sums and products, exp to 2**-62,
one rounding into the subnormal range.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from atlas_web.isa import Type
from atlas_web.isa.enums import MapOperation
from atlas_web.reference import numeric
from atlas_web.reference.numeric_double_double import exp_scaled, round_scaled, two_product, two_sum
from atlas_web.reference.numeric_formats import round_to
from atlas_web.reference.numeric_transcendentals import UNARY

__all__ = ["exact_activation", "COVERS"]

COVERS = ([(name, Type.F64) for name in ("SIGMOID", "SWISH", "GELU")]
          + [(f"MAP:{op}", Type.F64) for op in ("Sigmoid", "Swish", "Gelu")])

_GELU_CUBIC = "0.044715"      # exact; made an mpf at the working precision
_PRECISION = 200
_MAPS = {"SIGMOID": MapOperation.Sigmoid, "SWISH": MapOperation.Swish, "GELU": MapOperation.Gelu}


def _mp_sigmoid(x):
    return 1 / (1 + mpmath.exp(-x))


def _mp_gelu(x):
    u = mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf(_GELU_CUBIC) * x ** 3)
    return x / (1 + mpmath.exp(-2 * u))


#: name -> (formula on mpf, x above which the value rounds to x, x below which it rounds to -0 (x*0))
_FORMULAS = {
    "SIGMOID": (_mp_sigmoid, None, None),                   # exp(-x) evaluated only for |x| <= 1200
    "SWISH": (lambda x: x * _mp_sigmoid(x), 50.0, -800.0),   # |x*e**x| < 2**-1100 below -800
    "GELU": (_mp_gelu, 50.0, -50.0),                        # 2z < -8000 below -50
}


def _to_f64(value) -> float:
    """An mpf rounded once to f64 (nearest, ties to even, subnormals included; Fraction division rounds once)."""
    sign, man, exp, bits = value._mpf_
    if exp + bits < -1100:                          # below 2**-1100: rounds to 0 (and no huge Fraction)
        return -0.0 if sign else 0.0
    magnitude = float(Fraction(man) * Fraction(2) ** exp) if man else 0.0
    return -magnitude if sign else magnitude


def exact_activation(name: str, x: float) -> float:
    """The correctly rounded f64 value of SIGMOID, SWISH or GELU at x (special values as the formulas give)."""
    formula, pass_through, zero_below = _FORMULAS[name]
    if math.isnan(x):
        return math.nan
    if math.isinf(x):
        if name == "SIGMOID":
            return 1.0 if x > 0 else 0.0
        return x if x > 0 else math.nan            # -inf * 0, -inf / inf
    if x == 0 and name != "SIGMOID":
        return x
    if name == "SIGMOID" and abs(x) > 1200:         # 1 - e**-1200 rounds to 1; e**-1200 < 2**-1731 to 0
        return 1.0 if x > 0 else 0.0
    if pass_through is not None and x > pass_through:
        return x
    if zero_below is not None and x < zero_below:
        return -0.0
    extra = max(0, -math.frexp(x)[1])               # tiny x: x/2 and a term x**2 apart
    with mpmath.workprec(_PRECISION + extra):
        value = formula(mpmath.mpf(x))
    result = _to_f64(value)
    return math.copysign(result, x) if result == 0 and name != "SIGMOID" else result


def _ordinal(x: float) -> int:
    bits = int(np.float64(x).view(np.int64))
    return bits if bits >= 0 else -(bits & 0x7FFF_FFFF_FFFF_FFFF)


def _ulps(got: float, want: float) -> float:
    if math.isnan(got) or math.isnan(want):
        return 0.0 if math.isnan(got) and math.isnan(want) else math.inf
    if math.isinf(got) or math.isinf(want):
        return 0.0 if got == want else math.inf
    return float(abs(_ordinal(got) - _ordinal(want)))


def _max_ulps(name: str, xs: np.ndarray, got: np.ndarray) -> tuple[float, float]:
    worst, at = 0.0, math.nan
    for x, value in zip(xs.tolist(), got.tolist()):
        distance = _ulps(value, exact_activation(name, x))
        if distance > worst:
            worst, at = distance, x
    return worst, at


_RNG_SEED = 20240611
_SWEEPS = {
    "SIGMOID": [(-5, 5), (-40, 40), (-745.2, -708.0), (-760, -600), (0, 40), (-1e-3, 1e-3)],
    "SWISH": [(-5, 5), (-40, 40), (-752, -714), (-745, -700), (-800, -740), (0, 45)],
    "GELU": [(-5, 5), (-10, 10), (-21.6, -21.1), (-22.5, -20.5), (-25, -15), (-40, -25), (0, 45)],
}
_SWEEP_SIZE = 300
_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 40.0, 40.5, -40.0, -40.5, 50.0, -50.0, -745.0, -745.1332, -751.75,
          -800.0, -800.5, -21.5470, -21.1769, 2.0 ** -1074, -(2.0 ** -1074), 3 * 2.0 ** -1074, -3 * 2.0 ** -1074,
          2.0 ** -1022, -(2.0 ** -1022), 3 * 2.0 ** -1023, 2.0 ** -1021 * 1.5, 1e-300, -1e-300, 2.0 ** -500,
          -(2.0 ** -27), 1e-8, 1e300, -1e300, 1.7976931348623157e308, -1.7976931348623157e308]


def _sweep(name: str) -> list[pytest.param]:
    rng = np.random.default_rng(_RNG_SEED)
    cases = [pytest.param(np.array(_EDGES), id="edges")]
    for lo, hi in _SWEEPS[name]:
        cases.append(pytest.param(rng.uniform(lo, hi, _SWEEP_SIZE), id=f"[{lo},{hi}]"))
    exponents = rng.uniform(-1074, 10, _SWEEP_SIZE)
    signs = rng.choice([-1.0, 1.0], _SWEEP_SIZE)
    cases.append(pytest.param(signs * np.exp2(exponents), id="log-uniform"))
    return cases


@pytest.mark.parametrize("name, xs", [pytest.param(n, c.values[0], id=f"{n}-{c.id}")
                                      for n in _SWEEPS for c in _sweep(n)])
def test_f64_within_one_ulp_of_the_correctly_rounded_formula(name, xs):
    got = UNARY[name](Type.F64, xs)
    worst, at = _max_ulps(name, xs, got)
    assert worst <= 1, (name, worst, at)


@pytest.mark.parametrize("name", list(_MAPS))
def test_parallel_map_f64_within_one_ulp(name):
    rng = np.random.default_rng(_RNG_SEED + 1)
    xs = np.concatenate([rng.uniform(-30, 30, 200), rng.uniform(-760, -700, 100), rng.uniform(-21.6, -21.1, 100)])
    got = numeric.MAP_OPS[_MAPS[name]](Type.F64, xs)
    worst, at = _max_ulps(name, xs, got)
    assert worst <= 1, (name, worst, at)


def test_special_values():
    q = 2.0 ** -1074
    xs = np.array([math.nan, math.inf, -math.inf, 0.0, -0.0, -1000.0, 1000.0, -1e308, q, -q, 3 * q, -3 * q])
    want = {   # x*sigmoid(c*x) = x/2 + (c/4)*x**2 near 0: the ties at odd multiples of 2**-1074 break upward
        "SIGMOID": [math.nan, 1.0, 0.0, 0.5, 0.5, 0.0, 1.0, 0.0, 0.5, 0.5, 0.5, 0.5],
        "SWISH": [math.nan, math.inf, math.nan, 0.0, -0.0, -0.0, 1000.0, -0.0, q, -0.0, 2 * q, -q],
        "GELU": [math.nan, math.inf, math.nan, 0.0, -0.0, -0.0, 1000.0, -0.0, q, -0.0, 2 * q, -q],
    }
    for name, values in want.items():
        got = UNARY[name](Type.F64, xs).tolist()
        for x, value, expected in zip(xs.tolist(), got, values):
            same = (math.isnan(value) and math.isnan(expected)) or (
                value == expected and math.copysign(1, value) == math.copysign(1, expected))
            assert same, (name, x, value, expected)


@pytest.mark.parametrize("name", list(_MAPS))
def test_other_types_round_the_f64_value(name):
    xs = np.random.default_rng(_RNG_SEED + 2).normal(0, 20, 2000)
    f64 = UNARY[name](Type.F64, xs)
    for ty in (Type.F32, Type.F16, Type.BF16):
        narrow = round_to(ty, xs).astype(np.float64) if ty is not Type.F32 else xs.astype(np.float32)
        with np.errstate(all="ignore"):
            expected = round_to(ty, UNARY[name](Type.F64, np.asarray(narrow, dtype=np.float64)))
        got = UNARY[name](ty, narrow)
        assert np.array_equal(got.view(np.uint8), np.asarray(expected).view(np.uint8)), (name, ty)
    assert f64.dtype == np.float64


@pytest.mark.parametrize("name", list(_MAPS))
def test_blocks_agree_with_single_elements(name):
    xs = np.random.default_rng(_RNG_SEED + 3).uniform(-30, 30, 40_000)      # more than two blocks
    whole = UNARY[name](Type.F64, xs)
    picks = [0, 1, 16_383, 16_384, 16_385, 32_767, 32_768, 39_999]
    for i in picks:
        assert whole[i] == UNARY[name](Type.F64, xs[i:i + 1])[0], (name, i)


def test_two_sum_and_two_product_are_exact():
    rng = np.random.default_rng(_RNG_SEED + 4)
    a = rng.normal(0, 1, 500) * np.exp2(rng.integers(-60, 60, 500))
    b = rng.normal(0, 1, 500) * np.exp2(rng.integers(-60, 60, 500))
    s, s_err = two_sum(a, b)
    p, p_err = two_product(a, b)
    for x, y, hi, lo, phi, plo in zip(a.tolist(), b.tolist(), s.tolist(), s_err.tolist(), p.tolist(), p_err.tolist()):
        assert Fraction(hi) + Fraction(lo) == Fraction(x) + Fraction(y)
        assert Fraction(phi) + Fraction(plo) == Fraction(x) * Fraction(y)


def test_exp_scaled_relative_error_below_2_to_minus_62():
    rng = np.random.default_rng(_RNG_SEED + 5)
    t_hi = np.concatenate([rng.uniform(-1300, 1300, 400), rng.uniform(-1, 1, 100), [0.0, -0.0, 1e-300]])
    t_lo = t_hi * rng.uniform(-2.0 ** -54, 2.0 ** -54, t_hi.size)
    k, e_hi, e_lo = exp_scaled(t_hi, t_lo)
    with mpmath.workprec(200):
        for th, tl, kk, eh, el in zip(t_hi.tolist(), t_lo.tolist(), k.tolist(), e_hi.tolist(), e_lo.tolist()):
            exact = mpmath.exp(mpmath.mpf(th) + mpmath.mpf(tl))
            got = mpmath.ldexp(mpmath.mpf(eh) + mpmath.mpf(el), kk)
            assert abs(got / exact - 1) < mpmath.mpf(2) ** -62, (th, tl)
            assert 0.98 < eh < 2.03


def test_round_scaled_rounds_once_into_subnormals():
    quantum = 2.0 ** -1074
    # hi*2**k exactly half-way between subnormals; lo decides, ties go to even
    hi = np.array([1.5, 1.5, 1.5, 2.5, 2.5, -1.5, -1.5, 1.0, 1.25])
    lo = np.array([2.0 ** -60, -(2.0 ** -60), 0.0, 0.0, 2.0 ** -60, -(2.0 ** -60), 2.0 ** -60, 0.0, 2.0 ** -55])
    k = np.full(hi.size, -1074)
    got = (round_scaled(hi, lo, k) / quantum).tolist()
    assert got == [2.0, 1.0, 2.0, 2.0, 3.0, -2.0, -1.0, 1.0, 1.0]
    normal = round_scaled(np.array([1.0, 3.0]), np.array([2.0 ** -53, 2.0 ** -52]), np.array([-1000, 5]))
    assert normal.tolist() == [2.0 ** -1000, 96.0]
