"""Transcendental lane rules on every float type against Python's math (glibc) in binary64.

The reference computes in binary64 with NumPy, whose functions may differ
from glibc's by a few ulp, and rounds f64 -> f32 -> format. So each result
must lie between the rounded images of ``math``'s value moved a few binary64
ulp down and up (rounding is monotone), and SQRT, correctly rounded
everywhere, must match exactly. SIGMOID, SWISH and GELU are checked against
their correctly rounded values (mpmath, test_numeric_activations_f64) within
1 binary64 ulp.
"""

from __future__ import annotations

import math
from functools import partial

import pytest

from atlas_web.isa import Type
from atlas_web.isa.floats import round_float
from atlas_web.isa.opcodes import FLOATS, OPCODE_TABLE

from .test_numeric_activations_f64 import exact_activation
from .test_numeric_oracle import array_of, float_values, run, same_float

NAN, INF = math.nan, math.inf


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return INF


def _log(fn):
    def oracle(x: float) -> float:
        if math.isnan(x) or x < 0:
            return NAN
        if x == 0:
            return -INF
        return fn(x)
    return oracle


def _periodic(fn):
    return lambda x: NAN if math.isinf(x) else fn(x)


ORACLES = {
    "EXP": (_exp, 2), "LOG": (_log(math.log), 2), "LOG2": (_log(math.log2), 2), "LOG10": (_log(math.log10), 3),
    "SQRT": (lambda x: NAN if x < 0 else math.sqrt(x), 0),
    "SIN": (_periodic(math.sin), 2), "COS": (_periodic(math.cos), 2), "TAN": (_periodic(math.tan), 2),
    "TANH": (math.tanh, 4),
    # the correctly rounded formulas (mpmath): the reference's F64 values are within 1 ulp of them
    **{name: (partial(exact_activation, name), 1) for name in ("SIGMOID", "SWISH", "GELU")},
}
COVERS = [(row.name, ty) for row in OPCODE_TABLE if row.name in ORACLES
          for ty in sorted(row.types & FLOATS, key=lambda t: t.code)]


def chain(x: float, ty: Type) -> float:
    """f64 -> f32 -> format, the contract's rounding of a binary64 result."""
    return round_float(round_float(x, Type.F32), ty) if ty is not Type.F64 else x


def _moved(x: float, ulps: int) -> float:
    for _ in range(abs(ulps)):
        x = math.nextafter(x, math.copysign(INF, ulps))
    return x


def check(ty: Type, x: float, got: float, name: str) -> None:
    fn, ulps = ORACLES[name]
    want = fn(x)
    if math.isnan(want) or math.isinf(want) or ulps == 0 or want == 0:
        assert same_float(got, chain(want, ty)), (name, x, got, want)
        return
    lo, hi = chain(_moved(want, -ulps), ty), chain(_moved(want, ulps), ty)
    assert lo <= got <= hi, (name, x, got, want, lo, hi)


def inputs(ty: Type) -> list[float]:
    extra = [0.1, -0.1, 0.5, 3.0, -3.0, 10.0, -10.0, 20.0, -20.0, 88.0, -88.0, 89.0, -104.0, 710.0, -745.0,
             1e-8, -1e-8, 1e5, 1e10, 1e22, math.pi, -math.pi / 2]
    values = float_values(ty, count=300, seed=41) + [round_float(v, ty) for v in extra]
    return values


@pytest.mark.parametrize("name, ty", [pytest.param(n, t, id=f"{n}-{t.name}") for n, t in COVERS])
def test_transcendental(name, ty):
    xs = inputs(ty)
    out = run(name, ty, {"src": array_of(ty, xs)})
    assert out.traps == () and out.value.dtype == array_of(ty, [0.0]).dtype
    for x, got in zip(xs, out.value.tolist()):
        check(ty, x, got, name)


def test_special_values():
    ty = Type.F32
    cases = {
        "EXP": [(INF, INF), (-INF, 0.0), (1000.0, INF)], "LOG": [(0.0, -INF), (-0.0, -INF), (-1.0, NAN)],
        "SQRT": [(-0.0, -0.0), (-1.0, NAN), (INF, INF)], "SIN": [(-0.0, -0.0), (INF, NAN)],
        "TANH": [(INF, 1.0), (-INF, -1.0), (-0.0, -0.0)], "SIGMOID": [(INF, 1.0), (-INF, 0.0), (-1000.0, 0.0)],
        "SWISH": [(-INF, NAN), (INF, INF), (-1000.0, -0.0)], "GELU": [(-INF, NAN), (INF, INF), (-0.0, -0.0)],
    }
    for name, pairs in cases.items():
        got = run(name, ty, {"src": array_of(ty, [p[0] for p in pairs])}).value.tolist()
        for (x, want), value in zip(pairs, got):
            assert same_float(value, want), (name, x, value, want)


def test_gelu_has_no_cancellation():
    ty = Type.F64
    got = run("GELU", ty, {"src": array_of(ty, [-5.0, -20.0])}).value.tolist()
    # GELU(-20) to 20 digits is -3.3754509563109673197e-261 (mpmath; the binary64 formula is 290 ulp off)
    assert abs(got[1] - (-3.3754509563109673197e-261)) <= math.ulp(got[1])
    # GELU(-5) to 50 digits is -2.2917961966295060e-07; the literal tanh form in binary64 is 3e-17 off
    assert abs(got[0] - (-2.2917961966295060e-07)) <= 8 * math.ulp(got[0])
