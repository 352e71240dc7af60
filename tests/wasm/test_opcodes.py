"""Every row of the instruction table encodes, decodes back and matches an independent encoder.

The test lists are derived from the table itself, so a row whose immediate
kind has no codec, no test sample or no text form fails here.
"""

from __future__ import annotations

import math
import struct

import pytest
import wasmtime
from hypothesis import given, strategies as st

from wasm_backend.encoding.immediates import IMMEDIATE_CODECS, MemArg
from wasm_backend.encoding.instructions import (
    decode_instruction, encode_instruction, format_instruction, iter_instructions, normalize_immediates,
)
from wasm_backend.encoding.opcodes import OPCODE_BY_CODE, OPCODE_BY_NAME, WASM_OPCODES
from wasm_backend.encoding.types import ValType
from wasm_backend.errors import WasmDecodeError, WasmEncodingError

# canonical sample values per immediate kind; the first of each must also be writable in WAT below
SAMPLES: dict[str, list] = {
    "blocktype": [None, ValType.I32, ValType.V128, 5, ValType.EXTERNREF, 70000],
    "labelidx": [0, 1, 200],
    "labels": [(0, 1), (), tuple(range(130))],
    "i32": [-7, 0, 2**31 - 1, -(2**31), 300],
    "i64": [-1, 2**63 - 1, -(2**63), 1234567890123],
    "f32": [1.5, -0.0, math.inf, 3.4028234663852886e38, 1.401298464324817e-45],  # canonical: exact f32 values
    "f64": [0.1, -2.5e-300, -math.inf, 5e-324],
    "v128": [bytes(range(16)), bytes(16), b"\xff" * 16],
    "shuffle": [tuple(range(31, 15, -1)), tuple(range(16)), (0,) * 16],
    "lane2": [1, 0], "lane4": [3, 0], "lane8": [7, 5], "lane16": [15, 3],
    "valtypes": [(ValType.I32,), (ValType.V128,), (ValType.F64,)],
    "reftype": [ValType.FUNCREF, ValType.EXTERNREF],
    **{kind: [1, 0, 70000, 2**32 - 1] for kind in (
        "funcidx", "typeidx", "tableidx", "memidx", "localidx", "globalidx", "elemidx", "dataidx")},
    **{f"memarg{n}": [MemArg(16, n), MemArg(0, 0), MemArg(2**32 - 1, n), MemArg(300, max(n - 1, 0))]
       for n in range(5)},
}


def _wat_float(value: float) -> str:
    return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")


# how the WAT text format writes each immediate kind (used to build an independent encoding with wat2wasm)
WAT_TEXT = {
    "blocktype": lambda v: "" if v is None else f"(result {v.text})" if isinstance(v, ValType) else f"(type {v})",
    "labels": lambda v: " ".join(map(str, v)),
    "i32": str, "i64": str,
    "f32": _wat_float, "f64": _wat_float,
    "v128": lambda v: "i8x16 " + " ".join(map(str, v)),
    "shuffle": lambda v: " ".join(map(str, v)),
    "valtypes": lambda v: "(result " + " ".join(t.text for t in v) + ")",
    "reftype": lambda v: v.text[:-3],
    "typeidx": lambda v: f"(type {v})",
    **{k: str for k in ("labelidx", "funcidx", "tableidx", "memidx", "localidx", "globalidx", "elemidx",
                        "dataidx", "lane2", "lane4", "lane8", "lane16")},
    **{f"memarg{n}": (lambda n: lambda m: f"offset={m.offset} align={1 << m.align}")(n) for n in range(5)},
}

# WAT writes these immediates in another order than the binary format: binary positions in text order
WAT_ORDER = {"memory.init": (1, 0), "table.init": (1, 0), "call_indirect": (1, 0)}

# rows that WAT can only write inside a construct: (before, after) instruction lists around the row
CONTEXT = {
    "block": ([], [("end", ())]), "loop": ([], [("end", ())]), "if": ([], [("end", ())]),
    "else": ([("if", (None,))], [("end", ())]), "end": ([("block", (None,))], []),
}


def _sample_immediates(row, k: int) -> tuple:
    return tuple(SAMPLES[kind][k % len(SAMPLES[kind])] for kind in row.immediates)


def _sample_count(row) -> int:
    return max([len(SAMPLES[kind]) for kind in row.immediates], default=1)


def _wat(name: str, immediates: tuple) -> str:
    row = OPCODE_BY_NAME[name]
    texts = [WAT_TEXT[kind](value) for kind, value in zip(row.immediates, immediates)]
    order = WAT_ORDER.get(name, range(len(texts)))
    return " ".join([row.text_name] + [texts[i] for i in order if texts[i]])


ROWS = [pytest.param(row, id=row.name) for row in WASM_OPCODES]


def test_table_shape():
    assert len(OPCODE_BY_NAME) == len(OPCODE_BY_CODE) == len(WASM_OPCODES)
    features = [row.feature for row in WASM_OPCODES]
    assert features.count("simd") == 236  # the complete fixed-width SIMD proposal
    assert features.count("relaxed-simd") == 20
    simd_gaps = sorted(set(range(256)) - {r.code[1] for r in WASM_OPCODES if r.feature == "simd"})
    assert simd_gaps == [0x9A, 0xA2, 0xA5, 0xA6, 0xAF, 0xB0, 0xB2, 0xB3, 0xB4, 0xBB, 0xC2, 0xC5, 0xC6, 0xCF,
                         0xD0, 0xD2, 0xD3, 0xD4, 0xE2, 0xEE]
    assert {kind for row in WASM_OPCODES for kind in row.immediates} <= set(IMMEDIATE_CODECS)
    assert OPCODE_BY_NAME["i32.add"].code == (0x6A,)
    assert OPCODE_BY_NAME["i8x16.extract_lane_s"].code == (0xFD, 21)
    assert OPCODE_BY_NAME["f32x4.relaxed_madd"].code == (0xFD, 0x105)


@pytest.mark.parametrize("row", ROWS)
def test_row_round_trips(row):
    for k in range(_sample_count(row)):
        immediates = _sample_immediates(row, k)
        encoded = encode_instruction(row.name, immediates)
        decoded, end = decode_instruction(b"\x01" + encoded + b"\x01", 1)
        assert end == len(encoded) + 1
        assert (decoded.name, decoded.immediates) == (row.name, immediates)
        assert encode_instruction(decoded.name, decoded.immediates) == encoded  # bit-exact, -0.0 included
        assert format_instruction(decoded).startswith(row.text_name)


@pytest.mark.parametrize("row", ROWS)
def test_row_matches_wat2wasm(row):
    before, after = CONTEXT.get(row.name, ([], []))
    sequence = before + [(row.name, _sample_immediates(row, 0))] + after
    ours = b"".join(encode_instruction(name, imms) for name, imms in sequence)
    text = " ".join(_wat(name, imms) for name, imms in sequence)
    reference = wasmtime.wat2wasm(f"(module (func unreachable {text}))")
    # the module ends with the code section: unreachable, the instruction(s), the function's end
    assert reference.endswith(b"\x00" + ours + b"\x0b"), (
        f"{row.name}: ours {ours.hex()} vs wat2wasm {reference.hex()} for {text!r}")


@pytest.mark.parametrize("name, immediates, message", [
    ("i8x16.extract_lane_s", (16,), "lane index in 0..15"),
    ("f64x2.replace_lane", (2,), "lane index in 0..1"),
    ("v128.load8_lane", (MemArg(0, 1), 0), "exceeds the natural alignment 2\\*\\*0"),
    ("i32.load", (MemArg(0, 3),), "natural alignment 2\\*\\*2"),
    ("i32.load", (MemArg(-1),), "offset in 0..2\\*\\*32-1"),
    ("i8x16.shuffle", ((32,) * 16,), "16 lane indices in 0..31"),
    ("i8x16.shuffle", ((0,) * 15,), "16 lane indices"),
    ("v128.const", (b"\x00" * 15,), "16 bytes"),
    ("i32.const", (2**32,), "i32 immediate"),
    ("i64.const", (-(2**63) - 1,), "i64 immediate"),
    ("f32.const", (1e300,), "representable as f32"),
    ("f64.const", ("1.0",), "an int or float"),
    ("local.get", (-1,), "localidx immediate"),
    ("br_table", ((0, "x"), 0), "labels immediate"),
    ("block", (3.0,), "blocktype immediate"),
    ("select_typed", (("i32", "q8"),), "not a value type"),
    ("ref.null", (ValType.I32,), "funcref or externref"),
    ("i32.add", (1,), "takes 0 immediate"),
    ("call", (), "takes 1 immediate"),
    ("i32.addd", (), "unknown WebAssembly instruction 'i32.addd'.*i32.add"),
])
def test_bad_immediates_are_refused(name, immediates, message):
    with pytest.raises(WasmEncodingError, match=message):
        encode_instruction(name, immediates)


def test_accepted_spellings_are_normalized():
    row = OPCODE_BY_NAME
    assert normalize_immediates(row["i32.const"], (0xFFFFFFFF,)) == (-1,)
    assert normalize_immediates(row["i64.const"], (2**64 - 1,)) == (-1,)
    assert normalize_immediates(row["f32.const"], (0.1,)) == (struct.unpack("<f", struct.pack("<f", 0.1))[0],)
    assert normalize_immediates(row["v128.load"], (32,)) == (MemArg(32, 4),)
    assert normalize_immediates(row["block"], ("f64",)) == (ValType.F64,)
    assert normalize_immediates(row["i8x16.shuffle"], (bytes(range(16)),)) == (tuple(range(16)),)
    assert normalize_immediates(row["v128.const"], (bytearray(16),)) == (bytes(16),)


def test_relaxed_opcodes_decode_from_two_byte_leb():
    assert decode_instruction(b"\xfd\x80\x02")[0].name == "i8x16.relaxed_swizzle"
    assert decode_instruction(b"\xfd\x93\x02")[0].name == "i32x4.relaxed_dot_i8x16_i7x16_add_s"


@pytest.mark.parametrize("data, message", [
    (b"\xff", "unknown opcode 0xff"),
    (b"\xfd\x9a\x01", "unknown opcode 0xfd 0x9a"),
    (b"\xfd\x94\x02", "unknown opcode 0xfd 0x114"),
    (b"\x41", "past the end"),
    (b"\xfd\x15\x10", "lane index 16 is not below 16"),
    (b"\xfd\x0d" + bytes([32] * 16), "shuffle lane index 32"),
    (b"\x28\x03\x00", "exceeds the natural alignment"),
    (b"\x02\x60", "neither a value type nor a type index"),
    (b"\x43\x00\x00", "f32 constant runs past the end"),
])
def test_malformed_instructions_are_refused(data, message):
    with pytest.raises(WasmDecodeError, match=message):
        decode_instruction(data)


@given(st.lists(st.tuples(st.sampled_from(WASM_OPCODES), st.integers(min_value=0, max_value=5)), max_size=40))
def test_instruction_sequences_decode_in_order(picks):
    sequence = [(row.name, _sample_immediates(row, k)) for row, k in picks]
    code = b"".join(encode_instruction(name, imms) for name, imms in sequence)
    assert [(i.name, i.immediates) for i in iter_instructions(code)] == sequence
