"""Cases for control flow, barriers, stages and preset registers, in text assembly.

Loops (LOOP and backward BRA, nested), divergent branches with early EXIT, calls (nested, RET ending
the lane), an irreducible loop, BarSync inside a block-uniform loop, a cooperative instruction inside a
grid-uniform loop (a stage that resumes in the middle of a loop) with registers of many types and a
predicate live across it, and ExecutionParams presets. Each lane writes only its own output slots.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

from atlas_web import AtlasTrap, Backend, LaunchConfig
from atlas_web.isa import Register, Type
from atlas_web.launch import ExecutionParams

from .case_tools import needs_of, text_program
from .harness import Buffer, Case, Result, case_handles

__all__ = ["control_cases", "PresetCase", "preset_cases", "run_preset_case", "CONFIG"]

CONFIG = LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1))
LANES = 64

_LANE_POINTERS = """
    cvt.u64.u32 r200, r255
    mov_imm.u64 r201, {stride}
    mul.u64 r202, r200, r201
    mov_imm.u64 r203, {{p{buffer}}}
    or.u64 {dst}, r202, r203
"""


def _pointer(dst: str, buffer: int, stride: int) -> str:
    """Text that sets ``dst`` to buffer ``buffer``'s element GLOBAL_LANE_ID of ``stride`` bytes."""
    return _LANE_POINTERS.format(stride=stride, buffer=buffer, dst=dst)


NESTED_LOOPS = _pointer("r5", 0, 4) + """
    mov_imm.u32 r10, 0
    mov_imm.u32 r11, 3
    mov_imm.u32 r20, 5
    rem.u32 r21, r255, r20
    mov_imm.u32 r13, 1
outer:
    mov_imm.u32 r12, 0
inner:
    set.ge.u32 p0, r12, r21
    bra.p0 @inner_done
    mad.u32 r10, r12, r11, r10
    add.u32 r12, r12, r13
    bra @inner
inner_done:
    add.u32 r10, r10, r255
    loop r11, @outer
    stg.u32 [r5 + 0], r10
    exit
"""

COLLATZ = _pointer("r5", 0, 4) + _pointer("r7", 1, 4) + """
    ldg.u32 r8, [r5 + 0]
    mov_imm.u32 r9, 0
    set.eq.u32 p3, r8, r9
    bra.p3 @zero
    mov_imm.u32 r10, 0
    mov_imm.u32 r11, 1
    mov_imm.u32 r12, 3
top:
    set.le.u32 p1, r8, r11
    bra.p1 @store
    and.u32 r13, r8, r11
    set.eq.u32 p2, r13, r11
    bra.!p2 @even
    mad.u32 r8, r8, r12, r11
    bra @next
even:
    shr.u32 r8, r8, r11
next:
    add.u32 r10, r10, r11
    bra @top
store:
    stg.u32 [r7 + 0], r10
    exit
zero:
    mov_imm.u32 r10, 4294967295
    stg.u32 [r7 + 0], r10
"""

CALLS = _pointer("r5", 0, 8) + """
    cvt.u64.u32 r20, r255
    call @square
    mov.u64 r22, r21
    mov.u64 r20, r21
    call @square
    add.u64 r22, r22, r21
    stg.u64 [r5 + 0], r22
    mov_imm.u32 r30, 1
    and.u32 r31, r255, r30
    set.eq.u32 p0, r31, r30
    bra.p0 @odd_end
    exit
odd_end:
    stg.u64 [r5 + 0], r20
    ret
square:
    mul.u64 r21, r20, r20
    call @add_one
    ret
add_one:
    mov_imm.u64 r23, 1
    add.u64 r21, r21, r23
    ret
"""

IRREDUCIBLE = _pointer("r5", 0, 4) + """
    mov_imm.u32 r1, 0
    mov_imm.u32 r2, 1
    mov_imm.u32 r3, 2
    mov_imm.u32 r4, 40
    and.u32 r6, r255, r2
    add.u32 r1, r1, r255
    set.eq.u32 p0, r6, r2
    bra.p0 @b
a:
    add.u32 r1, r1, r2
    mul.u32 r7, r1, r3
b:
    add.u32 r1, r1, r3
    xor.u32 r8, r1, r7
    set.lt.u32 p1, r1, r4
    bra.p1 @a
    add.u32 r9, r1, r8
    stg.u32 [r5 + 0], r9
"""

BARRIER_LOOP = _pointer("r50", 0, 4) + """
    mov_imm.u32 r1, 4
    mul.u32 r2, r252, r1
    mov_imm.u32 r3, 1
    add.u32 r4, r252, r3
    mov_imm.u32 r5, 31
    and.u32 r6, r4, r5
    mul.u32 r7, r6, r1
    mov.u32 r10, r255
    mov_imm.u32 r11, 4
    mov_imm.u32 r12, 0
iteration:
    sts.u32 [r2 + 0], r10
    bar.sync 0
    lds.u32 r13, [r7 + 0]
    add.u32 r12, r12, r13
    mad.u32 r10, r13, r1, r3
    bar.sync 0
    loop r11, @iteration
    stg.u32 [r50 + 0], r12
"""

STAGES_LOOP = _pointer("r5", 0, 4) + _pointer("r43", 1, 8) + """
    mov_imm.u64 r10, 0
    mov_imm.f32 r11, 0.5
    mov_imm.u32 r12, 3
    set.lt.u32 p2, r255, r12
round:
    preduce.sum.u32 r13, [buf{h0} + 0], 64
    cvt.u64.u32 r14, r13
    add.u64 r10, r10, r14
    ldg.u32 r15, [r5 + 0]
    add.u32 r15, r15, r255
    stg.u32 [r5 + 0], r15
    add.f32 r11, r11, r11
    loop r12, @round
    cvt.u64.u32 r1, r255
    sel.u64 r16, p2, r10, r1
    cvt.u64.f32 r17, r11
    add.u64 r16, r16, r17
    stg.u64 [r43 + 0], r16
"""

STAGE_TYPES = _pointer("r60", 1, 48) + """
    mov_imm.i8 r1, -5
    mov_imm.u16 r2, 60000
    mov_imm.f16 r3, 1.5
    mov_imm.bf16 r4, 2.25
    mov_imm.f64 r5, 3.125
    mov_imm.i128 r6, -123456789012345678901234567890
    cvt.i128.u32 r7, r255
    mul.i128 r6, r6, r7
    cvt.i8.u32 r8, r255
    add.i8 r1, r1, r8
    cvt.u16.u32 r9, r255
    mul.u16 r2, r2, r9
    cvt.f16.u32 r10, r255
    add.f16 r3, r3, r10
    mov_imm.u32 r11, 10
    set.gt.u32 p4, r255, r11
    preduce.max.f32 r12, [buf{h0} + 0], 16
    cvt.f64.f32 r13, r12
    add.f64 r5, r5, r13
    cvt.bf16.f32 r14, r12
    mul.bf16 r4, r4, r14
    preduce.min.i64 r15, [buf{h2} + 0], 8
    cvt.i128.i64 r16, r15
    add.i128 r6, r6, r16
    stg.i8 [r60 + 0], r1
    stg.u16 [r60 + 2], r2
    stg.f16 [r60 + 4], r3
    stg.bf16 [r60 + 6], r4
    stg.f64 [r60 + 8], r5
    stg.i128 [r60 + 16], r6
    stg.f32 [r60 + 32], r12
    mov_imm.u32 r17, 7
    mov_imm.u32 r18, 9
    sel.u32 r19, p4, r17, r18
    stg.u32 [r60 + 36], r19
    stg.i64 [r60 + 40], r15
"""

EXTENDED_ACROSS_BARRIER = _pointer("r40", 0, 32) + """
    cvt.u256.u32 r1, r255
    mov_imm.u256 r2, 115792089237316195423570985008687907853269984665640564039457584007913129639935
    mul.u256 r3, r1, r2
    bar.sync 0
    shl.u256 r3, r3, r255
    add.u256 r3, r3, r1
    bar.sync 0
    stg.u256 [r40 + 0], r3
"""


def _u32_bytes(values) -> bytes:
    return struct.pack(f"<{len(values)}I", *values)


def control_cases() -> list[Case]:
    rng = random.Random(11)
    collatz_in = [rng.choice([0, 1, 2, 3, 7, 27, 97, rng.randrange(1, 500)]) for _ in range(LANES)]
    stage_data = [rng.randrange(1000) for _ in range(LANES)]
    floats = struct.pack("<16f", *[rng.uniform(-50, 50) for _ in range(16)])
    longs = struct.pack("<8q", *[rng.randrange(-1 << 62, 1 << 62) for _ in range(8)])
    shared = LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1), shared_memory=128)
    specs = [
        ("loops.nested", NESTED_LOOPS, (Buffer(Type.U32, bytes(4 * LANES), output=True),), CONFIG),
        ("branches.collatz", COLLATZ, (Buffer(Type.U32, _u32_bytes(collatz_in)),
                                       Buffer(Type.U32, bytes(4 * LANES), output=True)), CONFIG),
        ("calls.nested", CALLS, (Buffer(Type.U64, bytes(8 * LANES), output=True),), CONFIG),
        ("irreducible", IRREDUCIBLE, (Buffer(Type.U32, bytes(4 * LANES), output=True),), CONFIG),
        ("barrier.loop", BARRIER_LOOP, (Buffer(Type.U32, bytes(4 * LANES), output=True),), shared),
        ("stages.loop", STAGES_LOOP, (Buffer(Type.U32, _u32_bytes(stage_data), output=True),
                                      Buffer(Type.U64, bytes(8 * LANES), output=True)), CONFIG),
        ("stages.types", STAGE_TYPES, (Buffer(Type.F32, floats), Buffer(Type.U8, bytes(48 * LANES), output=True),
                                       Buffer(Type.I64, longs)), CONFIG),
        ("barrier.extended", EXTENDED_ACROSS_BARRIER, (Buffer(Type.U256, bytes(32 * LANES), output=True),), CONFIG),
        ("loops.one_block", NESTED_LOOPS, (Buffer(Type.U32, bytes(4 * LANES), output=True),),
         LaunchConfig(grid=(1, 1, 1), block=(64, 1, 1))),
        ("loops.2d", NESTED_LOOPS, (Buffer(Type.U32, bytes(4 * LANES), output=True),),
         LaunchConfig(grid=(2, 2, 1), block=(4, 2, 2))),
    ]
    cases = []
    for name, text, buffers, config in specs:
        build = text_program(text)
        first = buffers[0].ty if buffers else None
        cases.append(Case(name, "control", first, buffers, build, config, needs_of(build, len(buffers))))
    return cases


@dataclass(frozen=True)
class PresetCase(Case):
    """A case launched with ExecutionParams: ``presets(handles)`` gives {Register: (Type, value)}."""

    presets: object = None
    budget: int | None = None


def run_preset_case(backend: Backend, case: PresetCase) -> Result:
    """Like harness.run_case, launching with the case's preset registers (and budget)."""
    handles = []
    for buf in case.buffers:
        h = backend.allocate_buffer(max(len(buf.data), 1))
        backend.copy_to_buffer(h, buf.data)
        handles.append(int(h))
    trap = message = None
    params = ExecutionParams(case.config, registers=case.presets(handles), budget=case.budget)
    program = case.program(handles)
    try:
        backend.execute_program_with_params(program, params)
    except AtlasTrap as t:
        trap, message = (int(t.code), t.instruction_index, t.lane), case_handles(str(t), handles, program)
    outputs = [bytes(backend.copy_from_buffer(h)[:len(buf.data)]) for h, buf in zip(handles, case.buffers)
               if buf.output]
    for h in handles:
        backend.free_buffer(h)
    return Result(outputs, trap, trap_message=message)


PRESETS = """
    cvt.u64.u32 r200, r255
    mov_imm.u64 r201, 16
    mul.u64 r202, r200, r201
    add.u64 r203, r1, r202
    cvt.f32.u32 r10, r255
    mul.f32 r10, r10, r2
    stg.f32 [r203 + 0], r10
    add.i8 r11, r3, r3
    stg.i8 [r203 + 4], r11
    cvt.u64.i256 r12, r4
    add.u64 r12, r12, r200
    stg.u64 [r203 + 8], r12
"""

PRESETS_ACROSS_STAGE = """
    cvt.u64.u32 r200, r255
    mov_imm.u64 r201, 16
    mul.u64 r202, r200, r201
    preduce.sum.f64 r20, [buf{h1} + 0], 4
    add.u64 r203, r1, r202
    cvt.f32.f64 r21, r20
    add.f32 r10, r2, r21
    stg.f32 [r203 + 0], r10
    stg.i8 [r203 + 4], r3
    cvt.u64.i256 r12, r4
    stg.u64 [r203 + 8], r12
"""


def preset_cases() -> list[PresetCase]:
    """Preset registers of several types (a pointer, f32, i8, i256), with and without a stage."""
    def presets(handles):
        return {Register(1): (Type.U64, handles[0] << 32), Register(2): (Type.F32, 1.25),
                Register(3): (Type.I8, -100), Register(4): (Type.I256, -(1 << 200) + 12345)}

    def preset_types():
        return {reg: ty for reg, (ty, _value) in presets([2, 3]).items()}

    out = []
    doubles = Buffer(Type.F64, struct.pack("<4d", 1, 2, 3, .5))
    for name, text, extra in (("presets", PRESETS, ()), ("presets.stage", PRESETS_ACROSS_STAGE, (doubles,))):
        build = text_program(text)
        buffers = (Buffer(Type.U8, bytes(16 * LANES), output=True), *extra)
        program = build([2 + k for k in range(len(buffers))])
        program.verify(preset_types=preset_types())
        out.append(PresetCase(name, "control", Type.U8, buffers, build, CONFIG, needs_of(build, len(buffers)),
                              presets=presets))
    return out
