"""Softmax from reductions: ParallelReduce max and sum, ParallelMap exp, per-lane subtract and divide."""

from __future__ import annotations

import math
import random
from typing import Mapping

from atlas_web import LaunchConfig, Type

from . import BufferSpec, Example, OutputSpec, typed_array
from .inputs import uniform_f32

PROGRAM = """\
; softmax(x) = exp(x - max x) / sum(exp(x - max x)) over {n} f32 values
    preduce.max.f32 r1, [buf2 + 0], {n}     ; r1 = max x (uniform)
    mov_imm.u32 r10, {n}
    set.lt.u32 p0, r255, r10              ; p0: this lane owns element i = global lane id
    mov_imm.u32 r11, 2                    ; handle of x
    mov_imm.u32 r12, 3                    ; handle of e
    mov_imm.u32 r13, 4                    ; handle of out
    mov_imm.u32 r14, 4                    ; bytes per f32
    mul.u32 r15, r255, r14                ; byte offset of element i
    bra.!p0 @shifted                      ; spare lanes skip the per-lane part
    ldg.f32 r2, [r11 + r15]
    sub.f32 r2, r2, r1
    stg.f32 [r12 + r15], r2               ; e[i] = x[i] - max
shifted:
    pmap.exp.f32 [buf3 + 0], [buf3 + 0], {n}  ; e = exp(e)
    preduce.sum.f32 r3, [buf3 + 0], {n}     ; r3 = sum e (uniform)
    bra.!p0 @done
    ldg.f32 r4, [r12 + r15]
    div.f32 r4, r4, r3
    stg.f32 [r13 + r15], r4               ; out[i] = e[i] / sum
done:
    exit
"""


def _expected(inputs: Mapping[str, list]) -> dict[str, list]:
    xs = inputs["x"]
    top = max(xs)
    exps = [math.exp(x - top) for x in xs]
    total = math.fsum(exps)
    return {"out": [e / total for e in exps]}


def build(size: int) -> Example:
    """Softmax of ``size`` f32 values in [-4, 4], launched with one lane per value in blocks of 64."""
    rng = random.Random(f"softmax:{size}")
    return Example(
        name="softmax",
        description="exp(x - max) / sum (ParallelReduce, ParallelMap, per-lane steps)",
        program=PROGRAM.format(n=size),
        config=LaunchConfig.linear(size, 64),
        buffers=(
            BufferSpec("x", Type.F32, uniform_f32(rng, size, -4, 4)),
            BufferSpec("e", Type.F32, typed_array(Type.F32, size)),
            BufferSpec("out", Type.F32, typed_array(Type.F32, size)),
        ),
        # f32 steps against a double computation: a few ulp per step, and the sum's rounding
        outputs=(OutputSpec("out", rel_tol=1e-5, abs_tol=1e-9),),
        expected=_expected,
    )
