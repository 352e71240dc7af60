"""The issue's per-lane matmul on wasm: SIMD lane mode for a uniform loop against the scalar lane loop.

Each lane computes one element of C = A @ B (f32, A m x k, B k x n, n a power of two): lane ``gid`` takes
row ``gid >> log2(n)`` and column ``gid & (n - 1)`` (``program_text``, also used by the tests), then
``LOOP`` over k with ``LDG`` (A, the same in the four lanes of a step), ``LDG`` (B, contiguous in the
lanes), ``FMA`` and two pointer increments, and stores its sum. Two sides, interleaved, best of ``--repeats``:

* ``before``: the program compiled inside ``scalar_lanes_only()`` (the scalar lane loop: what wasm ran
  before SIMD lane mode took loops);
* ``after``: WasmBackend as it compiles the program now.

Both are checked bit for bit against the reference backend's C (at the first size only, the
reference is slow) and against each other at every size; NumPy's A @ B is printed for scale.
Run ``PYTHONPATH=. python3 benchmarks/perlane_matmul.py [--sizes 256 512] [--repeats R]``.

With ``--browser`` both sides run in headless Chromium too (WasmBackend on JsRunner inside Pyodide, in one
page, through benchmarks/browser_vs_native.py's page machinery): this module runs there as it is (no NumPy:
``measure_sides``), then natively on wasmtime; each side's C is compared bit for bit between before and
after, and its digest between the browser and native. Not a test.
"""

from __future__ import annotations

import argparse
import array
import hashlib
import random
import time
from pathlib import Path
from typing import Any, Callable

from atlas_web import LaunchConfig, Program
from atlas_web.isa import Type
from wasm_backend import WasmBackend
from wasm_backend.lowering import compile_program
from wasm_backend.lowering.simd_function import scalar_lanes_only

#: the row and column of lane gid: by a shift and a mask (n a power of two) or a division and a remainder
SPLITS = {
    "shift": """
    mov_imm.u32 r1, {log2n}
    shr.u32 r2, r255, r1
    mov_imm.u32 r3, {nmask}
    and.u32 r4, r255, r3""",
    "divide": """
    mov_imm.u32 r1, {n}
    div.u32 r2, r255, r1
    rem.u32 r4, r255, r1""",
}

PROGRAM = """
    mov_imm.u32 r30, {lanes}
    set.ge.u32 p15, r255, r30
    bra.p15 @done{split}
    cvt.u64.u32 r5, r2
    mov_imm.u64 r6, {row_bytes}
    mul.u64 r7, r5, r6
    mov_imm.u64 r8, {a}
    or.u64 r9, r7, r8
    cvt.u64.u32 r10, r4
    mov_imm.u64 r11, 4
    mul.u64 r12, r10, r11
    mov_imm.u64 r13, {b}
    or.u64 r14, r12, r13
    cvt.u64.u32 r15, r255
    mul.u64 r16, r15, r11
    mov_imm.u64 r17, {c}
    or.u64 r18, r16, r17
    mov_imm.f32 r20, 0.0
    mov_imm.u32 r21, {k}
    mov_imm.u64 r23, {b_row_bytes}
top:
    ldg.f32 r24, [r9+0]
    ldg.f32 r25, [r14+0]
    fma.f32 r20, r24, r25, r20
    add.u64 r9, r9, r11
    add.u64 r14, r14, r23
    loop r21, @top
    stg.f32 [r18+0], r20
done:
    exit
"""


def program_text(m: int, k: int, n: int, a: int, b: int, c: int, split: str = "shift") -> str:
    """The per-lane matmul over buffers with handles ``a``, ``b``, ``c`` (lanes past ``m * n`` end at once);
    ``split``: how a lane finds its row and column (``SPLITS``; "shift" needs n a power of two)."""
    if split == "shift" and n & (n - 1):
        raise ValueError("n must be a power of two")
    return PROGRAM.format(lanes=m * n, split=SPLITS[split].format(log2n=n.bit_length() - 1, nmask=n - 1, n=n),
                          row_bytes=4 * k, a=a << 32, b=b << 32, c=c << 32, k=k, b_row_bytes=4 * n)


class _Side:
    """A backend holding A (m x k), B (k x n) and C (f32, flat NumPy or ``array.array`` inputs), and the
    compiled program (scalar lane loop or as compiled now)."""

    def __init__(self, a: Any, b: Any, m: int, k: int, n: int, *, scalar: bool, backend=None) -> None:
        self.backend = backend or WasmBackend()
        self.handles = [self.backend.allocate_typed(a, Type.F32), self.backend.allocate_typed(b, Type.F32),
                        self.backend.allocate_typed(m * n, Type.F32)]
        self.program = Program.from_text(program_text(m, k, n, *self.handles))
        self.config = LaunchConfig.linear(m * n)
        if scalar:
            with scalar_lanes_only():
                self.run()
        else:
            self.run()

    def run(self) -> None:
        self.backend.execute_program(self.program, self.config)

    def result_bytes(self) -> bytes:
        return bytes(self.backend.copy_from_buffer(self.handles[2]))


def _best_interleaved(actions: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """The best wall time in seconds of each action over ``repeats`` rounds, the actions taking turns."""
    best = dict.fromkeys(actions, float("inf"))
    for _ in range(repeats):
        for key, action in actions.items():
            start = time.perf_counter()
            action()
            best[key] = min(best[key], time.perf_counter() - start)
    return best


def measure_sides(new_backend: Callable[[], Any], sizes: list[int], repeats: int) -> dict[str, dict]:
    """Per size: best before and after times (s), whether their C agree bit for bit, a digest of C, and
    whether the program compiled into SIMD lane mode. Standard library and atlas_web only: runs natively
    and inside Pyodide alike (inputs from ``random.Random(size)``)."""
    results: dict[str, dict] = {}
    for size in sizes:
        rng = random.Random(size)
        a, b = (array.array("f", [rng.uniform(-1.0, 1.0) for _ in range(size * size)]) for _ in range(2))
        before = _Side(a, b, size, size, size, scalar=True, backend=new_backend())
        after = _Side(a, b, size, size, size, scalar=False, backend=new_backend())
        best = _best_interleaved({"before": before.run, "after": after.run}, repeats)
        simd = compile_program(after.program, after.program.verify(), after.config).simd
        results[str(size)] = {**best, "same": before.result_bytes() == after.result_bytes(), "simd": bool(simd),
                              "digest": hashlib.sha256(after.result_bytes()).hexdigest()[:16]}
        for side in (before, after):
            side.backend.close()
    return results


def measure(size: int, repeats: int, reference: bool) -> None:
    import numpy as np

    rng = np.random.default_rng(size)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    before = _Side(a, b, size, size, size, scalar=True)
    after = _Side(a, b, size, size, size, scalar=False)
    simd = compile_program(after.program, after.program.verify(), after.config).simd
    if before.result_bytes() != after.result_bytes():
        raise SystemExit(f"{size}: SIMD lane mode differs from the scalar lane loop")
    if reference:
        from atlas_web.registry import get_backend
        ref = _Side(a, b, size, size, size, scalar=False, backend=get_backend("cpu"))
        if ref.result_bytes() != after.result_bytes():
            raise SystemExit(f"{size}: wasm differs from the reference")
    best = _best_interleaved({"before": before.run, "after": after.run, "numpy": lambda: a @ b}, repeats)
    flops = 2.0 * size ** 3
    print(f"{size}^3: before (scalar lanes) {best['before'] * 1e3:9.1f} ms {flops / best['before'] / 1e9:6.2f} GFLOP/s"
          f" | after {best['after'] * 1e3:8.1f} ms {flops / best['after'] / 1e9:6.2f} GFLOP/s"
          f" | after/before speed-up {best['before'] / best['after']:5.1f}x"
          f" | numpy {best['numpy'] * 1e3:6.2f} ms{'  (bits = reference)' if reference else ''}"
          f"{'' if simd else '  (after: no SIMD lane mode)'}")


def browser(sizes: list[int], repeats: int) -> None:
    """Both sides in one Chromium page, then natively; prints the speed-ups side by side."""
    from benchmarks.browser_vs_native import demo_page, run_in_pyodide

    with demo_page() as (page, _, agent):
        there = run_in_pyodide(page, Path(__file__), "perlane_matmul",
                               f"bench.measure_sides(WasmBackend, {sizes!r}, {repeats})")
    here = measure_sides(WasmBackend, sizes, repeats)
    print(f"per-lane matmul, WasmBackend in Chromium ({agent.split(')')[-1].strip()}, JsRunner) and natively "
          f"(wasmtime), before = scalar lane loop, after = as compiled now, best of {repeats}")
    for size in sizes:
        flops = 2.0 * size ** 3
        cells = []
        for name, side in (("Chromium", there[str(size)]), ("native", here[str(size)])):
            cells.append(f"{name}: before {side['before'] * 1e3:8.1f} ms ({flops / side['before'] / 1e9:5.2f} GFLOP/s)"
                         f" after {side['after'] * 1e3:7.1f} ms ({flops / side['after'] / 1e9:5.2f} GFLOP/s)"
                         f" speed-up {side['before'] / side['after']:4.1f}x"
                         f"{'' if side['same'] else ' BEFORE != AFTER'}"
                         f"{'' if side['simd'] else ' (no SIMD lane mode)'}")
        same = "same C" if there[str(size)]["digest"] == here[str(size)]["digest"] else "C DIFFERS"
        print(f"{size}^3: " + " | ".join(cells) + f" | browser vs native: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-reference", action="store_true", help="skip the reference check")
    parser.add_argument("--browser", action="store_true", help="also in headless Chromium (see the docstring)")
    args = parser.parse_args()
    if args.browser:
        browser(args.sizes, args.repeats)
        return
    for k, size in enumerate(args.sizes):
        measure(size, args.repeats, reference=(k == 0 and not args.no_reference))


if __name__ == "__main__":
    main()
