"""The transformer of atlas_web/kernels/transformer.py as one ``atlas_web.numpy`` function under ``jit``:
each step runs the whole prefix (no KV cache: jit functions return arrays, they do not write them),
padded to a power of two (traced and fused once per padded length, then only launched). Projections
are ``@`` (GEMM), the norms ``rms_norm`` (RMSNorm), attention ``attention(..., causal=True)``
(Attention), RoPE the rotation by cos/sin tables computed on the host in float64 (array operations: the
RoPE instruction is not an array operation). The same tokens as the KernelBackend model where no two top
logits are within the backends' accuracy (the tests check it). Standard library only.
"""

from __future__ import annotations

import array
import math

from .. import numpy as anp
from ..errors import ArrayError
from .transformer import TransformerConfig

__all__ = ["JitTransformer"]


class JitTransformer:
    """The model on ``device`` with ``weights`` (init_weights' names; arrays or host data)."""

    def __init__(self, config: TransformerConfig, weights: dict, device) -> None:
        self.config, self.device = config, device
        self.w = {}
        for name, shape in config.shapes().items():
            if name not in weights:
                raise ArrayError(f"JitTransformer: weight {name!r} is missing")
            w = anp.asarray(weights[name], dtype="float32", device=device)
            if w.shape != shape:
                raise ArrayError(f"JitTransformer: weight {name!r} is {w.describe()}, not {shape}")
            # projections (out, in) used as x @ w.T: transposed once here
            self.w[name] = anp.transpose(w) if len(shape) == 2 and name != "embedding" else w
        freqs = config.freqs()
        angles = [[pos * f for f in freqs] for pos in range(config.max_seq)]
        self.cos = anp.array([[math.cos(a) for a in row] for row in angles], dtype="float32", device=device)
        self.sin = anp.array([[math.sin(a) for a in row] for row in angles], dtype="float32", device=device)
        self.forward = anp.jit(self._forward)

    def _rope(self, x, cos, sin):
        half = self.config.head_dim // 2
        a, b = x[..., :half], x[..., half:]
        return anp.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)

    def _forward(self, onehot, select, cos, sin):
        """The argmax and logits (1, vocab) at the position ``select`` (1, seq) picks (a one-hot row) of the
        tokens ``onehot`` (seq, vocab; rows past the tokens all zero: causal attention keeps them out of the
        earlier rows, and ``select @ x`` adds 1 * that row to zeros, exactly)."""
        c, w = self.config, self.w
        seq = onehot.shape[0]
        x = onehot @ w["embedding"]  # one 1.0 per row: the embedding rows exactly
        cos, sin = anp.reshape(cos, (seq, 1, c.head_dim // 2)), anp.reshape(sin, (seq, 1, c.head_dim // 2))
        for layer in range(c.layers):
            p = f"{layer}."
            h = anp.rms_norm(x, w[p + "attn_norm"], c.eps)
            q = self._rope(anp.reshape(h @ w[p + "wq"], (seq, c.heads, c.head_dim)), cos, sin)
            k = self._rope(anp.reshape(h @ w[p + "wk"], (seq, c.kv_heads, c.head_dim)), cos, sin)
            v = anp.reshape(h @ w[p + "wv"], (seq, c.kv_heads, c.head_dim))
            att = anp.attention(anp.swapaxes(q, 0, 1), anp.swapaxes(k, 0, 1), anp.swapaxes(v, 0, 1), causal=True)
            x = x + anp.reshape(anp.swapaxes(att, 0, 1), (seq, c.d_model)) @ w[p + "wo"]
            h = anp.rms_norm(x, w[p + "mlp_norm"], c.eps)
            x = x + (anp.silu(h @ w[p + "w_gate"]) * (h @ w[p + "w_up"])) @ w[p + "w_down"]
        last = anp.rms_norm(select @ x, w["final_norm"], c.eps)
        return anp.argmax(last @ w["head"]), last @ w["head"]

    def _inputs(self, tokens: list[int]) -> tuple:
        """The forward's arguments for ``tokens``, padded to the next power of two >= 8 (at most max_seq):
        a few traces serve every length (one per length would overflow the program caches)."""
        c, n = self.config, len(tokens)
        if not 0 < n <= c.max_seq:
            raise ArrayError(f"JitTransformer: {n} tokens, between 1 and max_seq {c.max_seq}")
        length = min(max(8, 1 << (n - 1).bit_length()), c.max_seq)
        flat = array.array("f", bytes(4 * c.vocab * length))
        for i, token in enumerate(tokens):
            if not 0 <= token < c.vocab:
                raise ArrayError(f"JitTransformer: token {token} is outside the vocabulary of {c.vocab}")
            flat[i * c.vocab + token] = 1.0
        select = array.array("f", bytes(4 * length))
        select[n - 1] = 1.0
        return (anp.reshape(anp.array(flat, device=self.device), (length, c.vocab)),
                anp.reshape(anp.array(select, device=self.device), (1, length)), self.cos[:length], self.sin[:length])

    def logits(self, tokens: list[int]):
        """The logits (1, vocab) the model predicts after ``tokens``."""
        return self.forward(*self._inputs(tokens))[1]

    def generate(self, prompt: list[int], new_tokens: int) -> list[int]:
        """Greedy decoding (the first index of the largest logit): the new tokens."""
        tokens = list(prompt)
        for _ in range(new_tokens):
            tokens.append(int(self.forward(*self._inputs(tokens))[0].item()))
        return tokens[len(prompt):]
