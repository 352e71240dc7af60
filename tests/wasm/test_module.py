"""ModuleBuilder and the reader: built modules validate, run, and decode back to the same bytes."""

from __future__ import annotations

import pytest

from wasm_backend.encoding.immediates import MemArg
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.reader import decode_module
from wasm_backend.encoding.structure import SegmentMode
from wasm_backend.encoding.types import ExternKind, FuncType, Limits, ValType
from wasm_backend.encoding.writer import encode_module
from wasm_backend.errors import WasmDecodeError, WasmEncodingError

from .modules import add_module, host_module, memory_module, trap_module

I32, I64, F32, F64, V128 = ValType.I32, ValType.I64, ValType.F32, ValType.F64, ValType.V128


def feature_module() -> bytes:
    """Tables and call_indirect, globals, start, active/passive/declarative segments, bulk memory, ref.func."""
    mb = ModuleBuilder("features")
    mb.import_function("env", "seen", [I32], [])
    mb.import_global("env", "base", I32)
    mb.add_memory(1, 2, export="memory")
    mb.add_table(4, 8, export="table")
    counter = mb.add_global(I32, 0, mutable=True, name="counter", export=True)
    mb.add_global(I64, -5, name="minus_five")
    mb.add_global(F32, 0.5)
    mb.add_global(F64, -1.25)
    mb.add_global(V128, bytes(range(16)), name="iota")
    mb.add_global(ValType.FUNCREF, None)
    mb.add_global(ValType.EXTERNREF)

    double = mb.add_function("double", [I32], [I32], param_names=("x",))
    double.code.local_get("x").i32_const(2).i32_mul()
    square = mb.add_function("square", [I32], [I32], param_names=("x",))
    square.code.local_get("x").local_get("x").i32_mul()
    apply = mb.add_function("apply", [I32, I32], [I32], export=True, param_names=("slot", "x"))
    apply.code.local_get("x").local_get("slot").call_indirect(mb.add_type([I32], [I32]), 0)

    init = mb.add_function("init", [], [])
    init.code.global_get("env.base").global_set("counter")
    mb.set_start("init")

    read = mb.add_function("read_counter", [], [I32], export=True)
    read.code.global_get(counter)

    copy = mb.add_function("load_passive", [I32], [I32], export=True, param_names=("dst",))
    w = copy.code
    w.local_get("dst").i32_const(0).i32_const(4).memory_init(1, 0).data_drop(1)
    w.local_get("dst").i32_load(MemArg(0)).local_get("dst").i32_const(0).i32_const(4).memory_fill(0)
    w.i32_const(32).i32_const(16).i32_const(4).memory_copy(0, 0)

    funcref = mb.add_function("is_null_ref", [], [I32], export=True)
    funcref.code.ref_func("double").ref_is_null()
    note = mb.add_function("note", [I32], [], export=True, param_names=("x",))
    note.code.local_get("x").call("env.seen")

    mb.add_elements(["double", "square"], offset=1)
    mb.add_elements(["square"], offset=None)
    mb.add_elements(["double"], declarative=True)
    mb.add_data(b"\x2a\x00\x00\x00", offset=16)
    mb.add_data(b"\x07\x00\x00\x00")
    return mb.to_bytes()


BUILT = [add_module, memory_module, trap_module, host_module, feature_module]


@pytest.mark.parametrize("build", BUILT, ids=[b.__name__ for b in BUILT])
def test_built_modules_validate_and_reencode_identically(runner, build):
    wasm = build()
    runner.validate(wasm)
    assert encode_module(decode_module(wasm)) == wasm


def test_feature_module_runs(runner):
    import wasmtime

    seen = []
    module = runner.compile(feature_module())
    # the runner hands out functions and one memory; a global import needs wasmtime directly
    store = wasmtime.Store(runner.engine)
    store.set_fuel(10**9)
    store.set_epoch_deadline(1 << 62)  # the engine has epoch interruption on (the runner's Ctrl-C)
    base = wasmtime.Global(store, wasmtime.GlobalType(wasmtime.ValType.i32(), False), 11)
    seen_func = wasmtime.Func(store, wasmtime.FuncType([wasmtime.ValType.i32()], []), seen.append)
    instance = wasmtime.Instance(store, module.native, [seen_func, base])
    exports = instance.exports(store)
    assert exports["read_counter"](store) == 11             # the start function ran
    assert exports["apply"](store, 1, 21) == 42              # table slot 1 = double
    assert exports["apply"](store, 2, 9) == 81               # table slot 2 = square
    assert exports["load_passive"](store, 64) == 7           # memory.init from the passive segment
    memory = exports["memory"]
    assert memory.read(store, 32, 36) == bytearray(b"\x2a\x00\x00\x00")  # memory.copy of the active segment
    assert memory.read(store, 64, 68) == bytearray(4)        # memory.fill
    assert exports["is_null_ref"](store) == 0
    exports["note"](store, 5)
    assert seen == [5]
    with pytest.raises(wasmtime.Trap):                       # the data segment was dropped
        exports["load_passive"](store, 64)


def test_decoded_structure(runner):
    module = decode_module(feature_module())
    assert module.names.module == "features"
    assert module.names.functions[1] == "double" and module.names.functions[0] == "env.seen"
    assert module.names.globals[1] == "counter"
    assert module.names.locals[3] == {0: "slot", 1: "x"}
    assert module.memories == [Limits(1, 2)]
    assert [e.mode for e in module.elements] == [SegmentMode.ACTIVE, SegmentMode.PASSIVE, SegmentMode.DECLARATIVE]
    assert [d.mode for d in module.data] == [SegmentMode.ACTIVE, SegmentMode.PASSIVE] and module.data_count == 2
    assert module.start == 4
    assert {e.name: e.kind for e in module.exports}["table"] == ExternKind.TABLE
    assert module.function_type(3) == FuncType((I32, I32), (I32,))


def test_types_are_deduplicated():
    mb = ModuleBuilder()
    assert mb.add_type([I32], [I32]) == mb.add_type(["i32"], ["i32"]) == 0
    mb.add_function("f", [I32], [I32]).code.local_get(0)
    mb.add_function("g", [I32, I32], [])
    assert mb.add_type([I32, I32], []) == 1
    assert len(decode_module(mb.to_bytes()).types) == 2


def test_locals_are_written_as_runs():
    mb = ModuleBuilder()
    fn = mb.add_function("f")
    for valtype in (I32, I32, F32, I32, V128, V128):
        fn.add_local(valtype)
    assert decode_module(mb.to_bytes()).codes[0].locals == ((2, I32), (1, F32), (1, I32), (2, V128))


@pytest.mark.parametrize("action, message", [
    (lambda mb: (mb.add_function("f"), mb.import_function("m", "n")), "must precede add_function"),
    (lambda mb: (mb.add_memory(1), mb.import_memory("m", "n", 1)), "must precede add_memory"),
    (lambda mb: (mb.add_global(I32), mb.import_global("m", "n", I32)), "must precede add_global"),
    (lambda mb: (mb.add_function("f", export=True), mb.add_function("g", export="f")), "'f' .*already used"),
    (lambda mb: (mb.add_function("f"), mb.add_function("f")), "function name 'f' is used twice"),
    (lambda mb: mb.add_function(export=True), "export=True needs a named function"),
    (lambda mb: mb.add_memory(3, 2), "max 2 is below min 3"),
    (lambda mb: mb.add_memory(70000), "min 70000 is not an int in 0..65536"),
    (lambda mb: mb.add_memory(1, shared=True), "shared memory needs a max"),
    (lambda mb: mb.add_table(1, reftype=I32), "not a reference type"),
    (lambda mb: mb.add_function("f", ["i33"]), "not a value type"),
    (lambda mb: mb.add_function("f", [I32], param_names=("a", "b")), "2 parameter names for 1 parameters"),
    (lambda mb: mb.add_function("f", [I32], param_names=("a",)).add_local(I32, "a"), "'a' is used twice"),
    (lambda mb: mb.add_function("f").code.call("nothing"), "no function is named 'nothing'"),
    (lambda mb: mb.add_function("f").code.local_get("x"), "has no local 'x'"),
    (lambda mb: mb.add_function("f").code.global_get("g"), "no global is named 'g'"),
    (lambda mb: (mb.add_function("f").code.block(), mb.to_bytes()), "function f: function body ends with 1 open"),
    (lambda mb: (mb.add_export("x", ExternKind.MEMORY, 0), mb.to_bytes()), "names memory 0, but there are 0"),
    (lambda mb: (mb.set_start(3), mb.to_bytes()), "start function 3 does not exist"),
    (lambda mb: mb.add_data("text", offset=0), "must be bytes"),
    (lambda mb: mb.add_data(b"x", offset=-4), "offset -4 is not an int"),
    (lambda mb: mb.add_global(I32, 2**40), "i32 immediate"),
])
def test_builder_misuse_is_refused(action, message):
    with pytest.raises(WasmEncodingError, match=message):
        action(ModuleBuilder())


@pytest.mark.parametrize("data, message", [
    (b"\x00asn\x01\x00\x00\x00", "magic bytes"),
    (b"\x00asm\x02\x00\x00\x00", "unsupported binary version"),
    (b"\x00asm\x01\x00\x00\x00\x01\x05\x01\x60", "past the end"),
    (b"\x00asm\x01\x00\x00\x00\x03\x01\x00\x01\x01\x00", "out of order"),
    (b"\x00asm\x01\x00\x00\x00\x0d\x00", "unknown section id 13"),
    (b"\x00asm\x01\x00\x00\x00\x01\x05\x01\x60\x00\x00\x00", "1 unread byte"),
    (b"\x00asm\x01\x00\x00\x00\x01\x04\x01\x61\x00\x00", "must start with 0x60"),
    (b"\x00asm\x01\x00\x00\x00\x05\x03\x01\x02\x01", "limits flags 0x02"),
    (b"\x00asm\x01\x00\x00\x00\x03\x02\x01\x00", "declares 1 functions, code section has 0"),
    (b"\x00asm\x01\x00\x00\x00\x09\x03\x01\x05\x70", "flags 5 .*not supported"),
])
def test_malformed_modules_are_refused(data, message):
    with pytest.raises(WasmDecodeError, match=message):
        decode_module(data)
