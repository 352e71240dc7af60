"""Benchmark: exp over 4M f32 values in one WebAssembly SIMD loop (wasmtime) versus np.exp (not a test).

The f32x4 exp of the math library runs in a loop over linear memory, once
with the kernel written inline into the loop body (how a compiled
cooperative step uses it) and once as a call per vector; NumPy's np.exp
works on zero-copy views of the same memory (``out=``), so both sides read
and write the same bytes. Prints the best times and the ratio NumPy time /
wasm time (>= 1 means the wasm loop is at least as fast), and checks the
results against NumPy's (within the published ulp bound).

    python3 benchmarks/wasm_exp_speed.py [--floats N] [--repeats R] [--unroll U]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from wasm_backend.encoding.immediates import MemArg
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import PAGE_SIZE, ValType
from wasm_backend.mathlib import MathLibrary, ulp_bound
from wasm_backend.mathlib.reference import ulp_distance
from wasm_backend.runners.wasmtime_runner import WasmtimeRunner

I32, V128 = ValType.I32, ValType.V128


def exp_module(pages: int, *, inline: bool, unroll: int) -> bytes:
    """``vexp(src, dst, nbytes)``: dst[i] = exp(src[i]) over nbytes (a multiple of 16 * unroll)."""
    mb = ModuleBuilder("exp_speed")
    mb.import_memory("env", "memory", pages, pages)
    library = MathLibrary(mb)
    fn = mb.add_function("vexp", [I32] * 3, [], export=True, param_names=("src", "dst", "nbytes"))
    fn.add_local(I32, "i")
    values = [fn.add_local(V128) for _ in range(unroll)]
    callee = None if inline else library.function("exp", "f32x4")
    w = fn.code
    with w.block(label="done"):
        with w.loop(label="next"):
            w.local_get("i").local_get("nbytes").i32_ge_u().br_if("done")
            for k in range(unroll):
                w.local_get("src").local_get("i").i32_add().v128_load(MemArg(16 * k)).local_set(values[k])
            for k in range(unroll):
                w.local_get("dst").local_get("i").i32_add()
                if inline:
                    library.emit_inline(fn, "exp", "f32x4", [values[k]])
                else:
                    w.local_get(values[k]).call(callee)
                w.v128_store(MemArg(16 * k))
            w.local_get("i").i32_const(16 * unroll).i32_add().local_set("i")
            w.br("next")
    return mb.to_bytes()


def best_time(action, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--floats", type=int, default=4 * 1024 * 1024)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--unroll", type=int, default=2)
    args = parser.parse_args()
    step = 4 * args.unroll
    n = args.floats - args.floats % step
    nbytes = 4 * n
    pages = -(-2 * nbytes // PAGE_SIZE)
    runner = WasmtimeRunner(budgeted=False)
    memory = runner.create_memory(pages, pages)
    view = runner.memory_view(memory, np.float32)
    src, dst = view[:n], view[n:2 * n]
    src[:] = np.random.default_rng(0).uniform(-87.0, 88.0, n).astype(np.float32)
    expected = np.empty_like(src)

    numpy_time = best_time(lambda: np.exp(src, out=expected), args.repeats)
    print(f"exp over {n:,} f32 values, best of {args.repeats}")
    print(f"  np.exp(out=)                 {numpy_time * 1e3:8.2f} ms")
    bound = ulp_bound("exp", "f32x4")
    for label, inline in (("wasm f32x4, kernel inline", True), ("wasm f32x4, call per vector", False)):
        instance = runner.instantiate(runner.compile(exp_module(pages, inline=inline, unroll=args.unroll)),
                                      memory=memory)
        dst[:] = 0
        wasm_time = best_time(lambda: runner.call(instance, "vexp", 0, nbytes, nbytes), args.repeats)
        worst = int(ulp_distance(dst, expected, "f32").max())
        print(f"  {label:28s} {wasm_time * 1e3:8.2f} ms   np.exp / wasm = {numpy_time / wasm_time:5.2f}x   "
              f"max distance to np.exp {worst} ulp (published bound {bound} + np.exp's own error)")


if __name__ == "__main__":
    main()
