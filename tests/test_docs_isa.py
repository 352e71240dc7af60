"""docs/isa.md is generated from the opcode table and must not drift from it."""

from __future__ import annotations

import pathlib

import pytest

from atlas_web.asm import format_instruction, parse_instruction
from atlas_web.docsgen import describe_types, render_isa_md, sample_instruction
from atlas_web.errors import TrapCode
from atlas_web.isa import ALL, FLOATS, INTS, OPCODE_TABLE, SCALARS, SpecialRegister, Type
from atlas_web.isa.addresses import ADDRESS_MODES
from atlas_web.isa.enums import BinaryMapOperation, Condition, MapOperation, MemoryScope, ReduceOperation

ISA_MD = pathlib.Path(__file__).resolve().parent.parent / "docs" / "isa.md"


def test_docs_isa_md_is_the_generated_text():
    assert ISA_MD.read_text(encoding="utf-8") == render_isa_md(), \
        "docs/isa.md is stale: run `python -m atlas_web.docsgen > docs/isa.md`"


@pytest.mark.parametrize("info", OPCODE_TABLE, ids=lambda info: info.name)
def test_every_instruction_is_documented_with_its_example(info):
    text = render_isa_md()
    example = format_instruction(sample_instruction(info))
    assert f"| `{info.name}` | `{info.opcode:#04x}` | `{example}` |" in text
    assert parse_instruction(example) == sample_instruction(info)


def test_every_enum_member_register_mode_and_trap_is_documented():
    text = render_isa_md()
    for enum_class in (Condition, MemoryScope, MapOperation, BinaryMapOperation, ReduceOperation):
        for member in enum_class:
            assert f"| {member.name} | {member.code} | `{member.text}` |" in text
    for reg in SpecialRegister:
        assert f"| `r{reg.value}` | `{reg.name}` |" in text
    for code, mode in enumerate(ADDRESS_MODES):
        assert f"| {code} | `{mode.__name__}` |" in text
    for trap in TrapCode:
        assert f"| {trap.value} | `{trap.name}` |" in text
    for ty in Type:
        assert f"| `{ty.suffix}` | {ty.code} |" in text
    assert "[docs/semantics.md](semantics.md)" in text


def test_type_sets_have_compact_names():
    assert describe_types(ALL) == "all"
    assert describe_types(FLOATS) == "floats"
    assert describe_types(INTS) == "integers ≤64 bits"
    assert describe_types(SCALARS) == "floats, integers ≤64 bits"
    assert describe_types(frozenset({Type.F64, Type.F32})) == "`f32`, `f64`"
