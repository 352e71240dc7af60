"""jit graphs exported to JSON kernels (``jit_to_kernel`` / ``JitFunction.to_kernel``) and round-tripped on
every backend: the kernel's program (json_to_program) gives the function's values (NumPy written here, and the
jit call's own bits), ``kernel_function`` of the kernel exports to the same kernel, and what a kernel cannot
say is refused naming it."""

from __future__ import annotations

import json

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web.errors import ProgramError
from atlas_web.translate import jit_to_kernel, json_to_program, kernel_function, read_kernel

RNG = np.random.default_rng(14)


def gated(x, bias, k):
    y = anp.relu(2.0 * x - 0.5) + bias
    z = anp.where(y > 1.0, y * k, anp.tanh(y))
    return z, (y * y).astype("int32"), y <= 0.25


def gated_numpy(x, bias, k):
    y = np.maximum(np.float32(2.0) * x - np.float32(0.5), np.float32(0)) + bias
    z = np.where(y > 1.0, y * k.astype(np.float32), np.tanh(y.astype(np.float64)))
    return z, (y * y).astype(np.int32), y <= 0.25


def test_an_elementwise_function_round_trips(device):
    xs = RNG.uniform(-2, 2, (3, 40)).astype(np.float32)
    bs = RNG.uniform(-1, 1, 40).astype(np.float32)
    ks = np.array([[1], [2], [-3]], np.int16)
    x, bias, k = (anp.array(v, device=device) for v in (xs, bs, ks))
    fast = anp.jit(gated)
    kernel = fast.to_kernel(x, bias, k)
    assert kernel == jit_to_kernel(gated, x, bias, k)
    assert [v["name"] for v in kernel["inputs"]] == ["x", "bias", "k"]
    assert [v["dtype"] for v in kernel["inputs"]] == ["float32", "float32", "int16"]
    assert kernel["ops"][0] == {"op": "multiply", "in": [2.0, "x"], "out": "v1"}
    json.loads(json.dumps(kernel))   # plain JSON
    read_kernel(kernel)
    program, bindings = json_to_program(kernel)
    got = bindings.run(program, device, {"x": xs, "bias": bs, "k": ks})
    jitted = fast(x, bias, k)
    expected = gated_numpy(xs, bs, ks)
    for name, mine, want in zip(kernel["outputs"], jitted, expected):
        host = got[name].to_host() if hasattr(got[name], "to_host") else np.asarray(got[name])
        assert host.tobytes() == mine.to_host().tobytes(), name   # the kernel's program: the jit call's bits
        np.testing.assert_allclose(host.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-6)
    # and back: the kernel as a function, traced again, is the same kernel
    again = kernel_function(kernel)
    assert jit_to_kernel(again, x, bias, k) == {**kernel, "name": kernel["name"]}


def test_a_final_reduction_exports(device):
    def scaled_sums(x):
        return anp.sum(anp.exp(x) * 0.5, axis=1, keepdims=True)
    xs = RNG.uniform(-1, 1, (4, 33)).astype(np.float32)
    x = anp.array(xs, device=device)
    kernel = jit_to_kernel(scaled_sums, x)
    assert kernel["ops"][-1] == {"op": "sum", "in": ["v2"], "axis": 1, "keepdims": True, "out": "v3"}
    program, bindings = json_to_program(kernel)
    got = bindings.run(program, device, {"x": xs})["v3"]
    host = got.to_host() if hasattr(got, "to_host") else np.asarray(got)
    assert host.shape == (4, 1)
    if device.supports("ADD", anp.float64):   # a sum in float64: the conversion is an op of the kernel
        wide = jit_to_kernel(lambda x: anp.sum(x, dtype="float64"), x)
        assert [op["op"] for op in wide["ops"]] == ["astype", "sum"] and wide["ops"][0]["dtype"] == "float64"
    np.testing.assert_allclose(host, np.sum(np.exp(xs.astype(np.float64)) * 0.5, axis=1, keepdims=True),
                               rtol=1e-5)


def test_what_a_kernel_cannot_say_is_refused(device):
    x = anp.array(RNG.uniform(-1, 1, (3, 4)).astype(np.float32), device=device)
    constant = anp.array([1.0, 2.0, 3.0, 4.0], device=device)
    cases = [
        (lambda x: x @ anp.transpose(x), r"'transpose\(float32\[3, 4\], \(1, 0\)\)' is not a kernel operation"),
        (lambda x: anp.reshape(x, (4, 3)) + 1, r"reads x of shape \(3, 4\) as float32\[4, 3\] \(a reshape"),
        (lambda x: x + constant, "an array made from host data"),
        (lambda x: x ** 2, r"ops\[0\] \(power\) has no per-lane form"),
        (lambda x: anp.mean(x) + 1, "a reduction must be the last operation"),
    ]
    for fn, message in cases:
        with pytest.raises(ProgramError, match=message):
            jit_to_kernel(fn, x)
