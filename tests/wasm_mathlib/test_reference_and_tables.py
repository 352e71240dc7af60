"""The measuring tools and the published tables: correct rounding, ulp distances, the fitter, the 2/pi chunks,
the sweeps, and the measured table in measured.py and docs/wasm-mathlib.md (which must not drift)."""

from __future__ import annotations

import math
import pathlib
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from wasm_backend.mathlib import MATH_OPS, MEASURED, Shape, accuracy_markdown, measured_accuracy, ulp_bound
from wasm_backend.mathlib.coefficients import COEFFICIENTS, coefficients
from wasm_backend.mathlib.fit import ROUTINE_SPECS, remez, round_to_format
from wasm_backend.mathlib.large_reduction import TWO_OVER_PI_CHUNKS
from wasm_backend.mathlib.reference import correctly_rounded, round_rational, ulp_distance
from wasm_backend.mathlib.sweeps import SWEEP_TEXT, SWEEPS, sweep

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "wasm-mathlib.md"


def test_round_rational_is_correct_rounding_with_subnormals_and_overflow() -> None:
    assert round_rational(Fraction(1, 3), "f64") == 1 / 3
    assert round_rational(Fraction(1, 3), "f32") == float(np.float32(1 / 3))
    assert round_rational(Fraction(3, 2 ** 1075), "f64") == 2 * 5e-324          # 1.5 quanta: ties to even
    assert round_rational(Fraction(3, 2 ** 1076), "f64") == 5e-324              # 0.75 quanta
    assert round_rational(Fraction(1, 2 ** 1075), "f64") == 0.0                 # half a quantum: ties to even 0
    assert round_rational(Fraction(-1, 2 ** 150) * 3, "f32") == -(2.0 ** -148)
    assert round_rational(Fraction(2) ** 128, "f32") == math.inf
    assert round_rational(Fraction(2 ** 128 - 2 ** 103), "f32") == math.inf     # max + half ulp rounds up (even)
    assert round_rational(Fraction(2 ** 128 - 2 ** 103 - 1), "f32") == float(np.finfo(np.float32).max)


def test_ulp_distance_counts_representable_values() -> None:
    a = np.array([1.0, -1.0, 0.0, -0.0, np.nan, np.inf, 5e-324, np.nan])
    b = np.array([np.nextafter(1.0, 2.0), -1.0, -0.0, 5e-324, np.nan, np.finfo(np.float64).max, -5e-324, 1.0])
    assert ulp_distance(a, b, "f64").tolist()[:7] == [1, 0, 0, 1, 0, 1, 2]
    assert ulp_distance(a, b, "f64")[7] > 2 ** 60
    assert ulp_distance(np.float32([1.0]), np.float32([1.0000002]), "f32").tolist() == [2]


def test_f32_fast_path_agrees_with_mpmath() -> None:
    x = np.random.default_rng(1).uniform(-20.0, 20.0, 300).astype(np.float32)
    fast = correctly_rounded("tanh", "f32", x)
    with mpmath.workprec(160):
        exact = np.array([float(mpmath.tanh(mpmath.mpf(float(v)))) for v in x]).astype(np.float32)
    assert np.array_equal(fast, exact)


def test_reference_keeps_c_special_values() -> None:
    got = correctly_rounded("pow", "f64", np.array([-0.0, -8.0, 0.0]), np.array([-3.0, 1 / 3, -1.0]))
    assert got[0] == -math.inf and math.isnan(got[1]) and got[2] == math.inf


def test_remez_finds_the_known_linear_minimax_of_exp() -> None:
    """The best line for e**x on [0, 1] has slope e - 1 and absolute error (see Cheney): a closed form."""
    result = remez(mpmath.exp, lambda t: mpmath.mpf(1), 0.0, 1.0, 2, grid_size=400)
    slope = math.e - 1
    x_star = math.log(slope)                           # where e**x has the line's slope
    error = (math.exp(x_star) - slope * x_star - 1) / 2
    assert float(result.coefficients[1]) == pytest.approx(slope, abs=1e-6)
    assert float(result.max_error) == pytest.approx(abs(error), rel=1e-3)


def test_every_coefficient_row_has_a_spec_and_is_rounded_to_its_format() -> None:
    for (routine, fmt), values in COEFFICIENTS.items():
        spec = ROUTINE_SPECS[routine]
        assert spec.terms[fmt] == len(values), (routine, fmt)
        assert all(round_to_format(v, fmt) == v for v in values), (routine, fmt)
    with pytest.raises(KeyError, match="no coefficients for SIN_S in f32"):
        coefficients("SIN_S", "f32")


def test_two_over_pi_chunks_are_the_digits_of_two_over_pi() -> None:
    with mpmath.workprec(1600):
        value = sum(mpmath.mpf(c) * mpmath.mpf(2) ** (-24 * (i + 1)) for i, c in enumerate(TWO_OVER_PI_CHUNKS))
        assert abs(value - 2 / mpmath.pi) < mpmath.mpf(2) ** (-24 * len(TWO_OVER_PI_CHUNKS))


@pytest.mark.parametrize("fmt", ["f32", "f64"])
def test_sweeps_cover_every_op_with_finite_inputs(fmt: str) -> None:
    assert set(SWEEPS) == set(MATH_OPS) == set(SWEEP_TEXT)
    for op in MATH_OPS:
        arrays = sweep(op, fmt, 400, seed=3)
        assert len(arrays) == MATH_OPS[op].arity
        assert all(a.dtype == (np.float32 if fmt == "f32" else np.float64) for a in arrays)
        assert all(np.isfinite(a).all() and a.size >= 300 for a in arrays), op


def test_measured_table_covers_every_op_and_shape_within_bounds() -> None:
    rows = measured_accuracy()
    assert len(rows) == len(MATH_OPS) * len(Shape)
    for row in rows:
        assert (row["op"], row["shape"]) in MEASURED
        assert row["measured"] is not None and row["measured"] <= ulp_bound(row["op"], row["shape"]), row
        assert row["points"] >= 10_000, row


def test_docs_carry_the_current_table() -> None:
    text = DOC.read_text()
    start = text.index("<!-- accuracy table: generated -->") + len("<!-- accuracy table: generated -->")
    end = text.index("<!-- end of accuracy table -->")
    assert text[start:end].strip() == accuracy_markdown().strip(), (
        "docs/wasm-mathlib.md is stale: run python3 benchmarks/wasm_mathlib_accuracy.py --write")
