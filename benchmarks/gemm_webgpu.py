"""f32 GEMM on the webgpu backend natively (wgpu-py; Mesa lavapipe on a machine without a GPU), in one run.

For each size n (n x n times n x n, alpha 1, beta 0):

* the ``GEMM`` instruction (the tiled shader of ``webgpu_backend/wgsl/kernels/gemm.py``): the first launch (WGSL to
  pipeline included) and the best of ``--repeats`` warm launches;
* the per-lane program of issue 10 (one lane per element of C, a loop over k of LDG, LDG, FMA; launched with
  256-lane blocks) for the sizes up to ``--per-lane-max`` (it is slow);
* NumPy's ``a @ b`` on one thread, for scale (a CPU BLAS: lavapipe is a CPU emulation of a GPU, so compare
  webgpu with webgpu, never with wasm or NumPy).

Prints milliseconds, GFLOP/s and the ratios; both results are checked against NumPy (the contract's bound).
Run ``PYTHONPATH=. python benchmarks/gemm_webgpu.py [--sizes 256 512] [--repeats 3]``. Not a test; the
machine may be shared, so compare within one run.
"""

from __future__ import annotations

import argparse
import os
import time

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402  (after the thread settings)

from atlas_web import LaunchConfig, Program  # noqa: E402
from benchmarks.gemm import WasmGemm, best_of  # noqa: E402  (the program and the timing loop are backend-neutral)

#: C[i, j] = sum_l A[i, l] * B[l, j], one lane per (i, j): buffers 2 (A), 3 (B), 4 (C)
PER_LANE = """\
    mov_imm.u32 r10, {nn}
    set.ge.u32 p0, r255, r10
    bra.p0 @done
    mov_imm.u32 r11, {n}
    div.u32 r1, r255, r11          ; i
    rem.u32 r2, r255, r11          ; j
    mov_imm.u32 r12, 4
    mul.u32 r3, r1, r11
    mul.u32 r3, r3, r12            ; byte offset of A[i, 0]
    mul.u32 r4, r2, r12            ; byte offset of B[0, j]
    mul.u32 r13, r11, r12          ; bytes of one row of B
    mov_imm.u32 r20, 2
    mov_imm.u32 r21, 3
    mov_imm.u32 r22, 4
    mov_imm.f32 r5, 0.0
    mov_imm.u32 r6, 0
    mov_imm.u32 r14, 1
loop:
    ldg.f32 r7, [r20 + r3]
    ldg.f32 r8, [r21 + r4]
    fma.f32 r5, r7, r8, r5
    add.u32 r3, r3, r12
    add.u32 r4, r4, r13
    add.u32 r6, r6, r14
    set.lt.u32 p1, r6, r11
    bra.p1 @loop
    mul.u32 r15, r255, r12
    stg.f32 [r22 + r15], r5
done:
    exit
"""


class PerLaneGemm:
    """The per-lane program over buffers 2, 3, 4 of a fresh allocation order on ``backend``."""

    def __init__(self, backend, a: np.ndarray, b: np.ndarray) -> None:
        n = a.shape[0]
        self.backend, self.n = backend, n
        self.handles = [backend.allocate_buffer(size * 4) for size in (n * n, n * n, n * n)]
        backend.copy_to_buffer(self.handles[0], a.tobytes())
        backend.copy_to_buffer(self.handles[1], b.tobytes())
        assert [int(h) for h in self.handles] == [2, 3, 4], "the program names buffers 2, 3 and 4"
        self.program = Program.from_text(PER_LANE.format(n=n, nn=n * n))
        self.config = LaunchConfig.linear(n * n, 256)

    def __call__(self) -> None:
        self.backend.execute_program(self.program, self.config)

    def result(self) -> np.ndarray:
        return np.frombuffer(bytes(self.backend.copy_from_buffer(self.handles[2])), np.float32).reshape(self.n, self.n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--per-lane-max", type=int, default=256, help="largest size the per-lane program runs at")
    options = parser.parse_args()
    from webgpu_backend import WebGpuBackend

    rng = np.random.default_rng(1)
    print(f"{'n':>6}{'GEMM first':>12}{'GEMM':>10}{'GFLOP/s':>9}{'per-lane':>11}{'GFLOP/s':>9}{'ratio':>8}"
          f"{'NumPy':>9}  device")
    for n in options.sizes:
        a, b = (rng.uniform(-1, 1, (n, n)).astype(np.float32) for _ in range(2))
        want = a.astype(np.float64) @ b.astype(np.float64)
        bound = (n + 2) * 2.0 ** -24 * (np.abs(a) @ np.abs(b))
        flops = 2.0 * n ** 3
        with WebGpuBackend() as lanes_backend, WebGpuBackend() as backend:
            actions = {}
            if n <= options.per_lane_max:
                actions["per-lane"] = PerLaneGemm(lanes_backend, a, b)
            gemm = WasmGemm(backend, a, b)
            done = bytearray(4)

            def gemm_synced() -> None:   # a launch returns once submitted: reading a word waits for it
                gemm()
                backend.copy_from_buffer(gemm.handles[0], done)

            start = time.perf_counter()
            gemm_synced()
            first = time.perf_counter() - start
            actions["gemm"] = gemm_synced
            actions["numpy"] = lambda: a @ b
            best = best_of(actions, options.repeats)
            for name, run in (("gemm", gemm), ("per-lane", actions.get("per-lane"))):
                if run is not None:
                    assert (np.abs(run.result() - want) <= bound).all(), f"{name} outside the bound"
            device = backend.device_info()["device"]
        lane = best.get("per-lane")
        lane_text = (f"{lane * 1e3:>9.1f}ms{flops / lane / 1e9:>9.3f}{lane / best['gemm']:>7.1f}x" if lane
                     else f"{'-':>11}{'-':>9}{'-':>8}")
        print(f"{n:>6}{first * 1e3:>10.0f}ms{best['gemm'] * 1e3:>8.1f}ms{flops / best['gemm'] / 1e9:>9.2f}{lane_text}"
              f"{best['numpy'] * 1e3:>7.1f}ms  {device}")


if __name__ == "__main__":
    main()
