"""Neural-network operations: ``softmax, log_softmax, layer_norm, rms_norm, attention, conv2d``.

Each runs as its kernel instruction (Softmax, LogSoftmax, LayerNorm, RMSNorm, Attention, Conv2D: one
cooperative launch, computed and rounded as docs/semantics.md's contract says) where the array's device
``supports`` it for the dtype, and otherwise as a composition of the array operations (max, exp, sum,
divide, matmul, slicing), which every backend runs: the same function within the contract's bound
(the composition rounds after each operation, in the array's dtype). Under ``jit`` the composition is
fused like any other elementwise chain. Integer inputs are computed in the float type NumPy would use.
Standard library only.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from ..errors import ArrayError
from .array import Array
from .dtypes import float_for
from .elementwise import apply, common_device
from .nodes import KernelNode
from .runtime import launch

__all__ = ["softmax", "log_softmax", "layer_norm", "rms_norm", "attention", "conv2d"]


def _describe(a: Any) -> str:
    return a.describe() if isinstance(a, Array) else repr(a)


def _floats(x: Any, what: str) -> Array:
    if not isinstance(x, Array):
        raise ArrayError(f"{what} needs an Array, got {type(x).__name__}")
    ty = float_for(x.dtype)
    return x if ty == x.dtype and not x.is_bool else x.astype(ty)


def launch_kernel(text: str, out_shape: tuple[int, ...], inputs: list[Array], what: str) -> Array:
    """A new array of ``out_shape`` (the first input's dtype and device) computed by ``text``: one kernel
    instruction whose ``{out}``, ``{a0}``, ``{a1}``, ... are the addresses of the output and the packed
    ``inputs`` (atlas_web/numpy/nodes.py, KernelNode). ``what`` names the operation in errors."""
    x = inputs[0]
    out = Array.empty(x.device, out_shape, x.dtype)
    if out.size:
        launch(what, KernelNode(text, len(inputs)), x.device, [(a.buffer, 0) for a in inputs], (out.buffer, 0))
    return out


def _has(name: str, x: Array) -> bool:
    return x.size > 0 and x.device.supports(name, x.dtype)


def _last_axis(fn, x: Array, axis: int, what: str) -> Array:
    """``fn`` over the rows of ``x`` along ``axis`` (moved last and back)."""
    if not -x.ndim <= axis < max(x.ndim, 1):
        raise ArrayError(f"{what}: axis {axis} is out of range for {x.ndim} dimensions")
    axis %= max(x.ndim, 1)
    if x.ndim == 0:
        return fn(x.reshape(1)).reshape(())
    if axis == x.ndim - 1:
        return fn(x)
    return fn(x.swapaxes(axis, -1)).swapaxes(axis, -1)


def _rows_kernel(mnemonic: str, x: Array, extra: list[Array], immediates: str, what: str) -> Array:
    n = x.shape[-1]
    text = (f"{mnemonic}.{x.dtype.suffix} [{{out}}], [{{a0}}], "
            + "".join(f"[{{a{k + 1}}}], " for k in range(len(extra)))
            + immediates.format(n=n, rows=x.size // n if n else 0))
    return launch_kernel(text, x.shape, [x, *extra], what)


def softmax(x: Array, axis: int = -1) -> Array:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (the Softmax instruction where supported).
    Raises ArrayError for a bad axis."""
    x = _floats(x, "softmax")
    what = f"softmax({x.describe()}, axis={axis})"

    def rows(v: Array) -> Array:
        if _has("Softmax", v):
            return _rows_kernel("softmax", v, [], "{n}, {rows}", what)
        e = apply("exp", apply("subtract", v, v.max(axis=-1, keepdims=True)))
        return apply("divide", e, e.sum(axis=-1, keepdims=True))
    return _last_axis(rows, x, axis, what)


def log_softmax(x: Array, axis: int = -1) -> Array:
    """``(x - max) - log(sum(exp(x - max)))`` along ``axis`` (LogSoftmax where supported)."""
    x = _floats(x, "log_softmax")
    what = f"log_softmax({x.describe()}, axis={axis})"

    def rows(v: Array) -> Array:
        if _has("LogSoftmax", v):
            return _rows_kernel("logsoftmax", v, [], "{n}, {rows}", what)
        shifted = apply("subtract", v, v.max(axis=-1, keepdims=True))
        return apply("subtract", shifted, apply("log", apply("exp", shifted).sum(axis=-1, keepdims=True)))
    return _last_axis(rows, x, axis, what)


def _weights(what: str, x: Array, w: Any, name: str, fill: float, n: int | None = None) -> Array:
    """``w`` as an array of ``n`` elements (default: ``x``'s last axis) on x's device and dtype (``fill``
    where None)."""
    from .creation import asarray, full
    n = x.shape[-1] if n is None else n
    if w is None:
        return full((n,), fill, x.dtype, x.device)
    w = asarray(w, device=x.device)
    common_device(what, [x, w])
    if w.shape != (n,):
        raise ArrayError(f"{what}: {name} has shape {w.shape}, not ({n},)")
    return w if w.dtype == x.dtype else w.astype(x.dtype)


def layer_norm(x: Array, gamma: Any = None, beta: Any = None, eps: float = 1e-5) -> Array:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis (var: the mean of squared
    deviations; gamma ones and beta zeros where None); LayerNorm where supported. Raises ArrayError
    for a 0-d input or gamma/beta of another size."""
    x = _floats(x, "layer_norm")
    what = f"layer_norm({x.describe()})"
    if x.ndim == 0:
        raise ArrayError(f"{what}: needs at least 1 dimension")
    g, b = _weights(what, x, gamma, "gamma", 1.0), _weights(what, x, beta, "beta", 0.0)
    if _has("LayerNorm", x):
        return _rows_kernel("layernorm", x, [g, b], f"{{n}}, {float(eps)!r}, {{rows}}", what)
    centered = apply("subtract", x, x.mean(axis=-1, keepdims=True))
    var = apply("multiply", centered, centered).mean(axis=-1, keepdims=True)
    scaled = apply("divide", centered, apply("sqrt", apply("add", var, float(eps))))
    return apply("add", apply("multiply", scaled, g), b)


def rms_norm(x: Array, weight: Any = None, eps: float = 1e-6) -> Array:
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last axis (weight ones where None); RMSNorm where
    supported. Raises ArrayError for a 0-d input or a weight of another size."""
    x = _floats(x, "rms_norm")
    what = f"rms_norm({x.describe()})"
    if x.ndim == 0:
        raise ArrayError(f"{what}: needs at least 1 dimension")
    w = _weights(what, x, weight, "weight", 1.0)
    if _has("RMSNorm", x):
        return _rows_kernel("rmsnorm", x, [w], f"{{n}}, {float(eps)!r}, {{rows}}", what)
    mean_square = apply("multiply", x, x).mean(axis=-1, keepdims=True)
    return apply("multiply", apply("divide", x, apply("sqrt", apply("add", mean_square, float(eps)))), w)


def attention(query: Array, key: Array, value: Array, causal: bool = False) -> Array:
    """``softmax(q k^T / sqrt(head_dim)) v`` per batch item and head: query (batch, heads, seq, head_dim) or
    (heads, seq, head_dim), key and value (batch, kv_heads, kv_len, head_dim) with heads a multiple of
    kv_heads (head h reads kv head h // (heads // kv_heads)); ``causal``: query i sees key j <= i + kv_len -
    seq. Attention where supported. Raises ArrayError for shapes that do not fit."""
    what = f"attention({', '.join(map(_describe, (query, key, value)))})"
    q, k, v = (_floats(a, "attention") for a in (query, key, value))
    common_device(what, [q, k, v])
    squeeze = q.ndim == 3
    if squeeze:
        q, k, v = (a.reshape(1, *a.shape) if a.ndim == 3 else a for a in (q, k, v))
    if q.ndim != 4 or k.ndim != 4 or k.shape != v.shape:
        raise ArrayError(f"{what}: needs query (batch, heads, seq, head_dim) and key, value of one shape "
                         "(batch, kv_heads, kv_len, head_dim)")
    batch, heads, seq, dim = q.shape
    _, kv_heads, kv_len, kdim = k.shape
    if k.shape[0] != batch or kdim != dim or kv_heads == 0 or heads % kv_heads:
        raise ArrayError(f"{what}: key/value must have batch {batch}, head_dim {dim} and a number of heads "
                         f"dividing {heads}")
    if causal and kv_len < seq:
        raise ArrayError(f"{what}: causal attention needs kv_len >= seq (a query would see no key)")
    if len({q.dtype, k.dtype, v.dtype}) > 1:
        ty = max((q.dtype, k.dtype, v.dtype), key=lambda t: t.bits)
        q, k, v = (a.astype(ty) for a in (q, k, v))
    if _has("Attention", q):
        text = (f"attention.{q.dtype.suffix} [{{out}}], [{{a0}}], [{{a1}}], [{{a2}}], {batch}, {heads}, {seq}, "
                f"{dim}, {kv_len}, {'true' if causal else 'false'}, {kv_heads}, 0")
        out = launch_kernel(text, q.shape, [q, k, v], what)
    else:
        out = _attention_composite(q, k, v, causal)
    return out.reshape(out.shape[1:]) if squeeze else out


def _attention_composite(q: Array, k: Array, v: Array, causal: bool) -> Array:
    from .creation import arange
    from .linalg import matmul
    batch, heads, seq, dim = q.shape
    kv_heads, kv_len = k.shape[1], k.shape[2]
    group = heads // kv_heads
    grouped = q.reshape(batch, kv_heads, group * seq, dim)   # heads h = kv head * group + j
    scores = apply("multiply", matmul(grouped, k.swapaxes(-1, -2)), 1.0 / math.sqrt(dim))
    if causal:
        rows = arange(seq, dtype="int32", device=q.device).reshape(seq, 1)
        cols = arange(kv_len, dtype="int32", device=q.device)
        hidden = apply("greater", cols, apply("add", rows, kv_len - seq))
        scores = apply("where", hidden, float("-inf"), scores.reshape(batch, kv_heads, group, seq, kv_len))
        scores = scores.reshape(batch, kv_heads, group * seq, kv_len)
    return matmul(softmax(scores, axis=-1), v).reshape(batch, heads, seq, dim)


def _pair(value: Any, what: str, name: str) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(p, int) and p >= 0 for p in pair):
        raise ArrayError(f"{what}: {name} must be an int or a pair of non-negative ints, got {value!r}")
    return pair  # type: ignore[return-value]


def conv2d(x: Array, weight: Array, bias: Array | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Array:
    """PyTorch's NCHW ``conv2d`` (cross-correlation): x (batch, in_channels, height, width), weight
    (out_channels, in_channels // groups, kernel_h, kernel_w), bias (out_channels,) or None; zero
    padding. Conv2D where supported, else columns of the padded input times the weights (GEMM).
    Raises ArrayError for shapes, strides or groups that do not fit."""
    what = f"conv2d({_describe(x)}, {_describe(weight)})"
    x, w = _floats(x, "conv2d"), _floats(weight, "conv2d")
    arrays = [x, w] + ([bias] if bias is not None else [])
    common_device(what, [a for a in arrays if isinstance(a, Array)])
    (sh, sw), (ph, pw), (dh, dw) = (_pair(v, what, n) for v, n in ((stride, "stride"), (padding, "padding"),
                                                                  (dilation, "dilation")))
    if x.ndim != 4 or w.ndim != 4:
        raise ArrayError(f"{what}: needs x (batch, channels, height, width) and weight (out, in/groups, kh, kw)")
    batch, channels, height, width = x.shape
    out_channels, per_group, kh, kw = w.shape
    if (groups < 1 or channels % groups or out_channels % groups or per_group * groups != channels or not sh
            or not sw or not dh or not dw or not kh or not kw):
        raise ArrayError(f"{what}: in_channels {channels} and out_channels {out_channels} must be multiples of "
                         f"groups {groups} with weight in/groups {per_group}; strides, dilations and the kernel "
                         "must be positive")
    oh = (height + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (width + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise ArrayError(f"{what}: the dilated kernel is larger than the padded input (no output)")
    if w.dtype != x.dtype:
        w = w.astype(x.dtype)
    b = _weights(what, x, bias, "bias", 0.0, out_channels) if bias is not None else None
    if _has("Conv2D", x):
        text = (f"conv2d.{x.dtype.suffix} [{{out}}], [{{a0}}], [{{a1}}], {batch}, {channels}, {out_channels}, "
                f"{height}, {width}, {kh}, {kw}, {sh}, {sw}, {ph}, {pw}, {dh}, {dw}, {groups}, "
                f"{'true' if b is not None else 'false'}, [{{a{2 if b is not None else 0}}}]")
        return launch_kernel(text, (batch, out_channels, oh, ow), [x, w] + ([b] if b is not None else []), what)
    return _conv2d_composite(x, w, b, (sh, sw), (ph, pw), (dh, dw), groups, (oh, ow))


def _padded(x: Array, ph: int, pw: int) -> Array:
    from .creation import zeros
    from .manipulation import concatenate
    batch, channels, height, width = x.shape
    if ph:
        rows = zeros((batch, channels, ph, width), x.dtype, x.device)
        x = concatenate([rows, x, rows], axis=2)
    if pw:
        cols = zeros((batch, channels, height + 2 * ph, pw), x.dtype, x.device)
        x = concatenate([cols, x, cols], axis=3)
    return x


def _conv2d_composite(x: Array, w: Array, b: Array | None, stride: Sequence[int], padding: Sequence[int],
                      dilation: Sequence[int], groups: int, out_hw: Sequence[int]) -> Array:
    from .linalg import matmul
    from .manipulation import concatenate, stack
    (sh, sw), (dh, dw), (oh, ow) = stride, dilation, out_hw
    batch, channels = x.shape[:2]
    out_channels, per_group, kh, kw = w.shape
    x = _padded(x, *padding)
    taps = [x[:, :, p * dh: p * dh + sh * (oh - 1) + 1: sh, q * dw: q * dw + sw * (ow - 1) + 1: sw]
            for p in range(kh) for q in range(kw)]
    columns = stack(taps, axis=2)        # (batch, channels, kh*kw, oh, ow): channel-major as the weights
    outs = []
    per_out = out_channels // groups
    for g in range(groups):
        cols = columns[:, g * per_group:(g + 1) * per_group].reshape(batch, per_group * kh * kw, oh * ow)
        weights = w[g * per_out:(g + 1) * per_out].reshape(per_out, per_group * kh * kw)
        # (batch, oh*ow, K) @ (K, per_out): one GEMM of batch*oh*ow rows, then back to (batch, per_out, oh*ow)
        outs.append(matmul(cols.swapaxes(1, 2), weights.T).swapaxes(1, 2))
    out = (outs[0] if groups == 1 else concatenate(outs, axis=1)).reshape(batch, out_channels, oh, ow)
    if b is not None:
        out = apply("add", out, b.reshape(out_channels, 1, 1))
    return out
