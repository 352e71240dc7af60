"""JSON form: shape, special floats and big ints, defaults, schema errors with their path,
round trips, and random JSON values fed to the reader."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atlas_web.errors import ProgramError
from atlas_web.isa import ADD, BRA, LDG, MOV_IMM, Address, ParallelMap, Predicate, Register, Type
from atlas_web.isa.enums import MapOperation
from atlas_web.jsonform import FORMAT_NAME, JSON_VERSION, program_from_json, program_to_json
from atlas_web.program import Program

from .strategies import programs

r = Register
_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _document(*instructions: dict, labels: dict | None = None) -> str:
    return json.dumps({"format": FORMAT_NAME, "version": JSON_VERSION, "labels": labels or {},
                       "instructions": list(instructions)})


def test_shape_of_the_json_form():
    program = Program([ADD(dst=r(1), lhs=r(2), rhs=r(3), ty=Type.F32),
                       LDG(dst=r(4), src=Address.BufferOffset(2, 0), ty=Type.U8),
                       BRA(target="top", pred=Predicate(0), negate=True)], {"top": 0})
    document = json.loads(program_to_json(program))
    assert document == {
        "format": "atlas-web-program", "version": 1, "labels": {"top": 0},
        "instructions": [
            {"op": "ADD", "dst": "r1", "lhs": "r2", "rhs": "r3", "ty": "f32"},
            {"op": "LDG", "dst": "r4", "src": {"mode": "BufferOffset", "handle": 2, "offset": 0}, "ty": "u8"},
            {"op": "BRA", "target": "top", "pred": "p0", "negate": True},
        ],
    }
    assert list(document["instructions"][0]) == ["op", "dst", "lhs", "rhs", "ty"]
    assert program.to_json() == program_to_json(program)
    assert Program.from_json(program.to_json()) == program


def test_float_immediates_are_strings_and_round_trip():
    values = [-0.0, math.inf, -math.inf, math.nan, 0.1, 5e-324]
    program = Program([MOV_IMM(dst=r(i), value=v, ty=Type.F64) for i, v in enumerate(values)])
    document = json.loads(program_to_json(program))
    assert [ins["value"] for ins in document["instructions"]] == ["-0.0", "inf", "-inf", "nan", "0.1", "5e-324"]
    again = program_from_json(program_to_json(program))
    assert again.to_bytes() == program.to_bytes()
    assert math.copysign(1.0, again[0].value) == -1.0


def test_big_ints_are_json_ints():
    value = -(1 << 4095)
    program = Program([MOV_IMM(dst=r(0), value=value, ty=Type.I4096)])
    assert json.loads(program_to_json(program))["instructions"][0]["value"] == value
    assert program_from_json(program_to_json(program)) == program


def test_reader_accepts_defaults_numbers_and_bytes():
    text = _document({"op": "BRA", "target": "end"},
                     {"op": "ParallelMap", "dst_array": {"mode": "BufferOffset", "handle": 3},
                      "src_array": {"mode": "PoolOffset", "handle": 4},
                      "count": 8, "operation": "relu"},
                     {"op": "MOV_IMM", "dst": "r1", "value": 1.5, "ty": "f16"},
                     {"op": "MOV_IMM", "dst": "r1", "value": "0x10", "ty": "u32"},
                     labels={"end": 3})
    program = program_from_json(text.encode("utf-8"))
    assert program[0] == BRA(target="end")
    assert program[1] == ParallelMap(Address.BufferOffset(3), Address.PoolOffset(4), 8, MapOperation.Relu, Type.F32)
    assert program[2].value == 1.5 and program[3].value == 16


def test_empty_program():
    assert program_from_json(program_to_json(Program())) == Program()
    assert program_from_json('{"format": "atlas-web-program", "version": 1, "instructions": []}') == Program()


def test_unknown_version_is_named():
    with pytest.raises(ProgramError) as info:
        program_from_json('{"format": "atlas-web-program", "version": 2, "instructions": []}')
    assert str(info.value) == "unsupported JSON program version 2; this atlas-web reads version 1"


_ADD = {"op": "ADD", "dst": "r1", "lhs": "r2", "rhs": "r3", "ty": "f32"}


@pytest.mark.parametrize("text, message", [
    ("", r"^malformed JSON: Expecting value: line 1 column 1"),
    ("{", r"^malformed JSON"),
    ("[" * 100_000 + "]" * 100_000, r"^malformed JSON"),
    (b"\xff\xfe\x00", r"^malformed JSON"),
    ('{"format": "atlas-web-program", "version": 1, "instructions": [{"op": "MOV_IMM", "dst": "r1", "ty": "i32", '
     '"value": ' + "9" * 5000 + "}]}", r"^malformed JSON"),
    ("[]", r"^\(top level\): expected an object, got a list"),
    ('{"format": "atlas-web-program", "version": 1, "instructions": [], "extra": 1}', r"unknown key 'extra'"),
    ('{"format": "atlas", "version": 1, "instructions": []}', r'^format: expected "atlas-web-program", got "atlas"'),
    ('{"format": "atlas-web-program", "version": "1", "instructions": []}', r'^version: expected an integer'),
    ('{"format": "atlas-web-program", "version": 1}', r"^instructions: expected a list, got null"),
    (_document(dict(_ADD), dict(_ADD), dict(_ADD), {**_ADD, "lhs": 7}),
     r"^instructions\[3\]\.lhs: expected a register like 'r1', got 7$"),
    (_document({**_ADD, "lhs": "r256"}), r"^instructions\[0\]\.lhs: bad register 'r256' \(r0\.\.r255\)"),
    (_document({k: v for k, v in _ADD.items() if k != "rhs"}), r"^instructions\[0\]: ADD lacks its operand 'rhs'"),
    (_document({k: v for k, v in _ADD.items() if k != "ty"}), r"^instructions\[0\]: ADD lacks its type field 'ty'"),
    (_document({**_ADD, "bogus": 1}), r"^instructions\[0\]: unknown field 'bogus' for ADD"),
    (_document({**_ADD, "op": "ADDD"}), r'^instructions\[0\]\.op: expected an instruction name like "ADD", got "ADDD"'),
    (_document({**_ADD, "ty": "f33"}), r'^instructions\[0\]\.ty: expected a type like "f32"'),
    (_document({**_ADD, "ty": "u4096"}, {**_ADD, "ty": 3}), r"^instructions\[1\]\.ty: expected a type"),
    (_document(["ADD"]), r"^instructions\[0\]: expected an instruction object, got a list"),
    (_document({**_ADD, "op": "AND"}), r"^instructions\[0\]: AND: type F32 is not accepted"),
    (_document({"op": "LDG", "dst": "r1", "src": {"mode": "Heap"}, "ty": "f32"}),
     r"^instructions\[0\]\.src\.mode: expected one of BufferOffset, "),
    (_document({"op": "LDG", "dst": "r1", "src": {"mode": "BufferOffset"}, "ty": "f32"}),
     r"^instructions\[0\]\.src: BufferOffset lacks handle$"),
    (_document({"op": "LDG", "dst": "r1", "src": {"mode": "BufferOffset", "handle": 0}, "ty": "f32"}),
     r"^instructions\[0\]\.src: BufferOffset\.handle must be an int in 1\.\."),
    (_document({"op": "LDG", "dst": "r1", "src": {"mode": "BufferOffset", "handle": True}, "ty": "f32"}),
     r"^instructions\[0\]\.src\.handle: expected an integer, got true"),
    (_document({"op": "LDG", "dst": "r1", "src": {"mode": "RegisterIndirect", "base": 4}, "ty": "f32"}),
     r"^instructions\[0\]\.src\.base: expected a register like 'r1', got 4"),
    (_document({"op": "LDG", "dst": "r1", "src": {"mode": "Shared", "handle": 1}, "ty": "f32"}),
     r"^instructions\[0\]\.src: unknown field 'handle' for Shared"),
    (_document({"op": "LDG", "dst": "r1", "src": "[buf2 + 0]", "ty": "f32"}),
     r"^instructions\[0\]\.src: expected an address object"),
    (_document({"op": "BRA", "target": "@x"}), r'^instructions\[0\]\.target: expected a label name like "loop"'),
    (_document({"op": "BRA", "target": "x", "negate": 1}, labels={"x": 0}),
     r"^instructions\[0\]\.negate: expected true or false, got 1"),
    (_document({"op": "BRA", "target": "x", "pred": "q1"}), r"^instructions\[0\]\.pred: expected a predicate"),
    (_document({"op": "SETcc", "pred": "p0", "lhs": "r1", "rhs": "r2", "cond": "LT", "ty": "f32"}),
     r"^instructions\[0\]\.cond: expected a Condition \(one of eq, ne, "),
    (_document({"op": "MOV_IMM", "dst": "r1", "value": "1.5", "ty": "i32"}),
     r"^instructions\[0\]\.value: expected an integer, got '1\.5'"),
    (_document({"op": "MOV_IMM", "dst": "r1", "value": True, "ty": "f32"}),
     r"^instructions\[0\]\.value: expected a f32 number as a string"),
    (_document({"op": "MOV_IMM", "dst": "r1", "value": 300, "ty": "u8"}),
     r"^instructions\[0\]: MOV_IMM: operand 'value' 300 does not fit"),
    (_document({"op": "BarSync", "id": -1}), r"^instructions\[0\]: BarSync: operand 'id' must be an int"),
    (_document({"op": "BarSync", "id": 1.0}), r"^instructions\[0\]\.id: expected an unsigned integer, got 1\.0"),
    (_document(labels={"x": 1}), r"^labels\.x: expected an instruction index in 0\.\.0, got 1"),
    (_document(labels={"9": 0}), r'^labels: invalid label name "9"'),
    ('{"format": "atlas-web-program", "version": 1, "instructions": [], "labels": []}', r"^labels: expected an object"),
])
def test_schema_errors_name_the_path(text, message):
    with pytest.raises(ProgramError, match=message):
        program_from_json(text)


def test_reader_refuses_non_text():
    with pytest.raises(ProgramError, match="must be a str or bytes"):
        program_from_json({"format": FORMAT_NAME})


@_SETTINGS
@given(programs())
def test_json_round_trip_is_exact(program):
    text = program_to_json(program)
    again = program_from_json(text)
    assert again == program
    assert again.to_bytes() == program.to_bytes()
    assert program_to_json(again) == text


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
    | st.sampled_from(["r1", "p0", "f32", "nan", "-0.0", "ADD", "BufferOffset", "loop", "relu", "r999"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["op", "mode", "handle", "offset", "dst", "src", "ty", "value", "x"]) | st.text(max_size=4),
        children, max_size=4),
    max_leaves=12)


@_SETTINGS
@given(_JSON_VALUES)
def test_random_json_values_raise_only_program_error(value):
    with pytest.raises(ProgramError):
        program_from_json(json.dumps(value))


@_SETTINGS
@given(st.text(max_size=100))
def test_random_text_raises_only_program_error(text):
    with pytest.raises(ProgramError):
        program_from_json(text)


@_SETTINGS
@given(programs(), st.data())
def test_random_values_in_a_valid_document_raise_only_program_error(program, data):
    document = json.loads(program_to_json(program))
    paths: list[tuple] = [("labels",)]
    for i, ins in enumerate(document["instructions"]):
        paths += [("instructions", i, key) for key in ins]
        paths += [("instructions", i, key, sub) for key, value in ins.items() if isinstance(value, dict)
                  for sub in value]
    path = data.draw(st.sampled_from(paths))
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(_JSON_VALUES)
    try:
        decoded = program_from_json(json.dumps(document))
    except ProgramError:
        return
    assert program_from_json(program_to_json(decoded)) == decoded
