"""A per-lane kernel with branches and a loop: Collatz step counts, one lane per value."""

from __future__ import annotations

import random
from typing import Mapping

from atlas_web import LaunchConfig, Type

from . import BufferSpec, Example, OutputSpec, typed_array
from .inputs import randint_u32

PROGRAM = """\
; out[i] = the number of Collatz steps (x -> x/2 if even, else 3x + 1) from x[i] to 1
    mov_imm.u32 r10, {n}
    set.ge.u32 p0, r255, r10
    bra.p0 @done                  ; spare lanes (global lane id >= {n}) do nothing
    mov_imm.u32 r11, 2            ; handle of x
    mov_imm.u32 r12, 3            ; handle of out
    mov_imm.u32 r1, 4
    mul.u32 r13, r255, r1         ; byte offset of element i
    ldg.u32 r2, [r11 + r13]       ; x
    mov_imm.u32 r3, 0             ; steps
    mov_imm.u32 r4, 1
    mov_imm.u32 r5, 3
loop:
    set.le.u32 p1, r2, r4         ; x <= 1: finished
    bra.p1 @store
    and.u32 r6, r2, r4
    set.eq.u32 p2, r6, r4
    bra.p2 @odd
    shr.u32 r2, r2, r4            ; even: x = x >> 1
    bra @next
odd:
    mad.u32 r2, r2, r5, r4        ; odd: x = 3x + 1
next:
    add.u32 r3, r3, r4
    bra @loop
store:
    stg.u32 [r12 + r13], r3
done:
    exit
"""


def collatz_steps(x: int) -> int:
    """Steps from ``x`` to 1 (0 for x <= 1)."""
    steps = 0
    while x > 1:
        x = x >> 1 if x % 2 == 0 else 3 * x + 1
        steps += 1
    return steps


def _expected(inputs: Mapping[str, list]) -> dict[str, list]:
    return {"out": [collatz_steps(x) for x in inputs["x"]]}


def build(size: int) -> Example:
    """Step counts of ``size`` values in 1..10000, in blocks of 64 lanes (so spare lanes exist)."""
    rng = random.Random(f"collatz:{size}")
    return Example(
        name="collatz",
        description="per-lane loop with divergent branches (LDG/SETcc/BRA/STG)",
        program=PROGRAM.format(n=size),
        config=LaunchConfig.linear(size, 64),
        buffers=(
            BufferSpec("x", Type.U32, randint_u32(rng, size, 1, 10_000)),
            BufferSpec("out", Type.U32, typed_array(Type.U32, size)),
        ),
        outputs=(OutputSpec("out"),),
        expected=_expected,
    )
