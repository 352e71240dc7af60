"""examples.inputs in the page: JavaScript builds the bits NumPy builds natively (the browser's engine)."""

from __future__ import annotations

import hashlib
import random

from examples import inputs

from .conftest import run_python

DRAWS = """
import hashlib, random
from examples import inputs
result = {"engine": inputs.engine_name()}
for engine in ("javascript", "stdlib"):
    rng = random.Random("page")
    values = inputs.uniform_f32(rng, 3001, -100, 100, engine=engine) + inputs.uniform_f32(rng, 5, -4, 4, engine=engine)
    counts = inputs.randint_u32(rng, 3001, 1, 10_000, engine=engine)
    result[engine] = [hashlib.sha256(bytes(values)).hexdigest(), hashlib.sha256(bytes(counts)).hexdigest(),
                      rng.random()]
"""


def test_the_page_builds_the_native_inputs_in_javascript(backends_page):
    rng = random.Random("page")
    values = inputs.uniform_f32(rng, 3001, -100, 100) + inputs.uniform_f32(rng, 5, -4, 4)
    counts = inputs.randint_u32(rng, 3001, 1, 10_000)
    native = [hashlib.sha256(bytes(values)).hexdigest(), hashlib.sha256(bytes(counts)).hexdigest(), rng.random()]
    there = run_python(backends_page, DRAWS)
    assert there["engine"] == "javascript"
    assert there["javascript"] == there["stdlib"] == native
