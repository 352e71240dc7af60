"""LEB128: round trips, the spec's edge values, and malformed input."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, strategies as st

from wasm_backend.encoding import leb128
from wasm_backend.encoding.leb128 import decode_sleb128, decode_uleb128, encode_sleb128, encode_uleb128
from wasm_backend.errors import WasmDecodeError, WasmEncodingError


def test_doctests_pass():
    result = doctest.testmod(leb128)
    assert result.attempted >= 6 and result.failed == 0


@pytest.mark.parametrize("bits", [32, 64])
def test_unsigned_round_trip_property(bits):
    @given(st.integers(min_value=0, max_value=(1 << bits) - 1), st.binary(max_size=3))
    def check(value, trailing):
        encoded = encode_uleb128(value, bits)
        assert len(encoded) <= (bits + 6) // 7
        assert decode_uleb128(encoded + trailing, 0, bits) == (value, len(encoded))

    check()


@pytest.mark.parametrize("bits", [32, 33, 64])
def test_signed_round_trip_property(bits):
    @given(st.integers(min_value=-(1 << (bits - 1)), max_value=(1 << (bits - 1)) - 1))
    def check(value):
        encoded = encode_sleb128(value, bits)
        assert len(encoded) <= (bits + 6) // 7
        assert decode_sleb128(b"\x55" + encoded, 1, bits) == (value, len(encoded) + 1)

    check()


@pytest.mark.parametrize("value, hex_bytes", [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16384, "808001"),
    (2**32 - 1, "ffffffff0f"), (2**64 - 1, "ffffffffffffffffff01"),
])
def test_unsigned_known_encodings(value, hex_bytes):
    assert encode_uleb128(value).hex() == hex_bytes
    assert decode_uleb128(bytes.fromhex(hex_bytes)) == (value, len(hex_bytes) // 2)


@pytest.mark.parametrize("value, hex_bytes", [
    (0, "00"), (-1, "7f"), (63, "3f"), (64, "c000"), (-64, "40"), (-65, "bf7f"), (-128, "807f"),
    (2**31 - 1, "ffffffff07"), (-(2**31), "8080808078"), (-(2**63), "8080808080808080807f"),
])
def test_signed_known_encodings(value, hex_bytes):
    assert encode_sleb128(value).hex() == hex_bytes
    assert decode_sleb128(bytes.fromhex(hex_bytes)) == (value, len(hex_bytes) // 2)


def test_non_minimal_encodings_decode():
    # padding with 0x80 continuation groups is allowed within the byte limit
    assert decode_uleb128(b"\x80\x80\x00", 0, 32) == (0, 3)
    assert decode_sleb128(b"\xff\x7f", 0, 32) == (-1, 2)


@pytest.mark.parametrize("value, bits", [(-1, 32), (2**32, 32), (2**64, 64), (True, 32), (1.0, 32), ("1", 32)])
def test_unsigned_encode_rejects(value, bits):
    with pytest.raises(WasmEncodingError, match=f"u{bits} LEB128"):
        encode_uleb128(value, bits)


@pytest.mark.parametrize("value, bits", [(2**31, 32), (-(2**31) - 1, 32), (2**32, 33), (None, 64)])
def test_signed_encode_rejects(value, bits):
    with pytest.raises(WasmEncodingError, match=f"s{bits} LEB128"):
        encode_sleb128(value, bits)


@pytest.mark.parametrize("data, bits, message", [
    (b"", 32, "past the end"),
    (b"\x80\x80", 32, "past the end"),
    (b"\x80\x80\x80\x80\x80\x00", 32, "longer than 5 bytes"),
    (b"\xff\xff\xff\xff\x1f", 32, "does not fit in 32 bits"),
    (b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02", 64, "does not fit in 64 bits"),
])
def test_unsigned_decode_rejects(data, bits, message):
    with pytest.raises(WasmDecodeError, match=message):
        decode_uleb128(data, 0, bits)


@pytest.mark.parametrize("data, bits, message", [
    (b"\xff\xff\xff\xff\x0f", 32, "does not fit in 32 bits"),  # 2**32-1 read as signed
    (b"\x80\x80\x80\x80\x70", 32, "does not fit in 32 bits"),  # bits past 32 are not a sign extension
    (b"\xc0", 32, "past the end"),
])
def test_signed_decode_rejects(data, bits, message):
    with pytest.raises(WasmDecodeError, match=message):
        decode_sleb128(data, 0, bits)
