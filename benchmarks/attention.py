"""Attention, FlashAttention and RoPE on the wasm backend natively (wasmtime, one thread), against NumPy, in one run
(issue 11).

Attention of batch 1 x ``--heads`` (8) heads x ``--seq`` (512) queries and keys x ``--dim`` (64) f32, not causal
and causal: the wasm kernels (``coop_attention``: Attention through the GEMM kernel, a row softmax and the GEMM
again; FlashAttention tiled with ``--block`` (64) keys and queries per tile, online softmax) against NumPy written
the usual way, ``s = q @ k.T / sqrt(d)`` (masked with -inf when causal), ``p = exp(s - max); p /= sum``, ``p @ v``
(float32, BLAS on one thread). Each result is checked against NumPy in float64 (max error printed). The extra
memory: each kernel's scratch (the launch area it reserves: ``attention_scratch_bytes``) beside NumPy's scores
(heads x seq x seq f32). RoPE of 1 x seq x heads x dim (half-split) against NumPy's ``x * cos + rotate_half(x) *
sin`` with the tables computed in the same call. Timings are wall time of one launch (compiled and filled
before), the sides interleaved, best of ``--repeats``; the machine may be shared: say so with the figures.
Run ``PYTHONPATH=. python benchmarks/attention.py [--heads 8] [--seq 512] [--dim 64] [--block 64] [--repeats 5]``.
Not a test.
"""

from __future__ import annotations

import argparse
import math
import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402  (after the thread settings)

from atlas_web import Address, LaunchConfig, ProgramBuilder  # noqa: E402
from atlas_web.isa import EXIT, Attention, FlashAttention, RoPE  # noqa: E402
from wasm_backend import WasmBackend  # noqa: E402
from wasm_backend.lowering.coop_attention import attention_scratch_bytes  # noqa: E402

from benchmarks.gemm import best_of  # noqa: E402


class WasmLaunch:
    """One launch of ``make(addresses)`` on ``backend`` with one buffer per array (``written`` read back)."""

    def __init__(self, backend: WasmBackend, make, arrays: dict, written: str) -> None:
        self.backend, self.written, self.shape = backend, written, arrays[written].shape
        self.handles = {}
        for name, values in arrays.items():
            self.handles[name] = int(backend.allocate_buffer(values.nbytes))
            backend.copy_to_buffer(self.handles[name], values.tobytes())
        self.instr = make({name: Address.BufferOffset(h) for name, h in self.handles.items()})
        builder = ProgramBuilder()
        builder.add(self.instr)
        builder.add(EXIT())
        self.program = builder.build()

    def __call__(self) -> None:
        self.backend.execute_program(self.program, LaunchConfig())

    def result(self) -> np.ndarray:
        raw = bytes(self.backend.copy_from_buffer(self.handles[self.written]))
        return np.frombuffer(raw, np.float32).reshape(self.shape)


def numpy_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    s = q @ np.swapaxes(k, -1, -2) / np.asarray(math.sqrt(q.shape[-1]), q.dtype)
    if causal:
        s = np.where(np.triu(np.ones(s.shape[-2:], bool), 1), -np.inf, s)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return p @ v


def numpy_rope(x: np.ndarray, freqs: np.ndarray) -> np.ndarray:
    theta = np.outer(np.arange(x.shape[1], dtype=np.float32), freqs)[None, :, None, :]
    cos, sin = np.cos(theta), np.sin(theta)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def _report(title: str, times: dict, errors: dict, base_label: str, extra: dict | None = None) -> None:
    print(title)
    base = times[base_label]
    for label, seconds in times.items():
        error = f"  max |error| {errors[label]:.1e}" if label in errors else ""
        memory = f"  extra memory {extra[label] / 1024:8.1f} KiB" if extra and label in extra else ""
        print(f"  {label:<34} {seconds * 1e3:8.2f} ms  speed vs NumPy {base / seconds:5.2f}x{error}{memory}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--block", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    heads, seq, dim = args.heads, args.seq, args.dim
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((1, heads, seq, dim)).astype(np.float32) for _ in range(3))
    backend = WasmBackend(threads=1)
    fields = dict(batch=1, heads=heads, seq_len=seq, head_dim=dim)
    arrays = dict(output=np.zeros_like(q), query=q, key=k, value=v)
    for causal in (False, True):
        kernels = {
            "wasm Attention": WasmLaunch(backend, lambda a: Attention(**a, **fields, causal=causal), arrays, "output"),
            f"wasm FlashAttention (block {args.block})": WasmLaunch(
                backend, lambda a: FlashAttention(**a, **fields, block_size=args.block, causal=causal), arrays,
                "output")}
        label = "NumPy matmul + softmax (f32)"
        times = best_of({**kernels, label: lambda: numpy_attention(q, k, v, causal)}, args.repeats)
        want = numpy_attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), causal)
        errors = {name: float(np.max(np.abs(kernel.result() - want))) for name, kernel in kernels.items()}
        extra = {name: attention_scratch_bytes(kernel.instr) for name, kernel in kernels.items()}
        extra[label] = heads * seq * seq * 4
        _report(f"Attention 1x{heads}x{seq}x{dim} f32{' causal' if causal else ''}, one thread: wall time, best of "
                f"{args.repeats}, interleaved", times, errors, label, extra)
        flash, plain = times[f"wasm FlashAttention (block {args.block})"], times["wasm Attention"]
        print(f"  FlashAttention / Attention time: {flash / plain:.2f}")
    x = rng.standard_normal((1, seq, heads, dim)).astype(np.float32)
    freqs = (10000.0 ** (-np.arange(dim // 2) / (dim // 2))).astype(np.float32)
    rope = WasmLaunch(backend, lambda a: RoPE(**a, batch=1, seq_len=seq, heads=heads, head_dim=dim),
                      dict(output=np.zeros_like(x), input=x, freqs=freqs), "output")
    label = "NumPy x*cos + rotate_half(x)*sin"
    times = best_of({"wasm RoPE": rope, label: lambda: numpy_rope(x, freqs)}, args.repeats)
    error = float(np.max(np.abs(rope.result() - numpy_rope(x.astype(np.float64), freqs.astype(np.float64)))))
    _report(f"RoPE 1x{seq}x{heads}x{dim} f32 (half-split), one thread", times, {"wasm RoPE": error}, label)
    backend.close()


if __name__ == "__main__":
    main()
