"""Conv2D and FFT on the wasm backend natively (wasmtime, one thread), against NumPy, in one run (issue 11).

* Conv2D ``--conv B C H W F K`` (default 1 64 56 56 64 3: the issue's 1x64x56x56, 64 filters 3x3, padding K//2),
  f32: the wasm kernel (im2col chunks into the GEMM kernel) against NumPy written the usual way (im2col by
  ``sliding_window_view`` on the padded input, then ``tensordot`` with the kernel: BLAS on one thread), and the
  wasm GEMM of the same product (cout x K . K x out_h*out_w) for scale; GFLOP/s and ratios to NumPy;
* FFT ``--fft LOG2N`` (default 20), complex f32 forward: the wasm kernel against ``numpy.fft.fft`` of complex64
  (target: the wasm time at most twice NumPy's, ratio >= 0.5), where the backend supports FFT; then the same at
  each ``--fft-n N`` (default 10^6, not a power of two: Bluestein's algorithm).

Every result is checked against NumPy (Conv2D within 1e-4 relative of the largest output; FFT normwise within
the contract's bound). Timings are wall time, the sides interleaved, best of ``--repeats`` (the machine may be
shared: say so with the figures). Run ``PYTHONPATH=. python benchmarks/conv_fft.py [--repeats 5]``. Not a test.
"""

from __future__ import annotations

import argparse
import math
import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402  (after the thread settings)

from atlas_web.isa import Type  # noqa: E402
from atlas_web.isa.instructions import FFT, Conv2D  # noqa: E402
from wasm_backend import WasmBackend  # noqa: E402

from benchmarks.gemm import WasmGemm, best_of  # noqa: E402
from benchmarks.gemm_quantized import Program  # noqa: E402
from tests.conformance.conv_fft_cases import fft_bound  # noqa: E402


def launch(backend: WasmBackend, make, arrays: dict) -> Program:
    """One instruction over buffers holding ``arrays`` (gemm_quantized's Program); its f32 output by ``output``."""
    return Program(backend, make, arrays, np.float32)


def output(program: Program) -> np.ndarray:
    return np.frombuffer(bytes(program.backend.copy_from_buffer(program.handles["output"])), np.float32)


def numpy_conv2d(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """Conv2D (stride 1) the usual NumPy way: im2col by sliding_window_view, then tensordot (BLAS)."""
    kh, kw = w.shape[2:]
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(2, 3))   # b, c, oh, ow, kh, kw
    return np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)


def conv(shape: list[int], repeats: int, one: WasmBackend) -> None:
    b, c, h, wd, f, k = shape
    pad = k // 2
    rng = np.random.default_rng(1)
    x = rng.standard_normal((b, c, h, wd)).astype(np.float32)
    w = rng.standard_normal((f, c, k, k)).astype(np.float32)
    oh, ow = h + 2 * pad - k + 1, wd + 2 * pad - k + 1
    conv_launch = launch(one, lambda **a: Conv2D(**a, batch=b, in_channels=c, out_channels=f, height=h, width=wd,
                                            kernel_h=k, kernel_w=k, stride_h=1, stride_w=1, padding_h=pad,
                                            padding_w=pad),
                    {"output": bytes(b * f * oh * ow * 4), "input": x.tobytes(), "kernel": w.tobytes()})
    cols = np.ascontiguousarray(np.random.default_rng(2).standard_normal((c * k * k, oh * ow)).astype(np.float32))
    sides = {"wasm Conv2D": conv_launch, "NumPy im2col + tensordot": lambda: numpy_conv2d(x, w, pad),
             "wasm GEMM of the same product": WasmGemm(one, w.reshape(f, -1), cols)}
    times = best_of(sides, repeats)
    want = numpy_conv2d(x.astype(np.float64), w.astype(np.float64), pad)
    got = output(conv_launch).reshape(want.shape)
    assert np.max(np.abs(got - want)) <= 1e-4 * np.max(np.abs(want)), "Conv2D differs from NumPy"
    flop = 2.0 * b * f * oh * ow * c * k * k
    print(f"Conv2D {b}x{c}x{h}x{wd}, {f} filters {k}x{k}, padding {pad}, f32, one thread: best of {repeats}")
    for label, seconds in times.items():
        print(f"  {label:<32} {seconds * 1e3:9.2f} ms  {flop / seconds / 1e9:6.2f} GFLOP/s  "
              f"ratio to NumPy {times['NumPy im2col + tensordot'] / seconds:5.2f}")


def fft(n: int, repeats: int, one: WasmBackend) -> None:
    """FFT of n complex f32 values (a power of two: radix-2; another n: Bluestein over radix-2 of the power of two
    at least 2n - 1) against numpy.fft.fft at the same n."""
    if not one.supports("FFT", Type.F32):
        print(f"FFT {n}: the wasm backend does not support FFT")
        return
    rng = np.random.default_rng(3)
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    fft_launch = launch(one, lambda **a: FFT(**a, n=n, inverse=False),
                        {"output": bytes(8 * n), "input": z.view(np.float32).tobytes()})
    times = best_of({"wasm FFT": fft_launch, "numpy.fft.fft complex64": lambda: np.fft.fft(z)}, repeats)
    want = np.fft.fft(z.astype(np.complex128))
    got = output(fft_launch).view(np.complex64)
    bound = fft_bound(Type.F32, n, want)
    error = np.linalg.norm(got - want)
    assert error <= bound, f"FFT error {error} past the contract's bound {bound}"
    kind = "radix-2" if n & (n - 1) == 0 else f"Bluestein, padded to {1 << (2 * n - 2).bit_length()}"
    print(f"FFT n = {n} ({kind}) complex f32, forward, one thread: best of {repeats} (normwise error "
          f"{error / np.linalg.norm(want):.2e}, {error / np.linalg.norm(want) / 2.0 ** -24:.1f} u)")
    log2n = math.log2(n)
    for label, seconds in times.items():
        print(f"  {label:<32} {seconds * 1e3:9.2f} ms  {5 * n * log2n / seconds / 1e9:6.2f} G flop/s (5 n log2 n)  "
              f"ratio to NumPy {times['numpy.fft.fft complex64'] / seconds:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conv", type=int, nargs=6, default=[1, 64, 56, 56, 64, 3], metavar=("B", "C", "H", "W", "F", "K"))
    parser.add_argument("--fft", type=int, default=20, metavar="LOG2N")
    parser.add_argument("--fft-n", type=int, nargs="*", default=[1000000], metavar="N",
                        help="further lengths, any n (default 10^6: not a power of two)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip", choices=("conv", "fft"), default=None)
    args = parser.parse_args()
    one = WasmBackend(threads=1)
    if args.skip != "conv":
        conv(args.conv, args.repeats, one)
    if args.skip != "fft":
        for n in (1 << args.fft, *args.fft_n):
            fft(n, args.repeats, one)
    one.close()


if __name__ == "__main__":
    main()
