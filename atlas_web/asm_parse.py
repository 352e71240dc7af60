"""Text assembly, reading side: parse instructions and programs written by ``atlas_web.asm_format``.

Accepted beyond the canonical text: any indentation, ``;`` comments, blank
lines, hex integers (``0x1f``), hex floats (``0x1.8p+1``, float.fromhex form),
ints for float immediates, ``[buf2]`` for ``[buf2 + 0]`` and no spaces inside
addresses. Every failure is a ProgramError; the program parser prefixes it with
``line N:``. The patterns below are anchored and free of nested quantifiers,
and numeric literals are length-capped before conversion, so hostile input
cannot make the parser hang.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from .asm_format import COMMENT, FLAG_TEXT, NEGATION_PREFIX, listed_operands, suffix_operands, type_suffix_fields
from .errors import ProgramError
from .isa.addresses import Address
from .isa.dims import parse_dims
from .isa.instructions import INSTRUCTION_CLASSES, Instruction
from .isa.opcodes import OPCODE_TABLE, OpcodeInfo, Operand, OperandKind
from .isa.registers import NUM_PREDICATES, NUM_REGISTERS, Label, Predicate, Register, is_label_name
from .isa.types import Type

__all__ = [
    "parse_instruction", "parse_program", "parse_int_literal", "parse_float_literal", "parse_register",
    "parse_predicate", "OPERAND_PARSERS",
]

_BY_MNEMONIC: dict[str, OpcodeInfo] = {info.mnemonic: info for info in OPCODE_TABLE}
#: the most dot-separated parts a table mnemonic has (``bar.sync``: 2)
_MAX_MNEMONIC_PARTS = max(len(m.split(".")) for m in _BY_MNEMONIC)

_INT = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|[0-9]+)")
_DECIMAL_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_HEX_FLOAT = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?")
_SPECIAL_FLOATS = {"inf": float("inf"), "+inf": float("inf"), "-inf": float("-inf"),
                   "nan": float("nan"), "+nan": float("nan"), "-nan": float("nan")}
_REGISTER = re.compile(r"r([0-9]+)")
_PREDICATE = re.compile(r"p([0-9]+)")
_NUMBERED_BASE = re.compile(r"([a-z]+)([0-9]+)")
#: longer literals are refused before conversion (a 4096-bit int has 1234 decimal digits)
_MAX_LITERAL_CHARS = 1300


def _literal_too_long(text: str) -> ProgramError:
    return ProgramError(f"numeric literal of {len(text)} characters is too long (at most {_MAX_LITERAL_CHARS})")


def parse_int_literal(text: str) -> int:
    """A decimal or ``0x`` hex integer with an optional sign; raises ProgramError otherwise."""
    if len(text) > _MAX_LITERAL_CHARS:
        raise _literal_too_long(text)
    match = _INT.fullmatch(text)
    if match is None:
        raise ProgramError(f"expected an integer, got {text!r}")
    sign, digits = match.groups()
    value = int(digits, 16) if digits[:2] in ("0x", "0X") else int(digits)
    return -value if sign == "-" else value


def parse_float_literal(text: str) -> float | int:
    """A float literal: decimal, hex float, ``inf``/``-inf``/``nan``, or an integer (returned as int).

    Raises ProgramError for anything else, or for a hex float beyond the float range.
    """
    if len(text) > _MAX_LITERAL_CHARS:
        raise _literal_too_long(text)
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    if _INT.fullmatch(text):
        return parse_int_literal(text)
    if _DECIMAL_FLOAT.fullmatch(text):
        return float(text)
    if _HEX_FLOAT.fullmatch(text):
        try:
            return float.fromhex(text)
        except OverflowError:
            raise ProgramError(f"hex float {text!r} is beyond the float range") from None
    raise ProgramError(f"expected a number (decimal, hex, inf or nan), got {text!r}")


def _parse_indexed(text: str, pattern: re.Pattern, prefix: str, limit: int, what: str) -> int:
    match = pattern.fullmatch(text)
    if match is None:
        raise ProgramError(f"expected a {what} like '{prefix}1', got {text!r}")
    digits = match.group(1)
    if len(digits) > 4 or int(digits) >= limit:
        raise ProgramError(f"bad {what} {text!r} ({prefix}0..{prefix}{limit - 1})")
    return int(digits)


def parse_register(text: str) -> Register:
    """A register spelled ``r0`` … ``r255``; raises ProgramError otherwise."""
    return Register(_parse_indexed(text, _REGISTER, "r", NUM_REGISTERS, "register"))


def parse_predicate(text: str) -> Predicate:
    """A predicate spelled ``p0`` … ``p15``; raises ProgramError otherwise."""
    return Predicate(_parse_indexed(text, _PREDICATE, "p", NUM_PREDICATES, "predicate"))


def _parse_label(text: str) -> Label:
    if not text.startswith("@") or not is_label_name(text[1:]):
        raise ProgramError(f"expected a label like '@loop', got {text!r}")
    return Label(text[1:])


def _parse_uint(text: str) -> int:
    value = parse_int_literal(text)
    if value < 0:
        raise ProgramError(f"expected an unsigned integer, got {text!r}")
    return value


def _parse_flag(text: str) -> bool:
    for value, spelling in FLAG_TEXT.items():
        if text == spelling:
            return value
    raise ProgramError(f"expected true or false, got {text!r}")


def _parse_immediate(text: str, ty: Type) -> int | float:
    return parse_float_literal(text) if ty.is_float() else parse_int_literal(text)


# ---- addresses ------------------------------------------------------------------------------
#: ``[<prefix>N + offset]`` address modes: prefix -> constructor(number, offset)
_NUMBERED_ADDRESS_BASES: dict[str, Callable[[int, int], object]] = {
    "buf": Address.BufferOffset,
    "pool": Address.PoolOffset,
    "class": Address.Class,
}


def _split_address(inner: str) -> tuple[str, str, str]:
    """``base``, sign (``+``, ``-`` or ``""``) and offset text of an address's inside."""
    plus, minus = inner.find("+"), inner.find("-")
    cut = min((i for i in (plus, minus) if i >= 0), default=-1)
    if cut < 0:
        return inner.strip(), "", ""
    return inner[:cut].strip(), inner[cut], inner[cut + 1:].strip()


def _parse_offset(sign: str, text: str) -> int:
    if not sign:
        return 0
    if not text or text[0] in "+-":
        raise ProgramError(f"expected an offset after {sign!r}, got {text!r}")
    value = parse_int_literal(text)
    return -value if sign == "-" else value


def _parse_address(text: str) -> object:
    if len(text) < 2 or text[0] != "[" or text[-1] != "]":
        raise ProgramError(f"expected an address like '[buf2 + 16]', got {text!r}")
    base, sign, offset_text = _split_address(text[1:-1])
    if base == "shared":
        return Address.Shared(_parse_offset(sign, offset_text))
    if _REGISTER.fullmatch(base):
        base_reg = parse_register(base)
        if _REGISTER.fullmatch(offset_text):
            if sign != "+":
                raise ProgramError(f"a register offset must be added: {text!r}")
            return Address.RegisterIndirectComputed(base_reg, parse_register(offset_text))
        return Address.RegisterIndirect(base_reg, _parse_offset(sign, offset_text))
    match = _NUMBERED_BASE.fullmatch(base) if len(base) <= 32 else None
    if match is None or match.group(1) not in _NUMBERED_ADDRESS_BASES:
        raise ProgramError(f"unknown address base {base!r} in {text!r} "
                           "(expected bufN, poolN, classN, shared or a register)")
    return _NUMBERED_ADDRESS_BASES[match.group(1)](int(match.group(2)), _parse_offset(sign, offset_text))


#: OperandKind -> parser of a listed operand's text; the second argument is the instruction's type
OPERAND_PARSERS: dict[OperandKind, Callable[[str, Any], object]] = {
    OperandKind.REG: lambda text, ty: parse_register(text),
    OperandKind.PRED: lambda text, ty: parse_predicate(text),
    OperandKind.LABEL: lambda text, ty: _parse_label(text),
    OperandKind.ADDR: lambda text, ty: _parse_address(text),
    OperandKind.UINT: lambda text, ty: _parse_uint(text),
    OperandKind.IMM: lambda text, ty: _parse_immediate(text, ty),
    OperandKind.FLOAT: lambda text, ty: parse_float_literal(text),
    OperandKind.FLAG: lambda text, ty: _parse_flag(text),
    OperandKind.DIMS: lambda text, ty: parse_dims(text),
}


# ---- mnemonics --------------------------------------------------------------------------------
def _split_mnemonic(token: str) -> tuple[OpcodeInfo, list[str]]:
    parts = token.split(".", _MAX_MNEMONIC_PARTS)
    for count in range(min(len(parts), _MAX_MNEMONIC_PARTS), 0, -1):
        info = _BY_MNEMONIC.get(".".join(parts[:count]))
        if info is not None:
            return info, token.split(".")[count:]
    raise ProgramError(f"unknown mnemonic {token!r}")


def _suffix_usage(info: OpcodeInfo) -> str:
    usage = info.mnemonic
    for op in suffix_operands(info):
        if op.kind is OperandKind.ENUM:
            usage += f".<{_enum_class(op).__name__}>"
        elif op.kind is OperandKind.OPT_PRED:
            usage += f"[.[{NEGATION_PREFIX}]<{op.name}>]"
    return usage + "".join(f".<{name}>" for name in type_suffix_fields(info))


def _enum_class(op: Operand) -> Any:
    """The enum class of an ENUM operand (the table stores it in ``rule``)."""
    return op.rule


def _parse_enum_part(op: Operand, part: str, token: str) -> object:
    enum_class = _enum_class(op)
    try:
        return enum_class.from_text(part)
    except KeyError:
        choices = ", ".join(m.text for m in enum_class)
        raise ProgramError(f"unknown {enum_class.__name__} {part!r} in {token!r} (one of {choices})") from None


def _parse_suffixes(info: OpcodeInfo, parts: list[str], token: str) -> dict[str, object]:
    """Field values of the suffix operands and the type fields of a mnemonic's ``parts``."""
    type_names = type_suffix_fields(info)
    if len(parts) < len(type_names):
        raise ProgramError(f"{token!r} lacks its type suffix: write {_suffix_usage(info)}")
    split = len(parts) - len(type_names)
    suffix_parts, type_parts = parts[:split], parts[split:]
    values: dict[str, Any] = {}
    for name, type_part in zip(type_names, type_parts):
        try:
            values[name] = Type.from_suffix(type_part)
        except KeyError:
            raise ProgramError(f"bad type suffix {type_part!r} in {token!r} (types are spelled f32, u8, i4096, ...)") \
                from None
    position = 0
    negated = False
    for op in suffix_operands(info):
        if op.kind is OperandKind.FLAG:
            values[op.name] = negated
            negated = False
            continue
        if negated:
            raise ProgramError(f"{NEGATION_PREFIX!r} is not allowed here in {token!r}")
        part = suffix_parts[position] if position < len(suffix_parts) else None
        if op.kind is OperandKind.OPT_PRED:
            if part is None:
                values[op.name] = None
                continue
            negated = part.startswith(NEGATION_PREFIX)
            try:
                values[op.name] = parse_predicate(part[len(NEGATION_PREFIX):] if negated else part)
            except ProgramError as exc:
                raise ProgramError(f"{token}: {exc.reason}") from None
        else:
            if part is None:
                raise ProgramError(f"{token!r} lacks its {_enum_class(op).__name__} suffix: "
                                   f"write {_suffix_usage(info)}")
            values[op.name] = _parse_enum_part(op, part, token)
        position += 1
    if negated:
        raise ProgramError(f"{NEGATION_PREFIX!r} is not allowed here in {token!r}")
    if position < len(suffix_parts):
        raise ProgramError(f"unexpected suffix {suffix_parts[position]!r} in {token!r}: "
                           f"write {_suffix_usage(info)}")
    return values


# ---- instructions and programs ----------------------------------------------------------------
def _strip_comment(line: str) -> str:
    return line.split(COMMENT, 1)[0].strip()


def _parse_code(code: str) -> Instruction:
    head = code.split(None, 1)
    token = head[0]
    rest = head[1] if len(head) > 1 else ""
    info, parts = _split_mnemonic(token)
    values = _parse_suffixes(info, parts, token)
    listed = listed_operands(info)
    texts = [t.strip() for t in rest.split(",")] if rest.strip() else []
    if len(texts) != len(listed):
        noun = "operand" if len(listed) == 1 else "operands"
        raise ProgramError(f"{token} takes {len(listed)} {noun}, got {len(texts)}")
    ty = values.get("ty", values.get("dst_ty"))
    for op, text in zip(listed, texts):
        if not text:
            raise ProgramError(f"{token}: operand {op.name!r} is empty")
        try:
            values[op.name] = OPERAND_PARSERS[op.kind](text, ty)
        except ProgramError as exc:
            raise ProgramError(f"{token}: operand {op.name!r}: {exc.reason}") from None
        except ValueError as exc:  # an address or register constructor refusing a value
            raise ProgramError(f"{token}: operand {op.name!r}: {exc}") from None
    try:
        return INSTRUCTION_CLASSES[info.name](**values)
    except ProgramError as exc:
        raise ProgramError(exc.reason) from None


def parse_instruction(text: str) -> Instruction:
    """One instruction from its text (``add.f32 r1, r2, r3``; a ``;`` comment may follow).

    Raises ProgramError saying what is wrong.
    """
    if not isinstance(text, str):
        raise ProgramError(f"assembly must be a str, got {type(text).__name__}")
    code = _strip_comment(text)
    if not code:
        raise ProgramError("empty instruction")
    return _parse_code(code)


def parse_program(text: str):
    """A Program from text assembly (see atlas_web.asm_format).

    Raises ProgramError naming the line: ``line 3: unknown mnemonic 'ad.f32'``,
    also for a duplicate or invalid label.
    """
    from .program import Program

    if not isinstance(text, str):
        raise ProgramError(f"assembly must be a str, got {type(text).__name__}")
    instructions: list[Instruction] = []
    labels: dict[str, int] = {}
    label_lines: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        code = _strip_comment(line)
        if not code:
            continue
        try:
            if code.endswith(":"):
                name = code[:-1].strip()
                if not is_label_name(name):
                    raise ProgramError(f"invalid label name {name!r}: use a letter or '_' then letters, "
                                       "digits, '_' or '.' (at most 255 characters)")
                if name in labels:
                    raise ProgramError(f"duplicate label {name!r} (first defined on line {label_lines[name]})")
                labels[name] = len(instructions)
                label_lines[name] = number
            else:
                instructions.append(_parse_code(code))
        except ProgramError as exc:
            raise ProgramError(f"line {number}: {exc.reason}") from None
    return Program(instructions, labels)
