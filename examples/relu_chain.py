"""A chain of ParallelMap steps: ``sqrt(relu(x) + relu(-x))``, that is ``sqrt(|x|)``."""

from __future__ import annotations

import math
import random
from typing import Mapping

from atlas_web import LaunchConfig, Type

from . import BufferSpec, Example, OutputSpec, typed_array
from .inputs import uniform_f32

PROGRAM = """\
; out = sqrt(relu(x) + relu(-x)) = sqrt(|x|), five grid-wide steps over {n} values
    pmap.relu.f32 [buf3 + 0], [buf2 + 0], {n}              ; pos = relu(x)
    pmap.neg.f32 [buf4 + 0], [buf2 + 0], {n}               ; neg = -x
    pmap.relu.f32 [buf4 + 0], [buf4 + 0], {n}              ; neg = relu(-x)
    pmap2.add.f32 [buf5 + 0], [buf3 + 0], [buf4 + 0], {n}  ; out = |x|
    pmap.sqrt.f32 [buf5 + 0], [buf5 + 0], {n}              ; out = sqrt(|x|)
    exit
"""


def _expected(inputs: Mapping[str, list]) -> dict[str, list]:
    xs = inputs["x"]
    return {
        "pos": [x if x > 0 else 0.0 for x in xs],
        "neg": [-x if x < 0 else 0.0 for x in xs],
        # sqrt in double, rounded to f32, is the correctly rounded f32 sqrt
        "out": typed_array(Type.F32, [math.sqrt(abs(x)) for x in xs]).tolist(),
    }


def build(size: int) -> Example:
    """The chain over ``size`` f32 values in [-50, 50] (a few exact zeros included)."""
    rng = random.Random(f"relu_chain:{size}")
    xs = uniform_f32(rng, size, -50, 50)
    xs[::17] = typed_array(Type.F32, len(range(0, size, 17)))  # exact zeros
    return Example(
        name="relu_chain",
        description="sqrt(relu(x) + relu(-x)) (five ParallelMap steps)",
        program=PROGRAM.format(n=size),
        config=LaunchConfig(),
        buffers=(
            BufferSpec("x", Type.F32, xs),
            BufferSpec("pos", Type.F32, typed_array(Type.F32, size)),
            BufferSpec("neg", Type.F32, typed_array(Type.F32, size)),
            BufferSpec("out", Type.F32, typed_array(Type.F32, size)),
        ),
        outputs=(OutputSpec("pos"), OutputSpec("neg"), OutputSpec("out", rel_tol=1e-6)),
        expected=_expected,
    )
