"""BodyWriter: instruction methods, block nesting checks, labels and name resolution."""

from __future__ import annotations

import pytest

from wasm_backend.encoding.body_writer import METHOD_NAMES, BodyWriter
from wasm_backend.encoding.immediates import MemArg
from wasm_backend.encoding.instructions import iter_instructions
from wasm_backend.encoding.opcodes import WASM_OPCODES
from wasm_backend.encoding.types import ValType
from wasm_backend.errors import WasmEncodingError


def _names(code: bytes) -> list[tuple[str, tuple]]:
    return [(i.name, i.immediates) for i in iter_instructions(code)]


def test_every_row_has_a_method():
    assert set(METHOD_NAMES.values()) == {row.name for row in WASM_OPCODES}
    assert METHOD_NAMES["return_"] == "return"
    assert METHOD_NAMES["f32x4_relaxed_madd"] == "f32x4.relaxed_madd"
    assert METHOD_NAMES["i32_trunc_sat_f32_s"] == "i32.trunc_sat_f32_s"


def test_methods_and_emit_write_the_same_bytes():
    a, b = BodyWriter(), BodyWriter()
    a.local_get(0).local_get(1).i32_add().v128_load(MemArg(16)).i8x16_extract_lane_s(3).return_()
    for name, *imms in [("local.get", 0), ("local.get", 1), ("i32.add",), ("v128.load", 16),
                        ("i8x16.extract_lane_s", 3), ("return",)]:
        b.emit(name, *imms)
    assert a.finish() == b.finish()
    assert a.instruction_count == 6
    assert a.finish().endswith(b"\x0b")


def test_labels_resolve_to_relative_depths():
    w = BodyWriter(function_label="fn")
    with w.block(label="exit"):
        with w.loop(label="top"):
            assert (w.depth("top"), w.depth("exit"), w.depth("fn")) == (0, 1, 2)
            w.local_get(0).br_if("exit")
            w.br_table(["top", "exit"], "fn")
            w.br("top")
        assert w.open_constructs == 1
    instructions = _names(w.finish())
    assert ("br_if", (1,)) in instructions
    assert ("br_table", ((0, 1), 2)) in instructions
    assert ("br", (0,)) in instructions
    assert [n for n, _ in instructions].count("end") == 3


def test_shadowed_label_finds_the_innermost():
    w = BodyWriter()
    with w.block(label="x"):
        with w.block(label="x"):
            assert w.depth("x") == 0
        assert w.depth("x") == 0


def test_if_else_and_block_results():
    w = BodyWriter()
    w.i32_const(1)
    with w.if_(ValType.F32):
        w.f32_const(1.0)
        w.else_()
        w.f32_const(2.0)
    w.drop()
    assert [n for n, _ in _names(w.finish())] == ["i32.const", "if", "f32.const", "else", "f32.const", "end",
                                                    "drop", "end"]


def test_resolvers_turn_names_into_indices():
    w = BodyWriter(resolvers={"localidx": {"acc": 3}.__getitem__, "funcidx": {"helper": 7}.__getitem__})
    w.local_get("acc").call("helper")
    assert _names(w.finish())[:2] == [("local.get", (3,)), ("call", (7,))]


@pytest.mark.parametrize("action, message", [
    (lambda w: w.end(), "end without an open block"),
    (lambda w: w.else_(), "else without a matching if"),
    (lambda w: (w.block(), w.else_()), "innermost open construct: block"),
    (lambda w: w.br("nowhere"), "no open block, loop or if is labelled 'nowhere'"),
    (lambda w: w.i32_frobnicate(), "no instruction method"),
    (lambda w: w.block(label=3), "label must be a str"),
    (lambda w: (w.loop(label="l"), w.finish()), "1 open construct\\(s\\): loop 'l'"),
    (lambda w: (w.finish(), w.nop()), "already finished"),
    (lambda w: w.emit("local.get"), "takes 1 immediate"),
])
def test_misuse_is_refused(action, message):
    w = BodyWriter()
    with pytest.raises((WasmEncodingError, AttributeError), match=message):
        action(w)


def test_if_with_else_twice_is_refused():
    w = BodyWriter()
    w.i32_const(0)
    w.if_()
    w.else_()
    with pytest.raises(WasmEncodingError, match="innermost open construct: else"):
        w.else_()


def test_scope_closed_out_of_order_is_refused():
    w = BodyWriter()
    outer = w.block(label="outer")
    w.block(label="inner")
    with pytest.raises(WasmEncodingError, match="while an inner construct is open"):
        with outer:
            pass


def test_failed_emit_writes_nothing():
    w = BodyWriter()
    with pytest.raises(WasmEncodingError):
        w.block(4.5)
    with pytest.raises(WasmEncodingError):
        w.end()
    assert w.open_constructs == 0 and w.finish() == b"\x0b"
