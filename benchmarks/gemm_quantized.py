"""QuantizedGEMM and SparseGEMM on the wasm backend natively (wasmtime), against its f32 GEMM, in one run (issue 10).

* ``--qsize N`` (default 512): QuantizedGEMM N x N x N (i8 A and B, i8 C and f32 C) against GEMM of f32 A and B
  of the same shape; operations per second (2 per multiply-add, integer or float) and the ratio of
  QuantizedGEMM's to GEMM's (target >= 2), on one thread and on the default thread count; with ``--node``,
  also the kernel module run by Node's V8 (the engine of Chromium) on one thread;
* ``--sparse M K N`` (default 4096 4096 64) at ``--density`` (default 0.01): SparseGEMM (CSR A, f32) against
  GEMM of the same A stored dense (target >= 10x), one thread; and NumPy's dense ``A @ B`` for scale.

Every result is checked (QuantizedGEMM bit for bit against NumPy's integer product, requantized as the
reference does; SparseGEMM within 1e-4 relative of the dense product). Timings are wall time, the sides
interleaved, best of ``--repeats`` (the machine may be shared: say so with the figures).
Run ``PYTHONPATH=. python benchmarks/gemm_quantized.py [--qsize 512] [--sparse 4096 4096 64] [--repeats 5]``.
Not a test.
"""

from __future__ import annotations

import argparse
import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402  (after the thread settings)

from atlas_web import Address, LaunchConfig, ProgramBuilder  # noqa: E402
from atlas_web.isa import EXIT, Type  # noqa: E402
from atlas_web.isa.instructions import QuantizedGEMM, SparseGEMM  # noqa: E402
from atlas_web.reference.exec_matrix import quantized_values  # noqa: E402
from wasm_backend import WasmBackend  # noqa: E402

from benchmarks.gemm import WasmGemm, best_of  # noqa: E402

SCALES = dict(a_scale=0.02, b_scale=0.03, c_scale=0.05)


class Program:
    """One instruction over buffers holding ``arrays`` (name -> bytes) on ``backend``; ``result()`` reads C."""

    def __init__(self, backend: WasmBackend, make, arrays: dict, c_dtype) -> None:
        self.backend, self.c_dtype = backend, c_dtype
        self.handles = {}
        for name, data in arrays.items():
            self.handles[name] = int(backend.allocate_buffer(max(4, len(data))))
            backend.copy_to_buffer(self.handles[name], data)
        builder = ProgramBuilder()
        builder.add(make(**{name: Address.BufferOffset(h) for name, h in self.handles.items()}))
        builder.add(EXIT())
        self.program = builder.build()

    def __call__(self) -> None:
        self.backend.execute_program(self.program, LaunchConfig())

    def result(self) -> np.ndarray:
        return np.frombuffer(bytes(self.backend.copy_from_buffer(self.handles["c"])), self.c_dtype)


def quantized(n: int, repeats: int, one: WasmBackend, many: WasmBackend, threads: int) -> None:
    rng = np.random.default_rng(n)
    a = rng.integers(-128, 128, (n, n)).astype(np.int8)
    b = rng.integers(-128, 128, (n, n)).astype(np.int8)
    sides, checks = {}, []
    for backend, who in ((one, "1 thread"), (many, f"{threads} threads")):
        for ty, dtype in ((Type.I8, np.int8), (Type.F32, np.float32)):
            program = Program(backend, lambda ty=ty, **addr: QuantizedGEMM(**addr, m=n, n=n, k=n, ty=ty, **SCALES),
                              {"c": bytes(n * n * dtype().nbytes), "a": a.tobytes(), "b": b.tobytes()}, dtype)
            sides[f"QuantizedGEMM {ty.name.lower()} C, {who}"] = program
            checks.append((program, ty))
        sides[f"GEMM f32, {who}"] = WasmGemm(backend, a.astype(np.float32), b.astype(np.float32))
    times = best_of(sides, repeats)
    for program, ty in checks:
        want = quantized_values(ty, SCALES["a_scale"], SCALES["b_scale"], SCALES["c_scale"], a, b)
        assert program.result().tobytes() == want.tobytes(), "QuantizedGEMM differs from the reference"
    ops = 2.0 * n ** 3
    print(f"QuantizedGEMM {n}^3 (i8 A, B; i32 sums) vs f32 GEMM {n}^3: wall time, best of {repeats}, interleaved")
    for label, seconds in times.items():
        who = label.split(", ")[1]
        ratio = times[f"GEMM f32, {who}"] / seconds
        print(f"  {label:<36} {seconds * 1e3:9.2f} ms  {ops / seconds / 1e9:7.1f} G ops/s  "
              f"ratio to f32 GEMM ({who}) {ratio:5.2f}")


def sparse(m: int, k: int, n: int, density: float, repeats: int, one: WasmBackend) -> None:
    rng = np.random.default_rng(7)
    counts = rng.binomial(k, density, m)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint32)
    idx = np.concatenate([np.sort(rng.choice(k, c, replace=False)) for c in counts]).astype(np.uint32)
    vals = rng.standard_normal(int(ptr[-1])).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    dense = np.zeros((m, k), np.float32)
    dense[np.repeat(np.arange(m), counts), idx] = vals
    program = Program(one, lambda **addr: SparseGEMM(**addr, m=m, n=n, k=k),
                      {"c": bytes(m * n * 4), "a_values": vals.tobytes(), "a_indices": idx.tobytes(),
                       "a_ptr": ptr.tobytes(), "b": b.tobytes()}, np.float32)
    sides = {"SparseGEMM, 1 thread": program, "GEMM dense, 1 thread": WasmGemm(one, dense, b),
             "NumPy dense A @ B": lambda: dense @ b}
    times = best_of(sides, repeats)
    expected = dense.astype(np.float64) @ b.astype(np.float64)
    assert np.allclose(program.result().reshape(m, n), expected, rtol=1e-4, atol=1e-4)
    print(f"SparseGEMM {m}x{k} ({int(ptr[-1])} entries, density {density:.2%}) . {k}x{n} vs the dense GEMM: "
          f"best of {repeats}")
    useful = 2.0 * int(ptr[-1]) * n
    for label, seconds in times.items():
        print(f"  {label:<24} {seconds * 1e3:9.2f} ms  {useful / seconds / 1e9:6.2f} G useful flop/s  "
              f"speed-up over the wasm dense GEMM {times['GEMM dense, 1 thread'] / seconds:6.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--qsize", type=int, default=512)
    parser.add_argument("--sparse", type=int, nargs=3, default=[4096, 4096, 64], metavar=("M", "K", "N"))
    parser.add_argument("--density", type=float, default=0.01)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip", choices=("quantized", "sparse"), default=None)
    args = parser.parse_args()
    one, many = WasmBackend(threads=1), WasmBackend()
    if args.skip != "quantized":
        quantized(args.qsize, args.repeats, one, many, many.device_info()["threads"])
    if args.skip != "sparse":
        sparse(*args.sparse, args.density, args.repeats, one)
    one.close()
    many.close()


if __name__ == "__main__":
    main()
