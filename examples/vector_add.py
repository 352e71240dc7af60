"""Vector add: ``out = a + b`` as one cooperative ParallelMapBinary step."""

from __future__ import annotations

import random
from typing import Mapping

from atlas_web import LaunchConfig, Type

from . import BufferSpec, Example, OutputSpec, typed_array
from .inputs import uniform_f32

PROGRAM = """\
; out[i] = a[i] + b[i] for i < {n}: one grid-wide step, run once per launch
    pmap2.add.f32 [buf4 + 0], [buf2 + 0], [buf3 + 0], {n}
    exit
"""


def _expected(inputs: Mapping[str, list]) -> dict[str, list]:
    # the f32 sum of two f32 values is the double sum rounded once
    return {"out": typed_array(Type.F32, [a + b for a, b in zip(inputs["a"], inputs["b"])]).tolist()}


def build(size: int) -> Example:
    """Vector add of ``size`` f32 values (one lane: a cooperative step needs no lanes of its own)."""
    rng = random.Random(f"vector_add:{size}")
    return Example(
        name="vector_add",
        description="out = a + b (ParallelMapBinary)",
        program=PROGRAM.format(n=size),
        config=LaunchConfig(),
        buffers=(
            BufferSpec("a", Type.F32, uniform_f32(rng, size, -100, 100)),
            BufferSpec("b", Type.F32, uniform_f32(rng, size, -100, 100)),
            BufferSpec("out", Type.F32, typed_array(Type.F32, size)),
        ),
        outputs=(OutputSpec("out"),),
        expected=_expected,
    )
