"""examples.inputs in the page: JavaScript builds the bits NumPy builds natively (the browser's engine): f32 and
f64 uniforms, integers of every width up to 64 bits (BigInt arrays)."""

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
    more = [inputs.uniform_f64(rng, 1001, -1e300, 1e300, engine=engine)] + [
        inputs.randint(rng, 1001, lo, hi, code, engine=engine) for code, lo, hi in TYPED]
    result[engine] = [hashlib.sha256(bytes(values)).hexdigest(), hashlib.sha256(bytes(counts)).hexdigest(),
                      [hashlib.sha256(bytes(m)).hexdigest() for m in more], rng.random()]
"""
#: (typecode, lo, hi) of the typed randint draws: the JavaScript typed arrays of each width, BigInt ones too
TYPED = [("b", -100, 27), ("H", 0, 65535), ("i", -(1 << 31), -(1 << 31) + 1000),
         ("q", -(1 << 63), -(1 << 63) + 5), ("Q", (1 << 64) - 1000, (1 << 64) - 1)]


def test_the_page_builds_the_native_inputs_in_javascript(backends_page):
    rng = random.Random("page")
    values = inputs.uniform_f32(rng, 3001, -100, 100) + inputs.uniform_f32(rng, 5, -4, 4)
    counts = inputs.randint_u32(rng, 3001, 1, 10_000)
    more = [inputs.uniform_f64(rng, 1001, -1e300, 1e300)] + [inputs.randint(rng, 1001, lo, hi, code)
                                                            for code, lo, hi in TYPED]
    native = [hashlib.sha256(bytes(values)).hexdigest(), hashlib.sha256(bytes(counts)).hexdigest(),
              [hashlib.sha256(bytes(m)).hexdigest() for m in more], rng.random()]
    there = run_python(backends_page, f"TYPED = {TYPED!r}\n" + DRAWS)
    assert there["engine"] == "javascript"
    assert there["javascript"] == there["stdlib"] == native
