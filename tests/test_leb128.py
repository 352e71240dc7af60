"""atlas_web.leb128: the LEB128 primitives the bytecode and the wasm encoder share."""

from __future__ import annotations

import doctest
import subprocess
import sys

import pytest
from hypothesis import given, strategies as st

from atlas_web import bytecode, leb128
from atlas_web.errors import ProgramError
from atlas_web.leb128 import decode_zigzag, encode_sleb128, encode_uleb128, encode_zigzag, read_leb128
from wasm_backend.encoding import leb128 as wasm_leb128


class _Malformed(Exception):
    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(reason)
        self.reason, self.offset = reason, offset


def test_doctests_pass():
    result = doctest.testmod(leb128)
    assert result.attempted >= 3 and result.failed == 0


def test_imports_with_the_standard_library_alone():
    code = "import sys\nsys.modules['numpy'] = None\nimport atlas_web.leb128\nprint('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr


def test_one_implementation_serves_the_bytecode_and_the_wasm_encoder():
    assert bytecode.encode_uleb128 is encode_uleb128 and bytecode.encode_zigzag is encode_zigzag
    assert wasm_leb128.encode_uleb128(300, 32) == encode_uleb128(300)
    assert wasm_leb128.encode_sleb128(-65, 32) == encode_sleb128(-65)


@given(st.integers(min_value=0, max_value=1 << 4100), st.binary(max_size=3))
def test_unsigned_round_trip_of_any_size(value, trailing):
    encoded = encode_uleb128(value)
    assert read_leb128(b"\x01" + encoded + trailing, 1, 600, "n", _Malformed, minimal=True) == (
        value, 7 * len(encoded), 1 + len(encoded))
    assert len(encoded) == max(1, -(-value.bit_length() // 7))


@given(st.integers(min_value=-(1 << 4100), max_value=1 << 4100))
def test_signed_and_zigzag_round_trips(value):
    encoded = encode_sleb128(value)
    raw, width, end = read_leb128(encoded, 0, 600, "n", _Malformed)
    assert (raw - (1 << width) if raw >> (width - 1) & 1 else raw) == value
    assert end == len(encoded)
    zigzag, _, _ = read_leb128(encode_zigzag(value), 0, 600, "n", _Malformed, minimal=True)
    assert decode_zigzag(zigzag) == value


@pytest.mark.parametrize("data, max_bytes, minimal, reason", [
    (b"", 5, False, "truncated: count (LEB128) runs past the end of the input"),
    (b"\xff\x80", 5, False, "truncated: count (LEB128) runs past the end of the input"),
    (b"\x80\x80\x80\x00", 3, False, "count: LEB128 longer than 3 bytes"),
    (b"\x80\x00", 5, True, "count: overlong LEB128 encoding"),
])
def test_malformed_numbers_raise_the_callers_error_at_the_numbers_offset(data, max_bytes, minimal, reason):
    with pytest.raises(_Malformed) as caught:
        read_leb128(b"\x07\x07" + data, 2, max_bytes, "count", _Malformed, minimal=minimal)
    assert (caught.value.reason, caught.value.offset) == (reason, 2)


def test_non_minimal_numbers_pass_unless_minimal_is_asked():
    assert read_leb128(b"\x80\x00", 0, 5, "n", _Malformed) == (0, 14, 2)


def test_unsigned_of_a_negative_value_raises_program_error():
    with pytest.raises(ProgramError, match="unsigned LEB128 of a negative value -1"):
        encode_uleb128(-1)
