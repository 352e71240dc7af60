"""``atlas_web.numpy.random`` on every available backend against the generator written here in NumPy
(lowbias32 of the counter and key, then the documented exact steps): uniform bit for bit, normal within
the transcendental accuracy; keys, split, the module-wide state, and errors."""

from __future__ import annotations

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web import ArrayError


def lowbias32(x):
    x = x.astype(np.uint32)
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    x ^= x >> np.uint32(16)
    return x


def words(k, counters):
    return lowbias32(lowbias32(counters.astype(np.uint32) ^ np.uint32(k.k0)) ^ np.uint32(k.k1))


def uniform32(k, counters):
    return (words(k, counters) >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)


def uniform64(k, counters):
    hi = (words(k, 2 * counters) >> np.uint32(5)).astype(np.float64)
    lo = (words(k, 2 * counters + 1) >> np.uint32(6)).astype(np.float64)
    return (hi * 2.0 ** 26 + lo) * 2.0 ** -53


def test_uniform_is_the_documented_function_of_key_and_counter(device):
    k = anp.random.key(7)
    i = np.arange(3 * 1000)
    got = anp.random.uniform((3, 1000), -2.0, 3.0, key=k, device=device).to_host()
    expected = (np.float32(-2) + np.float32(5) * uniform32(k, i)).reshape(3, 1000)
    assert got.dtype == np.float32 and got.tobytes() == expected.tobytes()
    assert got.min() >= -2 and got.max() < 3
    if device.supports("STG", anp.float16):
        half = anp.random.uniform((1000,), dtype="float16", key=k, device=device).to_host()
        assert half.tobytes() == uniform32(k, np.arange(1000)).astype(np.float16).tobytes()
    if device.supports("ADD", anp.float64):
        wide = anp.random.uniform((500,), dtype="float64", key=k, device=device).to_host()
        assert wide.tobytes() == uniform64(k, np.arange(500)).tobytes()


def test_normal_is_box_muller_of_two_uniforms(device):
    k = anp.random.key(123)
    n = 20000
    got = anp.random.normal((n,), 1.0, 2.0, key=k, device=device).to_host()
    u1, u2 = uniform32(k, 2 * np.arange(n)).astype(np.float64), uniform32(k, 2 * np.arange(n) + 1).astype(np.float64)
    expected = 1 + 2 * np.sqrt(-2 * np.log(1 - u1)) * np.cos(2 * np.pi * u2)
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5)
    assert abs(got.mean() - 1) < 0.05 and abs(got.std() - 2) < 0.05


def test_keys_split_and_the_module_state(device):
    a = anp.random.uniform((64,), key=anp.random.key(1), device=device).to_host()
    b = anp.random.uniform((64,), key=anp.random.key(1), device=device).to_host()
    assert a.tobytes() == b.tobytes()
    left, right = anp.random.split(anp.random.key(1))
    assert left != right and left != anp.random.key(1)
    c = anp.random.uniform((64,), key=left, device=device).to_host()
    assert not np.array_equal(a, c)
    anp.random.seed(5)
    first = anp.random.uniform((8,), device=device).to_host()
    second = anp.random.uniform((8,), device=device).to_host()
    anp.random.seed(5)
    assert anp.random.uniform((8,), device=device).to_host().tobytes() == first.tobytes()
    assert not np.array_equal(first, second)


def test_bad_arguments_raise_array_errors(device):
    with pytest.raises(ArrayError, match="random.uniform: dtype must be float16, float32 or float64"):
        anp.random.uniform((3,), dtype="int32", device=device)
    with pytest.raises(ArrayError, match="key must be a random.Key"):
        anp.random.normal((3,), key=5, device=device)
    with pytest.raises(ArrayError, match="seed must be an int"):
        anp.random.key(1.5)
