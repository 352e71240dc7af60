"""Every op in every shape stays within its published ulp bound over its sweep, against correctly rounded results.

The sweeps (wasm_backend/mathlib/sweeps.py) cover each op's documented
range: uniform points where the function changes, log-uniform magnitudes
over the whole finite domain (tiny and subnormal inputs too), and the floats
at and next to thresholds (overflow, underflow, 1 for the logarithms,
multiples of pi/2 up to 2**20 and huge arguments up to the largest float for
sin/cos/tan). The plain form runs every shape; the relaxed-SIMD form
(relaxed_madd fused on this host) runs the vector shapes.
"""

from __future__ import annotations

import numpy as np
import pytest

from wasm_backend.mathlib import MATH_OPS, Shape, ulp_bound
from wasm_backend.mathlib.reference import correctly_rounded, ulp_distance
from wasm_backend.mathlib.sweeps import sweep

POINTS = {"f32": 30_000, "f64": 2_500}
OPS = sorted(MATH_OPS)
_cache: dict[tuple[str, str], tuple[list[np.ndarray], np.ndarray]] = {}


def inputs_and_expected(op: str, fmt: str) -> tuple[list[np.ndarray], np.ndarray]:
    """The sweep of (op, fmt) and its correctly rounded results (computed once per test session)."""
    key = (op, fmt)
    if key not in _cache:
        inputs = sweep(op, fmt, POINTS[fmt], seed=11)
        _cache[key] = (inputs, correctly_rounded(op, fmt, *inputs))
    return _cache[key]


def worst(harness, op: str, shape: Shape) -> tuple[int, str]:
    inputs, expected = inputs_and_expected(op, shape.format.name)
    got = harness.evaluate(op, shape, *inputs)
    distance = ulp_distance(got, expected, shape.format.name)
    at = int(distance.argmax())
    where = ", ".join(repr(float(a[at])) for a in inputs)
    return int(distance.max()), f"{op}/{shape.value} at ({where}): got {got[at]!r}, expected {expected[at]!r}"


@pytest.mark.parametrize("op", OPS)
def test_within_published_bound(harness, op: str) -> None:
    for shape in Shape:
        error, detail = worst(harness, op, shape)
        assert error <= ulp_bound(op, shape), f"{error} ulp > bound {ulp_bound(op, shape)}: {detail}"


@pytest.mark.parametrize("op", OPS)
def test_relaxed_simd_within_published_bound(relaxed_harness, op: str) -> None:
    for shape in (Shape.F32X4, Shape.F64X2):
        error, detail = worst(relaxed_harness, op, shape)
        assert error <= ulp_bound(op, shape), f"relaxed: {error} ulp > bound {ulp_bound(op, shape)}: {detail}"


@pytest.mark.parametrize("op", OPS)
def test_scalar_shapes_equal_vector_lanes(harness, op: str) -> None:
    """Scalar functions run the vector code, so they agree with it bit for bit."""
    for scalar in (Shape.F32, Shape.F64):
        inputs, _ = inputs_and_expected(op, scalar.format.name)
        part = [a[:500] for a in inputs]
        vector = harness.evaluate(op, scalar.vector, *part)
        single = harness.evaluate(op, scalar, *part)
        assert np.array_equal(vector.view(np.uint8), single.view(np.uint8)) or np.array_equal(
            vector, single, equal_nan=True), f"{op}: {scalar.value} differs from {scalar.vector.value}"


def test_exp_f32_dense_over_its_whole_range(harness) -> None:
    """Every 4099th f32 between -104 and 89 (both exp paths: exponent-field scaling and the two-step one)."""
    step = 4099
    positive = np.arange(0, np.float32(89.0).view(np.int32), step, dtype=np.int32).view(np.float32)
    negative = -np.arange(0, np.float32(104.0).view(np.int32), step, dtype=np.int32).view(np.float32)
    x = np.concatenate([positive, negative])
    distance = ulp_distance(harness.evaluate("exp", "f32x4", x), correctly_rounded("exp", "f32", x), "f32")
    assert int(distance.max()) <= ulp_bound("exp", "f32x4")


def test_sin_cos_tan_near_multiples_of_half_pi(harness) -> None:
    """The doubles nearest k*pi/2 (k up to 2**40, through both reductions) and their neighbours."""
    import mpmath
    rng = np.random.default_rng(5)
    ks = np.concatenate([np.arange(1, 200), rng.integers(200, 2 ** 20, 150), rng.integers(2 ** 20, 2 ** 40, 100)])
    with mpmath.workprec(200):
        centres = np.array([float(int(k) * mpmath.pi / 2) for k in ks])
    x = np.concatenate([centres, np.nextafter(centres, np.inf), np.nextafter(centres, -np.inf), -centres])
    for op in ("sin", "cos", "tan"):
        distance = ulp_distance(harness.evaluate(op, "f64x2", x), correctly_rounded(op, "f64", x), "f64")
        assert int(distance.max()) <= ulp_bound(op, "f64x2"), op
