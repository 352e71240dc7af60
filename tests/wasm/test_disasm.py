"""The disassembler prints readable WAT-like text, decoded with the encoder's own table."""

from __future__ import annotations

import doctest

import pytest

import wasm_backend.encoding

from wasm_backend.encoding.disasm import disassemble, function_listing
from wasm_backend.encoding.reader import decode_module
from wasm_backend.errors import WasmDecodeError

from .modules import add_module, memory_module, simd_showcase_module
from .test_module import feature_module


def test_add_module_listing_is_exact():
    assert disassemble(add_module()) == "\n".join([
        "(module $arith",
        "  (type (;0;) (func (param i32 i32) (result i32)))",
        "  (func $add (;0;) (type 0) (param $a i32) (param $b i32) (result i32)",
        "    local.get $a",
        "    local.get $b",
        "    i32.add",
        "  )",
        '  (export "add" (func 0))',
        ")",
    ])


def test_loop_and_simd_programs_read_well():
    lines = disassemble(memory_module(1, 64)).split("\n")
    for expected in [
        '  (import "env" "memory" (memory (;0;) 1 64))',
        "  (func $vadd_f32x4 (;1;) (type 1) (param $a i32) (param $b i32) (param $out i32) (param $nbytes i32)",
        "    (local $i i32)",
        "    block  ;; label = @1",
        "      loop  ;; label = @2",
        "        br_if 1 (;@1;)",
        "        v128.load",
        "        f32x4.add",
        "        br 0 (;@2;)",
        "      end",
        "    f32x4.relaxed_madd",
        "    memory.grow",
        "    i32.load offset=4",
        '  (export "madd_f32x4" (func 2))',
    ]:
        assert expected in lines, expected


def test_immediates_print_as_wat():
    lines = disassemble(simd_showcase_module()).split("\n")
    for expected in [
        "    v128.load offset=16 align=8",
        "    v128.load8_lane offset=3 15",
        "    v128.const i32x4 0x3f800000 0x3f800000 0x3f800000 0x3f800000",
        "    i8x16.shuffle 31 30 29 28 27 26 25 24 23 22 21 20 19 18 17 16",
        "    i8x16.extract_lane_s 3",
        "    select (result i32)",
        "    block (result i32)  ;; label = @1",
        "      br_table 0 1 0 (;@1;)",
        '  (data (;0;) (i32.const 8) "ab\\22\\5c\\00")',
    ]:
        assert expected in lines, expected


def test_module_level_items_are_listed():
    text = disassemble(feature_module())
    for expected in [
        '  (import "env" "seen" (func (;0;) (type 0) (param i32)))',
        '  (import "env" "base" (global (;0;) i32))',
        "  (table (;0;) 4 8 funcref)",
        "  (memory (;0;) 1 2)",
        "  (global (;1;) (mut i32) (i32.const 0))",
        "  (global (;2;) i64 (i64.const -5))",
        "  (global (;3;) f32 (f32.const 0.5))",
        "  (global (;6;) funcref (ref.null func))",
        "  (start 4)",
        "  (elem (;0;) (i32.const 1) func 1 2)",
        "  (elem (;1;) func 2)",
        "  (elem (;2;) declare func 1)",
        '  (data (;1;) "\\07\\00\\00\\00")',
        "    call_indirect (type 1) 0",
        "    memory.copy",
        "    global.get $env.base",
        "    global.set $counter",
        "    memory.init 1",
        "    ref.func $double",
    ]:
        assert expected in text.split("\n"), expected


def test_function_listing_of_a_decoded_module():
    module = decode_module(add_module())
    head = function_listing(module, 0).split("\n")[0]
    assert head == "(func $add (;0;) (type 0) (param $a i32) (param $b i32) (result i32)"


def test_garbage_is_refused():
    with pytest.raises(WasmDecodeError, match="magic"):
        disassemble(b"not wasm")


def test_package_doctest_passes():
    result = doctest.testmod(wasm_backend.encoding)
    assert result.attempted >= 4 and result.failed == 0
