"""One trap report with numbers (issue 9 item 3): every backend raises the same AtlasTrap, code,
instruction index, lane and message, the message giving the instruction's text and what went wrong with
its numbers (atlas_web/trap_report.py; docs/semantics.md, Traps).

Each case runs on fresh backends (handles are numbered alike on every backend for the same allocations),
the reference's message is checked word for word, and every other available backend that supports the
case's instructions must raise the identical trap: its numbers come from the wasm module's trap record,
the WebGPU shader's per-lane record or the host of a cooperative step, not from the reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from atlas_web import AtlasTrap, LaunchConfig, Program, TrapCode
from atlas_web.registry import discover_backends, get_backend
from atlas_web.trap_report import TrapRecord, trap

ONE = LaunchConfig()
TWO_BLOCKS = LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1))
SHARED = LaunchConfig(grid=(2, 1, 1), block=(8, 1, 1), shared_memory=64)

#: r10 := a pointer to buffer 0 + lane * {stride}
_LANE_POINTER = """
    cvt.u64.u32 r200, r255
    mov_imm.u64 r201, {stride}
    mul.u64 r202, r200, r201
    mov_imm.u64 r203, {{p0}}
    or.u64 r10, r202, r203
"""


def _lanes(stride: int) -> str:
    return _LANE_POINTER.format(stride=stride)


@dataclass(frozen=True)
class TrapCase:
    name: str
    text: str
    buffers: tuple[int, ...]
    config: LaunchConfig
    #: the reference's message, word for word ({h0} … the buffers' handles)
    message: str

    def __str__(self) -> str:
        return self.name


CASES = [
    TrapCase("oob.lowest_lane_40", _lanes(4) + "    ldg.f32 r1, [r10 + 0]\n", (160,), TWO_BLOCKS,
             "trap OUT_OF_BOUNDS at instruction 5 in lane 40: ldg.f32 r1, [r10 + 0]: src: 4 bytes at offset 160 of "
             "handle {h0} leave the allocation of 160 bytes"),
    TrapCase("oob.negative_displacement", _lanes(8) + "    stg.u32 [r10 - 4], r255\n", (64,), ONE,
             "trap OUT_OF_BOUNDS at instruction 5 in lane 0: stg.u32 [r10 - 4], r255: dst: 4 bytes at offset -4 of "
             "handle {h0} leave the allocation of 64 bytes"),
    TrapCase("oob.wide_offset_register", """
    mov_imm.u32 r1, {h0}
    mov_imm.u64 r3, 4294967300
    ldg.u8 r5, [r1 + r3]
""", (64,), ONE, "trap OUT_OF_BOUNDS at instruction 2 in lane 0: ldg.u8 r5, [r1 + r3]: src: 1 bytes at offset "
                 "4294967300 of handle {h0} leave the allocation of 64 bytes"),
    TrapCase("misaligned.f64", _lanes(4) + "    ldg.f64 r1, [r10 + 0]\n", (256,), TWO_BLOCKS,
             "trap MISALIGNED at instruction 5 in lane 1: ldg.f64 r1, [r10 + 0]: src: offset 4 of handle {h0} is not "
             "a multiple of 8"),
    TrapCase("handle.unknown", """
    mov_imm.u64 r10, 330712481792
    ldg.u32 r1, [r10 + 0]
""", (), ONE, "trap INVALID_HANDLE at instruction 1 in lane 0: ldg.u32 r1, [r10 + 0]: src: handle 77 names no "
              "live buffer or pool"),
    TrapCase("handle.buffer_as_pool", """
    mov_imm.u32 r1, {h0}
    mov_imm.u32 r2, 0
    pool.load.u32 r3, r1, r2
""", (64,), ONE, "trap INVALID_HANDLE at instruction 2 in lane 0: pool.load.u32 r3, r1, r2: pool: handle {h0} names "
                 "no live pool"),
    TrapCase("pool.offset_past_its_end", """
    pool.alloc r1, 16
    mov_imm.u32 r2, 16
    pool.load.u32 r3, r1, r2
""", (), ONE, "trap OUT_OF_BOUNDS at instruction 2 in lane 0: pool.load.u32 r3, r1, r2: pool: 4 bytes at offset 16 "
              "of handle 2 leave the allocation of 16 bytes"),
    TrapCase("shared.past_its_end", """
    mov_imm.u32 r1, 4
    mul.u32 r2, r252, r1
    mov_imm.u32 r3, 40
    add.u32 r2, r2, r3
    sts.u32 [r2 + 0], r252
""", (), SHARED, "trap OUT_OF_BOUNDS at instruction 4 in lane 6: sts.u32 [r2 + 0], r252: dst: 4 bytes at offset 64 "
                 "leave the block's shared memory of 64 bytes"),
    TrapCase("shared.misaligned", """
    mov_imm.u32 r2, 2
    lds.u32 r1, [r2 + 0]
""", (), SHARED, "trap MISALIGNED at instruction 1 in lane 0: lds.u32 r1, [r2 + 0]: src: shared memory offset 2 is "
                 "not a multiple of 4"),
    TrapCase("div.i32_negative_dividend", """
    mov_imm.i32 r1, -7
    mov_imm.i32 r2, 0
    div.i32 r3, r1, r2
""", (), ONE, "trap DIVISION_BY_ZERO at instruction 2 in lane 0: div.i32 r3, r1, r2: lhs = -7, rhs = 0: an integer "
              "division or remainder by zero"),
    TrapCase("rem.u64_large_dividend", """
    mov_imm.u64 r1, 18446744073709551615
    mov_imm.u64 r2, 0
    rem.u64 r3, r1, r2
""", (), ONE, "trap DIVISION_BY_ZERO at instruction 2 in lane 0: rem.u64 r3, r1, r2: lhs = 18446744073709551615, "
              "rhs = 0: an integer division or remainder by zero"),
    TrapCase("div.u8_lane_dividend", """
    cvt.u8.u32 r1, r255
    mov_imm.u8 r2, 0
    div.u8 r3, r1, r2
""", (), ONE, "trap DIVISION_BY_ZERO at instruction 2 in lane 0: div.u8 r3, r1, r2: lhs = 0, rhs = 0: an integer "
              "division or remainder by zero"),
    TrapCase("div.i128_by_zero_names_no_dividend", """
    mov_imm.i128 r1, 5
    mov_imm.i128 r2, 0
    div.i128 r3, r1, r2
""", (), ONE, "trap DIVISION_BY_ZERO at instruction 2 in lane 0: div.i128 r3, r1, r2: rhs = 0: an integer division "
              "or remainder by zero"),
    TrapCase("div.i64_min_by_minus_one", """
    mov_imm.i64 r1, -9223372036854775808
    mov_imm.i64 r2, -1
    div.i64 r3, r1, r2
""", (), ONE, "trap INTEGER_OVERFLOW at instruction 2 in lane 0: div.i64 r3, r1, r2: lhs = -9223372036854775808, "
              "rhs = -1: -9223372036854775808 / -1 does not fit i64"),
    TrapCase("class.mirror", """
    mov_imm.u32 r1, 100
    mirror r2, r1
""", (), ONE, "trap INVALID_CLASS at instruction 1 in lane 0: mirror r2, r1: src = 100: an Atlas class id of 96 or "
              "more"),
    TrapCase("class.res_accum", """
    cvt.u32.u32 r1, r255
    mov_imm.u32 r3, 90
    add.u32 r1, r1, r3
    mov_imm.f32 r2, 1.0
    res.accum.f32 r1, r2
""", (), TWO_BLOCKS, "trap INVALID_CLASS at instruction 4 in lane 6: res.accum.f32 r1, r2: class_id = 96: an Atlas "
                     "class id of 96 or more"),
    TrapCase("bound_map.page", """
    mov_imm.u32 r2, 3
    mov_imm.u32 r3, 48
    mov_imm.u32 r4, 7
    bound.map r1, r2, r3, r4
""", (), ONE, "trap OUT_OF_BOUNDS at instruction 3 in lane 0: bound.map r1, r2, r3, r4: page = 48 is not below 48"),
    TrapCase("bound_map.byte", """
    mov_imm.u32 r2, 3
    mov_imm.u32 r3, 47
    mov_imm.u32 r4, 300
    bound.map r1, r2, r3, r4
""", (), ONE, "trap OUT_OF_BOUNDS at instruction 3 in lane 0: bound.map r1, r2, r3, r4: byte = 300 is not below "
              "256"),
    TrapCase("coop.map_source_past_its_end", """
    mov_imm.u64 r4, {p1}
    pmap.neg.f32 [buf{h0} + 0], [r4 + 8], 8
""", (32, 32), ONE, "trap OUT_OF_BOUNDS at instruction 1 in the cooperative step: pmap.neg.f32 [buf{h0} + 0], "
                    "[r4 + 8], 8: src_array: 32 bytes at offset 8 of handle {h1} leave the allocation of 32 bytes"),
    TrapCase("coop.map_binary_unknown_handle", """
    mov_imm.u64 r4, 330712481792
    pmap2.add.f32 [buf{h0} + 0], [buf{h0} + 0], [r4 + 0], 4
""", (16,), ONE, "trap INVALID_HANDLE at instruction 1 in the cooperative step: pmap2.add.f32 [buf{h0} + 0], "
                 "[buf{h0} + 0], [r4 + 0], 4: src_b: handle 77 names no live buffer or pool"),
    TrapCase("coop.reduce_misaligned", """
    mov_imm.u64 r4, {p0}
    preduce.sum.f32 r5, [r4 + 2], 4
""", (64,), ONE, "trap MISALIGNED at instruction 1 in the cooperative step: preduce.sum.f32 r5, [r4 + 2], 4: "
                 "src_array: offset 2 of handle {h0} is not a multiple of 4"),
    TrapCase("coop.layer_scale_input_past_its_end", """
    mov_imm.u64 r4, {p1}
    layerscale.f32 [buf{h0} + 0], [r4 + 0], [buf{h2} + 0], 4, 2
""", (32, 16, 16), ONE, "trap OUT_OF_BOUNDS at instruction 1 in the cooperative step: layerscale.f32 [buf{h0} + 0], "
                        "[r4 + 0], [buf{h2} + 0], 4, 2: input: 32 bytes at offset 0 of handle {h1} leave the "
                        "allocation of 16 bytes"),
    TrapCase("coop.gemm_a_past_its_end", """
    mov_imm.u64 r4, {p1}
    gemm.f32 [buf{h0} + 0], [r4 + 4], [buf{h2} + 0], 2, 2, 4, 1.0, 0.0, false, false, 0, 0, 0
""", (16, 32, 32), ONE, "trap OUT_OF_BOUNDS at instruction 1 in the cooperative step: gemm.f32 [buf{h0} + 0], "
                        "[r4 + 4], [buf{h2} + 0], 2, 2, 4, 1.0, 0.0, false, false, 0, 0, 0: a: 32 bytes at offset 4 "
                        "of handle {h1} leave the allocation of 32 bytes"),
    TrapCase("coop.pool_free_of_a_buffer", """
    mov_imm.u32 r1, {h0}
    pool.free r1
""", (16,), ONE, "trap INVALID_HANDLE at instruction 1 in the cooperative step: pool.free r1: handle: handle {h0} "
                 "names no live pool"),
    TrapCase("budget", "x:\n    bra @x\n", (), ONE,
             "trap BUDGET_EXCEEDED at instruction 0 in lane 0: bra @x: more than the execution budget of 50 "
             "backward jumps (a runaway loop?)"),
]

BACKEND_NAMES = [status.name for status in discover_backends() if status.available]


def _program(case: TrapCase, handles: list[int]) -> Program:
    names = {f"h{k}": h for k, h in enumerate(handles)}
    names.update({f"p{k}": h << 32 for k, h in enumerate(handles)})
    return Program.from_text(case.text.format(**names))


def _run(name: str, case: TrapCase, **options) -> AtlasTrap | None:
    """The AtlasTrap ``case`` raises on a fresh backend ``name``; None where it does not run the case."""
    backend = get_backend(name, budget=50, **options)
    try:
        handles = [int(backend.allocate_buffer(size)) for size in case.buffers]
        program = _program(case, handles)
        if not all(backend.supports(i.INFO.name, i.type) for i in program.instructions):
            return None
        with pytest.raises(AtlasTrap) as caught:
            backend.execute_program(program, case.config)
        return caught.value
    finally:
        backend.close()


def _fields(raised: AtlasTrap) -> tuple:
    return raised.code, raised.instruction_index, raised.lane, raised.detail, str(raised)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_reference_words_the_trap_with_its_numbers(case):
    raised = _run("cpu", case)
    handles = {f"h{k}": 2 + k for k in range(len(case.buffers))}
    assert str(raised) == case.message.format(**handles)


@pytest.mark.parametrize("name", [n for n in BACKEND_NAMES if n != "cpu"] or ["cpu"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_backend_raises_the_same_trap(name, case):
    raised = _run(name, case)
    if raised is None:
        pytest.skip(f"{name} does not support every instruction of {case}")
    assert _fields(raised) == _fields(_run("cpu", case))


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_an_exhausted_pool_says_the_size_asked_and_what_is_free(name):
    """POOL_EXHAUSTED: the size asked, then the bytes this backend has free (a backend's own number: the
    rest of the message is the same everywhere)."""
    case = TrapCase("pool", "    pool.alloc r1, 4000000\n", (), ONE, "")
    raised = _run(name, case, memory_limit=1 << 21)
    assert (raised.code, raised.instruction_index, raised.lane) == (TrapCode.POOL_EXHAUSTED, 0, -1)
    assert re.fullmatch(r"trap POOL_EXHAUSTED at instruction 0 in the cooperative step: pool\.alloc r1, 4000000: "
                        r"a pool of 4000000 bytes asked; \d+ bytes are free", str(raised)), str(raised)
    free = int(re.search(r"(\d+) bytes are free", str(raised)).group(1))
    assert free < 4000000


def test_a_trap_keeps_its_record_through_pickling():
    """A trap crossing a process (a worker, Dask) keeps its numbers, so it can still be re-worded."""
    import pickle
    instr = Program.from_text("ldg.u32 r1, [r2 + 0]").instructions[0]
    raised = trap(TrapCode.OUT_OF_BOUNDS, 0, 3, instr, TrapRecord(0, 2, 60, 4, 16))
    again = pickle.loads(pickle.dumps(raised))
    assert (str(again), again.record) == (str(raised), TrapRecord(0, 2, 60, 4, 16))


def test_a_record_without_an_operand_falls_back_to_the_codes_meaning():
    """A record naming no operand (a backend that could not say which) still words the code's meaning."""
    instr = Program.from_text("ldg.u32 r1, [r2 + 0]").instructions[0]
    raised = trap(TrapCode.OUT_OF_BOUNDS, 0, 3, instr, TrapRecord())
    assert str(raised) == ("trap OUT_OF_BOUNDS at instruction 0 in lane 3: ldg.u32 r1, [r2 + 0]: "
                           + TrapCode.OUT_OF_BOUNDS.meaning)
    assert TrapRecord.of((0xFFFFFFFF, 2, -4, 4, 16)) == TrapRecord(-1, 2, (1 << 64) - 4, 4, 16)
