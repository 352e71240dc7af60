"""Small modules built with ModuleBuilder, shared by the runner and disassembler tests."""

from __future__ import annotations

from wasm_backend.encoding.immediates import MemArg
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import ValType

I32, I64, F32, F64, V128 = ValType.I32, ValType.I64, ValType.F32, ValType.F64, ValType.V128


def add_module() -> bytes:
    """``add(a: i32, b: i32) -> i32``."""
    mb = ModuleBuilder("arith")
    add = mb.add_function("add", [I32, I32], [I32], export=True, param_names=("a", "b"))
    add.code.local_get("a").local_get("b").i32_add()
    return mb.to_bytes()


def memory_module(min_pages: int = 1, max_pages: int | None = None) -> bytes:
    """Imports ``env.memory``; exports sum_i32(ptr, n), vadd_f32x4(a, b, out, nbytes),
    madd_f32x4(a, b, c, out) (relaxed), grow(pages) -> old, size() -> pages."""
    mb = ModuleBuilder("kernels")
    mb.import_memory("env", "memory", min_pages, max_pages)

    fn = mb.add_function("sum_i32", [I32, I32], [I32], export=True, param_names=("ptr", "n"))
    fn.add_local(I32, "acc")
    fn.add_local(I32, "i")
    w = fn.code
    with w.block(label="done"):
        with w.loop(label="next"):
            w.local_get("i").local_get("n").i32_ge_u().br_if("done")
            w.local_get("acc")
            w.local_get("ptr").local_get("i").i32_const(2).i32_shl().i32_add().i32_load(MemArg(0))
            w.i32_add().local_set("acc")
            w.local_get("i").i32_const(1).i32_add().local_set("i")
            w.br("next")
    w.local_get("acc")

    fn = mb.add_function("vadd_f32x4", [I32, I32, I32, I32], [], export=True,
                         param_names=("a", "b", "out", "nbytes"))
    fn.add_local(I32, "i")
    w = fn.code
    with w.block(label="done"):
        with w.loop(label="next"):
            w.local_get("i").local_get("nbytes").i32_ge_u().br_if("done")
            w.local_get("out").local_get("i").i32_add()
            w.local_get("a").local_get("i").i32_add().v128_load(0)
            w.local_get("b").local_get("i").i32_add().v128_load(0)
            w.f32x4_add().v128_store(0)
            w.local_get("i").i32_const(16).i32_add().local_set("i")
            w.br("next")

    fn = mb.add_function("madd_f32x4", [I32, I32, I32, I32], [], export=True, param_names=("a", "b", "c", "out"))
    w = fn.code
    w.local_get("out")
    w.local_get("a").v128_load(0).local_get("b").v128_load(0).local_get("c").v128_load(0)
    w.f32x4_relaxed_madd().v128_store(0)

    fn = mb.add_function("grow", [I32], [I32], export=True, param_names=("pages",))
    fn.code.local_get("pages").memory_grow(0)
    fn = mb.add_function("size", [], [I32], export=True)
    fn.code.memory_size(0)

    fn = mb.add_function("load_at", [I32], [I32], export=True, param_names=("addr",))
    fn.code.local_get("addr").i32_load(MemArg(offset=4))
    return mb.to_bytes()


def trap_module() -> bytes:
    """Exports functions that trap or run away, and ``countdown(n)`` that loops n times."""
    mb = ModuleBuilder("traps")
    mb.add_function("boom", [], [], export=True).code.unreachable()
    fn = mb.add_function("div", [I32, I32], [I32], export=True, param_names=("a", "b"))
    fn.code.local_get("a").local_get("b").i32_div_s()
    fn = mb.add_function("to_int", [F32], [I32], export=True, param_names=("x",))
    fn.code.local_get("x").i32_trunc_f32_s()
    fn = mb.add_function("spin", [], [], export=True)
    with fn.code.loop(label="forever"):
        fn.code.br("forever")
    fn = mb.add_function("countdown", [I32], [I32], export=True, param_names=("n",))
    w = fn.code
    with w.loop(label="again"):
        w.local_get("n").i32_const(1).i32_sub().local_tee("n").br_if("again")
    w.local_get("n")
    fn = mb.add_function("recurse", [], [], export=True)
    fn.code.call("recurse")
    mb.add_memory(1, 1, export="memory")
    fn = mb.add_function("poke", [I32], [], export=True, param_names=("addr",))
    fn.code.local_get("addr").i32_const(7).i32_store(0)
    return mb.to_bytes()


def host_module() -> bytes:
    """Imports ``host.twice(i32) -> i32`` and ``host.note(f64)``; exports ``quad(x) = twice(twice(x))``."""
    mb = ModuleBuilder("host")
    mb.import_function("host", "twice", [I32], [I32])
    mb.import_function("host", "note", [F64], [])
    fn = mb.add_function("quad", [I32], [I32], export=True, param_names=("x",))
    fn.code.f64_const(2.5).call("host.note")
    fn.code.local_get("x").call("host.twice").call("host.twice")
    return mb.to_bytes()


def simd_showcase_module() -> bytes:
    """One function using the immediates the disassembler must print: memargs, lanes, v128.const, shuffle,
    typed select, br_table; and an active data segment with bytes that need escaping."""
    mb = ModuleBuilder("simd")
    mb.add_memory(1, export="memory")
    fn = mb.add_function("lanes", [I32], [I32], export=True, param_names=("p",))
    w = fn.code
    w.local_get("p").local_get("p").v128_load(MemArg(16, 3)).v128_load8_lane(MemArg(3), 15)
    w.v128_const(bytes([0, 0, 128, 63] * 4)).i8x16_shuffle(list(range(31, 15, -1)))
    w.i8x16_extract_lane_s(3)
    w.local_get("p").i32_const(1).select_typed([I32])
    with w.block(I32, label="b"):
        w.i32_const(0).local_get("p").br_table([0, 1], "b")
    w.i32_add()
    mb.add_data(b'ab"\\\x00', offset=8)
    return mb.to_bytes()
