"""Shared fixtures: one harness module holding every math op in every shape (plain and relaxed SIMD)."""

from __future__ import annotations

import pytest

from wasm_backend.mathlib import MATH_OPS, Shape
from wasm_backend.mathlib.harness import MathHarness

ALL_PAIRS = [(op, shape) for op in sorted(MATH_OPS) for shape in Shape]


@pytest.fixture(scope="session")
def harness() -> MathHarness:
    """Every op in every shape, plain multiplies and adds only (the default form)."""
    return MathHarness(ALL_PAIRS)


@pytest.fixture(scope="session")
def relaxed_harness() -> MathHarness:
    """Every op in every shape with relaxed_madd (fused on this host when it has FMA)."""
    return MathHarness(ALL_PAIRS, relaxed_simd=True)
