"""The Atlas instructions over bytes: classify, mirror, a neighbour and the boundary index of each byte."""

from __future__ import annotations

import random
from typing import Mapping

from atlas_web import LaunchConfig, Type
from atlas_web import atlas

from . import BufferSpec, Example, OutputSpec, typed_array
from .inputs import random_u8

PROGRAM = """\
; per byte b = data[i]: c = classify(b), m = mirror(c), neighbour (i mod 6) of c (255 past the degree),
; and the boundary index BoundMap(m, i mod 48, b)
    mov_imm.u32 r10, {n}
    set.ge.u32 p0, r255, r10
    bra.p0 @done                  ; spare lanes do nothing
    mov_imm.u32 r11, 2            ; handles: data, class, mirror, neighbour, boundary
    mov_imm.u32 r12, 3
    mov_imm.u32 r13, 4
    mov_imm.u32 r14, 5
    mov_imm.u32 r15, 6
    ldg.u8 r1, [r11 + r255]       ; b
    cls.get r2, r1                ; c
    mirror r3, r2                 ; m
    mov_imm.u32 r20, 6
    rem.u32 r4, r255, r20
    nbr.get r5, r2, r4
    mov_imm.u32 r21, 48
    rem.u32 r6, r255, r21
    bound.map r7, r3, r6, r1
    stg.u8 [r12 + r255], r2
    stg.u8 [r13 + r255], r3
    stg.u8 [r14 + r255], r5
    mov_imm.u32 r22, 8
    mul.u32 r8, r255, r22         ; byte offset of a u64
    stg.u64 [r15 + r8], r7
done:
    exit
"""


def _neighbour(class_id: int, index: int) -> int:
    found = atlas.neighbours(class_id)
    return found[index] if index < len(found) else atlas.NO_NEIGHBOUR


def _expected(inputs: Mapping[str, list]) -> dict[str, list]:
    data = inputs["data"]
    classes = [atlas.classify(b) for b in data]
    mirrors = [atlas.mirror(c) for c in classes]
    return {
        "class": classes,
        "mirror": mirrors,
        "neighbour": [_neighbour(c, i % 6) for i, c in enumerate(classes)],
        "boundary": [atlas.bound_map(m, i % atlas.PAGES, b) for i, (m, b) in enumerate(zip(mirrors, data))],
    }


def build(size: int) -> Example:
    """The Atlas instructions over ``size`` bytes (every byte value appears when size >= 256)."""
    rng = random.Random(f"atlas_bytes:{size}")
    data = typed_array(Type.U8, range(min(size, 256))) + random_u8(rng, max(size - 256, 0))
    return Example(
        name="atlas_bytes",
        description="ClsGet / MIRROR / NbrGet / BoundMap over bytes",
        program=PROGRAM.format(n=size),
        config=LaunchConfig.linear(size, 64),
        buffers=(
            BufferSpec("data", Type.U8, data),
            BufferSpec("class", Type.U8, typed_array(Type.U8, size)),
            BufferSpec("mirror", Type.U8, typed_array(Type.U8, size)),
            BufferSpec("neighbour", Type.U8, typed_array(Type.U8, size)),
            BufferSpec("boundary", Type.U64, typed_array(Type.U64, size)),
        ),
        outputs=(OutputSpec("class"), OutputSpec("mirror"), OutputSpec("neighbour"), OutputSpec("boundary")),
        expected=_expected,
    )
