"""SIMD lane mode of the wasm backend against its scalar lane loop and NumPy, in one run.

Two per-lane programs over 4M lanes (``--lanes``; a guard sends the spare lanes of the last block to
the end), each run three ways:

* ``simd``: WasmBackend as it compiles the program (four lanes per step in v128 registers);
* ``scalar``: the same program compiled inside ``scalar_lanes_only()`` (the scalar lane loop);
* ``numpy``: the same expression in NumPy.

Programs: ``select/exp f32``: ``p = a > b; out = p ? exp(b) : b * 0.5`` written as SETcc, SEL, EXP, MUL,
SEL; ``integer i32``: ``out = max(abs(a) >> 3, ~b) ^ (a < b ? a : b)`` (SHR, ABS, NOT, MAX, SETcc, SEL,
XOR). Prints best wall times and the ratios numpy/simd, numpy/scalar and scalar/simd (the SIMD speed-up).
Timings interleave the three sides and keep the best of ``--repeats``. Results of the wasm sides are
checked against NumPy first (exactly for integers; for exp within the backend's documented tolerance).
Run ``PYTHONPATH=. python3 benchmarks/wasm_simd_lanes.py [--lanes N] [--repeats R]``. Not a test.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from atlas_web import LaunchConfig, Program
from atlas_web.isa import Type
from wasm_backend import WasmBackend
from wasm_backend.lowering.simd_function import scalar_lanes_only

_PRELUDE = """
    mov_imm.u32 r20, {n}
    set.ge.u32 p15, r255, r20
    bra.p15 @done
    cvt.u64.u32 r1, r255
    mov_imm.u64 r2, 4
    mul.u64 r3, r1, r2
    mov_imm.u64 r4, {a}
    or.u64 r5, r3, r4
    mov_imm.u64 r6, {b}
    or.u64 r7, r3, r6
    mov_imm.u64 r8, {c}
    or.u64 r9, r3, r8
"""

PROGRAMS = {
    "select/exp f32": (Type.F32, """
    ldg.f32 r10, [r5 + 0]
    ldg.f32 r11, [r7 + 0]
    set.gt.f32 p0, r10, r11
    sel.f32 r12, p0, r11, r10
    exp.f32 r13, r12
    mov_imm.f32 r14, 0.5
    mul.f32 r15, r11, r14
    sel.f32 r16, p0, r13, r15
    stg.f32 [r9 + 0], r16
done:
    exit
""", lambda a, b: np.where(a > b, np.exp(np.where(a > b, b, a)), b * np.float32(0.5))),
    "integer i32": (Type.I32, """
    ldg.i32 r10, [r5 + 0]
    ldg.i32 r11, [r7 + 0]
    abs.i32 r12, r10
    mov_imm.u32 r13, 3
    shr.i32 r14, r12, r13
    not.i32 r15, r11
    max.i32 r16, r14, r15
    set.lt.i32 p0, r10, r11
    sel.i32 r17, p0, r10, r11
    xor.i32 r18, r16, r17
    stg.i32 [r9 + 0], r18
done:
    exit
""", lambda a, b: np.maximum(np.abs(a) >> 3, ~b) ^ np.where(a < b, a, b)),
}


def _inputs(ty: Type, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    if ty is Type.F32:
        return (rng.standard_normal(lanes) * 4).astype(np.float32), (rng.standard_normal(lanes) * 4).astype(np.float32)
    return (rng.integers(-2 ** 31, 2 ** 31, lanes, dtype=np.int64).astype(np.int32),
            rng.integers(-2 ** 31, 2 ** 31, lanes, dtype=np.int64).astype(np.int32))


class _Side:
    """One wasm side: a backend holding the three buffers, and the action that runs the program."""

    def __init__(self, body: str, ty: Type, a: np.ndarray, b: np.ndarray, *, scalar: bool) -> None:
        self.backend = WasmBackend()
        self.ty = ty
        self.handles = [self.backend.allocate_typed(x) for x in (a, b, np.zeros_like(a))]
        a_h, b_h, c_h = self.handles
        self.program = Program.from_text((_PRELUDE + body).format(n=a.size, a=a_h << 32, b=b_h << 32,
                                                                     c=c_h << 32))
        self.config = LaunchConfig.linear(a.size)
        if scalar:
            with scalar_lanes_only():
                self.run()  # compiled (and cached) with the scalar lane loop only
        else:
            self.run()

    def run(self) -> None:
        self.backend.execute_program(self.program, self.config)

    def result(self) -> np.ndarray:
        return np.asarray(self.backend.copy_typed_from(self.handles[2], self.ty))


def _check(name: str, ty: Type, got: np.ndarray, want: np.ndarray) -> None:
    if ty is Type.F32:
        close = np.isclose(got, want, rtol=4e-7, atol=0) | (got == want)
        if not close.all():
            raise SystemExit(f"{name}: wasm differs from NumPy at lane {np.flatnonzero(~close)[0]}")
    elif not np.array_equal(got, want):
        raise SystemExit(f"{name}: wasm differs from NumPy at lane {np.flatnonzero(got != want)[0]}")


def measure(name: str, lanes: int, repeats: int) -> None:
    ty, body, expression = PROGRAMS[name]
    a, b = _inputs(ty, lanes)
    simd, scalar = _Side(body, ty, a, b, scalar=False), _Side(body, ty, a, b, scalar=True)
    want = expression(a, b)
    for side in (simd, scalar):
        _check(name, ty, side.result(), want)
    best = {"simd": float("inf"), "scalar": float("inf"), "numpy": float("inf")}
    actions = {"simd": simd.run, "scalar": scalar.run, "numpy": lambda: expression(a, b)}
    for _ in range(repeats):
        for key, action in actions.items():
            start = time.perf_counter()
            action()
            best[key] = min(best[key], time.perf_counter() - start)
    ms = {k: v * 1e3 for k, v in best.items()}
    print(f"{name:<16} {lanes} lanes: simd {ms['simd']:8.2f} ms  scalar {ms['scalar']:8.2f} ms  "
          f"numpy {ms['numpy']:8.2f} ms  |  numpy/simd {best['numpy'] / best['simd']:5.2f}  "
          f"numpy/scalar {best['numpy'] / best['scalar']:5.2f}  scalar/simd {best['scalar'] / best['simd']:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lanes", type=int, default=4 << 20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for name in PROGRAMS:
        measure(name, args.lanes, args.repeats)


if __name__ == "__main__":
    main()
