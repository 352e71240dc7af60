"""Cases for the attention kernels (rows of category "attention": RoPE, KVCacheUpdate, Attention, FlashAttention),
generated from each row: its types, its shape operands at odd sizes (one of each, sizes below, at and past the
vector widths and the tiles, empty inputs), every option field (RoPE's position offset and both pairings;
KVCacheUpdate's max_seq and its default; Attention's kv_len, causal, kv_heads and max_seq, FlashAttention's
block_size below, at and past kv_len), one buffer per array operand sized from its extent, the addresses in lane
0's registers, and fills that reach the contract's corners: random values, equal keys, huge scores (a softmax
that is all but one-hot), NaN and infinities; traps (each array one element short; a position past the cache)
against the reference.

The expected outputs come from NumPy written here (``NUMPY``, float64), not from the reference, and a backend's
output is compared with the contract's bound (docs/semantics.md, Attention kernels; ``BOUNDS`` computes it from
the inputs): NaN exactly where NumPy has NaN, the same infinity, and otherwise ``|got - want| <= 2 * bound + ulp``
(the bound for the backend, the same again for NumPy's own rounding, one ulp of ty for the final rounding).
KVCacheUpdate is compared bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from atlas_web.isa import OPCODE_TABLE, Type

from .matrix_cases import MatrixCase, decode_array, encode_array, run_with_arrays
from .norm_cases import ulp_of, unit_roundoff

__all__ = ["ATTENTION_ROWS", "NUMPY", "BOUNDS", "AttentionCase", "attention_cases", "trap_cases", "run_attention",
           "compare"]

#: every attention row of the opcode table
ATTENTION_ROWS = tuple(info for info in OPCODE_TABLE if info.category == "attention")
_SMALLEST_SUBNORMAL = {Type.F32: 2.0 ** -149, Type.F64: 2.0 ** -1074}
#: the array each row writes
WRITTEN = {"RoPE": "output", "KVCacheUpdate": "cache", "Attention": "output", "FlashAttention": "output"}

#: RoPE: (batch, seq_len, heads, head_dim, position); each with both pairings
ROPE_SHAPES = ((1, 1, 1, 2, 0), (2, 3, 5, 6, 0), (1, 7, 3, 10, 5), (2, 5, 2, 64, 1000), (1, 2, 1, 130, 70000),
               (1, 9, 2, 18, 3), (0, 3, 2, 4, 0), (1, 2, 3, 0, 0))
#: KVCacheUpdate: (batch, heads, head_dim, max_seq, position); max_seq 0: position + 1
KV_SHAPES = ((1, 1, 1, 1, 0), (2, 3, 5, 7, 6), (1, 4, 64, 16, 3), (2, 2, 3, 0, 4), (3, 2, 17, 9, 0), (0, 2, 3, 4, 1))
#: Attention: (batch, heads, seq_len, head_dim, kv_len, kv_heads, max_seq, causal)
ATTENTION_SHAPES = ((1, 1, 1, 1, 0, 0, 0, False), (1, 2, 5, 3, 0, 0, 0, False), (2, 4, 7, 8, 0, 0, 0, True),
                    (1, 4, 1, 16, 37, 2, 40, False), (1, 8, 3, 64, 33, 1, 0, True), (2, 2, 17, 5, 0, 0, 0, True),
                    (1, 2, 65, 32, 0, 0, 0, False), (1, 3, 4, 4, 9, 3, 12, True), (1, 2, 70, 6, 0, 0, 0, True), (0, 2, 3, 4, 0, 0, 0, False),
                    (1, 1, 4, 0, 0, 0, 0, False))
#: FlashAttention's block sizes: below, at and past the tiles
BLOCK_SIZES = (4, 1, 64)
FILLS = ("random", "equal_keys", "huge", "specials")


@dataclass(frozen=True)
class AttentionCase(MatrixCase):
    """A case of an attention row: ``fields`` its shape and option operands; ``fill`` one of FILLS."""


def _rope_fields(shape, interleaved):
    batch, seq_len, heads, head_dim, position = shape
    return dict(batch=batch, seq_len=seq_len, heads=heads, head_dim=head_dim, position=position,
                interleaved=interleaved)


def _kv_fields(shape):
    batch, heads, head_dim, max_seq, position = shape
    return dict(position=position, batch=batch, heads=heads, head_dim=head_dim, max_seq=max_seq)


def _attention_fields(info, shape, block_size=4):
    batch, heads, seq_len, head_dim, kv_len, kv_heads, max_seq, causal = shape
    out = dict(batch=batch, heads=heads, seq_len=seq_len, head_dim=head_dim, kv_len=kv_len, causal=causal,
               kv_heads=kv_heads, max_seq=max_seq)
    if info.name == "FlashAttention":
        out["block_size"] = block_size
    return out


def _tag(fields: dict) -> str:
    return "x".join(str(int(v)) for v in fields.values())


def attention_cases() -> list[AttentionCase]:
    out = []
    for info in ATTENTION_ROWS:
        for ty in sorted(info.types, key=lambda t: t.code):
            def case(fields, fill="random"):
                out.append(AttentionCase(f"{info.name}.{ty.name}.{_tag(fields)}.{fill}", info, ty, fields, fill))
            if info.name == "RoPE":
                for shape in ROPE_SHAPES:
                    for interleaved in (False, True):
                        case(_rope_fields(shape, interleaved))
                case(_rope_fields((2, 3, 2, 8, 0), False), "specials")
                case(_rope_fields((2, 3, 2, 8, 2), True), "huge")
            elif info.name == "KVCacheUpdate":
                for shape in KV_SHAPES:
                    case(_kv_fields(shape), "random" if not ty.is_float() else "specials")
            else:
                for shape in ATTENTION_SHAPES:
                    case(_attention_fields(info, shape))
                for fill in FILLS[1:]:
                    case(_attention_fields(info, ATTENTION_SHAPES[2]), fill)
                    case(_attention_fields(info, ATTENTION_SHAPES[3]), fill)
                if info.name == "FlashAttention":
                    for block in BLOCK_SIZES[1:]:
                        case(_attention_fields(info, ATTENTION_SHAPES[5], block))
                        case(_attention_fields(info, ATTENTION_SHAPES[3], block))
    return out


def trap_cases() -> list[AttentionCase]:
    out = []
    for info in ATTENTION_ROWS:
        ty = Type.F32
        fields = {"RoPE": _rope_fields(ROPE_SHAPES[2], False), "KVCacheUpdate": _kv_fields(KV_SHAPES[1])}.get(
            info.name) or _attention_fields(info, ATTENTION_SHAPES[3])
        out += [AttentionCase(f"{info.name}.{ty.name}.{op.name}_short", info, ty, fields, short=op.name)
                for op in info.address_operands]
        if info.name == "KVCacheUpdate":
            for position in (7, 1 << 31):
                out.append(AttentionCase(f"{info.name}.{ty.name}.position{position}_past_max_seq", info, ty,
                                         {**fields, "position": position}))
    return out


# ---- inputs ------------------------------------------------------------------------------------------------

def _representable(ty: Type, values: np.ndarray) -> np.ndarray:
    return decode_array(ty, encode_array(ty, values))


def _inputs(case: AttentionCase, seed: int) -> dict:
    """Array name -> float64 values representable in the array's type (outputs prefilled with 7s)."""
    rng = np.random.default_rng(seed)
    arrays = case.arrays()
    out = {}
    for name, array in arrays.items():
        count = array.elements
        if name == "output":
            values = np.full(count, 7.0)
        elif name == "freqs":
            half = max(case.fields["head_dim"] // 2, 1)
            values = 10000.0 ** (-np.arange(count) / half)
        elif not array.ty.is_float():
            lo, hi = array.ty.int_range()
            values = rng.integers(max(lo, -(1 << 31)), min(hi, 1 << 31) + 1, count).astype(np.float64)
        else:
            values = rng.uniform(-2, 2, count)
        out[name] = values
    _fill(case, out)
    return {name: _representable(arrays[name].ty, values) for name, values in out.items()}


def _fill(case: AttentionCase, arrays: dict) -> None:
    """The fill's corners, in place: equal keys, huge values, NaN and infinities."""
    fill = case.fill
    if case.info.name == "KVCacheUpdate":
        new = arrays["new_kv"]
        if fill == "specials" and new.size >= 3:
            new[:3] = (math.nan, math.inf, -0.0)
        return
    if case.info.name == "RoPE":
        x = arrays["input"]
        if fill == "huge":
            x *= {Type.F16: 1.0e4, Type.BF16: 1e38, Type.F32: 1e38, Type.F64: 1e307}[case.ty] / 2
        elif fill == "specials" and x.size > 20:
            x[[3, 9, 20]] = (math.nan, math.inf, -math.inf)
        return
    key, query, value = arrays["key"], arrays["query"], arrays["value"]
    if fill == "equal_keys":
        d = max(case.fields["head_dim"], 1)
        key[:] = np.tile(key[:d], key.size // d)
    elif fill == "huge":
        scale = 40.0 if case.ty is not Type.F16 else 20.0
        query *= scale
        key *= scale
    elif fill == "specials" and query.size > 5 and key.size > 9:
        query[5] = math.nan
        key[-9] = math.inf
        value[len(value) // 2] = math.nan


# ---- NumPy, written the usual way (float64) -------------------------------------------------------------------

def _rope(f: dict, a: dict) -> np.ndarray:
    batch, seq, heads, dim = f["batch"], f["seq_len"], f["heads"], f["head_dim"]
    x = a["input"].reshape(batch, seq, heads, dim)
    theta = np.outer(f["position"] + np.arange(seq), a["freqs"])[None, :, None, :]
    if f["interleaved"]:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return np.stack([x1 * np.cos(theta) - x2 * np.sin(theta), x1 * np.sin(theta) + x2 * np.cos(theta)],
                        axis=-1).reshape(-1)
    x1, x2 = x[..., :dim // 2], x[..., dim // 2:]
    return np.concatenate([x1 * np.cos(theta) - x2 * np.sin(theta), x1 * np.sin(theta) + x2 * np.cos(theta)],
                          axis=-1).reshape(-1)


def _kv_cache(f: dict, a: dict) -> np.ndarray:
    slots = f["max_seq"] or f["position"] + 1
    cache = a["cache"].reshape(f["batch"], f["heads"], slots, f["head_dim"]).copy()
    cache[:, :, f["position"]] = a["new_kv"].reshape(f["batch"], f["heads"], f["head_dim"])
    return cache.reshape(-1)


def _attention_arrays(f: dict, a: dict):
    """(q, k, v, visible): q (b, h, s, d); k, v (b, h, kv_len, d) repeated over each kv head's query heads;
    visible (s, kv_len) the keys each query sees."""
    batch, heads, seq, dim = f["batch"], f["heads"], f["seq_len"], f["head_dim"]
    kv_len, kv_heads = f["kv_len"] or seq, f["kv_heads"] or heads
    slots = f["max_seq"] or kv_len
    q = a["query"].reshape(batch, heads, seq, dim)
    k, v = (np.repeat(a[n].reshape(batch, kv_heads, slots, dim)[:, :, :kv_len], heads // kv_heads, axis=1)
            for n in ("key", "value"))
    visible = np.ones((seq, kv_len), bool)
    if f["causal"]:
        visible = np.arange(kv_len)[None, :] <= np.arange(seq)[:, None] + kv_len - seq
    return q, k, v, visible


def _softmax_weights(q, k, visible):
    s = np.where(visible, q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]), -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return s, p / p.sum(axis=-1, keepdims=True)


def _attention(f: dict, a: dict) -> np.ndarray:
    q, k, v, visible = _attention_arrays(f, a)
    _, p = _softmax_weights(q, k, visible)
    out = np.empty(q.shape)
    for i in range(q.shape[2]):   # a query reads only the values it sees (a hidden NaN does not reach it)
        seen = visible[i]
        out[:, :, i] = np.einsum("bhj,bhjd->bhd", p[:, :, i, seen], v[:, :, seen])
    return out.reshape(-1)


#: row name -> numpy(fields, float64 inputs by array name) -> the float64 written array (not rounded)
NUMPY: dict[str, Callable] = {"RoPE": _rope, "KVCacheUpdate": _kv_cache, "Attention": _attention,
                              "FlashAttention": _attention}


# ---- the contract's bounds (docs/semantics.md, Attention kernels) ---------------------------------------------

def _gamma(k: float, u: float) -> float:
    return k * u / (1 - k * u)


def _rope_bound(f: dict, a: dict, u: float, eta: float) -> np.ndarray:
    batch, seq, heads, dim = f["batch"], f["seq_len"], f["heads"], f["head_dim"]
    x = np.abs(a["input"].reshape(batch, seq, heads, dim))
    theta = np.abs(np.outer(f["position"] + np.arange(seq), a["freqs"]))[None, :, None, :]
    pairs = x[..., 0::2] + x[..., 1::2] if f["interleaved"] else x[..., :dim // 2] + x[..., dim // 2:]
    per_pair = pairs * (u * theta + 8 * u) + 4 * eta
    return np.repeat(per_pair, 2, axis=-1).reshape(-1) if f["interleaved"] else \
        np.concatenate([per_pair, per_pair], axis=-1).reshape(-1)


def _attention_bound(f: dict, a: dict, u: float, eta: float) -> np.ndarray:
    q, k, v, visible = _attention_arrays(f, a)
    dim, seen = q.shape[-1], visible.sum(axis=1)[None, None, :, None]
    s, p = _softmax_weights(q, k, visible)
    magnitude = np.where(visible, np.abs(q) @ np.swapaxes(np.abs(k), -1, -2) / math.sqrt(max(dim, 1)), 0.0)
    spread = np.where(visible, s.max(axis=-1, keepdims=True) - s, 0.0)
    error = _gamma(dim + 2, u) * magnitude.max(axis=-1, keepdims=True) + 2 * u * spread.max(axis=-1, keepdims=True) \
        + 8 * u
    values = np.nan_to_num(np.abs(v), nan=0.0)   # a NaN value makes the outputs that see it NaN (compared so)
    weighted = np.nan_to_num(np.abs(p), nan=0.0) @ values
    largest = values.max(axis=2, keepdims=True) if v.shape[2] else 0.0
    bound = weighted * (2 * error + _gamma(2 * seen + 8, u)) + 2 * seen * eta * largest
    return bound.reshape(-1)


def _exact(f: dict, a: dict, u: float, eta: float) -> np.ndarray:
    return np.zeros(0)


#: row name -> bound(fields, float64 inputs, u, eta) -> per written element, the contract's bound
BOUNDS: dict[str, Callable] = {"RoPE": _rope_bound, "KVCacheUpdate": _exact, "Attention": _attention_bound,
                               "FlashAttention": _attention_bound}


def compare(case: AttentionCase, inputs: dict, got_raw: bytes) -> list:
    """The written elements where ``got_raw`` (the written array's bytes) breaks the contract against NumPy:
    (index, numpy, got, allowed); empty when it keeps it. KVCacheUpdate: bit for bit."""
    arrays = case.arrays()
    written = arrays[WRITTEN[case.info.name]]
    with np.errstate(all="ignore"):
        want = NUMPY[case.info.name](case.fields, inputs)
        want_raw = encode_array(written.ty, want)
        if case.info.name == "KVCacheUpdate":
            return [] if want_raw == got_raw else [(0, "bytes differ", len(got_raw), len(want_raw))]
        got = decode_array(written.ty, got_raw)
        if written.elements == 0:
            return [] if got.size == 0 else [(0, math.nan, float(got[0]), 0.0)]
        rounded = decode_array(written.ty, want_raw)
        u = unit_roundoff(case.ty)
        eta = _SMALLEST_SUBNORMAL[Type.F64 if case.ty is Type.F64 else Type.F32]
        bound = BOUNDS[case.info.name](case.fields, inputs, u, eta)
        allowed = 2 * bound + ulp_of(case.ty, np.maximum(np.abs(rounded), np.abs(got)))
        special = np.isnan(rounded) | np.isinf(rounded)
        ok = np.where(special, (np.isnan(rounded) & np.isnan(got)) | (rounded == got),
                      np.abs(got - want) <= allowed)
    return [(int(i), float(rounded[i]), float(got[i]), float(allowed[i])) for i in np.flatnonzero(~ok)]


def run_attention(backend, case: AttentionCase, seed: int = 7):
    """Run ``case`` on ``backend``: (inputs by array name (float64), the written array's bytes, trap or None).
    The addresses are held in lane 0's registers (a short array traps at the launch, not at verify)."""
    arrays = case.arrays()
    inputs = _inputs(case, seed)
    raw, trap = run_with_arrays(backend, case, arrays, inputs, WRITTEN[case.info.name])
    return inputs, raw, trap
