"""Executor rules of the attention kernels (rows of category "attention"): RoPE, KVCacheUpdate, Attention and
FlashAttention.

The executable form of docs/semantics.md, "Attention kernels". Every float value is taken to float64 (exact for
F16, BF16 and F32), the result is computed there and each output is rounded once to ``ty``:

    RoPE:       theta = (position + s) * freqs[p];
                (y1, y2) = (x1 cos theta - x2 sin theta, x1 sin theta + x2 cos theta)
                for the pairs (x[p], x[p + head_dim/2]) (half-split) or (x[2p], x[2p+1]) (interleaved)
    Attention:  s[i, j] = (q[i] . k[j]) / sqrt(head_dim) (einsum: every product formed, so 0 * inf is NaN);
                causal: s[i, j] = -inf where j > i + kv_len - seq_len; m[i] = max_j s[i, j];
                p[i, j] = exp(s[i, j] - m[i]) / sum_j exp(s[i, j] - m[i]);  output[i] = sum_j p[i, j] v[j]

FlashAttention's reference is Attention's (block_size only says how a backend tiles it). KVCacheUpdate copies the
new values' bits (any scalar type) after checking ``position`` (below ``max_seq`` when max_seq > 0: else
OUT_OF_BOUNDS naming position, before any array is checked). The arrays are checked (handle, bounds, alignment)
over their whole extents, in operand order, before anything is written, by ``exec_cooperative.checked_arrays``;
every input is read before the output is written (RoPE in place is allowed).
"""

from __future__ import annotations

import numpy as np

from ..errors import TrapCode
from ..trap_report import TrapRecord, operand_position, trap
from . import numeric
from .exec_address import scatter
from .exec_cooperative import CooperativeStep, checked_arrays

__all__ = ["ATTENTION_RULES", "rope_values", "attention_values", "attention_shape"]


def _wide(values: np.ndarray) -> np.ndarray:
    return np.asarray(values).astype(np.float64)


def rope_values(x: np.ndarray, freqs: np.ndarray, position: int, interleaved: bool) -> np.ndarray:
    """RoPE of a float64 (batch, seq_len, heads, head_dim) ``x`` with float64 ``freqs`` (head_dim/2), in float64
    (not rounded)."""
    seq_len, half = x.shape[1], x.shape[3] // 2
    theta = (np.float64(position) + np.arange(seq_len, dtype=np.float64))[:, None] * freqs[None, :half]
    cos, sin = np.cos(theta)[None, :, None, :], np.sin(theta)[None, :, None, :]
    first, second = (np.s_[..., 0::2], np.s_[..., 1::2]) if interleaved else (np.s_[..., :half], np.s_[..., half:])
    out = np.empty_like(x)
    out[first] = x[first] * cos - x[second] * sin
    out[second] = x[first] * sin + x[second] * cos
    return out


def attention_shape(instr) -> tuple[int, int, int, int, int, int, int]:
    """(batch, heads, seq_len, head_dim, kv_heads, kv_len, max_seq) of an Attention/FlashAttention instruction,
    its zero defaults resolved."""
    kv_len = instr.kv_len or instr.seq_len
    return (instr.batch, instr.heads, instr.seq_len, instr.head_dim, instr.kv_heads or instr.heads, kv_len,
            instr.max_seq or kv_len)


def attention_values(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """softmax(q k^T / sqrt(head_dim)) v in float64 (not rounded) of float64 ``q`` (batch, heads, seq_len,
    head_dim) and ``k``, ``v`` (batch, kv_heads, kv_len, head_dim), heads a multiple of kv_heads (head h reads kv
    head h // (heads // kv_heads)); causal: query i sees key j <= i + kv_len - seq_len."""
    heads, seq_len, head_dim = q.shape[1], q.shape[2], q.shape[3]
    group = heads // max(k.shape[1], 1)
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    kv_len = k.shape[2]
    scores = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(np.float64(head_dim))
    if causal:
        hidden = np.arange(kv_len)[None, :] > np.arange(seq_len)[:, None] + (kv_len - seq_len)
        scores = np.where(hidden, -np.inf, scores)
    weights = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = weights / np.sum(weights, axis=-1, keepdims=True)
    return np.einsum("bhij,bhjd->bhid", weights, v)


def _rope(step: CooperativeStep) -> None:
    instr = step.instr
    arrays = checked_arrays(step)
    output = arrays["output"]
    if output.array.elements == 0:
        return
    x = _wide(arrays["input"].read()).reshape(instr.batch, instr.seq_len, instr.heads, instr.head_dim)
    with np.errstate(all="ignore"):
        result = rope_values(x, _wide(arrays["freqs"].read()), instr.position, instr.interleaved)
    output.write(numeric.round_once(instr.ty, result.reshape(-1)))


def _kv_cache_update(step: CooperativeStep) -> None:
    instr = step.instr
    if instr.max_seq and instr.position >= instr.max_seq:
        record = TrapRecord(operand_position(instr, "position"), 0, instr.position, 0, instr.max_seq)
        raise trap(TrapCode.OUT_OF_BOUNDS, step.plan.index, -1, instr, record)
    arrays = checked_arrays(step)
    cache, new = arrays["cache"], arrays["new_kv"]
    if new.array.elements == 0:
        return
    slots = instr.max_seq or instr.position + 1
    items = np.arange(instr.batch * instr.heads, dtype=np.int64)
    index = ((items * slots + instr.position) * instr.head_dim)[:, None] + np.arange(instr.head_dim, dtype=np.int64)
    ty = cache.array.ty
    scatter(cache.data, cache.offset + ty.size_bytes() * index.reshape(-1), ty, new.read())


def _attention(step: CooperativeStep) -> None:
    instr = step.instr
    arrays = checked_arrays(step)
    output = arrays["output"]
    if output.array.elements == 0:
        return
    batch, heads, seq_len, head_dim, kv_heads, kv_len, max_seq = attention_shape(instr)
    q = _wide(arrays["query"].read()).reshape(batch, heads, seq_len, head_dim)
    k, v = (_wide(arrays[name].read()).reshape(batch, kv_heads, max_seq, head_dim)[:, :, :kv_len]
            for name in ("key", "value"))
    with np.errstate(all="ignore"):
        result = attention_values(q, k, v, instr.causal)
    output.write(numeric.round_once(instr.ty, result.reshape(-1)))


ATTENTION_RULES = {"RoPE": _rope, "KVCacheUpdate": _kv_cache_update, "Attention": _attention,
                   "FlashAttention": _attention}
