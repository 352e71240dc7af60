"""Bytecode: layout, determinism, every documented refusal with its byte offset, round trips,
random bytes and mutations of valid bytecode."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atlas_web.bytecode import (
    BYTECODE_VERSION, MAGIC, decode_program, encode_program, encode_uleb128, encode_zigzag,
)
from atlas_web.errors import ProgramError
from atlas_web.isa import ADD, BRA, EXIT, LDG, MOV_IMM, Address, Predicate, Register, Type
from atlas_web.isa.floats import float_to_bits
from atlas_web.program import Program

from .strategies import programs

r = Register
HEADER = MAGIC + BYTECODE_VERSION.to_bytes(2, "little")
_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _exit_program() -> bytes:
    return HEADER + b"\x00" + b"\x01" + encode_uleb128(EXIT.INFO.opcode)


def test_leb128_encodings():
    assert encode_uleb128(0) == b"\x00"
    assert encode_uleb128(127) == b"\x7f"
    assert encode_uleb128(128) == b"\x80\x01"
    assert encode_uleb128(624485) == b"\xe5\x8e\x26"
    assert [encode_zigzag(v) for v in (0, -1, 1, -2, 2)] == [b"\x00", b"\x01", b"\x02", b"\x03", b"\x04"]
    assert len(encode_zigzag(-(1 << 4095))) == 586


def test_layout_of_a_small_program():
    program = Program([ADD(dst=r(1), lhs=r(2), rhs=r(3), ty=Type.F32),
                       BRA(target="top", pred=Predicate(2), negate=True)], {"top": 0, "end": 2})
    expected = (HEADER + b"\x02" + b"\x03top\x00" + b"\x03end\x02" + b"\x02"
                + bytes([ADD.INFO.opcode, Type.F32.code, 1, 2, 3])
                + bytes([BRA.INFO.opcode, 3]) + b"top" + bytes([3, 1]))
    assert encode_program(program) == expected
    assert program.to_bytes() == expected
    assert decode_program(expected) == program
    assert program.digest() == hashlib.blake2b(expected, digest_size=32).hexdigest()


def test_encoding_is_deterministic_whatever_the_label_order():
    body = [EXIT()]
    a = Program(body, {"b": 0, "a": 1, "c": 0})
    b = Program(body, {"c": 0, "a": 1, "b": 0})
    assert encode_program(a) == encode_program(b)
    assert a.digest() == b.digest()


def test_float_immediates_are_exact_bit_patterns():
    for ty, value in ((Type.F64, -0.0), (Type.F32, float("inf")), (Type.F16, 65504.0), (Type.BF16, float("nan"))):
        program = Program([MOV_IMM(dst=r(0), value=value, ty=ty)])
        data = encode_program(program)
        assert data.endswith(encode_uleb128(float_to_bits(program[0].value, ty)))
        assert encode_program(decode_program(data)) == data


def test_extended_immediates_at_their_limits():
    for ty in (Type.I4096, Type.U4096, Type.I128):
        lo, hi = ty.int_range()
        program = Program([MOV_IMM(dst=r(0), value=lo, ty=ty), MOV_IMM(dst=r(1), value=hi, ty=ty)])
        assert decode_program(encode_program(program)) == program


def test_decode_accepts_bytes_like_and_refuses_others():
    data = _exit_program()
    assert decode_program(bytearray(data)) == decode_program(memoryview(data)) == Program([EXIT()])
    with pytest.raises(ProgramError, match="bytes-like"):
        decode_program("ATLB")


def test_unknown_version_is_named():
    with pytest.raises(ProgramError) as info:
        decode_program(MAGIC + (2).to_bytes(2, "little") + b"\x00\x00")
    assert str(info.value) == "unsupported bytecode version 2; this atlas-web reads version 1"


def _body(*parts: bytes) -> bytes:
    return HEADER + b"".join(parts)


def _add(*operands: int, ty: int = Type.F32.code) -> bytes:
    return bytes([ADD.INFO.opcode, ty, *operands])


def _ldg(mode_code: int, *fields: bytes) -> bytes:
    return bytes([LDG.INFO.opcode, Type.F32.code, 1, mode_code]) + b"".join(fields)


@pytest.mark.parametrize("data, message", [
    (b"", r"offset 0: truncated: the header needs 6 bytes"),
    (b"ATL", r"offset 0: truncated"),
    (b"XTLB\x01\x00\x00\x00", r"offset 0: not atlas-web bytecode: expected magic"),
    (b"\x00asm\x01\x00\x00\x00", r"offset 0: not atlas-web bytecode"),
    (_body(), r"offset 6: truncated: label count"),
    (_body(b"\x00"), r"offset 7: truncated: instruction count"),
    (_body(b"\x00\x01"), r"offset 7: instruction count 1 is impossible: only 0 bytes follow"),
    (_body(b"\x00\x01\x7f"), r"offset 8: unknown opcode 0x7f"),
    (_body(b"\x00\x01", _add(1, 2)), r"offset 12: truncated: register"),
    (_body(b"\x00\x01", _add(1, 2, 3), b"\x00"), r"offset 13: 1 trailing bytes"),
    (_body(b"\x00\x01", _add(1, 2, 3, ty=99)), r"offset 9: unknown type code 99"),
    (_body(b"\x00\x01", _add(1, 2, 3, ty=Type.F32.code)[:-1] + b"\x80\x02"), r"offset 12: register r256 out of range"),
    (_body(b"\x00\x01", _add(1, 2, 3, ty=Type.U8.code)[:1] + bytes([Type.F16.code]) + b"\x80\x00\x02\x03"),
     r"offset 10: register: overlong LEB128"),
    (_body(b"\x00\x01", bytes([ADD.INFO.opcode]) + b"\xff" * 12), r"offset 9: type code of 'ty': LEB128 longer than"),
    (_body(b"\x00\x01", bytes([0x30, Type.F32.code, 1, 2, 3])),
     r"offset 8: instruction 0: AND: type F32 is not accepted"),
    (_body(b"\x00\x01", _ldg(6)), r"offset 11: unknown address mode 6"),
    (_body(b"\x00\x01", _ldg(0, b"\x00", b"\x00")), r"offset 11: BufferOffset.handle must be an int in 1"),
    (_body(b"\x00\x01", _ldg(2, b"\x00")), r"offset 8: instruction 0: LDG: operand 'src' must be one of"),
    (_body(b"\x00\x01", bytes([BRA.INFO.opcode, 1]) + b"x" + b"\x11"),
     r"offset 11: optional predicate code 17 out of range"),
    (_body(b"\x00\x01", bytes([BRA.INFO.opcode, 1]) + b"x" + b"\x01\x02"), r"offset 12: flag 'negate' 2 out of range"),
    (_body(b"\x00\x01", bytes([BRA.INFO.opcode, 1]) + b"x" + b"\x00\x01"),
     r"offset 8: instruction 0: BRA: negate=True"),
    (_body(b"\x00\x01", bytes([BRA.INFO.opcode, 1]) + b"9" + b"\x00\x00"), r"offset 9: invalid label name b'9'"),
    (_body(b"\x00\x01", bytes([BRA.INFO.opcode, 0])), r"offset 9: label name length 0 outside 1..255"),
    (_body(b"\x00\x01", bytes([0x36, Type.F32.code, 16, 1, 2, 0])), r"offset 10: predicate p16 out of range"),
    (_body(b"\x00\x01", bytes([0x36, Type.F32.code, 0, 1, 2, 10])), r"offset 13: unknown Condition code 10"),
    (_body(b"\x00\x01", bytes([MOV_IMM.INFO.opcode, Type.I8.code, 0]) + encode_zigzag(200)),
     r"offset 11: i8 immediate 200 is outside the type's range"),
    (_body(b"\x00\x01", bytes([MOV_IMM.INFO.opcode, Type.F16.code, 0]) + encode_uleb128(0x10000)),
     r"offset 11: f16 immediate bit pattern 0x10000 is wider than 16 bits"),
    (_body(b"\x00\x01", bytes([MOV_IMM.INFO.opcode, Type.F32.code, 0]) + encode_uleb128(0x7FC00001)),
     r"offset 11: f32 immediate NaN 0x7fc00001 is not the canonical NaN"),
    (_body(b"\x00\x01", bytes([MOV_IMM.INFO.opcode, Type.I4096.code, 0]) + b"\xff" * 600),
     r"offset 11: i4096 immediate: LEB128 longer than 586 bytes"),
    (_body(b"\xff\xff\xff\xff\x0f"), r"offset 6: label count 4294967295 is impossible: only 0 bytes follow"),
    (_body(b"\x00\xff\xff\x03"), r"offset 7: instruction count 65535 is impossible"),
    (_body(b"\x01\x01a\x02\x01\x44"), r"offset 7: label 'a' points at 2, outside 0..1"),
    (_body(b"\x02\x01b\x00\x01a\x00\x00"), r"offset 10: label 'a' is out of order"),
    (_body(b"\x02\x01a\x00\x01a\x00\x00"), r"offset 10: duplicate label 'a'"),
    (_body(b"\x01\x03a\xffb\x00\x00"), r"offset 7: invalid label name b'a\\xffb'"),
])
def test_refusals_name_the_byte_offset(data, message):
    with pytest.raises(ProgramError, match="^bytecode " + message):
        decode_program(data)


def test_every_truncation_of_a_valid_program_is_refused():
    program = Program([LDG(dst=r(1), src=Address.RegisterIndirect(r(4), -8), ty=Type.U64),
                       MOV_IMM(dst=r(2), value=-(1 << 4000), ty=Type.I4096), BRA(target="x")], {"x": 3})
    data = encode_program(program)
    for cut in range(len(data)):
        with pytest.raises(ProgramError, match=r"bytecode offset \d+|unsupported bytecode version"):
            decode_program(data[:cut])


@_SETTINGS
@given(programs())
def test_bytecode_round_trip_is_exact(program):
    data = encode_program(program)
    again = decode_program(data)
    assert again == program
    assert encode_program(again) == data
    assert again.digest() == program.digest()


@_SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_raise_only_program_error(data):
    try:
        program = decode_program(data)
    except ProgramError:
        return
    assert encode_program(program) == data


@_SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_after_a_valid_header_raise_only_program_error(data):
    try:
        program = decode_program(HEADER + data)
    except ProgramError:
        return
    assert encode_program(program) == HEADER + data


@_SETTINGS
@given(programs(), st.lists(st.tuples(st.sampled_from(["flip", "set", "cut", "insert", "delete"]),
                                      st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=3))
def test_mutated_bytecode_raises_only_program_error_or_decodes_canonically(program, mutations):
    data = bytearray(encode_program(program))
    for action, where, byte in mutations:
        where %= len(data) + 1
        if action == "flip" and where < len(data):
            data[where] ^= 1 << (byte % 8)
        elif action == "set" and where < len(data):
            data[where] = byte
        elif action == "cut":
            del data[where:]
        elif action == "insert":
            data.insert(where, byte)
        elif action == "delete" and where < len(data):
            del data[where]
    try:
        decoded = decode_program(bytes(data))
    except ProgramError as exc:
        assert re.search(r"bytecode offset \d+|unsupported bytecode version", str(exc))
        return
    # the decoder accepts only canonical encodings, so whatever it accepts re-encodes to the same bytes
    assert encode_program(decoded) == bytes(data)
