"""JSON form of Atlas programs, derived from the opcode table.

::

    {"format": "atlas-web-program", "version": 1, "labels": {"loop": 1},
     "instructions": [{"op": "ADD", "dst": "r1", "lhs": "r2", "rhs": "r3", "ty": "f32"}, ...]}

Each instruction is an object: ``op`` (the seed name), then its operands in
table order, then its type fields, each spelled as ``VALUE_CODECS`` says for
its OperandKind. Float immediates are strings (``"1.5"``, ``"-0.0"``,
``"inf"``, ``"nan"``) so every value round-trips; integers, extended ones
included, are JSON ints. Reading is strict about names and kinds (a field
with a default, such as BRA's ``pred``, may be left out) and raises only
ProgramError, naming the place: ``instructions[3].lhs: expected a register
like 'r1', got 7``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Callable

from .asm_format import format_float, format_immediate
from .asm_parse import parse_float_literal, parse_int_literal, parse_predicate, parse_register
from .errors import ProgramError
from .isa.addresses import ADDRESS_MODES
from .isa.dims import MAX_DIMS, normalize_dims
from .isa.instructions import INSTRUCTION_CLASSES, Instruction, info_of
from .isa.opcodes import Operand, OperandKind, float_storage
from .isa.registers import Label, Register, is_label_name
from .isa.types import Type

__all__ = ["program_to_json", "program_from_json", "FORMAT_NAME", "JSON_VERSION", "VALUE_CODECS"]

FORMAT_NAME = "atlas-web-program"
JSON_VERSION = 1
_TOP_LEVEL_KEYS = ("format", "version", "labels", "instructions")
_MODES_BY_NAME = {mode.__name__: mode for mode in ADDRESS_MODES}


class _SchemaError(Exception):
    """A schema violation at ``path``; converted to ProgramError at the API boundary."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")


def _show(value: object) -> str:
    """A short spelling of a JSON value for messages."""
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "a list"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return "a very large integer"
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parsed(path: str, parse: Callable[[str], Any], value: Any, expected: str) -> Any:
    if not isinstance(value, str):
        raise _SchemaError(path, f"expected {expected}, got {_show(value)}")
    try:
        return parse(value)
    except ProgramError as exc:
        raise _SchemaError(path, exc.reason) from None


# ---- addresses ------------------------------------------------------------------------------
def _register_fields(mode: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(mode) if f.type in ("Register", Register))


_ADDRESS_REGISTER_FIELDS = {mode: _register_fields(mode) for mode in ADDRESS_MODES}


def _address_to_json(value: Any) -> dict:
    mode: Any = type(value)
    out: dict[str, object] = {"mode": mode.__name__}
    for f in dataclasses.fields(mode):
        field_value = getattr(value, f.name)
        out[f.name] = str(field_value) if f.name in _ADDRESS_REGISTER_FIELDS[mode] else field_value
    return out


def _address_from_json(path: str, value: Any) -> object:
    if not isinstance(value, dict):
        raise _SchemaError(path, f"expected an address object like {{\"mode\": \"BufferOffset\", \"handle\": 2, "
                                 f"\"offset\": 0}}, got {_show(value)}")
    mode_name = value.get("mode")
    mode: Any = _MODES_BY_NAME.get(mode_name) if isinstance(mode_name, str) else None
    if mode is None:
        raise _SchemaError(path + ".mode",
                           f"expected one of {', '.join(_MODES_BY_NAME)}, got {_show(value.get('mode'))}")
    names = [f.name for f in dataclasses.fields(mode)]
    for key in value:
        if key != "mode" and key not in names:
            raise _SchemaError(path, f"unknown field {key!r} for {mode.__name__} (fields: {', '.join(names)})")
    fields: dict[str, object] = {}
    for name in names:
        if name not in value:
            continue  # the dataclass supplies the default, or refuses below
        field_path = f"{path}.{name}"
        if name in _ADDRESS_REGISTER_FIELDS[mode]:
            fields[name] = _parsed(field_path, parse_register, value[name], "a register like 'r1'")
        elif _is_int(value[name]):
            fields[name] = value[name]
        else:
            raise _SchemaError(field_path, f"expected an integer, got {_show(value[name])}")
    try:
        return mode(**fields)
    except TypeError:
        missing = [f.name for f in dataclasses.fields(mode)
                   if f.name not in fields and f.default is dataclasses.MISSING]
        raise _SchemaError(path, f"{mode.__name__} lacks {', '.join(missing)}") from None
    except ValueError as exc:
        raise _SchemaError(path, str(exc)) from None


# ---- operand values ---------------------------------------------------------------------------
def _immediate_from_json(path: str, value: Any, ty: Type) -> int | float:
    if ty.is_float():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        return _parsed(path, parse_float_literal, value, f"a {ty.suffix} number as a string like \"1.5\" or \"nan\"")
    if _is_int(value):
        return value
    return _parsed(path, parse_int_literal, value, f"an integer for {ty.suffix}")


def _flag_from_json(path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _SchemaError(path, f"expected true or false, got {_show(value)}")
    return value


def _uint_from_json(path: str, value: Any) -> int:
    if not _is_int(value):
        raise _SchemaError(path, f"expected an unsigned integer, got {_show(value)}")
    return value


def _dims_from_json(path: str, value: Any, op: Operand) -> tuple:
    arity: Any = op.rule
    stored = normalize_dims(value, arity)
    if stored is None:
        what = "unsigned integers" if arity == 1 else "[axis, axis] pairs"
        raise _SchemaError(path, f"expected a list of at most {MAX_DIMS} {what}, got {_show(value)}")
    return stored


def _label_from_json(path: str, value: Any) -> Label:
    if not is_label_name(value):
        raise _SchemaError(path, f"expected a label name like \"loop\", got {_show(value)}")
    return Label(value)


def _enum_from_json(path: str, value: Any, op: Operand) -> object:
    enum_class: Any = op.rule
    try:
        return enum_class.from_text(value)
    except KeyError:
        choices = ", ".join(m.text for m in enum_class)
        raise _SchemaError(path, f"expected a {enum_class.__name__} (one of {choices}), got {_show(value)}") from None


@dataclass(frozen=True)
class ValueCodec:
    """How one OperandKind is written to and read from JSON; ``ty`` is the instruction's type."""

    to_json: Callable[[Any, Any], object]
    from_json: Callable[[str, Any, Operand, Any], object]


#: OperandKind -> its JSON spelling; a new kind without a codec fails at import (below)
VALUE_CODECS: dict[OperandKind, ValueCodec] = {
    OperandKind.REG: ValueCodec(lambda v, ty: str(v), lambda path, v, op, ty: _parsed(
        path, parse_register, v, "a register like 'r1'")),
    OperandKind.PRED: ValueCodec(lambda v, ty: str(v), lambda path, v, op, ty: _parsed(
        path, parse_predicate, v, "a predicate like 'p0'")),
    OperandKind.OPT_PRED: ValueCodec(
        lambda v, ty: None if v is None else str(v),
        lambda path, v, op, ty: None if v is None else _parsed(path, parse_predicate, v,
                                                               "null or a predicate like 'p0'")),
    OperandKind.FLAG: ValueCodec(lambda v, ty: v, lambda path, v, op, ty: _flag_from_json(path, v)),
    OperandKind.LABEL: ValueCodec(lambda v, ty: v.name, lambda path, v, op, ty: _label_from_json(path, v)),
    OperandKind.ADDR: ValueCodec(lambda v, ty: _address_to_json(v),
                                 lambda path, v, op, ty: _address_from_json(path, v)),
    OperandKind.IMM: ValueCodec(lambda v, ty: format_immediate(v, ty) if ty.is_float() else v,
                                lambda path, v, op, ty: _immediate_from_json(path, v, ty)),
    OperandKind.FLOAT: ValueCodec(lambda v, ty: format_float(v),
                                  lambda path, v, op, ty: _immediate_from_json(path, v, float_storage(op, ty))),
    OperandKind.UINT: ValueCodec(lambda v, ty: v, lambda path, v, op, ty: _uint_from_json(path, v)),
    OperandKind.ENUM: ValueCodec(lambda v, ty: v.text, lambda path, v, op, ty: _enum_from_json(path, v, op)),
    OperandKind.DIMS: ValueCodec(lambda v, ty: [list(e) if isinstance(e, tuple) else e for e in v],
                                 lambda path, v, op, ty: _dims_from_json(path, v, op)),
}
assert set(VALUE_CODECS) == set(OperandKind), "every OperandKind needs a JSON codec"


# ---- instructions and programs ----------------------------------------------------------------
def _instruction_to_json(instr: Instruction) -> dict:
    info = instr.INFO
    ty = instr.type
    out: dict[str, object] = {"op": info.name}
    for op in info.operands:
        out[op.name] = VALUE_CODECS[op.kind].to_json(getattr(instr, op.name), ty)
    for name in info.type_fields:
        out[name] = getattr(instr, name).suffix
    return out


def program_to_json(program) -> str:
    """The JSON form of ``program``: deterministic, one instruction per line."""
    labels = dict(sorted(program.labels.items(), key=lambda item: (item[1], item[0])))
    head = (f'{{"format": {json.dumps(FORMAT_NAME)}, "version": {JSON_VERSION}, '
            f'"labels": {json.dumps(labels)}, "instructions": [')
    if not program.instructions:
        return head + "]}\n"
    body = ",\n".join("  " + json.dumps(_instruction_to_json(instr)) for instr in program.instructions)
    return head + "\n" + body + "\n]}\n"


def _type_from_json(path: str, value: Any) -> Type:
    try:
        if isinstance(value, str):
            return Type.from_suffix(value)
    except KeyError:
        pass
    raise _SchemaError(path, f"expected a type like \"f32\", \"u8\" or \"i4096\", got {_show(value)}")


def _instruction_from_json(path: str, obj: Any) -> Instruction:
    if not isinstance(obj, dict):
        raise _SchemaError(path, f"expected an instruction object, got {_show(obj)}")
    name = obj.get("op")
    cls = INSTRUCTION_CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise _SchemaError(path + ".op", f"expected an instruction name like \"ADD\", got {_show(name)}")
    info = info_of(cls)
    for key in obj:
        if key != "op" and key not in info.fields:
            raise _SchemaError(path, f"unknown field {key!r} for {info.name} (fields: {', '.join(info.fields)})")
    values: dict[str, Any] = {}
    for tf in info.type_fields:
        if tf in obj:
            values[tf] = _type_from_json(f"{path}.{tf}", obj[tf])
        elif info.default_type is None:
            raise _SchemaError(path, f"{info.name} lacks its type field {tf!r}")
    ty = values.get("ty", values.get("dst_ty", info.default_type))
    for op in info.operands:
        if op.name in obj:
            values[op.name] = VALUE_CODECS[op.kind].from_json(f"{path}.{op.name}", obj[op.name], op, ty)
        elif op.name not in info.defaults:
            raise _SchemaError(path, f"{info.name} lacks its operand {op.name!r}")
    try:
        return cls(**values)
    except ProgramError as exc:
        raise _SchemaError(path, exc.reason) from None


def _labels_from_json(value: object, count: int) -> dict[str, int]:
    if not isinstance(value, dict):
        raise _SchemaError("labels", f"expected an object of label name -> instruction index, got {_show(value)}")
    labels: dict[str, int] = {}
    for name, position in value.items():
        if not is_label_name(name):
            raise _SchemaError("labels", f"invalid label name {_show(name)}")
        if not _is_int(position) or not 0 <= position <= count:
            raise _SchemaError(f"labels.{name}", f"expected an instruction index in 0..{count}, got {_show(position)}")
        labels[name] = position
    return labels


def _program_from_object(document: object):
    from .program import Program

    if not isinstance(document, dict):
        raise _SchemaError("(top level)", f"expected an object, got {_show(document)}")
    for key in document:
        if key not in _TOP_LEVEL_KEYS:
            raise _SchemaError("(top level)", f"unknown key {key!r} (keys: {', '.join(_TOP_LEVEL_KEYS)})")
    if document.get("format") != FORMAT_NAME:
        raise _SchemaError("format", f"expected {json.dumps(FORMAT_NAME)}, got {_show(document.get('format'))}")
    version = document.get("version")
    if not _is_int(version):
        raise _SchemaError("version", f"expected an integer, got {_show(version)}")
    if version != JSON_VERSION:
        raise ProgramError(f"unsupported JSON program version {version}; this atlas-web reads version {JSON_VERSION}")
    instructions = document.get("instructions")
    if not isinstance(instructions, list):
        raise _SchemaError("instructions", f"expected a list, got {_show(instructions)}")
    decoded = [_instruction_from_json(f"instructions[{i}]", obj) for i, obj in enumerate(instructions)]
    labels = _labels_from_json(document.get("labels", {}), len(decoded))
    return Program(decoded, labels)


def program_from_json(text: str | bytes):
    """The Program in a JSON document (str or UTF-8 bytes).

    Raises ProgramError for malformed JSON (with its line and column), an
    unknown format or version, and any schema violation (naming its path).
    """
    if not isinstance(text, (str, bytes, bytearray)):
        raise ProgramError(f"JSON program must be a str or bytes, got {type(text).__name__}")
    try:
        document = json.loads(text)
    except RecursionError:
        raise ProgramError("malformed JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, bad UTF-8, an integer literal too long to convert
        raise ProgramError(f"malformed JSON: {exc}") from None
    try:
        return _program_from_object(document)
    except _SchemaError as exc:
        raise ProgramError(str(exc)) from None
