"""A small decoder-only transformer generating tokens greedily with the ``KernelBackend`` (issue 14's
example): Llama-style, RMSNorm before attention and MLP, grouped-query attention with RoPE (pairs
(p, p + head_dim/2)) and a KV cache, SwiGLU MLP, untied output head. Weights are drawn from a seed with
``atlas_web.numpy.random.uniform`` (counter-based: the same bits on every backend).

Each decoding step runs on the device: GEMM (n = 1) for every projection, RMSNorm in place, RoPE in
place (by a table of angles ``pos * freqs`` rounded to float32), the cache rows written, the Attention
instruction over the cache, SiLU and the residual adds as array operations, and ``argmax`` of the logits
on the device (the first index of the largest logit, as NumPy's). The position is never compiled into a
program: it reaches RoPE, the cache update and Attention as launch registers (``apply_rope_row``,
``kv_cache_update``, ``attention_at``), so a decoding loop compiles the same programs at every position.
Standard library only (it runs in the browser). See docs/kernels.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import numpy as anp
from ..errors import ArrayError
from ..numpy.array import Array
from .backend import KernelBackend

__all__ = ["TransformerConfig", "init_weights", "Transformer"]


@dataclass(frozen=True)
class TransformerConfig:
    vocab: int = 1000
    d_model: int = 256
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 512
    max_seq: int = 64
    eps: float = 1e-5
    rope_theta: float = 10000.0
    #: the output head's weights are this many times the 1/sqrt(d_model) scale (spreads the logits)
    head_scale: float = 4.0

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every weight's name and shape (projections stored (out, in))."""
        d, f = self.d_model, self.intermediate
        shapes = {"embedding": (self.vocab, d)}
        for layer in range(self.layers):
            shapes.update({f"{layer}.attn_norm": (d,), f"{layer}.wq": (d, d), f"{layer}.wk": (self.kv_dim, d),
                           f"{layer}.wv": (self.kv_dim, d), f"{layer}.wo": (d, d), f"{layer}.mlp_norm": (d,),
                           f"{layer}.w_gate": (f, d), f"{layer}.w_up": (f, d), f"{layer}.w_down": (d, f)})
        shapes.update({"final_norm": (d,), "head": (self.vocab, d)})
        return shapes

    def freqs(self) -> list[float]:
        """RoPE's frequencies ``theta ** (-2p / head_dim)`` (float64; stored as float32)."""
        return [self.rope_theta ** (-2 * p / self.head_dim) for p in range(self.head_dim // 2)]


def init_weights(config: TransformerConfig, seed: int, device) -> dict[str, Array]:
    """Weights drawn uniformly with key ``seed`` (one key per weight, in ``config.shapes()`` order): norms
    in [0.8, 1.2), the embedding in [-1, 1), a projection of fan-in n in +-sqrt(3/n) (variance 1/n), the
    head ``head_scale`` times that. The same bits on every backend."""
    keys = anp.random.split(anp.random.key(seed), len(config.shapes()))
    weights = {}
    for k, (name, shape) in zip(keys, config.shapes().items()):
        if len(shape) == 1:
            low, high = 0.8, 1.2
        elif name == "embedding":
            low, high = -1.0, 1.0
        else:
            s = math.sqrt(3.0 / shape[1]) * (config.head_scale if name == "head" else 1.0)
            low, high = -s, s
        weights[name] = anp.random.uniform(shape, low, high, "float32", key=k, device=device)
    return weights


class Transformer:
    """The model on ``kb``'s device with ``weights`` (init_weights' names and shapes, moved to the device
    where they are elsewhere). Raises ArrayError for a missing or misshapen weight."""

    def __init__(self, kb: KernelBackend, config: TransformerConfig, weights: dict) -> None:
        self.kb, self.config = kb, config
        self.w = {}
        for name, shape in config.shapes().items():
            if name not in weights:
                raise ArrayError(f"Transformer: weight {name!r} is missing")
            w = kb.tensor(weights[name])
            if w.shape != shape:
                raise ArrayError(f"Transformer: weight {name!r} is {w.describe()}, not {shape}")
            self.w[name] = w
        self.freqs = kb.tensor(anp.array(config.freqs(), dtype="float32", device=kb.device))
        self.angles = kb.rope_angles(self.freqs, config.max_seq)
        self.position = 0
        cache = (config.kv_heads, config.max_seq, config.head_dim)
        self.k_cache = [kb.zeros(cache) for _ in range(config.layers)]
        self.v_cache = [kb.zeros(cache) for _ in range(config.layers)]

    def reset(self) -> None:
        """Forget the tokens seen (the cache is overwritten position by position)."""
        self.position = 0

    def step(self, token: int) -> Array:
        """Feed ``token`` at the next position; the logits (vocab,) it predicts. Raises ArrayError past
        max_seq or for a token outside the vocabulary."""
        c, kb, w = self.config, self.kb, self.w
        pos = self.position
        if pos >= c.max_seq:
            raise ArrayError(f"Transformer.step: position {pos} is past max_seq {c.max_seq}")
        if not 0 <= token < c.vocab:
            raise ArrayError(f"Transformer.step: token {token} is outside the vocabulary of {c.vocab}")
        x = w["embedding"][token]
        for layer in range(c.layers):
            p = f"{layer}."
            h = anp.copy(x)
            kb.rmsnorm(h, w[p + "attn_norm"], c.eps)
            q = kb.matmul_vec(w[p + "wq"], h).reshape(c.heads, c.head_dim)
            k = kb.matmul_vec(w[p + "wk"], h).reshape(c.kv_heads, c.head_dim)
            v = kb.matmul_vec(w[p + "wv"], h).reshape(c.kv_heads, c.head_dim)
            kb.apply_rope_row(q, self.angles, pos)
            kb.apply_rope_row(k, self.angles, pos)
            kb.kv_cache_update(self.k_cache[layer], k, pos)
            kb.kv_cache_update(self.v_cache[layer], v, pos)
            attended = kb.attention_at(q, self.k_cache[layer], self.v_cache[layer], pos)
            x = x + kb.matmul_vec(w[p + "wo"], attended.reshape(c.d_model))
            h = anp.copy(x)
            kb.rmsnorm(h, w[p + "mlp_norm"], c.eps)
            gated = kb.silu(kb.matmul_vec(w[p + "w_gate"], h)) * kb.matmul_vec(w[p + "w_up"], h)
            x = x + kb.matmul_vec(w[p + "w_down"], gated)
        kb.rmsnorm(x, w["final_norm"], c.eps)
        self.position = pos + 1
        return kb.matmul_vec(w["head"], x)

    def _prompt(self, prompt: list[int], new_tokens: int) -> None:
        """Check that ``prompt`` and ``new_tokens`` fit from position 0; feed all but the prompt's last token."""
        self.reset()
        if not prompt:
            raise ArrayError("Transformer.generate: the prompt is empty")
        if new_tokens < 0 or len(prompt) - 1 + new_tokens > self.config.max_seq:
            raise ArrayError(f"Transformer.generate: a prompt of {len(prompt)} and {new_tokens} new tokens need "
                             f"{len(prompt) - 1 + new_tokens} positions, past max_seq {self.config.max_seq}")
        for token in prompt[:-1]:
            self.step(token)

    def generate(self, prompt: list[int], new_tokens: int) -> list[int]:
        """Greedy decoding from position 0: the prompt fed token by token, then ``new_tokens`` tokens,
        each the first index of the largest logit (the argmax on the device). Returns the new tokens.
        Raises ArrayError for an empty prompt or more positions than max_seq."""
        self._prompt(prompt, new_tokens)
        out, token = [], prompt[-1]
        for _ in range(new_tokens):
            token = int(anp.argmax(self.step(token)).item())
            out.append(token)
        return out

    async def generate_async(self, prompt: list[int], new_tokens: int) -> list[int]:
        """``generate`` reading each chosen token with ``to_host_async`` (in the browser a WebGPU read must be
        awaited; the event loop runs between tokens)."""
        self._prompt(prompt, new_tokens)
        out, token = [], prompt[-1]
        for _ in range(new_tokens):
            chosen = await anp.argmax(self.step(token)).reshape(1).to_host_async()   # NumPy or array.array
            token = int(chosen[0])
            out.append(token)
        return out
