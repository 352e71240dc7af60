"""The immediate kinds of the instruction table: how each is checked, written, read and printed.

``IMMEDIATE_CODECS`` maps every kind named in ``opcodes.WASM_OPCODES`` to an
``ImmediateCodec``. Each codec's ``normalize`` turns what a caller may pass
into the canonical value that ``read`` returns, so encoding a normalized
immediate and decoding it gives the same value back:

=============  ===========================================  ==========================
kind           accepted                                      canonical value
=============  ===========================================  ==========================
blocktype      None, a ValType or WAT name, a type index     None, ValType or int
xxxidx         int in 0 … 2**32-1                            int
labels         sequence of label indices                     tuple[int, ...]
i32 / i64      int, signed or unsigned range                 signed int
f32 / f64      int or float (NaN payloads are not kept)      float (f32 rounded)
v128           16 bytes                                      bytes
shuffle        16 lane indices below 32                      tuple[int, ...]
laneN          int in 0 … N-1                                int
memargN        MemArg or an int offset                       MemArg with explicit align
valtypes       sequence of value types                       tuple[ValType, ...]
reftype        FUNCREF / EXTERNREF (or "funcref"...)         ValType
=============  ===========================================  ==========================
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Callable

from ..errors import WasmDecodeError, WasmEncodingError
from .leb128 import decode_sleb128, decode_uleb128, encode_sleb128, encode_uleb128
from .types import REFERENCE_TYPES, ValType, as_valtype

__all__ = ["MemArg", "ImmediateCodec", "IMMEDIATE_CODECS", "format_f32", "format_f64"]

_U32 = 1 << 32
_VALTYPE_CODES = frozenset(int(t) for t in ValType)


@dataclass(frozen=True, slots=True)
class MemArg:
    """A memory argument: byte ``offset`` and ``align`` as log2 of bytes (None: the natural alignment)."""

    offset: int = 0
    align: int | None = None


@dataclass(frozen=True, slots=True)
class ImmediateCodec:
    """How one immediate kind is checked (``normalize(value, instruction)``), written, read and printed."""

    kind: str
    normalize: Callable[[object, str], object]
    write: Callable[[object, bytearray], None]
    read: Callable[[bytes, int], tuple[object, int]]
    text: Callable[[object], str]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _fail(instruction: str, kind: str, value: object, expected: str) -> WasmEncodingError:
    return WasmEncodingError(f"{instruction}: {kind} immediate {value!r} is not {expected}")


# --- unsigned indices ------------------------------------------------------------------------------------------

# WAT spellings of index immediates that differ from the plain number
_INDEX_TEXT: dict[str, Callable[[int], str]] = {
    "typeidx": lambda v: f"(type {v})",
    "memidx": lambda v: str(v) if v else "",  # memory 0 is implied
}


def _index_codec(kind: str) -> ImmediateCodec:
    def normalize(value: object, instruction: str) -> int:
        if not _is_int(value) or not 0 <= value < _U32:  # type: ignore[operator]
            raise _fail(instruction, kind, value, "an int in 0..2**32-1")
        return int(value)  # type: ignore[arg-type]

    return ImmediateCodec(kind, normalize, lambda v, out: out.extend(encode_uleb128(v, 32)),
                          lambda data, pos: decode_uleb128(data, pos, 32), _INDEX_TEXT.get(kind, str))


def _normalize_labels(value: object, instruction: str) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise _fail(instruction, "labels", value, "a sequence of label indices")
    labels = tuple(value)  # type: ignore[arg-type]
    for label in labels:
        if not _is_int(label) or not 0 <= label < _U32:
            raise _fail(instruction, "labels", value, "a sequence of ints in 0..2**32-1")
    return labels


def _write_labels(value: tuple[int, ...], out: bytearray) -> None:
    out.extend(encode_uleb128(len(value), 32))
    for label in value:
        out.extend(encode_uleb128(label, 32))


def _read_labels(data: bytes, pos: int) -> tuple[tuple[int, ...], int]:
    count, pos = decode_uleb128(data, pos, 32)
    labels = []
    for _ in range(count):
        label, pos = decode_uleb128(data, pos, 32)
        labels.append(label)
    return tuple(labels), pos


# --- block types -----------------------------------------------------------------------------------------------

def _normalize_blocktype(value: object, instruction: str) -> None | ValType | int:
    if value is None:
        return None
    if isinstance(value, (ValType, str)):
        return as_valtype(value, f"{instruction}: block type")
    if _is_int(value) and 0 <= value < _U32:  # type: ignore[operator]
        return int(value)  # type: ignore[arg-type]
    raise _fail(instruction, "blocktype", value, "None, a value type or a type index")


def _write_blocktype(value: None | ValType | int, out: bytearray) -> None:
    if value is None:
        out.append(0x40)
    elif isinstance(value, ValType):
        out.append(int(value))
    else:
        out.extend(encode_sleb128(value, 33))


def _read_blocktype(data: bytes, pos: int) -> tuple[None | ValType | int, int]:
    if pos >= len(data):
        raise WasmDecodeError("block type runs past the end of the input", offset=pos)
    byte = data[pos]
    if byte == 0x40:
        return None, pos + 1
    if byte in _VALTYPE_CODES:
        return ValType(byte), pos + 1
    index, end = decode_sleb128(data, pos, 33)
    if index < 0:
        raise WasmDecodeError(f"block type {byte:#04x} is neither a value type nor a type index", offset=pos)
    return index, end


def _text_blocktype(value: None | ValType | int) -> str:
    if value is None:
        return ""
    if isinstance(value, ValType):
        return f"(result {value.text})"
    return f"(type {value})"


# --- numbers ---------------------------------------------------------------------------------------------------

def _int_codec(bits: int) -> ImmediateCodec:
    kind = f"i{bits}"
    low, high, wrap = -(1 << (bits - 1)), 1 << bits, 1 << bits

    def normalize(value: object, instruction: str) -> int:
        if not _is_int(value) or not low <= value < high:  # type: ignore[operator]
            raise _fail(instruction, kind, value, f"an int in -2**{bits - 1}..2**{bits}-1")
        return value - wrap if value >= -low else value  # type: ignore[operator,return-value]

    return ImmediateCodec(kind, normalize, lambda v, out: out.extend(encode_sleb128(v, bits)),
                          lambda data, pos: decode_sleb128(data, pos, bits), str)


def format_f32(value: float) -> str:
    """The shortest decimal text that reads back as the same f32 (``nan``, ``inf`` and ``-inf`` as WAT)."""
    if math.isnan(value) or math.isinf(value):
        return _special_float_text(value)
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        try:
            if struct.unpack("<f", struct.pack("<f", float(text)))[0] == value:
                return _float_text(text)
        except OverflowError:  # rounding up past the largest f32: try more digits
            continue
    return _float_text(repr(value))


def format_f64(value: float) -> str:
    """The shortest decimal text that reads back as the same f64."""
    if math.isnan(value) or math.isinf(value):
        return _special_float_text(value)
    return _float_text(repr(value))


def _special_float_text(value: float) -> str:
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return "inf" if value > 0 else "-inf"


def _float_text(text: str) -> str:
    return text if any(c in text for c in ".enai") else text + ".0"


def _float_codec(bits: int) -> ImmediateCodec:
    kind, fmt, size = (f"f{bits}", "<f" if bits == 32 else "<d", bits // 8)

    def normalize(value: object, instruction: str) -> float:
        if not (_is_int(value) or isinstance(value, float)):
            raise _fail(instruction, kind, value, "an int or float")
        try:
            return struct.unpack(fmt, struct.pack(fmt, float(value)))[0]  # type: ignore[arg-type]
        except (OverflowError, struct.error):
            raise _fail(instruction, kind, value, f"representable as f{bits}") from None

    def read(data: bytes, pos: int) -> tuple[float, int]:
        if pos + size > len(data):
            raise WasmDecodeError(f"{kind} constant runs past the end of the input", offset=pos)
        return struct.unpack_from(fmt, data, pos)[0], pos + size

    return ImmediateCodec(kind, normalize, lambda v, out: out.extend(struct.pack(fmt, v)), read,
                          format_f32 if bits == 32 else format_f64)


# --- vectors ---------------------------------------------------------------------------------------------------

def _normalize_v128(value: object, instruction: str) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)) or len(value) != 16:
        raise _fail(instruction, "v128", value, "16 bytes")
    return bytes(value)


def _read_bytes16(data: bytes, pos: int, what: str) -> tuple[bytes, int]:
    if pos + 16 > len(data):
        raise WasmDecodeError(f"{what} runs past the end of the input", offset=pos)
    return bytes(data[pos:pos + 16]), pos + 16


def _text_v128(value: bytes) -> str:
    return "i32x4 " + " ".join(f"{word:#010x}" for word in struct.unpack("<4I", value))


def _normalize_shuffle(value: object, instruction: str) -> tuple[int, ...]:
    lanes = tuple(value) if isinstance(value, (bytes, bytearray, list, tuple)) else None
    if lanes is None or len(lanes) != 16 or not all(_is_int(x) and 0 <= x < 32 for x in lanes):
        raise _fail(instruction, "shuffle", value, "16 lane indices in 0..31")
    return lanes


def _read_shuffle(data: bytes, pos: int) -> tuple[tuple[int, ...], int]:
    raw, end = _read_bytes16(data, pos, "shuffle mask")
    for lane in raw:
        if lane >= 32:
            raise WasmDecodeError(f"shuffle lane index {lane} is not below 32", offset=pos)
    return tuple(raw), end


def _lane_codec(lanes: int) -> ImmediateCodec:
    kind = f"lane{lanes}"

    def normalize(value: object, instruction: str) -> int:
        if not _is_int(value) or not 0 <= value < lanes:  # type: ignore[operator]
            raise _fail(instruction, kind, value, f"a lane index in 0..{lanes - 1}")
        return int(value)  # type: ignore[arg-type]

    def read(data: bytes, pos: int) -> tuple[int, int]:
        if pos >= len(data):
            raise WasmDecodeError("lane index runs past the end of the input", offset=pos)
        if data[pos] >= lanes:
            raise WasmDecodeError(f"lane index {data[pos]} is not below {lanes}", offset=pos)
        return data[pos], pos + 1

    return ImmediateCodec(kind, normalize, lambda v, out: out.append(v), read, str)


# --- memory arguments ------------------------------------------------------------------------------------------

def _memarg_codec(natural: int) -> ImmediateCodec:
    kind = f"memarg{natural}"

    def normalize(value: object, instruction: str) -> MemArg:
        if _is_int(value):
            value = MemArg(offset=value)  # type: ignore[arg-type]
        if not isinstance(value, MemArg):
            raise _fail(instruction, kind, value, "a MemArg or an int offset")
        align = natural if value.align is None else value.align
        if not _is_int(align) or not 0 <= align <= natural:
            raise WasmEncodingError(f"{instruction}: alignment 2**{align!r} exceeds the natural alignment "
                                    f"2**{natural} ({1 << natural} bytes)")
        if not _is_int(value.offset) or not 0 <= value.offset < _U32:
            raise _fail(instruction, kind, value, "a memory argument with an offset in 0..2**32-1")
        return MemArg(value.offset, align)

    def read(data: bytes, pos: int) -> tuple[MemArg, int]:
        align, after = decode_uleb128(data, pos, 32)
        if align > natural:
            raise WasmDecodeError(f"alignment 2**{align} exceeds the natural alignment 2**{natural}", offset=pos)
        offset, after = decode_uleb128(data, after, 32)
        return MemArg(offset, align), after

    def write(value: MemArg, out: bytearray) -> None:
        out.extend(encode_uleb128(value.align, 32))  # type: ignore[arg-type]
        out.extend(encode_uleb128(value.offset, 32))

    def text(value: MemArg) -> str:
        parts = [f"offset={value.offset}"] if value.offset else []
        if value.align != natural:
            parts.append(f"align={1 << value.align}")  # type: ignore[operator]
        return " ".join(parts)

    return ImmediateCodec(kind, normalize, write, read, text)


# --- types -----------------------------------------------------------------------------------------------------

def _normalize_valtypes(value: object, instruction: str) -> tuple[ValType, ...]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise _fail(instruction, "valtypes", value, "a sequence of value types")
    return tuple(as_valtype(v, f"{instruction}: valtypes immediate") for v in value)  # type: ignore[union-attr]


def _read_valtype(data: bytes, pos: int) -> tuple[ValType, int]:
    if pos >= len(data):
        raise WasmDecodeError("value type runs past the end of the input", offset=pos)
    if data[pos] not in _VALTYPE_CODES:
        raise WasmDecodeError(f"{data[pos]:#04x} is not a value type", offset=pos)
    return ValType(data[pos]), pos + 1


def _write_valtypes(value: tuple[ValType, ...], out: bytearray) -> None:
    out.extend(encode_uleb128(len(value), 32))
    out.extend(int(t) for t in value)


def _read_valtypes(data: bytes, pos: int) -> tuple[tuple[ValType, ...], int]:
    count, pos = decode_uleb128(data, pos, 32)
    types = []
    for _ in range(count):
        valtype, pos = _read_valtype(data, pos)
        types.append(valtype)
    return tuple(types), pos


def _normalize_reftype(value: object, instruction: str) -> ValType:
    valtype = as_valtype(value, f"{instruction}: reftype immediate")
    if valtype not in REFERENCE_TYPES:
        raise _fail(instruction, "reftype", value, "funcref or externref")
    return valtype


def _read_reftype(data: bytes, pos: int) -> tuple[ValType, int]:
    valtype, end = _read_valtype(data, pos)
    if valtype not in REFERENCE_TYPES:
        raise WasmDecodeError(f"{valtype.text} is not a reference type", offset=pos)
    return valtype, end


def _build_codecs() -> dict[str, ImmediateCodec]:
    codecs = [
        ImmediateCodec("blocktype", _normalize_blocktype, _write_blocktype, _read_blocktype, _text_blocktype),
        ImmediateCodec("labels", _normalize_labels, _write_labels, _read_labels, lambda v: " ".join(map(str, v))),
        _int_codec(32), _int_codec(64), _float_codec(32), _float_codec(64),
        ImmediateCodec("v128", _normalize_v128, lambda v, out: out.extend(v),
                       lambda data, pos: _read_bytes16(data, pos, "v128 constant"), _text_v128),
        ImmediateCodec("shuffle", _normalize_shuffle, lambda v, out: out.extend(v), _read_shuffle,
                       lambda v: " ".join(map(str, v))),
        ImmediateCodec("valtypes", _normalize_valtypes, _write_valtypes, _read_valtypes,
                       lambda v: "(result " + " ".join(t.text for t in v) + ")"),
        ImmediateCodec("reftype", _normalize_reftype, lambda v, out: out.append(int(v)), _read_reftype,
                       lambda v: v.text[:-3]),
    ]
    codecs += [_index_codec(k) for k in ("labelidx", "funcidx", "typeidx", "tableidx", "memidx", "localidx",
                                         "globalidx", "elemidx", "dataidx")]
    codecs += [_lane_codec(n) for n in (2, 4, 8, 16)]
    codecs += [_memarg_codec(n) for n in range(5)]
    return {codec.kind: codec for codec in codecs}


#: every immediate kind by name
IMMEDIATE_CODECS: dict[str, ImmediateCodec] = _build_codecs()
