"""LayerNorm, RMSNorm and LayerScale rows on the wasm backend natively (wasmtime, one launch each), against NumPy,
in one run (issue 11).

``--shape R N`` (default 1024 1024; the issue's target shape is 1024 4096) f32 rows: the wasm kernels (one
LayerNorm / RMSNorm instruction per launch, its buffers resident) against NumPy written the usual way on the
same f32 array, the same formula:

    LayerNorm  (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta
    RMSNorm    x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * weight
    LayerScale x * scale

Each result is checked against the float64 formula (the wasm kernels within 1e-5 relative of the row's scale;
LayerScale bit for bit).
The ratio printed is NumPy's time over the kernel's (above 1: the kernel is faster; target >= 1.5). Timings are
wall time, the sides interleaved, best of ``--repeats`` (the machine may be shared: say so with the figures).
Run ``PYTHONPATH=. python benchmarks/norms.py [--shape 1024 4096] [--repeats 7]``. Not a test.
"""

from __future__ import annotations

import argparse
import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402  (after the thread settings)

from atlas_web.isa.instructions import LayerNorm, LayerScale, RMSNorm  # noqa: E402
from wasm_backend import WasmBackend  # noqa: E402

from benchmarks.gemm import best_of  # noqa: E402
from benchmarks.gemm_quantized import Program  # noqa: E402

EPS = 1e-5


def numpy_layer_norm(x, gamma, beta):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + np.float32(EPS)) * gamma + beta


def numpy_rms_norm(x, weight):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float32(EPS)) * weight


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", type=int, nargs=2, default=[1024, 1024], metavar=("R", "N"))
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rows, n = args.shape
    rng = np.random.default_rng(11)
    x = rng.standard_normal((rows, n)).astype(np.float32) * 3 + 1
    gamma, beta = (rng.uniform(-2, 2, n).astype(np.float32) for _ in range(2))
    backend = WasmBackend(threads=1)
    out = bytes(x.nbytes)
    # the kernels' instructions name their arrays "output"; Program reads back "c"
    layer = Program(backend, lambda output, **addr: LayerNorm(output=output, **addr, n=n, rows=rows, eps=EPS),
                    {"output": out, "input": x.tobytes(), "gamma": gamma.tobytes(), "beta": beta.tobytes()},
                    np.float32)
    rms = Program(backend, lambda output, **addr: RMSNorm(output=output, **addr, n=n, rows=rows, eps=EPS),
                  {"output": out, "input": x.tobytes(), "weight": gamma.tobytes()}, np.float32)
    scale = Program(backend, lambda output, **addr: LayerScale(output=output, **addr, n=n, rows=rows),
                    {"output": out, "input": x.tobytes(), "scale": gamma.tobytes()}, np.float32)
    sides = {"LayerNorm wasm": layer, "LayerNorm NumPy": lambda: numpy_layer_norm(x, gamma, beta),
             "RMSNorm wasm": rms, "RMSNorm NumPy": lambda: numpy_rms_norm(x, gamma),
             "LayerScale wasm": scale, "LayerScale NumPy": lambda: x * gamma}
    times = best_of(sides, args.repeats)
    wide = x.astype(np.float64)
    checks = {"LayerNorm": (layer, numpy_layer_norm(wide, gamma, beta)), "RMSNorm": (rms, numpy_rms_norm(wide, gamma)),
              "LayerScale": (scale, x * gamma)}
    for name, (program, want) in checks.items():
        got = np.frombuffer(bytes(backend.copy_from_buffer(program.handles["output"])), np.float32).reshape(rows, n)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max()), f"{name} differs"
    print(f"{rows}x{n} f32 rows, wasm one thread (wasmtime) vs NumPy: wall time, best of {args.repeats}, interleaved")
    for name in checks:
        kernel, numpy = times[f"{name} wasm"], times[f"{name} NumPy"]
        print(f"  {name:<10} wasm {kernel * 1e3:8.2f} ms   NumPy {numpy * 1e3:8.2f} ms   "
              f"NumPy / wasm {numpy / kernel:5.2f}x  ({x.nbytes / kernel / 1e9:5.2f} GB/s of input)")
    backend.close()


if __name__ == "__main__":
    main()
