"""Special values come out exactly as C99 (Annex F) gives them, in every shape: NaN, infinities, signed zeros.

Each row of SPECIAL_CASES is (op, input, expected result), written out by
hand from C's definitions (and the Atlas formulas for sigmoid, swish and
gelu); pow and atan2 are checked over a grid of special operands against
NumPy's f64 functions, which follow Annex F. A NaN matches any NaN; every
other result must match bit for bit, so the sign of a zero counts.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from wasm_backend.mathlib import Shape

INF, NAN = math.inf, math.nan
MAX = {"f32": float(np.finfo(np.float32).max), "f64": float(np.finfo(np.float64).max)}
TINY = {"f32": 2.0 ** -149, "f64": 5e-324}

# (op, input, expected); "MAX"/"TINY" name the format's largest and smallest positive floats
SPECIAL_CASES: list[tuple[str, object, float]] = [
    ("exp", NAN, NAN), ("exp", INF, INF), ("exp", -INF, 0.0), ("exp", 0.0, 1.0), ("exp", -0.0, 1.0),
    ("exp", 1000.0, INF), ("exp", -1000.0, 0.0), ("exp", "MAX", INF), ("exp", "-MAX", 0.0), ("exp", "TINY", 1.0),
    ("log", NAN, NAN), ("log", INF, INF), ("log", -INF, NAN), ("log", 0.0, -INF), ("log", -0.0, -INF),
    ("log", -1.0, NAN), ("log", "-TINY", NAN), ("log", 1.0, 0.0),
    ("log2", NAN, NAN), ("log2", INF, INF), ("log2", 0.0, -INF), ("log2", -0.0, -INF), ("log2", -2.0, NAN),
    ("log2", 1.0, 0.0), ("log2", 2.0, 1.0), ("log2", 0.5, -1.0), ("log2", 1024.0, 10.0),
    ("log10", NAN, NAN), ("log10", INF, INF), ("log10", 0.0, -INF), ("log10", -0.0, -INF), ("log10", -5.0, NAN),
    ("log10", 1.0, 0.0), ("log10", 10.0, 1.0), ("log10", 1000.0, 3.0),
    ("sin", NAN, NAN), ("sin", INF, NAN), ("sin", -INF, NAN), ("sin", 0.0, 0.0), ("sin", -0.0, -0.0),
    ("sin", "TINY", "TINY"), ("sin", "-TINY", "-TINY"),
    ("cos", NAN, NAN), ("cos", INF, NAN), ("cos", -INF, NAN), ("cos", 0.0, 1.0), ("cos", -0.0, 1.0),
    ("cos", "TINY", 1.0),
    ("tan", NAN, NAN), ("tan", INF, NAN), ("tan", -INF, NAN), ("tan", 0.0, 0.0), ("tan", -0.0, -0.0),
    ("tan", "-TINY", "-TINY"),
    ("tanh", NAN, NAN), ("tanh", INF, 1.0), ("tanh", -INF, -1.0), ("tanh", 0.0, 0.0), ("tanh", -0.0, -0.0),
    ("tanh", 30.0, 1.0), ("tanh", -30.0, -1.0), ("tanh", "MAX", 1.0), ("tanh", "-TINY", "-TINY"),
    ("sigmoid", NAN, NAN), ("sigmoid", INF, 1.0), ("sigmoid", -INF, 0.0), ("sigmoid", 0.0, 0.5),
    ("sigmoid", -0.0, 0.5), ("sigmoid", 800.0, 1.0), ("sigmoid", -800.0, 0.0), ("sigmoid", "MAX", 1.0),
    ("sigmoid", "-MAX", 0.0),
    ("swish", NAN, NAN), ("swish", INF, INF), ("swish", -INF, NAN), ("swish", 0.0, 0.0), ("swish", -0.0, -0.0),
    ("swish", 1000.0, 1000.0), ("swish", -1000.0, -0.0), ("swish", "MAX", "MAX"), ("swish", "-MAX", -0.0),
    ("gelu", NAN, NAN), ("gelu", INF, INF), ("gelu", -INF, NAN), ("gelu", 0.0, 0.0), ("gelu", -0.0, -0.0),
    ("gelu", 100.0, 100.0), ("gelu", -100.0, -0.0), ("gelu", "MAX", "MAX"), ("gelu", "-MAX", -0.0),
    ("rcp", NAN, NAN), ("rcp", 0.0, INF), ("rcp", -0.0, -INF), ("rcp", INF, 0.0), ("rcp", -INF, -0.0),
    ("rcp", -2.0, -0.5), ("rcp", 1.0, 1.0),
    ("rsqrt", NAN, NAN), ("rsqrt", 0.0, INF), ("rsqrt", -0.0, -INF), ("rsqrt", INF, 0.0), ("rsqrt", -INF, NAN),
    ("rsqrt", -1.0, NAN), ("rsqrt", 4.0, 0.5), ("rsqrt", 1.0, 1.0),
]

_DTYPES = {"f32": np.float32, "f64": np.float64}


def _value(spec: object, fmt: str) -> float:
    if isinstance(spec, str):
        sign = -1.0 if spec.startswith("-") else 1.0
        return sign * {"MAX": MAX, "TINY": TINY}[spec.lstrip("-")][fmt]
    return float(spec)


def _same(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Bitwise equal, or both NaN."""
    both_nan = np.isnan(got) & np.isnan(expected)
    return both_nan | ((got == expected) & (np.signbit(got) == np.signbit(expected)))


@pytest.mark.parametrize("op", sorted({case[0] for case in SPECIAL_CASES}))
def test_unary_special_values(harness, op: str) -> None:
    cases = [case for case in SPECIAL_CASES if case[0] == op]
    for shape in Shape:
        fmt = shape.format.name
        inputs = np.array([_value(x, fmt) for _, x, _ in cases], dtype=_DTYPES[fmt])
        expected = np.array([_value(e, fmt) for _, _, e in cases], dtype=_DTYPES[fmt])
        got = harness.evaluate(op, shape, inputs)
        wrong = [(float(inputs[i]), float(got[i]), float(expected[i]))
                 for i in np.flatnonzero(~_same(got, expected))]
        assert not wrong, f"{op}/{shape.value}: (input, got, expected) {wrong}"


def _grid(fmt: str) -> np.ndarray:
    return np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, INF, -INF, NAN,
                     MAX[fmt], -MAX[fmt], TINY[fmt], -TINY[fmt]], dtype=_DTYPES[fmt])


def test_pow_c99_special_cases(harness) -> None:
    """Every pair of special operands whose C result is a special value (0, inf, NaN, 1) matches exactly."""
    for shape in Shape:
        fmt = shape.format.name
        values = _grid(fmt)
        x, y = (a.ravel() for a in np.meshgrid(values, values))
        with np.errstate(all="ignore"):
            expected = np.power(x.astype(np.float64), y.astype(np.float64)).astype(_DTYPES[fmt])
        special = np.isnan(expected) | np.isinf(expected) | (expected == 0) | (expected == 1)
        got = harness.evaluate("pow", shape, x[special], y[special])
        bad = ~_same(got, expected[special])
        wrong = [(float(a), float(b), float(g), float(e)) for a, b, g, e in
                 zip(x[special][bad], y[special][bad], got[bad], expected[special][bad])]
        assert not wrong, f"pow/{shape.value}: (x, y, got, expected) {wrong}"
        assert special.sum() > 150


def test_pow_exact_rules_listed_in_c99(harness) -> None:
    """The Annex F rules one by one, with operands beyond the grid (odd/even integers, huge y, NaN)."""
    rows = [  # (x, y, expected)
        (NAN, 0.0, 1.0), (NAN, -0.0, 1.0), (1.0, NAN, 1.0), (-1.0, INF, 1.0), (-1.0, -INF, 1.0),
        (-0.0, 3.0, -0.0), (-0.0, 4.0, 0.0), (-0.0, -3.0, -INF), (-0.0, -4.0, INF), (0.0, -3.0, INF),
        (-INF, 3.0, -INF), (-INF, 4.0, INF), (-INF, -3.0, -0.0), (-INF, -4.0, 0.0), (-INF, 0.5, INF),
        (-2.0, 0.5, NAN), (-8.0, 1.0 / 3.0, NAN), (0.5, INF, 0.0), (0.5, -INF, INF), (2.0, INF, INF),
        (2.0, -INF, 0.0), (-0.5, INF, 0.0), (-2.0, -INF, 0.0), (1.0, 1e300, 1.0), (2.0, 1e300, INF),
        (-2.0, 1e300, INF), (0.5, 1e300, 0.0), (2.0, -1e300, 0.0), (1e300, 2.0, INF), (-1e300, 3.0, -INF),
        (1e-300, 2.0, 0.0), (-1e-300, 3.0, -0.0), (NAN, 1.0, NAN), (2.0, NAN, NAN),
    ]
    x = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    expected = np.array([r[2] for r in rows])
    for shape in (Shape.F64X2, Shape.F64):
        got = harness.evaluate("pow", shape, x, y)
        bad = np.flatnonzero(~_same(got, expected))
        assert not len(bad), f"pow/{shape.value}: {[(rows[i], float(got[i])) for i in bad]}"


def test_atan2_special_grid(harness) -> None:
    """All pairs of special operands (zeros of both signs, infinities, NaN, extremes) whose C result is NaN or a
    multiple of pi/4 (0, ±pi/4, ±pi/2, ±3pi/4, ±pi, rounded to the format)."""
    for shape in Shape:
        fmt = shape.format.name
        values = _grid(fmt)
        y, x = (a.ravel() for a in np.meshgrid(values, values))
        expected = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(_DTYPES[fmt])
        constants = np.array([k * math.pi / 4 for k in range(-4, 5)], dtype=_DTYPES[fmt])
        special = np.isnan(expected) | np.isin(expected, constants)
        y, x, expected = y[special], x[special], expected[special]
        got = harness.evaluate("atan2", shape, y, x)
        bad = ~_same(got, expected)
        wrong = [(float(a), float(b), float(g), float(e)) for a, b, g, e in zip(y[bad], x[bad], got[bad],
                                                                                 expected[bad])]
        assert not wrong, f"atan2/{shape.value}: (y, x, got, expected) {wrong}"
        assert special.sum() > 150


@pytest.mark.parametrize("fmt, threshold, below, above", [
    ("f64", 709.782712893384, 1.7976931348622732e308, INF), ("f32", 88.72283172607422, 3.4027e38, INF)])
def test_exp_overflow_threshold(harness, fmt: str, threshold: float, below: float, above: float) -> None:
    """The largest x with a finite exp gives a finite result; the next float gives inf."""
    dtype = _DTYPES[fmt]
    x = np.array([threshold], dtype=dtype)
    pair = np.concatenate([x, np.nextafter(x, dtype(INF))])
    got = harness.evaluate("exp", fmt + ("x2" if fmt == "f64" else "x4"), pair)
    assert np.isfinite(got[0]) and got[0] >= dtype(below) * dtype(0.9999)
    assert got[1] == above


@pytest.mark.parametrize("fmt", ["f32", "f64"])
def test_exp_and_sigmoid_reach_the_smallest_subnormal(harness, fmt: str) -> None:
    """exp(ln(TINY)) is TINY (gradual underflow rounded once), and sigmoid of the same is too."""
    dtype = _DTYPES[fmt]
    x = np.array([math.log(TINY[fmt])], dtype=dtype)
    for op in ("exp", "sigmoid"):
        got = harness.evaluate(op, fmt, x)
        assert got[0] == dtype(TINY[fmt]), (op, got)
