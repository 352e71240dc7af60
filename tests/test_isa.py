"""The ISA's value classes and instruction constructors refuse bad input with ProgramError (an AtlasError
and a ValueError), naming the field, and never let a Python error escape."""

from __future__ import annotations

import math

import pytest

from atlas_web import AtlasError, Program, ProgramError
from atlas_web.isa import ADD, EXIT, MOV_IMM, Address, Label, Predicate, Register, Type
from atlas_web.isa.addresses import make_pointer

FLOATS = [pytest.param(ty, id=ty.name) for ty in (Type.F16, Type.BF16, Type.F32, Type.F64)]


@pytest.mark.parametrize("ty", FLOATS)
@pytest.mark.parametrize("sign", [1, -1])
def test_an_int_beyond_every_float_format_becomes_an_infinity(ty, sign):
    value = MOV_IMM(dst=Register(1), value=sign * 10 ** 400, ty=ty).value
    assert value == sign * math.inf


@pytest.mark.parametrize("ty", FLOATS)
def test_huge_integer_immediates_read_from_text_and_json_become_infinities(ty):
    digits = "9" * 400
    text = Program.from_text(f"mov_imm.{ty.suffix} r1, -{digits}\nexit")
    assert text[0].value == -math.inf
    json_text = ('{"format": "atlas-web-program", "version": 1, "labels": {}, "instructions": ['
                 f'{{"op": "MOV_IMM", "dst": "r1", "value": {digits}, "ty": "{ty.suffix}"}}]}}')
    assert Program.from_json(json_text)[0].value == math.inf


@pytest.mark.parametrize("make, match", [
    (lambda: Register(256), "register index"),
    (lambda: Register(-1), "register index"),
    (lambda: Register("r1"), "register index"),
    (lambda: Predicate(16), "predicate index"),
    (lambda: Label("1loop"), "invalid label name '1loop'"),
    (lambda: Label("x" * 256), "invalid label name"),
    (lambda: Address.BufferOffset(0), "BufferOffset.handle"),
    (lambda: Address.PoolOffset(2, -1), "PoolOffset.offset"),
    (lambda: Address.Shared(1 << 32), "Shared.offset"),
    (lambda: Address.Class(96), "Class.class_id"),
    (lambda: Address.RegisterIndirect(5), "RegisterIndirect.base"),
    (lambda: Address.RegisterIndirect(Register(1), 1 << 31), "RegisterIndirect.offset"),
    (lambda: Address.RegisterIndirectComputed(Register(1), 2), "RegisterIndirectComputed.offset_reg"),
    (lambda: make_pointer(1 << 32, 0), "pointer parts"),
])
def test_value_classes_raise_program_error_naming_the_field(make, match):
    with pytest.raises(ProgramError, match=match) as caught:
        make()
    assert isinstance(caught.value, AtlasError) and isinstance(caught.value, ValueError)


def test_instruction_constructors_name_the_instruction_and_operand():
    with pytest.raises(ProgramError, match=r"ADD: operand 'lhs' must be a Register, got 2"):
        ADD(dst=Register(1), lhs=2, rhs=Register(3), ty=Type.F32)


@pytest.mark.parametrize("instructions, match", [
    (5, "instructions must be an iterable of instructions, got int"),
    ([EXIT(), "exit"], "instruction 1: not an instruction: 'exit'"),
])
def test_program_refuses_what_is_not_a_sequence_of_instructions(instructions, match):
    with pytest.raises(ProgramError, match=match):
        Program(instructions)


def test_program_refuses_labels_that_are_not_a_mapping():
    with pytest.raises(ProgramError, match="labels must map label names to instruction indices, got list"):
        Program([EXIT()], ["start"])


@pytest.mark.parametrize("ty", FLOATS)
def test_float_immediates_compare_by_bits(ty):
    def mov(value):
        return MOV_IMM(dst=Register(1), value=value, ty=ty)
    assert mov(-0.0) != mov(0.0)
    assert mov(1) == mov(1.0) and hash(mov(1)) == hash(mov(1.0))
    assert mov(math.nan) == mov(-math.nan) and hash(mov(math.nan)) == hash(mov(math.nan))
    assert MOV_IMM(dst=Register(1), value=0, ty=Type.I32) == MOV_IMM(dst=Register(1), value=0, ty=Type.I32)
    assert mov(0.0) != MOV_IMM(dst=Register(1), value=0, ty=Type.I32)


def test_programs_that_differ_only_in_the_sign_of_a_zero_are_different():
    plus, minus = (Program([MOV_IMM(dst=Register(1), value=zero, ty=Type.F32), EXIT()]) for zero in (0.0, -0.0))
    assert plus != minus and len({plus, minus}) == 2
    again = Program.from_bytes(minus.to_bytes())
    assert again == minus and hash(again) == hash(minus)


def test_ulp_distance_counts_the_values_of_the_type_between_two_values():
    import math

    from atlas_web.isa.floats import ulp_distance

    assert ulp_distance(1.0, math.nextafter(1.0, 2.0), Type.F64) == 1.0
    assert ulp_distance(1.0, 1.0 + 2.0 ** -23, Type.F32) == 1.0
    assert ulp_distance(1.0, 1.0 + 2.0 ** -7, Type.BF16) == 1.0
    assert ulp_distance(-0.0, 0.0, Type.F32) == 0.0
    assert ulp_distance(-(2.0 ** -149), 2.0 ** -149, Type.F32) == 2.0   # across zero
    assert ulp_distance(math.nan, math.nan, Type.F16) == 0.0
    assert ulp_distance(math.nan, 1.0, Type.F16) == math.inf
    assert ulp_distance(math.inf, 65504.0, Type.F16) == math.inf
    assert ulp_distance(-math.inf, -math.inf, Type.F16) == 0.0


@pytest.mark.parametrize("value, ty, match", [
    (1.5, Type.I32, r"^MOV_IMM: operand 'offset' must be an int for I32, got 1\.5$"),
    (True, Type.U8, r"^MOV_IMM: operand 'offset' must be an int for U8, got True$"),
    (300, Type.U8, r"^MOV_IMM: operand 'offset' 300 does not fit in 8 bits \(U8\)$"),
    ("x", Type.F32, r"^MOV_IMM: operand 'offset' must be an int or float for F32, got 'x'$"),
])
def test_normalize_immediate_names_the_operand_its_caller_gives(value, ty, match):
    from atlas_web.isa.instructions import normalize_immediate
    with pytest.raises(ProgramError, match=match):
        normalize_immediate(MOV_IMM.INFO, value, ty, "offset")
