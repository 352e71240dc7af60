"""Encode, decode and print single instructions, driven by the opcode table and the immediate codecs."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterator

from ..errors import WasmDecodeError, WasmEncodingError
from .immediates import IMMEDIATE_CODECS
from .leb128 import decode_uleb128, encode_uleb128
from .opcodes import OPCODE_BY_CODE, OPCODE_BY_NAME, PREFIX_BYTES, OpcodeRow

__all__ = [
    "Instruction", "opcode_row", "normalize_immediates", "write_normalized", "encode_instruction", "decode_instruction",
    "iter_instructions", "format_instruction",
]


@dataclass(frozen=True, slots=True)
class Instruction:
    """One decoded instruction: its table ``name`` and canonical ``immediates``; ``offset`` where it began."""

    name: str
    immediates: tuple = ()
    offset: int = -1

    @property
    def row(self) -> OpcodeRow:
        return OPCODE_BY_NAME[self.name]


def opcode_row(name: str) -> OpcodeRow:
    """The table row of ``name``; raises WasmEncodingError naming close matches."""
    try:
        return OPCODE_BY_NAME[name]
    except (KeyError, TypeError):
        near = difflib.get_close_matches(name, OPCODE_BY_NAME, n=4) if isinstance(name, str) else []
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise WasmEncodingError(f"unknown WebAssembly instruction {name!r}{hint}") from None


def normalize_immediates(row: OpcodeRow, immediates: tuple) -> tuple:
    """``immediates`` in canonical form for ``row``; raises WasmEncodingError for a wrong count or value."""
    if len(immediates) != len(row.immediates):
        kinds = ", ".join(row.immediates) or "none"
        raise WasmEncodingError(
            f"{row.name} takes {len(row.immediates)} immediate(s) ({kinds}), got {len(immediates)}: {immediates!r}")
    return tuple(IMMEDIATE_CODECS[kind].normalize(value, row.name) for kind, value in zip(row.immediates, immediates))


def write_normalized(row: OpcodeRow, values: tuple, out: bytearray) -> None:
    """Append ``row``'s opcode and already normalized immediates ``values`` to ``out``."""
    out.append(row.code[0])
    if len(row.code) > 1:
        out.extend(encode_uleb128(row.code[1], 32))
    for kind, value in zip(row.immediates, values):
        IMMEDIATE_CODECS[kind].write(value, out)


def encode_instruction(name: str, immediates: tuple = (), out: bytearray | None = None) -> bytes:
    """The bytes of one instruction (also appended to ``out`` when given).

    Raises WasmEncodingError for an unknown name or bad immediates.
    """
    row = opcode_row(name)
    values = normalize_immediates(row, tuple(immediates))
    buf = bytearray()
    write_normalized(row, values, buf)
    if out is not None:
        out.extend(buf)
    return bytes(buf)


def decode_instruction(data: bytes | bytearray | memoryview, pos: int = 0) -> tuple[Instruction, int]:
    """``(instruction, next position)`` for the instruction at ``data[pos:]``.

    Raises WasmDecodeError for an unknown opcode or truncated immediates.
    """
    if pos >= len(data):
        raise WasmDecodeError("instruction expected, found the end of the input", offset=pos)
    start = pos
    first = data[pos]
    pos += 1
    code: tuple[int, ...] = (first,)
    if first in PREFIX_BYTES:
        sub, pos = decode_uleb128(data, pos, 32)
        code = (first, sub)
    row = OPCODE_BY_CODE.get(code)
    if row is None:
        shown = " ".join(f"{c:#x}" for c in code)
        raise WasmDecodeError(f"unknown opcode {shown}", offset=start)
    values = []
    for kind in row.immediates:
        value, pos = IMMEDIATE_CODECS[kind].read(data, pos)
        values.append(value)
    return Instruction(row.name, tuple(values), start), pos


def iter_instructions(data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None
                      ) -> Iterator[Instruction]:
    """Every instruction in ``data[pos:end]``; raises WasmDecodeError if one runs past ``end``."""
    stop = len(data) if end is None else end
    view = bytes(data[:stop])
    while pos < stop:
        instr, pos = decode_instruction(view, pos)
        yield instr


def format_instruction(instr: Instruction) -> str:
    """WAT text of one instruction: ``i32.load offset=8``, ``i8x16.extract_lane_s 3``, ``br_table 0 1 2``."""
    row = instr.row
    parts = [row.text_name]
    for kind, value in zip(row.immediates, instr.immediates):
        text = IMMEDIATE_CODECS[kind].text(value)
        if text:
            parts.append(text)
    return " ".join(parts)
