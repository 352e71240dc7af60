"""Generates docs/isa.md, the instruction reference, from the opcode table and the ISA's enums.

``python -m atlas_web.docsgen > docs/isa.md`` rewrites it; tests/test_docs_isa.py
checks that the file equals ``render_isa_md()``, so the docs cannot drift from
the code. ``sample_instruction(info)`` builds the deterministic example shown
for each row (tests reuse it to round-trip every row). Raises KeyError when an
enum member or rule has no description here (add one).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .asm_format import format_instruction
from .bytecode import BYTECODE_VERSION, LAYOUT, OPERAND_CODECS
from .errors import TrapCode
from .isa.addresses import ADDRESS_MODES, Address
from .isa.enums import BinaryMapOperation, Condition, MapOperation, MemoryScope, ReduceOperation
from .isa.instructions import ADDRESS_MODES_BY_RULE, INSTRUCTION_CLASSES, Instruction
from .isa.opcodes import (
    ALL, EXTENDED, FLOATS, INTS, OPCODE_TABLE, SCALARS, Access, OpcodeInfo, OperandKind, TypeRule,
)
from .isa.effects import STATE
from .isa.operations import COOPERATIVE_OPERATION_TYPES, ELEMENT_FUNCTIONS, lane_instruction
from .isa.registers import FIRST_SPECIAL_REGISTER, NUM_PREDICATES, Label, Predicate, Register, SpecialRegister
from .isa.types import Type
from .jsonform import FORMAT_NAME, JSON_VERSION

__all__ = ["render_isa_md", "sample_instruction", "describe_types"]

# ---- examples -------------------------------------------------------------------------------
#: preferred example type per type field (the first one the row accepts)
_SAMPLE_TYPES: dict[str, tuple[Type, ...]] = {
    "ty": (Type.F32, Type.U32, Type.I32),
    "dst_ty": (Type.F32,),
    "src_ty": (Type.I32,),
}
#: example values of UINT operands, by operand name
_SAMPLE_UINTS = {"count": 256, "id": 0, "delta": 1, "size": 4096}
_SAMPLE_DIMS = {"shape_a": (2, 3, 4), "shape_b": (4, 5), "contract_dims": ((2, 0),)}
_SAMPLE_ADDRESSES = {"global": lambda k: Address.BufferOffset(2 + k, 0), "shared": lambda k: Address.Shared(0)}


def _sample_type(info: OpcodeInfo, field_name: str) -> Type:
    for ty in _SAMPLE_TYPES[field_name]:
        if ty in info.types:
            return ty
    return min(info.types, key=lambda t: t.code)


def sample_instruction(info: OpcodeInfo) -> Instruction:
    """A deterministic, valid example of the row ``info`` (``add.f32 r1, r2, r3``)."""
    values: dict[str, Any] = {name: _sample_type(info, name) for name in info.type_fields}
    ty: Any = values.get("ty", values.get("dst_ty"))
    registers = iter(range(1, 243))
    addresses = iter(range(len(info.operands)))
    samples = {
        OperandKind.REG: lambda op: Register(next(registers)),
        OperandKind.PRED: lambda op: Predicate(0),
        OperandKind.OPT_PRED: lambda op: Predicate(0),
        OperandKind.FLAG: lambda op: False,
        OperandKind.LABEL: lambda op: Label("loop"),
        OperandKind.ADDR: lambda op: _SAMPLE_ADDRESSES[op.rule](next(addresses)),
        OperandKind.IMM: lambda op: 1.5 if ty.is_float() else 42,
        OperandKind.FLOAT: lambda op: 0.5,
        OperandKind.UINT: lambda op: _SAMPLE_UINTS.get(op.name, 1),
        OperandKind.ENUM: lambda op: next(iter(op.rule)),
        OperandKind.DIMS: lambda op: _SAMPLE_DIMS.get(op.name, (1,)),
    }
    for op in info.operands:
        values[op.name] = samples[op.kind](op)
    return INSTRUCTION_CLASSES[info.name](**values)


# ---- descriptions ---------------------------------------------------------------------------
#: compact names of type sets, checked in order (the first equal set wins)
_TYPE_SET_NAMES: tuple[tuple[frozenset, str], ...] = (
    (ALL, "all"),
    (SCALARS, "floats, integers ≤64 bits"),
    (FLOATS, "floats"),
    (INTS, "integers ≤64 bits"),
    (INTS | EXTENDED, "integers"),
    (EXTENDED, "extended integers"),
    (frozenset(), "— (untyped)"),
)

_TYPE_RULE_TEXT: dict[TypeRule, str] = {
    TypeRule.TY: "the instruction's type `ty`",
    TypeRule.SRC_TY: "CVT's source type `src_ty`",
    TypeRule.DST_TY: "CVT's destination type `dst_ty`",
    TypeRule.INT: "any integer type of at most 64 bits (read as that type)",
    TypeRule.INT32: "`i32` or `u32`",
    TypeRule.PTR: "`i64` or `u64` (a 64-bit pointer)",
}

#: how an operand of each kind is spelled in the "operands" column
_KIND_TEXT: dict[OperandKind, str] = {
    OperandKind.REG: "reg",
    OperandKind.PRED: "pred",
    OperandKind.OPT_PRED: "pred?",
    OperandKind.FLAG: "flag",
    OperandKind.ADDR: "addr",
    OperandKind.LABEL: "label",
    OperandKind.IMM: "imm",
    OperandKind.FLOAT: "float",
    OperandKind.UINT: "imm",
    OperandKind.ENUM: "enum",
    OperandKind.DIMS: "dims",
}

_ACCESS_TEXT = {Access.READ: "", Access.WRITE: " (w)", Access.READ_WRITE: " (rw)"}
_MEMORY_TEXT = {Access.READ: "reads", Access.WRITE: "writes", Access.READ_WRITE: "reads and writes"}

_TRAP_TEXT: dict[TrapCode, str] = {
    TrapCode.OUT_OF_BOUNDS: "an access outside its allocation (or a pointer offset that wraps)",
    TrapCode.MISALIGNED: "an access not naturally aligned (type size up to 8 bytes, 8 for extended integers)",
    TrapCode.INVALID_HANDLE: "a handle that names no live buffer or pool (or a buffer where a pool is needed)",
    TrapCode.DIVISION_BY_ZERO: "integer DIV or REM by zero",
    TrapCode.INTEGER_OVERFLOW: "signed integer `MIN / -1` in DIV or REM",
    TrapCode.BUDGET_EXCEEDED: "a lane took more backward jumps than its budget (a runaway loop)",
    TrapCode.INVALID_CLASS: "an Atlas class id of 96 or more",
    TrapCode.POOL_EXHAUSTED: "PoolAlloc could not allocate",
    TrapCode.INVALID_SPARSE: "SparseGEMM's CSR row pointers decrease, or a column index it uses is k or more",
}

#: the text-assembly spelling of each address mode's fields, shown beside its example
_ADDRESS_SYNTAX: dict[type, str] = {
    Address.BufferOffset: "[buf<handle> + <offset>]",
    Address.PoolOffset: "[pool<handle> + <offset>]",
    Address.Shared: "[shared + <offset>]",
    Address.Class: "[class<class_id> + <offset>]",
    Address.RegisterIndirect: "[<base> + <offset>] or [<base> - <offset>]",
    Address.RegisterIndirectComputed: "[<handle_reg> + <offset_reg>]",
}
_ADDRESS_EXAMPLES: dict[type, object] = {
    Address.BufferOffset: Address.BufferOffset(2, 16),
    Address.PoolOffset: Address.PoolOffset(3, 0),
    Address.Shared: Address.Shared(8),
    Address.Class: Address.Class(5, 3),
    Address.RegisterIndirect: Address.RegisterIndirect(Register(4), -8),
    Address.RegisterIndirectComputed: Address.RegisterIndirectComputed(Register(4), Register(5)),
}


def _suffixes(types) -> str:
    return ", ".join(f"`{t.suffix}`" for t in sorted(types, key=lambda t: t.code))


def describe_types(types: frozenset) -> str:
    """A compact name for a set of types: "all", "floats", "integers ≤64 bits", or the list."""
    for named, text in _TYPE_SET_NAMES:
        if types == named:
            return text
    return _suffixes(types)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: tuple[str, ...], rows) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(_cell(str(c)) for c in row) + " |" for row in rows)
    return lines + [""]


def _operand_rule(op) -> str:
    """The ``:rule`` part of an operand's spelling: its type rule, address class, width or enum."""
    if op.kind is OperandKind.REG:
        return ":" + (op.rule.value if isinstance(op.rule, TypeRule) else op.rule.suffix)
    if op.kind is OperandKind.UINT:
        return f":u{op.rule}"
    if op.kind is OperandKind.IMM:
        return ":ty"
    if op.kind is OperandKind.FLOAT:
        return ":" + (op.rule.value if isinstance(op.rule, TypeRule) else op.rule.suffix)
    if op.kind is OperandKind.ADDR:
        return ":" + op.rule
    if op.kind is OperandKind.ENUM:
        return ":" + op.rule.__name__
    if op.kind is OperandKind.DIMS:
        return ":shape" if op.rule == 1 else ":pairs"
    return ""


def _extent_text(op) -> str:
    """An address operand's extent: ``(reads count × ty)``; nothing for other operands."""
    if op.kind is not OperandKind.ADDR:
        return ""
    element = op.element.value if isinstance(op.element, TypeRule) else op.element.suffix
    return f" ({_MEMORY_TEXT[op.memory]} {op.extent.replace('*', ' × ')} × {element})"


def _operand_text(op) -> str:
    text = f"`{op.name}` {_KIND_TEXT[op.kind]}{_operand_rule(op)}" + _ACCESS_TEXT[op.access] + _extent_text(op)
    return text + (" (suffix)" if op.in_suffix else "")


# ---- sections -------------------------------------------------------------------------------
def _intro() -> list[str]:
    return [
        "# The Atlas ISA: instruction reference",
        "",
        "<!-- Generated by `python -m atlas_web.docsgen > docs/isa.md` from atlas_web/isa/opcodes.py;"
        " do not edit by hand (tests/test_docs_isa.py checks it). -->",
        "",
        "The full semantics contract (lanes, types, numbers, conversions, memory, control flow,",
        "synchronization, reductions, traps) is [docs/semantics.md](semantics.md); this page lists",
        "what the opcode table says about each instruction and how programs are written down:",
        "text assembly, bytecode and JSON.",
        "",
        "## Text assembly",
        "",
        "One instruction per line, indented by four spaces; `name:` on its own line places a label",
        "(a label may follow the last instruction); `;` starts a comment; blank lines are ignored.",
        "The mnemonic is followed by `.`-suffixes: the enum operands marked \"in the mnemonic\", BRA's",
        "optional predicate (`bra.p0`, negated `bra.!p0`), then the type (`add.f32`; CVT names the",
        "destination type first: `cvt.f32.i32`). The other operands follow, comma-separated:",
        "registers `r0`…`r255`, predicates `p0`…`p15`, labels `@name`, addresses in brackets (see",
        "Address modes), decimal or `0x` hex integers, and float immediates as Python writes them",
        "(`1.5`, `-0.0`, `1e-05`, `inf`, `-inf`, `nan`; hex floats like `0x1.8p+1` are read too).",
        "",
    ]


def _types_section() -> list[str]:
    rows = [(f"`{t.suffix}`", t.code, t.bits, t.family.value) for t in Type]
    return (["## Types", "", "Type names used below: floats = " + _suffixes(FLOATS) + "; integers ≤64 bits = "
             + _suffixes(INTS) + "; extended integers = " + _suffixes(EXTENDED) + ".", ""]
            + _table(("type", "code", "bits", "family"), rows))


def _operand_rules_section() -> list[str]:
    rows = [(f"`{rule.value}`", text) for rule, text in _TYPE_RULE_TEXT.items()]
    return (["## Operands", "",
             "The \"operands\" column below lists each operand in field order as `name kind:rule`:",
             "`reg:<rule>` a register whose value has the type the rule names (the verifier checks it;",
             "a fixed type such as `u8` is written as itself), `pred` a predicate, `pred?` an optional",
             "predicate, `flag` BRA's negation, `addr:global` / `addr:shared` an address (see Address",
             "modes) followed by its extent, what it covers: `(reads count × ty)` reads `count`",
             "consecutive values of type `ty` from the address (an extent is an expression over the",
             "instruction's shape operands; the verifier checks the whole range at launch), `label` a",
             "label, `imm:ty` an immediate of the instruction's type, `imm:u32` an unsigned immediate",
             "of that width (a shape operand when an extent names it), `float:f32` / `float:f64` a float",
             "immediate stored in that type (written like `imm`'s floats), `enum:<Enum>` a member of that",
             "enumeration. `(w)` marks an operand the instruction writes, `(rw)` one it reads and",
             "writes, `(suffix)` one spelled in the mnemonic.", ""]
            + _table(("rule", "meaning"), rows))


def _instruction_sections() -> list[str]:
    lines = ["## Instructions", ""]
    categories: dict[str, list[OpcodeInfo]] = {}
    for info in OPCODE_TABLE:
        categories.setdefault(info.category, []).append(info)
    for category, infos in categories.items():
        rows = []
        for info in infos:
            operands = ", ".join(_operand_text(op) for op in info.operands) or "—"
            rows.append((f"`{info.name}`", f"`{info.opcode:#04x}`", f"`{format_instruction(sample_instruction(info))}`",
                         operands, describe_types(info.types), info.kind.value, info.summary))
        lines += [f"### {category}", ""]
        lines += _table(("instruction", "opcode", "example", "operands", "types", "execution", "meaning"), rows)
    return lines


def _state_text(names) -> str:
    return ", ".join(name for name in STATE if name in names) or "—"


def _effects_section() -> list[str]:
    rows = [(f"`{info.name}`", _state_text(info.effects.reads), _state_text(info.effects.writes),
             ", ".join(t.name for t in TrapCode if t in info.effects.traps) or "—",
             "yes" if info.effects.order_free else "no") for info in OPCODE_TABLE]
    return (["## Effects", "",
             "What each instruction reads and writes (`registers`: the lane's registers and predicates; `global`:",
             "buffers, pools and the boundary memory through an address; `shared`: the block's shared memory;",
             "`pool`: pool allocations and PoolLoad/PoolStore's bytes; `atlas`: the resonance accumulator and the",
             "lane's phase), the trap codes it may raise (an instruction that may trap is never removed as dead",
             "code), and whether the lanes of a launch may run it in any order or at once with the same results",
             "(\"order-free\": it has no effect another lane can observe).", ""]
            + _table(("instruction", "reads", "writes", "may trap with", "order-free"), rows))


def _registers_section() -> list[str]:
    rows = [(f"`r{reg.value}`", f"`{reg.name}`", "`u32`") for reg in SpecialRegister]
    return (["## Registers", "",
             f"Each lane has general registers `r0`…`r{FIRST_SPECIAL_REGISTER - 1}` (zero at launch) and predicates "
             f"`p0`…`p{NUM_PREDICATES - 1}` (false at launch). The registers from `r{FIRST_SPECIAL_REGISTER}` up "
             "are read-only special registers that the launch fills in:", ""]
            + _table(("register", "name", "type"), rows))


def _address_section() -> list[str]:
    rows = []
    for code, mode in enumerate(ADDRESS_MODES):
        rules = ", ".join(rule for rule, modes in ADDRESS_MODES_BY_RULE.items() if mode in modes)
        doc = (mode.__doc__ or "").strip().split("\n")[0].replace("``", "`")
        fields = ", ".join(f.name for f in dataclasses.fields(mode))
        rows.append((code, f"`{mode.__name__}`", f"`{_ADDRESS_SYNTAX[mode]}`", f"`{_ADDRESS_EXAMPLES[mode]}`",
                     fields, rules, doc))
    return (["## Address modes", "",
             "An address operand is `global` (LDG, STG, reductions, cooperative arrays) or `shared`",
             "(LDS, STS); the column \"operands\" says which accept each mode. `[buf2]` is read as",
             "`[buf2 + 0]`. See docs/semantics.md, Memory, for pointers and checks.", ""]
            + _table(("code", "mode", "syntax", "example", "fields", "operands", "meaning"), rows))


def _enum_sections() -> list[str]:
    lines = ["## Enumerations", ""]
    enum_class: Any
    for enum_class in (Condition, MemoryScope):
        doc = " ".join(line.strip() for line in (enum_class.__doc__ or "").strip().split("\n") if line.strip())
        lines += [f"### {enum_class.__name__}", "", doc, ""]
        lines += _table(("member", "code", "assembly"), [(m.name, m.code, f"`{m.text}`") for m in enum_class])
    for enum_class in (MapOperation, BinaryMapOperation, ReduceOperation):
        doc = (enum_class.__doc__ or "").strip()
        lines += [f"### {enum_class.__name__}", "", doc, ""]
        lines += _table(("member", "code", "assembly", "types", "lane function"),
                        [(m.name, m.code, f"`{m.text}`", describe_types(COOPERATIVE_OPERATION_TYPES[m]),
                          f"`{ELEMENT_FUNCTIONS[m]}`" + ("" if lane_instruction(m) else " (no instruction)"))
                         for m in enum_class])
    return lines


def _trap_section() -> list[str]:
    return (["## Trap codes", "",
             "A launch that traps raises `AtlasTrap(code, instruction_index, lane)`; the code is the same",
             "on every backend.", ""]
            + _table(("code", "name", "cause"), [(t.value, f"`{t.name}`", _TRAP_TEXT[t]) for t in TrapCode]))


def _bytecode_section() -> list[str]:
    return (["## Bytecode (version %d)" % BYTECODE_VERSION, "",
             "`Program.to_bytes()` / `Program.from_bytes()` (atlas_web.bytecode). `uleb` is unsigned LEB128,",
             "`zleb` zigzag LEB128 (0, -1, 1, -2 … as 0, 1, 2, 3 …), both of minimal length. Opcodes, type",
             "codes, address mode codes and enum codes are the ones in the tables above. `Program.digest()`",
             "is BLAKE2b-256 of this encoding. The decoder accepts exactly what the encoder writes and",
             "raises ProgramError naming the byte offset otherwise; another version is refused with",
             "`unsupported bytecode version N; this atlas-web reads version 1`.", ""]
            + _table(("part", "encoding"), LAYOUT)
            + ["Operands, by kind:", ""]
            + _table(("operand kind", "encoding"),
                     [(f"`{kind.value}`", OPERAND_CODECS[kind].doc) for kind in OperandKind]))


def _json_section() -> list[str]:
    return ["## JSON form", "",
            f"`Program.to_json()` / `Program.from_json()` (atlas_web.jsonform): an object with `\"format\": "
            f"\"{FORMAT_NAME}\"`, `\"version\": {JSON_VERSION}`,",
            "`labels` (name → instruction index) and `instructions`, each an object with `op` (the",
            "instruction name), its operands and type fields by name: registers and predicates as",
            "`\"r1\"`/`\"p0\"`, labels by name, addresses as objects (`{\"mode\": \"BufferOffset\", \"handle\": 2,",
            "\"offset\": 0}`), enums by their assembly text, types by name, float immediates as strings",
            "(`\"1.5\"`, `\"-0.0\"`, `\"inf\"`, `\"nan\"`) and integers as JSON numbers.", ""]


def render_isa_md() -> str:
    """The text of docs/isa.md."""
    lines = (_intro() + _types_section() + _operand_rules_section() + _instruction_sections() + _effects_section()
             + _registers_section() + _address_section() + _enum_sections() + _trap_section()
             + _bytecode_section() + _json_section())
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.buffer.write(render_isa_md().encode("utf-8"))
