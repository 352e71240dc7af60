"""LEB128 variable-length integers: the one implementation of the Atlas bytecode
(``atlas_web.bytecode``) and of the WebAssembly encoder (``wasm_backend.encoding.leb128``).

Standard library only. The encoders take ints of any size (the bytecode writes extended-int
immediates of up to 4096 bits) and write the minimal encoding; width limits are the caller's.
``read_leb128`` decodes one number and reports a malformed one through the caller's error
factory, so each format raises its own documented error class with its own offsets.

>>> encode_uleb128(624485).hex(), encode_sleb128(-123456).hex(), encode_zigzag(-2).hex()
('e58e26', 'c0bb78', '03')
>>> read_leb128(bytes.fromhex('e58e26'), 0, 10, "n", ValueError)
(624485, 21, 3)
"""

from __future__ import annotations

from typing import Callable

from .errors import ProgramError

__all__ = ["encode_uleb128", "encode_sleb128", "encode_zigzag", "decode_zigzag", "read_leb128"]


def encode_uleb128(value: int) -> bytes:
    """Unsigned LEB128 of ``value`` (minimal length). Raises ProgramError for a negative value."""
    if value < 0:
        raise ProgramError(f"unsigned LEB128 of a negative value {value}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_sleb128(value: int) -> bytes:
    """Signed (two's complement) LEB128 of ``value`` (minimal length).

    >>> encode_sleb128(-1), encode_sleb128(63), encode_sleb128(64), encode_sleb128(-65)
    (b'\\x7f', b'?', b'\\xc0\\x00', b'\\xbf\\x7f')
    """
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7  # arithmetic shift: stays -1 for negative values
        if (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40):
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def encode_zigzag(value: int) -> bytes:
    """Zigzag LEB128 of a signed ``value``: 0, -1, 1, -2 … are written as 0, 1, 2, 3 …"""
    return encode_uleb128(2 * value if value >= 0 else -2 * value - 1)


def decode_zigzag(value: int) -> int:
    """The signed value of a zigzag code (0, 1, 2, 3 … give 0, -1, 1, -2 …)."""
    return value >> 1 if not value & 1 else -((value + 1) >> 1)


def read_leb128(data: bytes | bytearray | memoryview, pos: int, max_bytes: int, what: str,
                error: Callable[[str, int], Exception], *, minimal: bool = False) -> tuple[int, int, int]:
    """``(payload, payload bits, next position)`` of the LEB128 number at ``data[pos:]``.

    The payload is the raw little-endian value of the 7-bit groups (sign-extend it from
    ``payload bits`` for signed LEB128). A number is malformed when it runs past the end of
    ``data``, takes more than ``max_bytes`` bytes, or (with ``minimal``) ends in a zero byte
    after the first; ``error(reason, pos)`` then makes the exception raised, the reason naming
    ``what``. Nothing is copied.
    """
    payload = shift = 0
    end = pos
    for count in range(1, max_bytes + 1):
        if end >= len(data):
            raise error(f"truncated: {what} (LEB128) runs past the end of the input", pos)
        byte = data[end]
        end += 1
        payload |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            if minimal and byte == 0 and count > 1:
                raise error(f"{what}: overlong LEB128 encoding", pos)
            return payload, shift, end
    raise error(f"{what}: LEB128 longer than {max_bytes} bytes", pos)
