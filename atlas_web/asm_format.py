"""Text assembly, writing side: instruction and program formatting, and the shared syntax rules.

The syntax is derived from the opcode table (``atlas_web.isa.opcodes``):

* a mnemonic is the row's ``mnemonic``, then one ``.``-suffix per ``in_suffix``
  operand (an enum member's ``text``; BRA's optional predicate, ``!``-prefixed
  when the FLAG after it is set), then the type suffix(es) in
  ``TYPE_SUFFIX_ORDER`` (so CVT reads ``cvt.<dst_ty>.<src_ty>``);
* the other operands follow in table order, comma-separated, each spelled by
  ``OPERAND_FORMATTERS`` for its OperandKind.

The text is canonical: one spelling per instruction, so equal programs format
to equal text. Nothing here copies or mutates an instruction.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .isa.dims import format_dims
from .isa.instructions import Instruction
from .isa.opcodes import OpcodeInfo, Operand, OperandKind
from .isa.types import Type

__all__ = [
    "format_instruction", "format_program", "format_immediate", "format_mnemonic",
    "TYPE_SUFFIX_ORDER", "INDENT", "COMMENT", "FLAG_TEXT", "suffix_operands", "listed_operands", "type_suffix_fields",
]

#: instructions are indented by this; label lines are not
INDENT = "    "
#: starts a comment that runs to the end of the line
COMMENT = ";"
#: the order in which type fields are spelled as mnemonic suffixes (CVT: destination first)
TYPE_SUFFIX_ORDER: tuple[str, ...] = ("ty", "dst_ty", "src_ty")
#: a FLAG operand in the suffix negates the suffix part before it with this prefix (``bra.!p0``)
NEGATION_PREFIX = "!"
#: a listed FLAG operand (GEMM's trans_a) is spelled ``true`` or ``false``
FLAG_TEXT = {True: "true", False: "false"}


def suffix_operands(info: OpcodeInfo) -> tuple[Operand, ...]:
    """The operands spelled in the mnemonic suffix, in table order."""
    return tuple(o for o in info.operands if o.in_suffix)


def listed_operands(info: OpcodeInfo) -> tuple[Operand, ...]:
    """The operands spelled after the mnemonic, in table order."""
    return tuple(o for o in info.operands if not o.in_suffix)


def type_suffix_fields(info: OpcodeInfo) -> tuple[str, ...]:
    """The type field names in the order the mnemonic spells them."""
    return tuple(sorted(info.type_fields, key=TYPE_SUFFIX_ORDER.index))


def format_immediate(value: int | float, ty: Type) -> str:
    """An immediate of type ``ty``: decimal int, or the float's repr / ``inf`` / ``-inf`` / ``nan``.

    Float immediates are already rounded to ``ty``, so repr() is exact.
    """
    return format_float(value) if ty.is_float() else str(int(value))


def format_float(value: float) -> str:
    """A float immediate (already rounded to its type): its repr, ``inf``, ``-inf`` or ``nan``."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(float(value))


def _format_enum_suffix(value: object) -> str | None:
    return value.text  # type: ignore[attr-defined]


def _format_optional_predicate_suffix(value: object) -> str | None:
    return None if value is None else str(value)


#: OperandKind -> spelling of that operand as a mnemonic suffix part (None: no part)
SUFFIX_FORMATTERS: dict[OperandKind, Callable[[object], str | None]] = {
    OperandKind.ENUM: _format_enum_suffix,
    OperandKind.OPT_PRED: _format_optional_predicate_suffix,
}

#: OperandKind -> spelling of a listed operand; the second argument is the instruction's type
OPERAND_FORMATTERS: dict[OperandKind, Callable[[Any, Any], str]] = {
    OperandKind.REG: lambda value, ty: str(value),
    OperandKind.PRED: lambda value, ty: str(value),
    OperandKind.LABEL: lambda value, ty: str(value),
    OperandKind.ADDR: lambda value, ty: str(value),
    OperandKind.UINT: lambda value, ty: str(int(value)),
    OperandKind.IMM: lambda value, ty: format_immediate(value, ty),
    OperandKind.FLOAT: lambda value, ty: format_float(value),
    OperandKind.FLAG: lambda value, ty: FLAG_TEXT[value],
    OperandKind.DIMS: lambda value, ty: format_dims(value),
}


def format_mnemonic(instr: Instruction) -> str:
    """The full mnemonic of ``instr``: ``add.f32``, ``set.lt.f32``, ``bra.!p0``, ``cvt.f32.i32``."""
    info = instr.INFO
    parts = [info.mnemonic]
    for op in suffix_operands(info):
        value = getattr(instr, op.name)
        if op.kind is OperandKind.FLAG:
            if value:
                parts[-1] = NEGATION_PREFIX + parts[-1]
            continue
        part = SUFFIX_FORMATTERS[op.kind](value)
        if part is not None:
            parts.append(part)
    parts.extend(getattr(instr, name).suffix for name in type_suffix_fields(info))
    return ".".join(parts)


def format_instruction(instr: Instruction) -> str:
    """One instruction as canonical text, without indentation: ``add.f32 r1, r2, r3``."""
    info = instr.INFO
    ty = instr.type
    operands = [OPERAND_FORMATTERS[op.kind](getattr(instr, op.name), ty) for op in listed_operands(info)]
    mnemonic = format_mnemonic(instr)
    return f"{mnemonic} {', '.join(operands)}" if operands else mnemonic


def format_program(program) -> str:
    """A Program as canonical text: label lines (``name:``, sorted by name at each position) and
    4-space-indented instructions, one per line, ending with a newline (empty program: empty text)."""
    by_position: dict[int, list[str]] = {}
    for name, position in program.labels.items():
        by_position.setdefault(position, []).append(name)
    lines: list[str] = []
    count = len(program.instructions)
    for index in range(count + 1):
        lines.extend(f"{name}:" for name in sorted(by_position.get(index, ())))
        if index < count:
            lines.append(INDENT + format_instruction(program.instructions[index]))
    return "".join(line + "\n" for line in lines)
