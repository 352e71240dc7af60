"""LEB128, the variable-length integers of the WebAssembly binary format.

>>> encode_uleb128(624485).hex()
'e58e26'
>>> decode_uleb128(bytes.fromhex('e58e26'))
(624485, 3)
>>> encode_sleb128(-123456).hex()
'c0bb78'
>>> decode_sleb128(bytes.fromhex('c0bb78'))
(-123456, 3)
"""

from __future__ import annotations

from atlas_web import leb128 as atlas_leb128

from ..errors import WasmDecodeError, WasmEncodingError

__all__ = ["encode_uleb128", "encode_sleb128", "decode_uleb128", "decode_sleb128"]


def encode_uleb128(value: int, bits: int = 64) -> bytes:
    """Unsigned LEB128 of ``value``, which must lie in 0 … 2**bits - 1 (``atlas_web.leb128`` writes it).

    >>> encode_uleb128(0), encode_uleb128(127), encode_uleb128(128)
    (b'\\x00', b'\\x7f', b'\\x80\\x01')

    Raises WasmEncodingError for a value out of range or not an int.
    """
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < (1 << bits):
        raise WasmEncodingError(f"u{bits} LEB128: {value!r} is not an int in 0..2**{bits}-1")
    return atlas_leb128.encode_uleb128(value)


def encode_sleb128(value: int, bits: int = 64) -> bytes:
    """Signed LEB128 of ``value``, which must lie in -2**(bits-1) … 2**(bits-1) - 1 (``atlas_web.leb128``
    writes it).

    >>> encode_sleb128(-1), encode_sleb128(63), encode_sleb128(64), encode_sleb128(-64), encode_sleb128(-65)
    (b'\\x7f', b'?', b'\\xc0\\x00', b'@', b'\\xbf\\x7f')

    Raises WasmEncodingError for a value out of range or not an int.
    """
    limit = 1 << (bits - 1)
    if not isinstance(value, int) or isinstance(value, bool) or not -limit <= value < limit:
        raise WasmEncodingError(f"s{bits} LEB128: {value!r} is not an int in -2**{bits - 1}..2**{bits - 1}-1")
    return atlas_leb128.encode_sleb128(value)


def _decode_error(reason: str, offset: int) -> WasmDecodeError:
    return WasmDecodeError(reason, offset=offset)


def decode_uleb128(data: bytes | bytearray | memoryview, pos: int = 0, bits: int = 64) -> tuple[int, int]:
    """``(value, next position)`` of the unsigned LEB128 at ``data[pos:]`` (at most ceil(bits / 7) bytes;
    non-minimal encodings are accepted, as WebAssembly allows).

    >>> decode_uleb128(b'\\x80\\x80\\x80\\x80\\x10', bits=32)
    Traceback (most recent call last):
    ...
    wasm_backend.errors.WasmDecodeError: at byte 0x0: u32 LEB128 value 4294967296 does not fit in 32 bits

    Raises WasmDecodeError for a truncated, over-long or out-of-range number.
    """
    value, _, end = atlas_leb128.read_leb128(data, pos, (bits + 6) // 7, f"u{bits}", _decode_error)
    if value >> bits:
        raise WasmDecodeError(f"u{bits} LEB128 value {value} does not fit in {bits} bits", offset=pos)
    return value, end


def decode_sleb128(data: bytes | bytearray | memoryview, pos: int = 0, bits: int = 64) -> tuple[int, int]:
    """``(value, next position)`` of the signed LEB128 at ``data[pos:]`` (at most ceil(bits / 7) bytes).

    Raises WasmDecodeError for a truncated, over-long or out-of-range number.
    """
    raw, width, end = atlas_leb128.read_leb128(data, pos, (bits + 6) // 7, f"s{bits}", _decode_error)
    value = raw - (1 << width) if raw >> (width - 1) & 1 else raw
    limit = 1 << (bits - 1)
    if not -limit <= value < limit:
        raise WasmDecodeError(f"s{bits} LEB128 value {value} does not fit in {bits} bits", offset=pos)
    return value, end
