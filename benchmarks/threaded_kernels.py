"""The issue 11 kernels on 2 threads against 1 on the wasm backend natively (wasmtime), in one run.

LayerNorm and RMSNorm (``--rows R --n N``, default the issue's 1024 x 4096), GroupNorm (32 groups) and BatchNorm
(8 items of 256 channels, as many elements), LayerScale (the rows' shape), Attention and FlashAttention
(``--attention B H S D``, default the issue's 1 x 8 x 512 x 64, not causal; FlashAttention with block_size 64),
Conv2D (``--conv B C H W F K``, default the issue's 1 x 64 x 56 x 56, 64 filters 3 x 3, padding K//2; square: W is
H) and TensorContract (a 3-d by 2-d contraction ``--contract M N K``, default 512 512 512, A (M/8, 8, K) by
B (K, N)), all f32. Each kernel runs on a backend of one thread and one of ``--threads`` threads (both through the
same module code: ``env.parallel_gemm`` cuts the kernel's units, rows, statistics groups, heads, output channels or
GEMM rows, over the threads), the two sides interleaved, best of ``--repeats`` wall times; the outputs of both are
checked to be the same bits. GEMM of TensorContract's size, threaded before by the same mechanism, is the
control: where it gains nothing, no core was free. Prints each time and the speed-up (one thread's time over the threads'). The machine
may be shared: say how loaded it was with the figures (``os.getloadavg`` is printed). Run ``PYTHONPATH=. python
benchmarks/threaded_kernels.py [--repeats 7] [--only Conv2D]``. Not a test.
"""

from __future__ import annotations

import argparse
import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402  (after the thread settings)

from atlas_web.isa.instructions import (  # noqa: E402
    GEMM, Attention, BatchNorm, Conv2D, FlashAttention, GroupNorm, LayerNorm, LayerScale, RMSNorm, TensorContract,
)
from wasm_backend import WasmBackend  # noqa: E402

from benchmarks.gemm import best_of  # noqa: E402
from benchmarks.gemm_quantized import Program  # noqa: E402

EPS = 1e-5


def _f32(rng, *shape) -> bytes:
    return rng.standard_normal(shape).astype(np.float32).tobytes()


def kernels(args) -> dict:
    """label -> (make(**addresses), arrays by name; the written one named "c" so Program reads it back)."""
    rng = np.random.default_rng(5)
    rows, n = args.rows, args.n
    elements = rows * n
    b, h, s, d = args.attention
    m, nn, k = args.contract
    cb, cc, ch, _, cf, ck = args.conv
    positive = np.abs(rng.standard_normal(256)).astype(np.float32).tobytes()

    def out(count: int) -> bytes:
        return bytes(4 * count)

    attention_arrays = {"c": out(b * h * s * d), "query": _f32(rng, b * h * s * d), "key": _f32(rng, b * h * s * d),
                        "value": _f32(rng, b * h * s * d)}
    shape = dict(batch=b, heads=h, seq_len=s, head_dim=d)
    return {
        f"LayerNorm {rows}x{n}": (lambda c, **a: LayerNorm(output=c, **a, n=n, rows=rows, eps=EPS),
                                  {"c": out(elements), "input": _f32(rng, elements), "gamma": _f32(rng, n),
                                   "beta": _f32(rng, n)}),
        f"RMSNorm {rows}x{n}": (lambda c, **a: RMSNorm(output=c, **a, n=n, rows=rows, eps=EPS),
                                {"c": out(elements), "input": _f32(rng, elements), "weight": _f32(rng, n)}),
        f"GroupNorm 8x256x{elements // 2048}, 32 groups": (
            lambda c, **a: GroupNorm(output=c, **a, batch=8, channels=256, groups=32, spatial=elements // 2048,
                                     eps=EPS),
            {"c": out(elements), "input": _f32(rng, elements), "gamma": _f32(rng, 256), "beta": _f32(rng, 256)}),
        f"BatchNorm 8x256x{elements // 2048}": (
            lambda c, **a: BatchNorm(output=c, **a, batch=8, channels=256, spatial=elements // 2048, eps=EPS),
            {"c": out(elements), "input": _f32(rng, elements), "gamma": _f32(rng, 256), "beta": _f32(rng, 256),
             "mean": _f32(rng, 256), "variance": positive}),
        f"LayerScale {rows}x{n}": (lambda c, **a: LayerScale(output=c, **a, n=n, rows=rows),
                                   {"c": out(elements), "input": _f32(rng, elements), "scale": _f32(rng, n)}),
        f"Attention {b}x{h}x{s}x{d}": (lambda c, **a: Attention(output=c, **a, **shape), attention_arrays),
        f"FlashAttention {b}x{h}x{s}x{d} block 64": (
            lambda c, **a: FlashAttention(output=c, **a, **shape, block_size=64), attention_arrays),
        f"Conv2D {cb}x{cc}x{ch}x{ch}, {cf} filters {ck}x{ck}": (
            lambda c, **a: Conv2D(output=c, **a, batch=cb, in_channels=cc, out_channels=cf, height=ch, width=ch,
                                  kernel_h=ck, kernel_w=ck, stride_h=1, stride_w=1, padding_h=ck // 2,
                                  padding_w=ck // 2),
            {"c": out(cb * cf * ch * ch), "input": _f32(rng, cb * cc * ch * ch),
             "kernel": _f32(rng, cf * cc * ck * ck)}),
        # the control: GEMM was threaded before these kernels, by the same mechanism
        f"GEMM {m}x{nn}x{k} (control)": (lambda c, **a: GEMM(c=c, **a, m=m, n=nn, k=k),
                                         {"c": out(m * nn), "a": _f32(rng, m * k), "b": _f32(rng, k * nn)}),
        f"TensorContract ({m // 8},8,{k})x({k},{nn})": (
            lambda c, **a: TensorContract(output=c, **a, shape_a=(m // 8, 8, k), shape_b=(k, nn),
                                          contract_dims=((2, 0),)),
            {"c": out(m * nn), "a": _f32(rng, m * k), "b": _f32(rng, k * nn)}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--attention", type=int, nargs=4, default=[1, 8, 512, 64], metavar=("B", "H", "S", "D"))
    parser.add_argument("--contract", type=int, nargs=3, default=[512, 512, 512], metavar=("M", "N", "K"))
    parser.add_argument("--conv", type=int, nargs=6, default=[1, 64, 56, 56, 64, 3],
                        metavar=("B", "C", "H", "W", "F", "K"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--only", default=None, help="run the kernels whose label starts with this")
    args = parser.parse_args()
    one, many = WasmBackend(threads=1), WasmBackend(threads=args.threads)
    print(f"wasm, 1 thread vs {args.threads} threads, f32, wall time best of {args.repeats} interleaved; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for label, (make, arrays) in kernels(args).items():
        if args.only and not label.startswith(args.only):
            continue
        sides = {who: Program(backend, make, arrays, np.float32) for who, backend in (("1", one), ("n", many))}
        before = many.device_info()["parallel_dispatches"]
        times = best_of(sides, args.repeats)
        threaded = many.device_info()["parallel_dispatches"] > before
        assert sides["1"].result().tobytes() == sides["n"].result().tobytes(), f"{label}: the threads' bits differ"
        print(f"  {label:<44} 1 thread {times['1'] * 1e3:9.2f} ms   {args.threads} threads {times['n'] * 1e3:9.2f} ms"
              f"   speed-up {times['1'] / times['n']:5.2f}{'' if threaded else '  (not threaded: below threshold)'}")
    one.close()
    many.close()


if __name__ == "__main__":
    main()
