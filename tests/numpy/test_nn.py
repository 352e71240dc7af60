"""The neural-network operations of atlas_web.numpy on every available backend against NumPy written here
(binary64): softmax/log_softmax along any axis, layer_norm, rms_norm, grouped-KV and causal attention,
conv2d with stride/padding/dilation/groups/bias; both paths (the kernel instruction where the device
supports it, the composition of array operations where not, forced by hiding the kernel), under jit,
and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web import ArrayError

from .helpers import check

RNG = np.random.default_rng(1114)


def normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def np_softmax(a, axis=-1):
    a = a.astype(np.float64)
    e = np.exp(a - a.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def np_attention(q, k, v, causal):
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1).astype(np.float64), np.repeat(v, group, axis=1).astype(np.float64)
    scores = q.astype(np.float64) @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    if causal:
        seq, kv_len = q.shape[2], k.shape[2]
        scores = np.where(np.arange(kv_len)[None, :] > np.arange(seq)[:, None] + kv_len - seq, -np.inf, scores)
    return np_softmax(scores) @ v


def np_conv2d(x, w, b, stride, padding, dilation, groups):
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, _, height, width = x.shape
    out_c, per_group, kh, kw = w.shape
    oh, ow = (height - dh * (kh - 1) - 1) // sh + 1, (width - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, out_c, oh, ow))
    for o in range(out_c):
        g = o // (out_c // groups)
        for c in range(per_group):
            for p in range(kh):
                for q in range(kw):
                    out[:, o] += x[:, g * per_group + c, p * dh:p * dh + sh * (oh - 1) + 1:sh,
                                   q * dw:q * dw + sw * (ow - 1) + 1:sw] * w[o, c, p, q]
    return out if b is None else out + b[None, :, None, None]


@pytest.fixture(params=["kernel", "composite"])
def path(request, device, monkeypatch):
    """Each test runs with the device's kernels as they are, and again with every NN kernel hidden (the
    composition of array operations runs)."""
    if request.param == "composite":
        real = device.supports
        hidden = {"Softmax", "LogSoftmax", "LayerNorm", "RMSNorm", "Attention", "Conv2D"}
        monkeypatch.setattr(device, "supports", lambda op, ty=None: op not in hidden and real(op, ty))
    return request.param


def test_softmax_and_log_softmax_along_each_axis(device, path):
    a = normal(4, 6, 5) * 3
    x = anp.array(a, device=device)
    for axis in (-1, 0, 1):
        check(anp.softmax(x, axis=axis), np_softmax(a, axis).astype(np.float32), rtol=1e-5, atol=1e-7)
        check(anp.log_softmax(x, axis=axis), np.log(np_softmax(a, axis)).astype(np.float32), rtol=1e-5, atol=1e-6)
    check(anp.softmax(anp.array([1000.0, 1000.0, -1000.0], device=device)), np.float32([0.5, 0.5, 0]))


def test_layer_norm_and_rms_norm(device, path):
    a, g, b = normal(3, 4, 33) * 2 + 1, normal(33), normal(33)
    x = anp.array(a, device=device)
    wide = a.astype(np.float64)
    centered = wide - wide.mean(-1, keepdims=True)
    expected = centered / np.sqrt((centered ** 2).mean(-1, keepdims=True) + 1e-5) * g + b
    check(anp.layer_norm(x, anp.array(g, device=device), b), expected.astype(np.float32), rtol=1e-5, atol=1e-5)
    check(anp.layer_norm(x), (centered / np.sqrt((centered ** 2).mean(-1, keepdims=True) + 1e-5)).astype(np.float32),
          rtol=1e-5, atol=1e-5)
    rms = wide / np.sqrt((wide ** 2).mean(-1, keepdims=True) + 1e-6) * g
    check(anp.rms_norm(x, g), rms.astype(np.float32), rtol=1e-5, atol=1e-5)
    with pytest.raises(ArrayError, match=r"layer_norm\(float32\[3, 4, 33\]\): gamma has shape \(4,\), not \(33,\)"):
        anp.layer_norm(x, np.ones(4, np.float32))


@pytest.mark.parametrize("causal", [False, True])
def test_attention_with_grouped_kv_heads(device, path, causal):
    q, k, v = normal(2, 4, 3, 8), normal(2, 2, 5, 8), normal(2, 2, 5, 8)
    out = anp.attention(*(anp.array(a, device=device) for a in (q, k, v)), causal=causal)
    check(out, np_attention(q, k, v, causal).astype(np.float32), rtol=1e-5, atol=1e-5)
    three = anp.attention(*(anp.array(a[0], device=device) for a in (q, k, v)), causal=causal)
    check(three, np_attention(q[:1], k[:1], v[:1], causal)[0].astype(np.float32), rtol=1e-5, atol=1e-5)
    with pytest.raises(ArrayError, match="attention"):
        anp.attention(anp.array(q, device=device), anp.array(normal(2, 3, 5, 8), device=device),
                      anp.array(normal(2, 3, 5, 8), device=device))


@pytest.mark.parametrize("stride,padding,dilation,groups,bias", [
    ((1, 1), (0, 0), (1, 1), 1, False), ((2, 1), (1, 2), (1, 1), 1, True), ((1, 2), (1, 0), (2, 1), 2, True)])
def test_conv2d_like_pytorch(device, path, stride, padding, dilation, groups, bias):
    x, w = normal(2, 4, 9, 8), normal(6, 4 // groups, 3, 2)
    b = normal(6) if bias else None
    out = anp.conv2d(anp.array(x, device=device), anp.array(w, device=device),
                     None if b is None else anp.array(b, device=device), stride, padding, dilation, groups)
    check(out, np_conv2d(x, w, b, stride, padding, dilation, groups).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_conv2d_errors_name_the_shapes(device):
    x = anp.array(normal(1, 3, 5, 5), device=device)
    with pytest.raises(ArrayError, match=r"conv2d\(float32\[1, 3, 5, 5\], float32\[4, 2, 3, 3\]\).*groups"):
        anp.conv2d(x, anp.array(normal(4, 2, 3, 3), device=device))
    with pytest.raises(ArrayError, match="larger than the padded input"):
        anp.conv2d(x, anp.array(normal(4, 3, 7, 1), device=device))


def test_a_transformer_block_under_jit(device, path):
    a, g, w1, w2 = normal(6, 16), normal(16), normal(16, 32) * 0.2, normal(32, 16) * 0.2

    def block(x, g, w1, w2):
        h = anp.rms_norm(x, g)
        return x + anp.silu(h @ w1) @ w2, anp.softmax(x @ x.T)
    arrays = [anp.array(v, device=device) for v in (a, g, w1, w2)]
    fast = anp.jit(block)
    out, probs = fast(*arrays)
    wide = a.astype(np.float64)
    h = wide / np.sqrt((wide ** 2).mean(-1, keepdims=True) + 1e-6) * g
    hidden = h @ w1
    check(out, (wide + (hidden / (1 + np.exp(-hidden))) @ w2).astype(np.float32), rtol=1e-4, atol=1e-5)
    check(probs, np_softmax(wide @ wide.T).astype(np.float32), rtol=1e-4, atol=1e-6)
    eager_out, eager_probs = block(*arrays)
    assert out.to_host().tobytes() == eager_out.to_host().tobytes()
    assert probs.to_host().tobytes() == eager_probs.to_host().tobytes()
