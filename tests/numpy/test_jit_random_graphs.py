"""Differential test of ``jit`` on every available backend: random functions of three arrays (broadcasting
operands, reversed and offset slices, transposes, reshapes, concatenations, axis and full reductions,
comparisons, ``where``, softmax, conversions) give eager evaluation's bytes when traced and fused (or
raise UnsupportedOperation where eager does). Seeded:
the same graphs every run; a failure names the seed and the expression."""

from __future__ import annotations

import random

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web import UnsupportedOperation

UNARY = {
    "exp(a*0.1)": lambda a: anp.exp(a * 0.1), "tanh": anp.tanh, "abs": abs, "neg": lambda a: -a, "relu": anp.relu,
    "T": lambda a: a.T, "reversed": lambda a: a[::-1], "sqrt|a|": lambda a: anp.sqrt(abs(a)),
    "sum(-1, keepdims)": lambda a: a.sum(axis=-1, keepdims=True), "max(0)": lambda a: a.max(axis=0),
    "a > 0.1": lambda a: a > 0.1, "ravel": lambda a: a.reshape(-1), "mean": lambda a: a.mean(),
    "softmax": anp.softmax, "a[1:]": lambda a: a[1:], "concat(a, a)": lambda a: anp.concatenate([a, a]),
    "astype(int32)": lambda a: (a * 4).astype("int32"),
}
BINARY = {
    "+": lambda a, b: a + b, "*": lambda a, b: a * b, "maximum": anp.maximum, "-": lambda a, b: a - b,
    "where(a > b)": lambda a, b: anp.where(a > b, a, b), "a / (|b| + 1)": lambda a, b: a / (abs(b) + 1),
}


def expression(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(["x", "y", "z", 0.5])
    if rng.random() < 0.5:
        return (rng.choice(sorted(UNARY)), expression(rng, depth - 1))
    return (rng.choice(sorted(BINARY)), expression(rng, depth - 1), expression(rng, depth - 1))


def evaluate(tree, env):
    """The tree's value; an operation that does not apply (a scalar operand, shapes that do not broadcast,
    an empty slice) leaves its first operand."""
    if not isinstance(tree, tuple):
        return env.get(tree, tree)
    args = [evaluate(t, env) for t in tree[1:]]
    if not isinstance(args[0], anp.Array) or args[0].ndim == 0 or args[0].size < 2:
        return args[0]
    try:
        return UNARY[tree[0]](args[0]) if len(args) == 1 else BINARY[tree[0]](*args)
    except anp.ArrayError:
        return args[0]


@pytest.mark.parametrize("seed", range(24))
def test_random_functions_fuse_to_eagers_bytes(device, seed):
    rng = random.Random(seed)
    data = np.random.default_rng(seed)
    arrays = [anp.array(data.uniform(-2, 2, s).astype(np.float32), device=device) for s in ((4, 6), (6,), (4, 1))]
    trees = [expression(rng, 4) for _ in range(2)]

    def f(x, y, z):
        env = {"x": x, "y": y, "z": z}
        return tuple(v if isinstance(v, anp.Array) else x for v in (evaluate(t, env) for t in trees))
    try:
        eager = f(*arrays)
    except UnsupportedOperation:   # a dtype the device lacks (float64 on WebGPU): jit refuses it too
        with pytest.raises(UnsupportedOperation):
            anp.jit(f)(*arrays)
        return
    fused = anp.jit(f)(*arrays)
    for got, expected in zip(fused, eager):
        a, b = got.to_host(), expected.to_host()
        assert (a.shape, a.dtype) == (b.shape, b.dtype), trees
        assert a.tobytes() == b.tobytes(), (seed, trees, a, b)
