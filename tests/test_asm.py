"""Text assembly: canonical examples, accepted spellings, errors with line numbers, round trips,
hostile input, and every opcode-table row through all three program forms."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atlas_web.asm import format_instruction, format_program, parse_instruction, parse_program
from atlas_web.docsgen import sample_instruction
from atlas_web.errors import ProgramError
from atlas_web.isa import (
    ADD, BRA, CVT, LDG, MOV_IMM, OPCODE_TABLE, Address, BinaryMapOperation, OperandKind, ParallelMapBinary,
    Predicate, Register, Type,
)
from atlas_web.isa.floats import round_float
from atlas_web.program import Program

from .strategies import instruction_of, instructions, programs
from .table_rows import MADE_ROWS, rows_added

r = Register

CANONICAL_LINES = [
    "add.f32 r1, r2, r3", "bra @loop", "bra.p0 @loop", "bra.!p0 @loop", "ldg.f32 r4, [buf2 + 16]",
    "stg.f32 [buf2 + 16], r4", "lds.u32 r1, [shared + 8]", "ldg.u64 r1, [r4 - 8]", "ldg.f32 r1, [r4 + r5]",
    "ldg.u8 r1, [class5 + 3]", "ldg.i16 r1, [pool3 + 0]", "set.lt.f32 p0, r1, r2", "sel.f32 r1, p0, r2, r3",
    "cvt.f32.i32 r1, r2", "mov_imm.f32 r1, 1.5", "mov_imm.i4096 r1, -12345678901234567890",
    "pmap2.add.f32 [buf3 + 0], [buf1 + 0], [buf2 + 0], 256", "pmap.relu.f16 [buf3 + 0], [buf1 + 0], 64",
    "preduce.sum.f32 r1, [buf2 + 0], 1024", "bar.sync 0", "memfence.block", "loop r1, @body",
    "res.accum.f32 r1, r2", "phase.adv 5", "exit", "ret", "mov_imm.f64 r1, -0.0", "mov_imm.bf16 r1, nan",
    "mov_imm.f16 r1, -inf", "mov_imm.f64 r1, 1e-05", "mov_imm.u4096 r1, " + str(2**4096 - 1),
    "reduce.max.i64 r7, [r250 + 0], 4294967295", "set.geu.u8 p15, r0, r255", "call @f.inner_1",
]


@pytest.mark.parametrize("line", CANONICAL_LINES)
def test_canonical_line_formats_to_itself(line):
    assert format_instruction(parse_instruction(line)) == line


def test_parsed_fields_match_the_table():
    assert parse_instruction("add.f32 r1, r2, r3") == ADD(dst=r(1), lhs=r(2), rhs=r(3), ty=Type.F32)
    assert parse_instruction("bra.!p3 @loop") == BRA(target="loop", pred=Predicate(3), negate=True)
    assert parse_instruction("bra @loop") == BRA(target="loop")
    assert parse_instruction("cvt.f32.i32 r1, r2") == CVT(dst=r(1), src=r(2), src_ty=Type.I32, dst_ty=Type.F32)
    assert parse_instruction("ldg.f32 r1, [r4 + r5]").src == Address.RegisterIndirectComputed(r(4), r(5))
    assert parse_instruction("ldg.f32 r1, [r4 - 8]").src == Address.RegisterIndirect(r(4), -8)
    assert parse_instruction("ldg.u8 r1, [class5 + 3]").src == Address.Class(5, 3)
    assert parse_instruction("ldg.u8 r1, [pool3 + 0]").src == Address.PoolOffset(3, 0)
    assert parse_instruction("mov_imm.i4096 r1, -12345678901234567890").value == -12345678901234567890
    pmap2 = parse_instruction("pmap2.atan2.f64 [buf3 + 0], [buf1 + 8], [buf2 + 0], 7")
    assert pmap2 == ParallelMapBinary(Address.BufferOffset(3), Address.BufferOffset(1, 8), Address.BufferOffset(2),
                                      7, BinaryMapOperation.Atan2, Type.F64)


@pytest.mark.parametrize("text, canonical", [
    ("ldg.f32 r1, [buf2]", "ldg.f32 r1, [buf2 + 0]"),
    ("ldg.f64 r1,[r4-8]", "ldg.f64 r1, [r4 - 8]"),
    ("ldg.f64 r1, [r4 - 0]", "ldg.f64 r1, [r4 + 0]"),
    ("ldg.f64 r1, [r4+r5]", "ldg.f64 r1, [r4 + r5]"),
    ("lds.f32 r1, [shared]", "lds.f32 r1, [shared + 0]"),
    ("ldg.u8 r1, [buf0x10 + 0x10]", None),
    ("\tadd.f32   r1 ,r2,  r3   ; a comment", "add.f32 r1, r2, r3"),
    ("mov_imm.u32 r1, 0xFF", "mov_imm.u32 r1, 255"),
    ("mov_imm.u8 r1, -1", "mov_imm.u8 r1, 255"),
    ("mov_imm.i8 r1, 255", "mov_imm.i8 r1, -1"),
    ("mov_imm.f32 r1, 0x1.8p1", "mov_imm.f32 r1, 3.0"),
    ("mov_imm.f32 r1, 3", "mov_imm.f32 r1, 3.0"),
    ("mov_imm.f32 r1, 0x10", "mov_imm.f32 r1, 16.0"),
    ("mov_imm.f32 r1, .5e1", "mov_imm.f32 r1, 5.0"),
    ("mov_imm.f32 r1, 0.1", "mov_imm.f32 r1, " + repr(round_float(0.1, Type.F32))),
    ("mov_imm.f16 r1, 1e10", "mov_imm.f16 r1, inf"),
    ("mov_imm.f64 r1, 1e999", "mov_imm.f64 r1, inf"),
    ("mov_imm.f32 r1, -nan", "mov_imm.f32 r1, nan"),
    ("mov_imm.f32 r1, +inf", "mov_imm.f32 r1, inf"),
    ("bar.sync 0x0", "bar.sync 0"),
    ("mov_imm.f32 r1, 1." + "0" * 1200 + "e" + "9" * 90, "mov_imm.f32 r1, inf"),
])
def test_accepted_spellings_format_canonically(text, canonical):
    if canonical is None:  # "buf0x10" is not a handle spelling
        with pytest.raises(ProgramError):
            parse_instruction(text)
        return
    assert format_instruction(parse_instruction(text)) == canonical


def test_program_layout_labels_and_indentation():
    text = ("; header comment\n"
            "entry:\n"
            "start:\n"
            "    mov_imm.u32 r1, 3\n"
            "\n"
            "body:\n"
            "    loop r1, @body\n"
            "    bra.!p1 @end\n"
            "end:\n")
    program = parse_program(text)
    assert program.labels == {"entry": 0, "start": 0, "body": 1, "end": 3}
    assert len(program) == 3
    assert format_program(program) == text.replace("; header comment\n", "").replace("\n\n", "\n")
    assert program.to_text() == format_program(program)


def test_empty_program_is_empty_text():
    assert format_program(Program()) == ""
    assert parse_program("") == Program()
    assert parse_program("; only a comment\n\n   \n") == Program()
    assert parse_program("only:\n") == Program([], {"only": 0})


def test_float_immediates_keep_sign_and_specials():
    for text, check in [("-0.0", lambda v: v == 0 and math.copysign(1, v) < 0), ("nan", math.isnan),
                        ("-inf", lambda v: v == -math.inf), ("5e-324", lambda v: v == 5e-324)]:
        value = parse_instruction(f"mov_imm.f64 r1, {text}").value
        assert check(value), text
        assert format_instruction(MOV_IMM(dst=r(1), value=value, ty=Type.F64)) == f"mov_imm.f64 r1, {text}"


@pytest.mark.parametrize("text, message", [
    ("    ad.f32 r1, r2, r3", r"^line 1: unknown mnemonic 'ad\.f32'$"),
    ("exit\n\n\nx:\n    add.f32 r1, r2", r"^line 5: add\.f32 takes 3 operands, got 2$"),
    ("    add.f32 r300, r1, r2", r"^line 1: .*bad register 'r300' \(r0\.\.r255\)"),
    ("    add.q32 r1, r2, r3", r"^line 1: bad type suffix 'q32'"),
    ("loop:\n    exit\nloop:", r"^line 3: duplicate label 'loop' \(first defined on line 1\)"),
    ("9lives:", r"^line 1: invalid label name '9lives'"),
    ("    set.f32 p0, r1, r2", r"^line 1: .*lacks its Condition suffix"),
    ("    set.lt.xx.f32 p0, r1, r2", r"^line 1: unexpected suffix 'xx'"),
    ("    bra.p16 @x", r"^line 1: bra\.p16: bad predicate 'p16' \(p0\.\.p15\)"),
    ("    bra.!x @x", r"^line 1: .*expected a predicate"),
    ("    memfence.everywhere", r"^line 1: unknown MemoryScope 'everywhere'"),
    ("    and.f32 r1, r2, r3", r"^line 1: AND: type F32 is not accepted"),
    ("    pmap.sqrt.i32 [buf1], [buf2], 4", r"^line 1: ParallelMap: operation Sqrt does not accept I32"),
    ("    lds.f32 r1, [buf2 + 0]", r"^line 1: LDS: operand 'src' must be one of"),
    ("    ldg.f32 r1, [buf0 + 0]", r"^line 1: .*BufferOffset\.handle must be an int in 1\.\."),
    ("    ldg.f32 r1, [class96 + 0]", r"^line 1: .*Class\.class_id"),
    ("    ldg.f32 r1, [r1 - r2]", r"^line 1: .*register offset must be added"),
    ("    ldg.f32 r1, [heap1 + 0]", r"^line 1: .*unknown address base 'heap1'"),
    ("    ldg.f32 r1, buf2", r"^line 1: .*expected an address"),
    ("    mov_imm.i8 r1, 300", r"^line 1: MOV_IMM: operand 'value' 300 does not fit in 8 bits"),
    ("    mov_imm.i32 r1, 1.5", r"^line 1: .*expected an integer, got '1\.5'"),
    ("    mov_imm.f32 r1, 1e", r"^line 1: .*expected a number"),
    ("    mov_imm.f32 r1, 0x1p99999", r"^line 1: .*beyond the float range"),
    ("    phase.adv -1", r"^line 1: .*expected an unsigned integer"),
    ("    bar.sync 256", r"^line 1: BarSync: operand 'id' must be an int in 0\.\.255"),
    ("    exit r1", r"^line 1: exit takes 0 operands, got 1"),
    ("    add.f32 r1, , r3", r"^line 1: add\.f32: operand 'lhs' is empty"),
    ("    bra loop", r"^line 1: .*expected a label like '@loop'"),
    ("    cvt.f32 r1, r2", r"^line 1: 'cvt\.f32' lacks its type suffix"),
])
def test_errors_name_the_line_and_the_problem(text, message):
    with pytest.raises(ProgramError, match=message):
        parse_program(text)


def test_parse_rejects_non_text():
    for value in (b"exit", None, 3):
        with pytest.raises(ProgramError):
            parse_program(value)
        with pytest.raises(ProgramError):
            parse_instruction(value)
    with pytest.raises(ProgramError, match="empty instruction"):
        parse_instruction("  ; nothing")


@pytest.mark.parametrize("text", [
    "    mov_imm.f32 r1, " + "1" * 100_000,
    "    mov_imm.i4096 r1, " + "9" * 5000,
    "    mov_imm.u32 r1, 0x" + "f" * 100_000,
    "    add" + ".f32" * 50_000 + " r1, r2, r3",
    "    add.f32 " + "r1, " * 50_000 + "r1",
    "    ldg.f32 r1, " + "[" * 50_000 + "]" * 50_000,
    "    ldg.f32 r1, [buf" + "9" * 50_000 + " + 0]",
    "    ldg.f32 r1, [r1 + " + "+" * 50_000 + "]",
    "    mov_imm.f32 r1, " + "1." + "0" * 1400 + "e" + "9" * 90,
    "x" * 100_000 + ":",
    "    bra @" + "a" * 100_000,
    "    \x00add.f32 r1, r2, r3",
    "    add.f32 r١, r2, r3",
])
def test_hostile_text_is_refused_quickly(text):
    with pytest.raises(ProgramError):
        parse_program(text)


_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(programs())
def test_text_round_trip_is_exact_and_canonical(program):
    text = format_program(program)
    again = parse_program(text)
    assert again == program
    assert again.to_bytes() == program.to_bytes()  # == cannot see -0.0 versus 0.0
    assert format_program(again) == text


@_SETTINGS
@given(instructions())
def test_instruction_text_round_trip(instr):
    text = format_instruction(instr)
    assert str(instr) == text
    assert format_instruction(parse_instruction(text)) == text


@_SETTINGS
@given(st.text(max_size=200))
def test_random_text_raises_only_program_error(text):
    try:
        program = parse_program(text)
    except ProgramError:
        return
    assert parse_program(format_program(program)) == program


_EDIT_CHARS = st.sampled_from(list("r0p9.,;:@[]+-!x \n\t") + ["0x", "nan", "f32", "i4096", "buf", "class"])


@_SETTINGS
@given(programs(), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 3), _EDIT_CHARS), min_size=1, max_size=4))
def test_edited_assembly_raises_only_program_error(program, edits):
    text = format_program(program)
    for position, width, insert in edits:
        position %= len(text) + 1
        text = text[:position] + insert + text[position + width:]
    try:
        edited = parse_program(text)
    except ProgramError:
        return
    assert parse_program(format_program(edited)) == edited


# ---- every row of the opcode table through every form -----------------------------------------
def _round_trips_through_all_forms(instr) -> None:
    targets = {getattr(instr, op.name).name for op in instr.INFO.operands if op.kind is OperandKind.LABEL}
    program = Program([instr], {name: 1 for name in targets})
    encoded = program.to_bytes()
    forms = (Program.from_text(program.to_text()), Program.from_bytes(encoded), Program.from_json(program.to_json()))
    for again in forms:
        assert again == program
        assert again.to_bytes() == encoded


#: the table's rows and rows made by the tests (a new row with float immediates and shapes needs no other change)
ROWS = [*OPCODE_TABLE, *MADE_ROWS]


@pytest.mark.parametrize("info", ROWS, ids=lambda info: info.name)
def test_every_opcode_row_sample_round_trips_through_all_forms(info):
    with rows_added(*MADE_ROWS):
        instr = sample_instruction(info)
        assert format_instruction(instr).split(".")[0].split(" ")[0] == info.mnemonic.split(".")[0]
        _round_trips_through_all_forms(instr)


@pytest.mark.parametrize("info", ROWS, ids=lambda info: info.name)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_opcode_row_random_operands_round_trip_through_all_forms(info, data):
    with rows_added(*MADE_ROWS):
        _round_trips_through_all_forms(data.draw(instruction_of(info)))


def test_float_immediates_are_rounded_to_their_own_type_in_every_form():
    with rows_added(*MADE_ROWS) as made:
        third = 1 / 3
        instr = made["MadeGEMM"](c=Address.BufferOffset(2, 0), a=Address.BufferOffset(3, 0), b=Address.BufferOffset(4, 0),
                             m=2, n=3, k=4, alpha=third, beta=third, ty=Type.F64)
        assert instr.alpha == round_float(third, Type.F32) != third and instr.beta == third
        assert format_instruction(instr) == f"madegemm.f64 [buf2 + 0], [buf3 + 0], [buf4 + 0], 2, 3, 4, {instr.alpha!r}, {third!r}"
        _round_trips_through_all_forms(instr)
        with pytest.raises(ProgramError, match="GEMM: operand 'alpha' must be an int or float for F32, got 'x'"):
            made["MadeGEMM"](c=Address.BufferOffset(2, 0), a=Address.BufferOffset(3, 0), b=Address.BufferOffset(4, 0),
                         m=1, n=1, k=1, alpha="x", beta=0.0)


def test_ldg_with_every_global_address_mode_round_trips():
    for address in (Address.BufferOffset(7, 4), Address.PoolOffset(9, 8), Address.Class(95, 12287),
                    Address.RegisterIndirect(r(3), -(1 << 31)), Address.RegisterIndirectComputed(r(0), r(255))):
        _round_trips_through_all_forms(LDG(dst=r(1), src=address, ty=Type.U64))
