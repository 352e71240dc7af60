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
Run ``PYTHONPATH=. python3 benchmarks/perlane_matmul.py [--sizes 256 512] [--repeats R]``. Not a test.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

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
    """A backend holding A, B and C, and the compiled program (scalar lane loop or as compiled now)."""

    def __init__(self, a: np.ndarray, b: np.ndarray, *, scalar: bool, backend=None) -> None:
        self.backend = backend or WasmBackend()
        self.handles = [self.backend.allocate_typed(x) for x in (a, b, np.zeros((a.shape[0], b.shape[1]), np.float32))]
        self.program = Program.from_text(program_text(a.shape[0], a.shape[1], b.shape[1], *self.handles))
        self.config = LaunchConfig.linear(a.shape[0] * b.shape[1])
        if scalar:
            with scalar_lanes_only():
                self.run()
        else:
            self.run()

    def run(self) -> None:
        self.backend.execute_program(self.program, self.config)

    def result(self) -> np.ndarray:
        return np.asarray(self.backend.copy_typed_from(self.handles[2], Type.F32))


def measure(size: int, repeats: int, reference: bool) -> None:
    rng = np.random.default_rng(size)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    before, after = _Side(a, b, scalar=True), _Side(a, b, scalar=False)
    simd = compile_program(after.program, after.program.verify(), after.config).simd
    if not np.array_equal(before.result().view(np.uint32), after.result().view(np.uint32)):
        raise SystemExit(f"{size}: SIMD lane mode differs from the scalar lane loop")
    if reference:
        from atlas_web.registry import get_backend
        ref = _Side(a, b, scalar=False, backend=get_backend("cpu"))
        if not np.array_equal(ref.result().view(np.uint32), after.result().view(np.uint32)):
            raise SystemExit(f"{size}: wasm differs from the reference")
    best = {"before": float("inf"), "after": float("inf"), "numpy": float("inf")}
    actions = {"before": before.run, "after": after.run, "numpy": lambda: a @ b}
    for _ in range(repeats):
        for key, action in actions.items():
            start = time.perf_counter()
            action()
            best[key] = min(best[key], time.perf_counter() - start)
    flops = 2.0 * size ** 3
    print(f"{size}^3: before (scalar lanes) {best['before'] * 1e3:9.1f} ms {flops / best['before'] / 1e9:6.2f} GFLOP/s"
          f" | after {best['after'] * 1e3:8.1f} ms {flops / best['after'] / 1e9:6.2f} GFLOP/s"
          f" | after/before speed-up {best['before'] / best['after']:5.1f}x"
          f" | numpy {best['numpy'] * 1e3:6.2f} ms{'  (bits = reference)' if reference else ''}"
          f"{'' if simd else '  (after: no SIMD lane mode)'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-reference", action="store_true", help="skip the reference check")
    args = parser.parse_args()
    for k, size in enumerate(args.sizes):
        measure(size, args.repeats, reference=(k == 0 and not args.no_reference))


if __name__ == "__main__":
    main()
