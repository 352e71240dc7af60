"""Micro-benchmark: f32x4 add over 16M floats in wasmtime versus NumPy (not a test; prints ratios).

Tells how much SIMD throughput wasmtime gives on this machine, with and
without the fuel instrumentation the budgeted runner adds. The arrays live in
wasm linear memory and NumPy works on zero-copy views of the same bytes, so
both sides read and write the same memory.

    python3 benchmarks/wasm_micro.py [--floats N] [--repeats R]
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np

from wasm_backend.encoding.immediates import MemArg
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import PAGE_SIZE, ValType
from wasm_backend.runners.wasmtime_runner import WasmtimeRunner

I32 = ValType.I32
UNROLL = 4  # vectors per loop iteration


def vadd_module(pages: int) -> bytes:
    """``vadd(a, b, out, nbytes)``: out[i] = a[i] + b[i] over nbytes (a multiple of 16 * UNROLL)."""
    mb = ModuleBuilder("micro")
    mb.import_memory("env", "memory", pages, pages)
    fn = mb.add_function("vadd", [I32] * 4, [], export=True, param_names=("a", "b", "out", "nbytes"))
    fn.add_local(I32, "i")
    w = fn.code
    with w.block(label="done"):
        with w.loop(label="next"):
            w.local_get("i").local_get("nbytes").i32_ge_u().br_if("done")
            for k in range(UNROLL):
                w.local_get("out").local_get("i").i32_add()
                w.local_get("a").local_get("i").i32_add().v128_load(MemArg(16 * k))
                w.local_get("b").local_get("i").i32_add().v128_load(MemArg(16 * k))
                w.f32x4_add().v128_store(MemArg(16 * k))
            w.local_get("i").i32_const(16 * UNROLL).i32_add().local_set("i")
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
    parser.add_argument("--floats", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    n = args.floats - args.floats % (4 * UNROLL)
    nbytes = 4 * n
    pages = -(-3 * nbytes // PAGE_SIZE)
    wasm = vadd_module(pages)
    rng = np.random.default_rng(0)

    print(f"f32 add over {n:,} floats ({3 * nbytes / 2**20:.0f} MiB touched per pass), best of {args.repeats}")
    numpy_time = None
    for label, runner in (("wasmtime, no budget", WasmtimeRunner(budgeted=False)),
                          ("wasmtime, fuel budget", WasmtimeRunner())):
        instance = runner.instantiate(runner.compile(wasm), memory_pages=pages, max_pages=pages)
        view = runner.memory_view(instance, np.float32)
        a, b, out = view[:n], view[n:2 * n], view[2 * n:3 * n]
        a[:] = rng.standard_normal(n, dtype=np.float32)
        b[:] = rng.standard_normal(n, dtype=np.float32)
        call = functools.partial(runner.call, instance, "vadd", 0, nbytes, 2 * nbytes, nbytes)
        wasm_time = best_time(call, args.repeats)
        if not np.array_equal(out, a + b):
            raise SystemExit(f"{label}: wrong result")
        if numpy_time is None:
            numpy_time = best_time(functools.partial(np.add, a, b, out=out), args.repeats)
            print(f"  numpy np.add(out=)      {numpy_time * 1e3:8.2f} ms  {3 * nbytes / numpy_time / 1e9:6.2f} GB/s")
        print(f"  {label:<23} {wasm_time * 1e3:8.2f} ms  {3 * nbytes / wasm_time / 1e9:6.2f} GB/s  "
              f"wasm/numpy time ratio {wasm_time / numpy_time:.2f}")


if __name__ == "__main__":
    main()
