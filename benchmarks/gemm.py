"""f32 GEMM on the wasm backend natively (wasmtime) against NumPy, measured in one run (issue 10).

For each size n (n x n times n x n, alpha 1, beta 0):

* ``GEMM`` launched on ``WasmBackend(threads=1)`` and on ``WasmBackend()`` (the default thread count);
* NumPy's ``a @ b`` (OpenBLAS) on one thread (``OPENBLAS_NUM_THREADS=1`` etc. set before NumPy loads, unless
  the caller set them);
* with ``--mixed``: MixedPrecisionGEMM with the inputs rounded to float16 (f32 C), on one thread;
* with ``--gemv N``: the GEMV shapes of an N x N matrix, ``A @ x`` (m = N, n = 1) and ``x @ A`` (m = 1, n = N),
  which the wasm backend runs on its bandwidth-bound GEMV kernel, against NumPy's same products;
* with ``--node``: the same kernel module (``coop_gemm_kernel``'s driver, both micro-kernel forms) run by
  Node's V8 (the engine of Chromium) on one thread, a proxy for the browser.

Printed: milliseconds, GFLOP/s, the fraction of the SIMD128 peak of one core (4 lanes x 2 FMA ports x 2 flops x
the clock read from /proc/cpuinfo, else 2.6 GHz) and the ratio to NumPy (NumPy time / wasm time). Timings are
wall time, the sides interleaved, best of ``--repeats`` (the machine may be shared: say so with the figures).
Run ``PYTHONPATH=. python benchmarks/gemm.py [--sizes 256 512 1024] [--repeats 5] [--node]``. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402  (after the thread settings)

from atlas_web import Address, LaunchConfig, ProgramBuilder  # noqa: E402
from atlas_web.isa import EXIT, Type  # noqa: E402
from atlas_web.isa.instructions import INSTRUCTION_CLASSES  # noqa: E402
from wasm_backend import WasmBackend  # noqa: E402

clock = time.perf_counter


def clock_ghz() -> float:
    """The first core's clock from /proc/cpuinfo (GHz), else 2.6."""
    try:
        with open("/proc/cpuinfo") as info:
            match = re.search(r"cpu MHz\s*:\s*([\d.]+)", info.read())
        return float(match.group(1)) / 1000 if match else 2.6
    except OSError:
        return 2.6


def simd128_peak(ghz: float) -> float:
    """GFLOP/s of one core: 4 f32 lanes x 2 FMA ports x 2 flops per cycle."""
    return 4 * 2 * 2 * ghz


class WasmGemm:
    """A GEMM program C = A @ B (A m x k, B k x n; f32 C) on ``backend`` with its buffers: ``name`` GEMM (f32 A and
    B) or MixedPrecisionGEMM (``ty`` F16: A and B given as float16)."""

    def __init__(self, backend: WasmBackend, a: np.ndarray, b: np.ndarray, name: str = "GEMM",
                 ty: Type = Type.F32) -> None:
        (m, k), n = a.shape, b.shape[1]
        self.backend = backend
        self.handles = [backend.allocate_buffer(m * n * 4), backend.allocate_buffer(a.nbytes),
                        backend.allocate_buffer(b.nbytes)]
        backend.copy_to_buffer(self.handles[1], a.tobytes())
        backend.copy_to_buffer(self.handles[2], b.tobytes())
        c, a_, b_ = (Address.BufferOffset(int(h), 0) for h in self.handles)
        builder = ProgramBuilder()
        builder.add(INSTRUCTION_CLASSES[name](c=c, a=a_, b=b_, m=m, n=n, k=k, alpha=1.0, beta=0.0, ty=ty))
        builder.add(EXIT())
        self.program = builder.build()
        self.shape = (m, n)

    def __call__(self) -> None:
        self.backend.execute_program(self.program, LaunchConfig())

    def result(self) -> np.ndarray:
        return np.frombuffer(bytes(self.backend.copy_from_buffer(self.handles[0])), np.float32).reshape(self.shape)


def best_of(actions: dict, repeats: int) -> dict:
    """Best wall time of each action, the actions interleaved, after one warm-up call each."""
    for action in actions.values():
        action()
    best = {name: float("inf") for name in actions}
    for _ in range(repeats):
        for name, action in actions.items():
            start = clock()
            action()
            best[name] = min(best[name], clock() - start)
    return best


_NODE_SCRIPT = """
const fs = require('fs');
const {n, repeats, modules} = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const out = {};
const runs = modules.map(({label, path, scratch}) => {
  const bytes = n * n * 4 + 64, offsets = [4096, 4096 + bytes, 4096 + 2 * bytes], at = 4096 + 3 * bytes;
  const memory = new WebAssembly.Memory({initial: Math.ceil((at + scratch) / 65536) + 1});
  const gemm = new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(path)), {env: {memory}}).exports.gemm;
  const f = new Float32Array(memory.buffer);
  for (let i = 0; i < 2 * n * n; i++) f[offsets[0] / 4 + i] = Math.random() - 0.5;
  return {label, call: () => gemm(offsets[0], offsets[1], offsets[2], at, 0, n), best: Infinity};
});
for (const r of runs) r.call();
for (let k = 0; k < repeats; k++) for (const r of runs) {
  const t0 = performance.now(); r.call(); r.best = Math.min(r.best, performance.now() - t0);
}
for (const r of runs) out[r.label] = r.best / 1e3;
console.log(JSON.stringify(out));
"""


def node_times(n: int, repeats: int) -> dict:
    """Seconds of the kernel module in Node (V8), relaxed_madd and mul+add forms; {} without node."""
    node = shutil.which("node")
    if node is None:
        return {}
    from wasm_backend.lowering.coop_gemm_kernel import (
        DEFAULT_TILING, GemmShape, Tiling, build_gemm_driver, scratch_bytes,
    )
    from wasm_backend.lowering.module_context import ModuleContext
    shape = GemmShape(Type.F32, n, n, n, False, False, n, n, n, 1.0, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        modules = []
        for label, relaxed in (("V8 relaxed_madd", True), ("V8 mul+add", False)):
            tiling = Tiling(**{**DEFAULT_TILING.__dict__, "relaxed": relaxed})
            m = ModuleContext("gemm_bench")
            build_gemm_driver(m, "gemm", shape, tiling, export=True)
            path = os.path.join(tmp, f"{relaxed}.wasm")
            with open(path, "wb") as f:
                f.write(m.to_bytes())
            modules.append({"label": label, "path": path, "scratch": scratch_bytes(shape, tiling)})
        config = os.path.join(tmp, "config.json")
        with open(config, "w") as f:
            json.dump({"n": n, "repeats": repeats, "modules": modules}, f)
        script = os.path.join(tmp, "bench.js")
        with open(script, "w") as f:
            f.write(_NODE_SCRIPT)
        # node 20 (V8 11.3) has relaxed SIMD behind a flag; later versions have it on
        flags = ["--experimental-wasm-relaxed-simd"] if _node_major(node) < 22 else []
        done = subprocess.run([node, *flags, script, config], capture_output=True, text=True, check=True)
        return json.loads(done.stdout)


def _node_major(node: str) -> int:
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip().lstrip("v")
    return int(version.split(".")[0] or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--node", action="store_true", help="also time the kernel module in Node's V8")
    parser.add_argument("--gemv", type=int, default=0, help="also the GEMVs of an N x N matrix")
    parser.add_argument("--mixed", action="store_true", help="also MixedPrecisionGEMM with f16 A and B (1 thread)")
    args = parser.parse_args()
    ghz = clock_ghz()
    peak = simd128_peak(ghz)
    one, many = WasmBackend(threads=1), WasmBackend()
    threads = many.device_info()["threads"]
    print(f"f32 GEMM n x n x n; clock {ghz:.2f} GHz, SIMD128 peak of one core {peak:.1f} GFLOP/s; "
          f"NumPy on {os.environ['OPENBLAS_NUM_THREADS']} thread(s); wall time, best of {args.repeats}, interleaved")
    for n in args.sizes:
        rng = np.random.default_rng(n)
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        wasm_one, wasm_many = WasmGemm(one, a, b), WasmGemm(many, a, b)
        sides = {"wasmtime 1 thread": wasm_one, f"wasmtime {threads} threads": wasm_many, "NumPy": lambda: a @ b}
        if args.mixed:
            sides["wasmtime f16 in, 1 thread"] = WasmGemm(one, a.astype(np.float16), b.astype(np.float16),
                                                          "MixedPrecisionGEMM", Type.F16)
        times = best_of(sides, args.repeats)
        expected = a.astype(np.float64) @ b.astype(np.float64)
        for gemm in (wasm_one, wasm_many):
            assert np.abs(gemm.result() - expected).max() <= 1e-5 * n * np.abs(a).max() * np.abs(b).max()
        if args.node:
            times.update(node_times(n, args.repeats))
        flops = 2.0 * n ** 3
        for label, seconds in times.items():
            gflops = flops / seconds / 1e9
            print(f"  {n:5d}  {label:<26} {seconds * 1e3:9.2f} ms  {gflops:6.1f} GFLOP/s  "
                  f"{gflops / peak:5.0%} of one core's peak  ratio to NumPy {times['NumPy'] / seconds:5.2f}")
    if args.gemv:
        gemv(args.gemv, one, many, threads, args.repeats)
    one.close()
    many.close()


def gemv(n: int, one: WasmBackend, many: WasmBackend, threads: int, repeats: int) -> None:
    """A @ x and x @ A for an n x n f32 matrix: wasm (1 and N threads) against NumPy, GB/s of the matrix."""
    rng = np.random.default_rng(n)
    matrix = rng.standard_normal((n, n)).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    for label, a, b, numpy_product in (("A @ x", matrix, x.reshape(n, 1), lambda: matrix @ x),
                                      ("x @ A", x.reshape(1, n), matrix, lambda: x @ matrix)):
        sides = {"wasmtime 1 thread": WasmGemm(one, a, b), f"wasmtime {threads} threads": WasmGemm(many, a, b)}
        times = best_of({**sides, "NumPy": numpy_product}, repeats)
        expected = (a.astype(np.float64) @ b.astype(np.float64))
        for side in sides.values():
            assert np.abs(side.result() - expected).max() <= 1e-4 * n
        for name, seconds in times.items():
            print(f"  GEMV {label} n={n}  {name:<26} {seconds * 1e3:8.2f} ms  {n * n * 4 / seconds / 1e9:6.1f} GB/s  "
                  f"ratio to NumPy {times['NumPy'] / seconds:5.2f}")


if __name__ == "__main__":
    main()
