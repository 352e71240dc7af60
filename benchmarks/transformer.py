"""The issue-14 transformer (atlas_web/kernels/transformer.py: 2 layers, d_model 256, 4 heads / 2 KV heads,
SwiGLU 512, vocab 1000) generating greedily with the KernelBackend on each backend, against the same model
written in NumPy (tests/kernels/numpy_transformer.py, float32 BLAS on one thread) in one run.

Each backend draws the weights itself (atlas_web.numpy.random.uniform: the same bits everywhere), generates
``--new`` tokens after a 3-token prompt once to warm up (compiling each program once: the position reaches
RoPE, the cache update and Attention as launch registers, not as a program per position), then
``--repeats`` times; the tokens must equal NumPy's on every backend (the run stops otherwise). Printed:
decoding steps per second (prompt steps included; best of the repeats), the first (cold) run's time, and
the smallest gap between the two largest logits at a choice (NumPy's), which is what makes the tokens
independent of the backends' rounding. NumPy's time is its incremental decode (one token per step over its
own KV cache). ``--jit-backends`` (wasm) also time atlas_web/kernels/transformer_jit.py (the model as
one jit function over the prefix padded to a power of two: tokens/s of the new tokens). The machine may be
shared: say so with the figures. Run ``PYTHONPATH=. python benchmarks/transformer.py [--backends
cpu,wasm,webgpu] [--new 16] [--repeats 3]``. Not a test.
"""

from __future__ import annotations

import argparse
import os
import time

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402

from atlas_web.kernels import KernelBackend  # noqa: E402
from atlas_web.kernels.transformer import Transformer, TransformerConfig, init_weights  # noqa: E402
from atlas_web.kernels.transformer_jit import JitTransformer  # noqa: E402
from atlas_web.registry import get_backend  # noqa: E402

from tests.kernels.numpy_transformer import NumpyTransformer, rmsnorm64, rope64  # noqa: E402

PROMPT = [1, 2, 3]


def numpy_decode(model: NumpyTransformer, prompt: list[int], new: int) -> list[int]:
    """Greedy decoding with a KV cache, one token per step (the timed NumPy side)."""
    cfg, w = model.cfg, model.w
    hd, group = cfg.d_model // cfg.heads, cfg.heads // cfg.kv_heads
    k_cache = np.zeros((cfg.layers, cfg.kv_heads, cfg.max_seq, hd), np.float32)
    v_cache = np.zeros_like(k_cache)
    out, token = [], prompt[0]
    for pos in range(len(prompt) - 1 + new):
        x = w["embedding"][token].copy()
        for layer in range(cfg.layers):
            p = f"{layer}."
            h = rmsnorm64(x, w[p + "attn_norm"], cfg.eps)
            q = rope64((w[p + "wq"] @ h).reshape(cfg.heads, hd), model.freqs, pos)
            k_cache[layer, :, pos] = rope64((w[p + "wk"] @ h).reshape(cfg.kv_heads, hd), model.freqs, pos)
            v_cache[layer, :, pos] = (w[p + "wv"] @ h).reshape(cfg.kv_heads, hd)
            keys = np.repeat(k_cache[layer, :, :pos + 1], group, axis=0)
            values = np.repeat(v_cache[layer, :, :pos + 1], group, axis=0)
            s = np.einsum("hd,hsd->hs", q, keys) / np.float32(np.sqrt(hd))
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            att = np.einsum("hs,hsd->hd", e / e.sum(axis=-1, keepdims=True), values)
            x = x + w[p + "wo"] @ att.reshape(-1)
            h = rmsnorm64(x, w[p + "mlp_norm"], cfg.eps)
            g = w[p + "w_gate"] @ h
            x = x + w[p + "w_down"] @ ((g / (1 + np.exp(-g))) * (w[p + "w_up"] @ h))
        if pos + 1 < len(prompt):
            token = prompt[pos + 1]
            continue
        token = int(np.argmax(w["head"] @ rmsnorm64(x, w["final_norm"], cfg.eps)))
        out.append(token)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="cpu,wasm,webgpu")
    parser.add_argument("--new", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jit-backends", default="wasm", help="backends also timing the jit model ('' for none)")
    args = parser.parse_args()
    cfg = TransformerConfig()
    steps = len(PROMPT) - 1 + args.new
    cpu = get_backend("cpu")
    weights = {k: v.to_host() for k, v in init_weights(cfg, args.seed, cpu).items()}
    cpu.close()
    reference = NumpyTransformer(cfg, weights)
    expected, gaps = reference.generate(PROMPT, args.new)
    best = min(_timed(lambda: numpy_decode(reference, PROMPT, args.new), expected) for _ in range(args.repeats))
    print(f"config: {cfg}; prompt {PROMPT}, {args.new} new tokens, {steps} decoding steps")
    print(f"tokens: {expected}; smallest top-2 logit gap {min(gaps):.4f}")
    print(f"numpy   {steps / best:8.1f} steps/s (best {best * 1e3:.1f} ms)")
    for name in args.backends.split(","):
        device = get_backend(name)
        try:
            model = Transformer(KernelBackend(device), cfg, init_weights(cfg, args.seed, device))
            cold = _timed(lambda: model.generate(PROMPT, args.new), expected)
            best = min(_timed(lambda: model.generate(PROMPT, args.new), expected) for _ in range(args.repeats))
            print(f"{name:7s} {steps / best:8.1f} steps/s (best {best * 1e3:.1f} ms, first run {cold:.2f} s), "
                  "tokens equal NumPy's")
            if name in args.jit_backends.split(","):
                jitted = JitTransformer(cfg, model.w, device)
                cold = _timed(lambda: jitted.generate(PROMPT, args.new), expected)
                best = min(_timed(lambda: jitted.generate(PROMPT, args.new), expected) for _ in range(args.repeats))
                print(f"{name + ' jit':11s} {args.new / best:8.1f} tokens/s (each a whole-prefix forward; best "
                      f"{best * 1e3:.1f} ms, first run with the traces {cold:.2f} s), tokens equal NumPy's")
        finally:
            device.close()


def _timed(run, expected: list[int]) -> float:
    start = time.perf_counter()
    tokens = run()
    elapsed = time.perf_counter() - start
    if tokens != expected:
        raise SystemExit(f"tokens differ: {tokens} vs NumPy's {expected}")
    return elapsed


if __name__ == "__main__":
    main()
