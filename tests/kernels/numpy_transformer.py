"""The transformer of atlas_web/kernels/transformer.py written in NumPy (float32 storage, float64 where
the kernel instructions compute in binary64), for the tests and benchmarks/transformer.py."""

from __future__ import annotations

import numpy as np


def rmsnorm64(x, w, eps):
    x64 = x.astype(np.float64)
    return (x64 / np.sqrt((x64 ** 2).mean() + eps) * w).astype(np.float32)


def rope64(x, freqs, pos):
    half = x.shape[-1] // 2
    angle = pos * freqs.astype(np.float64)
    a, b = x[:, :half].astype(np.float64), x[:, half:].astype(np.float64)
    return np.concatenate([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)],
                          axis=-1).astype(np.float32)


class NumpyTransformer:
    """``w``: name -> float32 ndarray (the names of TransformerConfig.shapes); ``cfg`` the config."""

    def __init__(self, cfg, w):
        self.cfg, self.w = cfg, w
        hd = cfg.d_model // cfg.heads
        self.freqs = np.array([cfg.rope_theta ** (-2 * p / hd) for p in range(hd // 2)], np.float32)

    def logits(self, tokens):
        """The logits after each token of ``tokens`` (fed from position 0), float32 (len, vocab)."""
        cfg, w = self.cfg, self.w
        hd, group = cfg.d_model // cfg.heads, cfg.heads // cfg.kv_heads
        keys = [[] for _ in range(cfg.layers)]
        values = [[] for _ in range(cfg.layers)]
        out = []
        for pos, token in enumerate(tokens):
            x = w["embedding"][token].copy()
            for layer in range(cfg.layers):
                p = f"{layer}."
                h = rmsnorm64(x, w[p + "attn_norm"], cfg.eps)
                q = rope64((w[p + "wq"] @ h).reshape(cfg.heads, hd), self.freqs, pos)
                k = rope64((w[p + "wk"] @ h).reshape(cfg.kv_heads, hd), self.freqs, pos)
                keys[layer].append(k)
                values[layer].append((w[p + "wv"] @ h).reshape(cfg.kv_heads, hd))
                K, V = np.stack(keys[layer], 1).astype(np.float64), np.stack(values[layer], 1).astype(np.float64)
                att = np.empty((cfg.heads, hd), np.float32)
                for head in range(cfg.heads):
                    s = K[head // group] @ q[head].astype(np.float64) / np.sqrt(hd)
                    e = np.exp(s - s.max())
                    att[head] = (e / e.sum()) @ V[head // group]
                x = x + w[p + "wo"] @ att.reshape(-1)
                h = rmsnorm64(x, w[p + "mlp_norm"], cfg.eps)
                g = w[p + "w_gate"] @ h
                x = x + w[p + "w_down"] @ ((g / (1 + np.exp(-g))) * (w[p + "w_up"] @ h))
            out.append(w["head"] @ rmsnorm64(x, w["final_norm"], cfg.eps))
        return np.array(out)

    def generate(self, prompt, new_tokens):
        """Greedy: (new tokens, the gap between the two largest logits at each choice)."""
        tokens, gaps = list(prompt), []
        for _ in range(new_tokens):
            last = self.logits(tokens)[-1]
            top = np.sort(last)[-2:]
            gaps.append(float(top[1] - top[0]))
            tokens.append(int(np.argmax(last)))
        return tokens[len(prompt):], gaps
