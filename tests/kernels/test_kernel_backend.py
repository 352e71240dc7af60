"""KernelBackend against NumPy (float64 formulas written here), on every available backend, with the
kernel instructions and with the compositions."""

from __future__ import annotations

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web.errors import ArrayError

RTOL, ATOL = 2e-5, 2e-6


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _f32(*shape, seed=0):
    return _rng(seed).standard_normal(shape).astype(np.float32)


def _close(actual, expected, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), expected, rtol=rtol, atol=atol)


def test_name_is_the_backends(kb, device):
    assert kb.name() == device.name


def test_matmul_vec_and_into(kb):
    w, x = _f32(37, 70), _f32(70, seed=1)
    expected = w.astype(np.float64) @ x
    _close(kb.matmul_vec(w, x).to_host(), expected)
    out = kb.tensor(np.full(37, 9.0, np.float32))
    kb.matmul_vec_into(kb.tensor(w), kb.tensor(x), out)
    _close(out.to_host(), expected)


def test_matmul(kb):
    a, b = _f32(9, 65), _f32(65, 33, seed=2)
    _close(kb.matmul(a, b).to_host(), a.astype(np.float64) @ b)


def test_rmsnorm_in_place_over_rows(kb):
    x, weight = _f32(3, 96), _f32(96, seed=3)
    t = kb.tensor(x)
    kb.rmsnorm(t, weight, 1e-5)
    x64 = x.astype(np.float64)
    expected = x64 / np.sqrt((x64 ** 2).mean(axis=-1, keepdims=True) + 1e-5) * weight
    _close(t.to_host(), expected)


def test_softmax_in_place(kb):
    x = _f32(4, 50) * 4
    t = kb.tensor(x)
    kb.softmax(t)
    e = np.exp(x - x.max(axis=-1, keepdims=True)).astype(np.float64)
    _close(t.to_host(), e / e.sum(axis=-1, keepdims=True))


def test_softmax_view_leaves_the_rest(kb):
    x = _f32(20)
    t = kb.tensor(x)
    kb.softmax_view(t, 7, offset=5)
    part = np.exp(x[5:12].astype(np.float64) - x[5:12].max())
    got = t.to_host()
    _close(got[5:12], part / part.sum())
    assert got[:5].tobytes() == x[:5].tobytes() and got[12:].tobytes() == x[12:].tobytes()


def test_silu(kb):
    x = _f32(300)
    x64 = x.astype(np.float64)
    _close(kb.silu(x).to_host(), x64 / (1 + np.exp(-x64)), rtol=1e-5, atol=1e-6)


def _rope64(x, cos, sin):
    half = x.shape[-1] // 2
    a, b = x[..., :half].astype(np.float64), x[..., half:].astype(np.float64)
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def test_apply_rope_with_given_angles(kb):
    x = _f32(4, 16)
    angles = 3 * 10000.0 ** (-np.arange(8) / 8)
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    t = kb.tensor(x)
    kb.apply_rope(t, cos, sin)
    _close(t.to_host(), _rope64(x, cos.astype(np.float64), sin.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_apply_rope_at_position(kb):
    x = _f32(3, 2, 32)  # seq 3, heads 2
    freqs = (10000.0 ** (-np.arange(16) / 16)).astype(np.float32)
    t = kb.tensor(x)
    kb.apply_rope_at(t, freqs, 5)
    angles = (5 + np.arange(3))[:, None, None] * freqs.astype(np.float64)
    _close(t.to_host(), _rope64(x, np.cos(angles), np.sin(angles)), rtol=1e-5, atol=1e-5)


def test_apply_rope_row_reads_the_positions_angles(kb):
    x = _f32(3, 32)  # heads 3
    freqs = (10000.0 ** (-np.arange(16) / 16)).astype(np.float32)
    angles = kb.rope_angles(freqs, 12)
    expected_angles = (np.arange(12)[:, None] * freqs.astype(np.float64)).astype(np.float32)
    assert angles.to_host().tobytes() == expected_angles.tobytes()   # rounded once to float32
    for pos in (0, 7, 11):
        t = kb.tensor(x)
        kb.apply_rope_row(t, angles, pos)
        a = expected_angles[pos].astype(np.float64)
        _close(t.to_host(), _rope64(x, np.cos(a), np.sin(a)), rtol=1e-5, atol=1e-5)
    with pytest.raises(ArrayError, match="apply_rope_row: .* at position 12"):
        kb.apply_rope_row(kb.tensor(x), angles, 12)


def test_attention_at_equals_attention_over_the_first_rows(kb):
    heads, kv_heads, max_seq, d = 4, 2, 8, 16
    k_cache, v_cache = kb.tensor(_f32(kv_heads, max_seq, d, seed=2)), kb.tensor(_f32(kv_heads, max_seq, d, seed=3))
    keys, values = k_cache.to_host().astype(np.float64), v_cache.to_host().astype(np.float64)
    q = _f32(heads, d, seed=9)
    for pos in (0, 3, 7):   # the keys past pos are in the cache and must not be seen
        out = kb.attention_at(q, k_cache, v_cache, pos).to_host()
        for h in range(heads):
            s = keys[h // 2, :pos + 1] @ q[h] / np.sqrt(d)
            p = np.exp(s - s.max())
            _close(out[h], p @ values[h // 2, :pos + 1] / p.sum(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ArrayError, match="attention_at: .* position 8 do not fit"):
        kb.attention_at(q, k_cache, v_cache, 8)


def test_attention_scores_and_weighted_sum(kb):
    q, keys = _f32(24), _f32(10, 24, seed=4)
    scores = kb.tensor(np.full(12, 7.0, np.float32))
    kb.compute_attention_scores(q, keys, scores, 0.25, rows=6)
    got = scores.to_host()
    _close(got[:6], 0.25 * (keys[:6].astype(np.float64) @ q))
    assert (got[6:] == 7.0).all()
    weights, out = _f32(10, seed=5), kb.zeros((24,))
    kb.weighted_sum_rows(weights, keys, out, rows=6)
    _close(out.to_host(), weights[:6].astype(np.float64) @ keys[:6])


def test_kv_cache_and_grouped_attention(kb):
    heads, kv_heads, max_seq, d = 4, 2, 8, 16
    k_cache, v_cache = kb.zeros((kv_heads, max_seq, d)), kb.zeros((kv_heads, max_seq, d))
    keys, values = _f32(5, kv_heads, d, seed=6), _f32(5, kv_heads, d, seed=7)
    for pos in range(5):
        kb.kv_cache_update(k_cache, keys[pos], pos)
        kb.kv_cache_update(v_cache, values[pos], pos)
    host = k_cache.to_host()
    assert host[:, :5].tobytes() == keys.transpose(1, 0, 2).tobytes() and not host[:, 5:].any()
    q = _f32(heads, d, seed=8)
    out = kb.attention(q, k_cache, v_cache, 5).to_host()
    for h in range(heads):
        k, v = keys[:, h // 2].astype(np.float64), values[:, h // 2].astype(np.float64)
        s = k @ q[h] / np.sqrt(d)
        p = np.exp(s - s.max())
        _close(out[h], p @ v / p.sum(), rtol=1e-5, atol=1e-5)


def test_errors_name_the_method_and_shapes(kb):
    w, x = kb.tensor(_f32(4, 3)), kb.tensor(_f32(5))
    with pytest.raises(ArrayError, match=r"matmul_vec_into: w float32\[4, 3\] @ x float32\[5\]"):
        kb.matmul_vec_into(w, x, kb.zeros((4,)))
    with pytest.raises(ArrayError, match=r"matmul_vec: w float32\[4, 3\] @ x float32\[5\]: inner dimensions differ"):
        kb.matmul_vec(w, x)   # the method called is named, not the one it delegates to
    with pytest.raises(ArrayError, match="rmsnorm: x is written in place"):
        kb.rmsnorm(np.ones(3, np.float32), np.ones(3, np.float32), 1e-5)
    with pytest.raises(ArrayError, match="softmax_view: elements 2..9"):
        kb.softmax_view(kb.zeros((5,)), 7, offset=2)
    v = kb.zeros((3,))
    with pytest.raises(ArrayError, match="may not share its buffer"):
        kb.matmul_vec_into(kb.zeros((3, 3)), v, v)
    with pytest.raises(ArrayError, match="kv_cache_update: .* at position 8"):
        kb.kv_cache_update(kb.zeros((2, 8, 4)), np.zeros((2, 4), np.float32), 8)


def test_a_position_that_is_not_an_integer_is_refused_not_truncated(kb):
    """1.5 would be truncated to row 1 (another token's row): positions and lengths must be integers."""
    cache = kb.zeros((2, 8, 4))
    row = np.ones((2, 4), np.float32)
    kb.kv_cache_update(cache, row, np.int64(3))   # a NumPy integer is an integer
    assert cache.to_host()[:, 3].tolist() == row.tolist()
    with pytest.raises(ArrayError, match=r"kv_cache_update: position must be an integer, not 1\.5"):
        kb.kv_cache_update(cache, row, 1.5)
    assert cache.to_host()[:, 1].tolist() == np.zeros((2, 4)).tolist()   # nothing written
    q, k, v = _f32(2, 4), kb.tensor(_f32(2, 8, 4, seed=2)), kb.tensor(_f32(2, 8, 4, seed=3))
    with pytest.raises(ArrayError, match="attention_at: position must be an integer, not 2.0"):
        kb.attention_at(q, k, v, 2.0)
    with pytest.raises(ArrayError, match="attention: kv_len must be an integer, not the bool True"):
        kb.attention(q, k, v, True)
    angles = kb.rope_angles(np.ones(2, np.float32), 8)
    with pytest.raises(ArrayError, match="apply_rope_row: position must be an integer"):
        kb.apply_rope_row(kb.tensor(_f32(2, 4)), angles, 0.5)
    with pytest.raises(ArrayError, match="apply_rope_at: position must be an integer"):
        kb.apply_rope_at(kb.tensor(_f32(2, 4)), np.ones(2, np.float32), "3")


def test_not_under_jit(kb):
    t = kb.zeros((4,))

    @anp.jit
    def f(x):
        kb.softmax(t)
        return x + 1

    with pytest.raises(ArrayError, match="softmax: KernelBackend operations .* run eagerly"):
        f(anp.ones((2,), device=kb.device))
