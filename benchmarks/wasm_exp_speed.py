"""Benchmark: exp over 4M f32 values in one WebAssembly SIMD loop (wasmtime) versus np.exp (not a test).

The f32x4 exp of the math library runs in a loop over linear memory: with
the kernel written inline into the loop body (how a compiled cooperative
step uses it), as a call per vector, and inline with relaxed SIMD
(``relaxed_madd``, fused on hosts with FMA); NumPy's np.exp
works on zero-copy views of the same memory (``out=``), so both sides read
and write the same bytes. Prints the best times and the ratio NumPy time /
wasm time (>= 1 means the wasm loop is at least as fast), and checks the
results against NumPy's (within the published ulp bound).

    python3 benchmarks/wasm_exp_speed.py [--floats N] [--repeats R] [--unroll U] [--write]

``--write`` also puts the printed table into docs/wasm-mathlib.md (between its "exp speed" markers).
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import time

import numpy as np

from wasm_backend.encoding.immediates import MemArg
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import PAGE_SIZE, ValType
from wasm_backend.mathlib import MathLibrary, ulp_bound
from wasm_backend.mathlib.reference import ulp_distance
from wasm_backend.runners.wasmtime_runner import WasmtimeRunner

I32, V128 = ValType.I32, ValType.V128
DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "wasm-mathlib.md"
SECTION_START, SECTION_END = "<!-- exp speed: measured -->", "<!-- end of exp speed -->"


def exp_module(pages: int, *, inline: bool, unroll: int, relaxed: bool = False) -> bytes:
    """``vexp(src, dst, nbytes)``: dst[i] = exp(src[i]) over nbytes (a multiple of 16 * unroll)."""
    mb = ModuleBuilder("exp_speed")
    mb.import_memory("env", "memory", pages, pages)
    library = MathLibrary(mb, relaxed_simd=relaxed)
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
    """The least CPU time of this thread over ``repeats`` runs (CPU time: steadier than wall time on a busy
    machine; both contenders run in this thread)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        action()
        best = min(best, time.thread_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--floats", type=int, default=4 * 1024 * 1024)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--unroll", type=int, default=1)
    parser.add_argument("--write", action="store_true", help="store the table in docs/wasm-mathlib.md")
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

    variants = []
    for label, inline, relaxed in (("wasm f32x4, inline", True, False), ("wasm f32x4, call per vector", False, False),
                                   ("wasm f32x4, inline, relaxed", True, True)):
        wasm = exp_module(pages, inline=inline, unroll=args.unroll, relaxed=relaxed)
        instance = runner.instantiate(runner.compile(wasm), memory=memory)
        variants.append((label, lambda instance=instance: runner.call(instance, "vexp", 0, nbytes, nbytes)))
    # interleaved, so that a busy machine slows every contender alike; the best of each is kept
    best = {"np.exp(out=)": float("inf"), **{label: float("inf") for label, _ in variants}}
    for _ in range(args.repeats):
        best["np.exp(out=)"] = min(best["np.exp(out=)"], best_time(lambda: np.exp(src, out=expected), 1))
        for label, action in variants:
            best[label] = min(best[label], best_time(action, 1))
    numpy_time = best["np.exp(out=)"]
    bound = ulp_bound("exp", "f32x4")
    lines = [f"exp over {n:,} f32 values, best of {args.repeats} interleaved runs (CPU time), "
             f"{platform.machine()} {platform.processor() or ''}".rstrip(),
             "", "| loop | time | np.exp / wasm | max distance to np.exp |", "|---|---|---|---|",
             f"| np.exp(out=) | {numpy_time * 1e3:.2f} ms | 1.00x | - |"]
    for label, action in variants:
        dst[:] = 0
        action()
        worst = int(ulp_distance(dst, expected, "f32").max())
        lines.append(f"| {label} | {best[label] * 1e3:.2f} ms | {numpy_time / best[label]:.2f}x | {worst} ulp |")
    lines += ["", f"(The library's exp is within {bound} ulp of the correctly rounded result; the distance to "
              "np.exp includes NumPy's own error.)"]
    print("\n".join(lines))
    if args.write:
        text = DOC.read_text()
        start, end = text.index(SECTION_START) + len(SECTION_START), text.index(SECTION_END)
        DOC.write_text(text[:start] + "\n" + "\n".join(lines) + "\n" + text[end:])
        print(f"wrote the table into {DOC}")

if __name__ == "__main__":
    main()
