"""Binary bytecode of Atlas programs (version 1), derived from the opcode table.

Layout (``LAYOUT`` says the same for the docs)::

    magic b"ATLB" | u16 little-endian version | uleb label count | labels | uleb instruction count | instructions
    label       = uleb name length | ASCII name | uleb instruction index      (sorted by index, then name)
    instruction = uleb opcode | uleb type code per type field (table order) | operands in table order

Integers are unsigned LEB128 (``uleb``) or zigzag LEB128 (``zleb``, for signed
values and extended-int immediates up to 4096 bits), both from ``atlas_web.leb128``;
each operand kind is encoded as ``OPERAND_CODECS`` says. Encoding is deterministic (the Program's
digest is BLAKE2b of it) and the decoder accepts only what the encoder writes:
minimal LEB128, canonical immediates, known codes, exact length. Every failure
of ``decode_program`` is a ProgramError naming the byte offset. Decoding copies
the input once (to ``bytes``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable

from .errors import ProgramError
from .isa.addresses import ADDRESS_MODES
from .isa.dims import MAX_DIMS
from .isa.floats import CANONICAL_NAN, bits_to_float, float_to_bits
from .isa.instructions import INSTRUCTION_CLASSES, Instruction, by_opcode, info_of
from .isa.opcodes import Operand, OperandKind, float_storage
from .isa.registers import NUM_PREDICATES, NUM_REGISTERS, Label, Predicate, Register, is_label_name
from .isa.types import Type
from .leb128 import decode_zigzag, encode_uleb128, encode_zigzag, read_leb128

__all__ = [
    "BYTECODE_VERSION", "MAGIC", "encode_program", "decode_program", "encode_uleb128", "encode_zigzag",
    "OPERAND_CODECS", "LAYOUT",
]

MAGIC = b"ATLB"
BYTECODE_VERSION = 1
_HEADER_BYTES = len(MAGIC) + 2
#: LEB128 bytes enough for any 64-bit value
_MAX_U64_BYTES = 10
_MIN_LABEL_BYTES = 3  # name length, one name byte, index

#: the byte layout, as (part, encoding) rows for docs/isa.md
LAYOUT: tuple[tuple[str, str], ...] = (
    ("magic", 'the 4 bytes `ATLB`'),
    ("version", f"u16 little-endian, `{BYTECODE_VERSION}`"),
    ("label count", "uleb"),
    ("label", "uleb name length (1..255), the ASCII name, uleb instruction index; sorted by index, then name"),
    ("instruction count", "uleb"),
    ("instruction", "uleb opcode, one uleb type code per type field (in table order: `ty`, or `src_ty` then "
                    "`dst_ty`), then each operand in table order as below"),
)


class _Reader:
    """A cursor over the bytecode; every failure names the byte offset."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def fail(self, reason: str, offset: int | None = None) -> ProgramError:
        return ProgramError(f"bytecode offset {self.pos if offset is None else offset}: {reason}")

    def take(self, count: int, what: str) -> bytes:
        if count > self.remaining():
            raise self.fail(f"truncated: {what} needs {count} bytes, {self.remaining()} left")
        chunk = self.data[self.pos:self.pos + count]
        self.pos += count
        return chunk

    def uleb(self, what: str, max_bytes: int = _MAX_U64_BYTES) -> int:
        """The minimal unsigned LEB128 at the cursor (at most ``max_bytes`` bytes); moves past it."""
        value, _, self.pos = read_leb128(self.data, self.pos, max_bytes, what, self.fail, minimal=True)
        return value

    def zigzag(self, what: str, max_bytes: int = _MAX_U64_BYTES) -> int:
        return decode_zigzag(self.uleb(what, max_bytes))

    def count(self, what: str, min_item_bytes: int) -> int:
        start = self.pos
        value = self.uleb(what)
        if value * min_item_bytes > self.remaining():
            raise self.fail(f"{what} {value} is impossible: only {self.remaining()} bytes follow", start)
        return value


def _leb_bytes_for_bits(bits: int) -> int:
    return bits // 7 + 1


# ---- operand codecs ---------------------------------------------------------------------------
@dataclass(frozen=True)
class OperandCodec:
    """How one OperandKind is written and read; ``ty`` is the instruction's Type (None when it has
    none; IMM operands always have one)."""

    encode: Callable[[bytearray, Any, Operand, Any], None]
    decode: Callable[[_Reader, Operand, Any], object]
    doc: str


def _decode_index(reader: _Reader, limit: int, prefix: str, what: str) -> int:
    start = reader.pos
    index = reader.uleb(what)
    if index >= limit:
        raise reader.fail(f"{what} {prefix}{index} out of range ({prefix}0..{prefix}{limit - 1})", start)
    return index


def _decode_register(reader: _Reader, op: Operand | None = None, ty: Type | None = None) -> Register:
    return Register(_decode_index(reader, NUM_REGISTERS, "r", "register"))


def _decode_predicate(reader: _Reader, op: Operand, ty: Type | None) -> Predicate:
    return Predicate(_decode_index(reader, NUM_PREDICATES, "p", "predicate"))


def _decode_optional_predicate(reader: _Reader, op: Operand, ty: Type | None) -> Predicate | None:
    index = _decode_index(reader, NUM_PREDICATES + 1, "code ", "optional predicate")
    return None if index == 0 else Predicate(index - 1)


def _decode_flag(reader: _Reader, op: Operand, ty: Type | None) -> bool:
    return bool(_decode_index(reader, 2, "", f"flag {op.name!r}"))


def _encode_label_name(out: bytearray, name: str) -> None:
    raw = name.encode("ascii")
    out += encode_uleb128(len(raw))
    out += raw


def _decode_label_name(reader: _Reader, what: str) -> str:
    start = reader.pos
    length = reader.uleb(f"{what} length")
    if not 1 <= length <= 255:
        raise reader.fail(f"{what} length {length} outside 1..255", start)
    raw = reader.take(length, what)
    name = raw.decode("latin-1")
    if not is_label_name(name):
        raise reader.fail(f"invalid {what} {raw!r}", start)
    return name


def _address_field_codecs(mode: type) -> tuple[tuple[str, bool], ...]:
    """(field name, is a register) for each field of an address mode, in declaration order."""
    return tuple((f.name, f.type in ("Register", Register)) for f in dataclasses.fields(mode))


_ADDRESS_FIELDS = {mode: _address_field_codecs(mode) for mode in ADDRESS_MODES}
_MODE_CODE = {mode: code for code, mode in enumerate(ADDRESS_MODES)}


def _encode_address(out: bytearray, value: Any, op: Operand, ty: Type | None) -> None:
    mode = type(value)
    out += encode_uleb128(_MODE_CODE[mode])
    for name, is_register in _ADDRESS_FIELDS[mode]:
        field_value = getattr(value, name)
        out += encode_uleb128(field_value.index) if is_register else encode_zigzag(field_value)


def _decode_address(reader: _Reader, op: Operand, ty: Type | None) -> object:
    start = reader.pos
    code = reader.uleb("address mode")
    if code >= len(ADDRESS_MODES):
        raise reader.fail(f"unknown address mode {code} (0..{len(ADDRESS_MODES) - 1})", start)
    mode = ADDRESS_MODES[code]
    values = {name: _decode_register(reader) if is_register else reader.zigzag(f"{mode.__name__}.{name}")
              for name, is_register in _ADDRESS_FIELDS[mode]}
    try:
        return mode(**values)
    except ValueError as exc:
        raise reader.fail(str(exc), start) from None


def _encode_immediate(out: bytearray, value: Any, op: Operand, ty: Type) -> None:
    if ty.is_float():
        out += encode_uleb128(float_to_bits(value, ty))
    else:
        out += encode_zigzag(value)


def _decode_immediate(reader: _Reader, op: Operand, ty: Type) -> int | float:
    start = reader.pos
    value: int | float
    if ty.is_float():
        bits = reader.uleb(f"{ty.suffix} immediate")
        if bits >> ty.bits:
            raise reader.fail(f"{ty.suffix} immediate bit pattern {bits:#x} is wider than {ty.bits} bits", start)
        value = bits_to_float(bits, ty)
        if math.isnan(value) and bits != float_to_bits(CANONICAL_NAN, ty):
            raise reader.fail(f"{ty.suffix} immediate NaN {bits:#x} is not the canonical NaN", start)
        return value
    value = reader.zigzag(f"{ty.suffix} immediate", _leb_bytes_for_bits(ty.bits + 1))
    if ty.wrap(value) != value:
        raise reader.fail(f"{ty.suffix} immediate {value} is outside the type's range", start)
    return value


def _decode_uint(reader: _Reader, op: Operand, ty: Type | None) -> int:
    bits: Any = op.rule
    return reader.uleb(f"operand {op.name!r}", _leb_bytes_for_bits(bits))


def _decode_enum(reader: _Reader, op: Operand, ty: Type | None) -> object:
    start = reader.pos
    enum_class: Any = op.rule
    code = reader.uleb(enum_class.__name__)
    try:
        return enum_class.from_code(code)
    except KeyError:
        raise reader.fail(f"unknown {enum_class.__name__} code {code}", start) from None


def _encode_dims(out: bytearray, value: Any, op: Operand, ty: Type | None) -> None:
    out += encode_uleb128(len(value))
    for entry in value:
        for number in (entry if isinstance(entry, tuple) else (entry,)):
            out += encode_uleb128(number)


def _decode_dims(reader: _Reader, op: Operand, ty: Type | None) -> tuple:
    start = reader.pos
    count = reader.uleb(f"operand {op.name!r} length")
    if count > MAX_DIMS:
        raise reader.fail(f"operand {op.name!r} has {count} entries (at most {MAX_DIMS})", start)
    arity: Any = op.rule
    entries = [tuple(reader.uleb(f"operand {op.name!r}", _leb_bytes_for_bits(32)) for _ in range(arity))
               for _ in range(count)]
    return tuple(e[0] for e in entries) if arity == 1 else tuple(entries)


#: OperandKind -> how it is encoded; a new kind without a codec fails at import (below)
OPERAND_CODECS: dict[OperandKind, OperandCodec] = {
    OperandKind.REG: OperandCodec(lambda out, v, op, ty: out.extend(encode_uleb128(v.index)), _decode_register,
                                  "uleb register index (0..255)"),
    OperandKind.PRED: OperandCodec(lambda out, v, op, ty: out.extend(encode_uleb128(v.index)), _decode_predicate,
                                   "uleb predicate index (0..15)"),
    OperandKind.OPT_PRED: OperandCodec(
        lambda out, v, op, ty: out.extend(encode_uleb128(0 if v is None else v.index + 1)),
        _decode_optional_predicate, "uleb: 0 for none, else predicate index + 1"),
    OperandKind.FLAG: OperandCodec(lambda out, v, op, ty: out.extend(encode_uleb128(int(v))), _decode_flag,
                                   "uleb 0 or 1"),
    OperandKind.LABEL: OperandCodec(lambda out, v, op, ty: _encode_label_name(out, v.name),
                                    lambda reader, op, ty: Label(_decode_label_name(reader, "label name")),
                                    "uleb name length (1..255), then the ASCII label name"),
    OperandKind.ADDR: OperandCodec(_encode_address, _decode_address,
                                   "uleb mode code (the address mode's index, see Address modes), then its fields "
                                   "in declaration order: registers as uleb index, integers as zleb"),
    OperandKind.IMM: OperandCodec(_encode_immediate, _decode_immediate,
                                  "floats: uleb of the IEEE bit pattern in the instruction's type (NaN: the quiet NaN "
                                  "with no payload); "
                                  "integers: zleb of the value wrapped to the type (up to 4096 bits)"),
    OperandKind.FLOAT: OperandCodec(lambda out, v, op, ty: _encode_immediate(out, v, op, float_storage(op, ty)),
                                    lambda reader, op, ty: _decode_immediate(reader, op, float_storage(op, ty)),
                                    "uleb of the IEEE bit pattern in the operand's own type (f32 or f64, or the "
                                    "instruction's; NaN: the quiet NaN with no payload)"),
    OperandKind.UINT: OperandCodec(lambda out, v, op, ty: out.extend(encode_uleb128(v)), _decode_uint, "uleb"),
    OperandKind.ENUM: OperandCodec(lambda out, v, op, ty: out.extend(encode_uleb128(v.code)), _decode_enum,
                                   "uleb enum code"),
    OperandKind.DIMS: OperandCodec(_encode_dims, _decode_dims,
                                   "uleb entry count (at most 8), then each entry's numbers (one, or a pair) as uleb"),
}
assert set(OPERAND_CODECS) == set(OperandKind), "every OperandKind needs a bytecode codec"


# ---- programs ---------------------------------------------------------------------------------
def _encode_instruction(out: bytearray, instr: Instruction) -> None:
    info = instr.INFO
    out += encode_uleb128(info.opcode)
    for name in info.type_fields:
        out += encode_uleb128(getattr(instr, name).code)
    ty = instr.type
    for op in info.operands:
        OPERAND_CODECS[op.kind].encode(out, getattr(instr, op.name), op, ty)


def encode_program(program) -> bytes:
    """The version-1 bytecode of ``program`` (deterministic: equal programs give equal bytes)."""
    out = bytearray(MAGIC)
    out += BYTECODE_VERSION.to_bytes(2, "little")
    labels = sorted(program.labels.items(), key=lambda item: (item[1], item[0]))
    out += encode_uleb128(len(labels))
    for name, position in labels:
        _encode_label_name(out, name)
        out += encode_uleb128(position)
    out += encode_uleb128(len(program.instructions))
    for instr in program.instructions:
        _encode_instruction(out, instr)
    return bytes(out)


def _decode_type(reader: _Reader, field_name: str) -> Type:
    start = reader.pos
    code = reader.uleb(f"type code of {field_name!r}")
    try:
        return Type.from_code(code)
    except KeyError:
        raise reader.fail(f"unknown type code {code} for {field_name!r}", start) from None


def _decode_instruction(reader: _Reader, index: int) -> Instruction:
    start = reader.pos
    opcode = reader.uleb("opcode")
    try:
        cls = by_opcode(opcode)
    except KeyError:
        raise reader.fail(f"unknown opcode {opcode:#x} (instruction {index})", start) from None
    info = info_of(cls)
    values: dict[str, Any] = {name: _decode_type(reader, name) for name in info.type_fields}
    ty = values.get("ty", values.get("dst_ty"))
    for op in info.operands:
        values[op.name] = OPERAND_CODECS[op.kind].decode(reader, op, ty)
    try:
        return INSTRUCTION_CLASSES[info.name](**values)
    except ProgramError as exc:
        raise reader.fail(f"instruction {index}: {exc.reason}", start) from None


def _check_header(reader: _Reader) -> None:
    data = reader.data
    if data[:len(MAGIC)] != MAGIC[:min(len(data), len(MAGIC))]:
        raise reader.fail(f"not atlas-web bytecode: expected magic {MAGIC!r}, got {data[:len(MAGIC)]!r}")
    if len(data) < _HEADER_BYTES:
        raise reader.fail(f"truncated: the header needs {_HEADER_BYTES} bytes, got {len(data)}")
    reader.pos = len(MAGIC)
    version = int.from_bytes(reader.take(2, "version"), "little")
    if version != BYTECODE_VERSION:
        raise ProgramError(f"unsupported bytecode version {version}; this atlas-web reads version {BYTECODE_VERSION}")


def decode_program(data: bytes):
    """The Program encoded in ``data`` (bytes-like, copied once).

    Raises ProgramError naming the byte offset for bad magic, an unsupported
    version, truncation, trailing bytes, impossible counts, unknown opcodes,
    types, address modes or enum codes, out-of-range registers and predicates,
    non-canonical encodings, and operands the instruction refuses.
    """
    from .program import Program

    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ProgramError(f"bytecode must be bytes-like, got {type(data).__name__}")
    reader = _Reader(bytes(data))
    _check_header(reader)
    labels: dict[str, int] = {}
    label_offsets: dict[str, int] = {}
    previous: tuple[int, str] | None = None
    for _ in range(reader.count("label count", _MIN_LABEL_BYTES)):
        start = reader.pos
        name = _decode_label_name(reader, "label name")
        if name in labels:
            raise reader.fail(f"duplicate label {name!r}", start)
        position = reader.uleb(f"position of label {name!r}")
        if previous is not None and (position, name) < previous:
            raise reader.fail(f"label {name!r} is out of order (labels are sorted by position, then name)", start)
        previous = (position, name)
        labels[name] = position
        label_offsets[name] = start
    instructions = [_decode_instruction(reader, index) for index in range(reader.count("instruction count", 1))]
    if reader.remaining():
        raise reader.fail(f"{reader.remaining()} trailing bytes after the last instruction")
    for name, position in labels.items():
        if position > len(instructions):
            raise reader.fail(f"label {name!r} points at {position}, outside 0..{len(instructions)}",
                              label_offsets[name])
    return Program(instructions, labels)
