"""Softmax and LogSoftmax rows on the wasm backend natively (wasmtime), against NumPy, in one run (issue 11).

Softmax of ``--rows`` x ``--n`` (default 1024 x 1024) f32 logits: the wasm kernel (``coop_softmax``) on one thread
and on the default thread count, against NumPy written the usual way, ``e = np.exp(x - x.max(1, keepdims=True));
e / e.sum(1, keepdims=True)`` (float32, one thread of BLAS; NumPy's ufuncs are single-threaded anyway), and
LogSoftmax against ``d - np.log(np.exp(d).sum(1, keepdims=True))``. Each result is checked against NumPy in
float64 (max error printed). Timings are wall time of one launch (the program compiled and the buffers filled
before), the sides interleaved, best of ``--repeats``; the machine may be shared: say so with the figures.
Run ``PYTHONPATH=. python benchmarks/softmax.py [--rows 1024] [--n 1024] [--repeats 7]``. Not a test.
"""

from __future__ import annotations

import argparse
import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402  (after the thread settings)

from atlas_web import Address, LaunchConfig, ProgramBuilder  # noqa: E402
from atlas_web.isa import EXIT, LogSoftmax, Softmax  # noqa: E402
from wasm_backend import WasmBackend  # noqa: E402

from benchmarks.gemm import best_of  # noqa: E402


class WasmSoftmax:
    """One Softmax/LogSoftmax launch over ``x`` on ``backend``; ``result()`` reads the output."""

    def __init__(self, backend: WasmBackend, cls, x: np.ndarray) -> None:
        self.backend = backend
        rows, n = x.shape
        self.src = int(backend.allocate_buffer(x.nbytes))
        self.dst = int(backend.allocate_buffer(x.nbytes))
        backend.copy_to_buffer(self.src, x.tobytes())
        builder = ProgramBuilder()
        builder.add(cls(output=Address.BufferOffset(self.dst), input=Address.BufferOffset(self.src), n=n, rows=rows))
        builder.add(EXIT())
        self.program, self.shape = builder.build(), x.shape
        self()

    def __call__(self) -> None:
        self.backend.execute_program(self.program, LaunchConfig())

    def result(self) -> np.ndarray:
        return np.frombuffer(bytes(self.backend.copy_from_buffer(self.dst)), np.float32).reshape(self.shape)


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_log_softmax(x: np.ndarray) -> np.ndarray:
    d = x - x.max(axis=1, keepdims=True)
    return d - np.log(np.exp(d).sum(axis=1, keepdims=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    x = np.random.default_rng(11).standard_normal((args.rows, args.n)).astype(np.float32) * 4
    one, many = WasmBackend(threads=1), WasmBackend()
    threads = many.device_info()["threads"]
    for cls, reference in ((Softmax, numpy_softmax), (LogSoftmax, numpy_log_softmax)):
        name = cls.INFO.name
        kernels = {f"wasm {name}, 1 thread": WasmSoftmax(one, cls, x),
                   f"wasm {name}, {threads} threads": WasmSoftmax(many, cls, x)}
        times = best_of({**kernels, f"NumPy {name} (f32)": lambda: reference(x)}, args.repeats)
        want = reference(x.astype(np.float64))
        errors = {label: float(np.max(np.abs(k.result() - want))) for label, k in kernels.items()}
        base = times[f"NumPy {name} (f32)"]
        print(f"{name} {args.rows}x{args.n} f32: wall time, best of {args.repeats}, interleaved")
        for label, seconds in times.items():
            error = f"  max |error| {errors[label]:.1e}" if label in errors else ""
            print(f"  {label:<32} {seconds * 1e3:8.2f} ms  {args.rows * args.n / seconds / 1e6:7.1f} M elements/s"
                  f"  speed vs NumPy {base / seconds:5.2f}x{error}")
    one.close()
    many.close()


if __name__ == "__main__":
    main()
