"""Cases that trap: every trap code, the order of the memory checks, the lowest lane of the earliest
stage, traps of cooperative steps (lane -1) and budgets. Compared with the reference by
(code, instruction index, lane).
"""

from __future__ import annotations

from atlas_web import LaunchConfig
from atlas_web.isa import Type

from .case_tools import needs_of, text_program
from .control_cases import PresetCase
from .harness import Buffer, Case

__all__ = ["trap_cases", "budget_cases"]

CONFIG = LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1))
LANES = 64

_LANE_OFFSET = """
    cvt.u64.u32 r200, r255
    mov_imm.u64 r201, {stride}
    mul.u64 r202, r200, r201
"""


def _pointer(dst: str, buffer: int, stride: int, extra: int = 0) -> str:
    text = _LANE_OFFSET.format(stride=stride)
    if extra:
        text += f"    mov_imm.u64 r204, {extra}\n    add.u64 r202, r202, r204\n"
    return text + f"    mov_imm.u64 r203, {{p{buffer}}}\n    or.u64 {dst}, r202, r203\n"


# lanes 40 and up read past the end of a 160-byte buffer (40 f32): OUT_OF_BOUNDS at the lowest, lane 40
OOB_HIGH_LANES = _pointer("r5", 0, 4) + """
    ldg.f32 r6, [r5 + 0]
    stg.f32 [r5 + 0], r6
"""
# a negative displacement: lane 0 reads 4 bytes before the buffer
OOB_NEGATIVE = _pointer("r5", 0, 4) + """
    ldg.u32 r6, [r5 - 4]
    stg.u32 [r5 + 0], r6
"""
# offset register beyond 32 bits (RegisterIndirectComputed with a u64 offset)
OOB_WIDE_OFFSET = """
    mov_imm.u32 r1, {h0}
    cvt.u64.u32 r2, r255
    mov_imm.u64 r3, 4294967296
    mul.u64 r4, r2, r3
    ldg.u8 r5, [r1 + r4]
    stg.u8 [r1 + r4], r5
"""
# odd lanes read a misaligned f64 (offset lane*4); lanes 60+ also lie outside: OOB is checked first
MISALIGNED_ODD_LANES = _pointer("r5", 0, 4) + """
    ldg.f64 r6, [r5 + 0]
    stg.f64 [r5 + 0], r6
"""
# lane 0 misaligned store of an i128 (needs 8-byte alignment) at offset 4
MISALIGNED_EXTENDED = _pointer("r5", 0, 16, extra=4) + """
    mov_imm.i128 r6, 1
    stg.i128 [r5 + 0], r6
"""
# lanes below 9 use a never-allocated handle with an offset also out of range: INVALID_HANDLE comes first
INVALID_HANDLE_BEFORE_BOUNDS = _pointer("r15", 0, 4) + """
    mov_imm.u32 r3, 9
    set.lt.u32 p0, r255, r3
    mov_imm.u64 r10, {bad}
    sel.u64 r16, p0, r10, r15
    ldg.u32 r19, [r16 + 0]
""".replace("{bad}", str((4_000_000 << 32) | 4096))
# handle 0 is never live
HANDLE_ZERO = _LANE_OFFSET.format(stride=4) + """
    ldg.u32 r19, [r202 + 0]
"""
# every lane's f64 is both outside the 240-byte buffer and misaligned: OUT_OF_BOUNDS comes first
BOUNDS_BEFORE_ALIGNMENT = _pointer("r5", 0, 4, extra=236) + """
    ldg.f64 r6, [r5 + 0]
"""
# a pool handle that names a buffer, in PoolLoad
POOL_WITH_BUFFER_HANDLE = """
    mov_imm.u32 r1, {h0}
    mov_imm.u32 r2, 0
    pool.load.u32 r3, r1, r2
"""
# a pool freed by PoolFree (stage 1), then read: INVALID_HANDLE (stale handle)
STALE_POOL = """
    pool.alloc r1, 256
    mov_imm.u32 r2, 4
    mul.u32 r3, r255, r2
    pool.store.u32 r1, r3, r255
    pool.free r1
    pool.load.u32 r4, r1, r3
"""
# PoolFree of a buffer handle (cooperative: lane -1)
POOL_FREE_BUFFER = """
    mov_imm.u32 r1, {h0}
    pool.free r1
"""
# shared memory: lanes 20+ of each block index past 80 bytes
SHARED_OOB = """
    mov_imm.u32 r1, 4
    mul.u32 r2, r252, r1
    sts.u32 [r2 + 0], r255
    bar.sync 0
    lds.u32 r3, [r2 + 0]
"""
DIVIDE = """
    cvt.{ty}.u32 r1, r255
    mov_imm.u32 r2, 7
    rem.u32 r3, r255, r2
    cvt.{ty}.u32 r4, r3
    {op}.{ty} r5, r1, r4
    mov_imm.u32 r6, 0
"""
# lane 0: MIN / -1
OVERFLOW = """
    mov_imm.{ty} r1, {low}
    mov_imm.{ty} r2, -1
    mov_imm.{ty} r7, 1
    mov_imm.u32 r3, 0
    set.eq.u32 p0, r255, r3
    sel.{ty} r4, p0, r2, r7
    {op}.{ty} r5, r1, r4
"""
CLASSES = """
    mov_imm.u32 r1, 90
    add.u32 r2, r255, r1
    {instr}
"""
BOUND_MAP_PAGE = """
    mov_imm.u32 r1, 3
    mov_imm.u32 r2, 40
    add.u32 r3, r255, r2
    mov_imm.u32 r4, 7
    bound.map r5, r1, r3, r4
"""
# the earliest stage wins: lane 60 traps in stage 0, lane 2 would trap in stage 1
EARLIEST_STAGE = """
    mov_imm.u32 r1, 60
    set.eq.u32 p0, r255, r1
    bra.!p0 @fine
    mov_imm.u32 r2, 0
    div.u32 r3, r1, r2
fine:
    preduce.sum.u32 r4, [buf{h0} + 0], 4
    mov_imm.u32 r5, 2
    set.eq.u32 p1, r255, r5
    bra.!p1 @done
    mov_imm.u32 r6, 0
    div.u32 r7, r5, r6
done:
    exit
"""
# within a stage the lowest lane wins even when it traps later (lane 10 first, lane 3 in segment 2)
LOWEST_LANE_LATER = """
    mov_imm.u32 r1, 10
    set.eq.u32 p0, r255, r1
    bra.!p0 @next
    mov_imm.u32 r2, 0
    rem.u32 r3, r1, r2
next:
    bar.sync 0
    mov_imm.u32 r4, 3
    set.eq.u32 p1, r255, r4
    bra.!p1 @done
    mov_imm.i8 r5, 0
    div.i8 r6, r5, r5
done:
    exit
"""
# cooperative steps trap with lane -1: a register-based array past the buffer, misaligned, bad handle
COOPERATIVE_OOB = """
    mov_imm.u64 r1, {p0}
    mov_imm.u64 r2, {p1}
    pmap.neg.f32 [r2 + 0], [r1 + 8], 64
"""
COOPERATIVE_MISALIGNED = """
    mov_imm.u64 r1, {p0}
    preduce.sum.i32 r3, [r1 + 2], 8
"""
COOPERATIVE_HANDLE = """
    mov_imm.u64 r1, 18446462598732840960
    mov_imm.u64 r2, {p1}
    pmap2.add.u16 [r2 + 0], [r1 + 0], [r2 + 0], 8
"""
REDUCE_OOB = _pointer("r5", 0, 4) + """
    reduce.add.u32 r6, [r5 + 0], 8
    stg.u32 [r5 + 0], r6
"""


def _case(name: str, text: str, buffers, config=CONFIG, op: str = "trap") -> Case:
    build = text_program(text)
    return Case(name, op, None, tuple(buffers), build, config, needs_of(build, len(buffers)))


def trap_cases() -> list[Case]:
    f32s = Buffer(Type.F32, bytes(160), output=True)
    words = Buffer(Type.U32, bytes(256), output=True)
    cases = [
        _case("oob.high_lanes", OOB_HIGH_LANES, [f32s]),
        _case("oob.negative", OOB_NEGATIVE, [words]),
        _case("oob.wide_offset", OOB_WIDE_OFFSET, [Buffer(Type.U8, bytes(64), output=True)]),
        _case("misaligned.odd_lanes", MISALIGNED_ODD_LANES, [Buffer(Type.F64, bytes(240), output=True)]),
        _case("misaligned.extended", MISALIGNED_EXTENDED, [Buffer(Type.U8, bytes(64), output=True)],
              LaunchConfig()),
        _case("handle.invalid_before_bounds", INVALID_HANDLE_BEFORE_BOUNDS, [words]),
        _case("handle.zero", HANDLE_ZERO, []),
        _case("order.bounds_before_alignment", BOUNDS_BEFORE_ALIGNMENT, [Buffer(Type.F64, bytes(240))]),
        _case("handle.pool_is_buffer", POOL_WITH_BUFFER_HANDLE, [words]),
        _case("handle.stale_pool", STALE_POOL, [words]),
        _case("handle.pool_free_buffer", POOL_FREE_BUFFER, [words]),
        _case("shared.oob", SHARED_OOB, [words], LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1), shared_memory=80)),
        _case("stage.earliest", EARLIEST_STAGE, [words]),
        _case("stage.lowest_lane_later", LOWEST_LANE_LATER, [words]),
        _case("cooperative.oob", COOPERATIVE_OOB, [words, words]),
        _case("cooperative.misaligned", COOPERATIVE_MISALIGNED, [words]),
        _case("cooperative.handle", COOPERATIVE_HANDLE, [words, words]),
        _case("reduce.oob", REDUCE_OOB, [words]),
        _case("class.bound_map_page", BOUND_MAP_PAGE, []),
    ]
    for ty in (Type.I8, Type.U16, Type.I32, Type.U64, Type.I64, Type.U128, Type.I256):
        for op in ("div", "rem"):
            cases.append(_case(f"divide_by_zero.{op}.{ty.suffix}", DIVIDE.format(ty=ty.suffix, op=op), []))
            if ty.is_signed():
                low = -(1 << (ty.bits - 1))
                cases.append(_case(f"overflow.{op}.{ty.suffix}", OVERFLOW.format(ty=ty.suffix, op=op, low=low), []))
    for name, instr in (("mirror", "mirror r3, r2"), ("nbr_count", "nbr.count r3, r2"),
                        ("nbr_get", "nbr.get r3, r2, r1"), ("bound_map", "bound.map r3, r2, r1, r1"),
                        ("res_accum", "cvt.f32.u32 r4, r2\n    res.accum.f32 r2, r4")):
        cases.append(_case(f"class.{name}", CLASSES.format(instr=instr), []))
    return cases


BUDGET_LOOP = """
    mov_imm.u32 r1, 1
    mov_imm.u32 r2, 0
    mov_imm.u32 r3, 40
    sub.u32 r4, r3, r255
top:
    add.u32 r2, r2, r1
    set.lt.u32 p0, r2, r4
    bra.p0 @top
"""
BUDGET_LOOP_INSTRUCTION = """
    mov_imm.u32 r1, 100
    add.u32 r1, r1, r255
top:
    mov_imm.u32 r3, 1
    loop r1, @top
"""
BUDGET_CALL = """
    mov_imm.u32 r1, 0
    mov_imm.u32 r2, 1
    bra @start
sub:
    add.u32 r1, r1, r2
    ret
start:
    call @sub
    set.lt.u32 p0, r1, r255
    bra.p0 @start
"""


def budget_cases() -> list[PresetCase]:
    """Runaway loops against small budgets: backward BRA, LOOP and CALL, lanes of different lengths."""
    out = []
    for name, text, budget in (("budget.bra", BUDGET_LOOP, 20), ("budget.bra_exact", BUDGET_LOOP, 39),
                               ("budget.loop", BUDGET_LOOP_INSTRUCTION, 120), ("budget.call", BUDGET_CALL, 30),
                               ("budget.zero", BUDGET_LOOP, 0)):
        build = text_program(text)
        out.append(PresetCase(name, "trap", None, (), build, CONFIG, needs_of(build, 0), presets=lambda h: {},
                              budget=budget))
    return out

