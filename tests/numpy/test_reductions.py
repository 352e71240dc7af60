"""Reductions of atlas_web.numpy against NumPy computed here, on every available backend: every axis
form, keepdims, NumPy's result types (integer sums in 64 bits), NaN, empty reductions."""

from __future__ import annotations

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web import ArrayError, Type

from .helpers import check, has

RNG = np.random.default_rng(1414)
AXES = [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2)]


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean"])
def test_float_reductions_over_every_axis_form(device, name):
    a = RNG.uniform(0.5, 1.5, size=(3, 4, 5)).astype(np.float32)
    x = anp.array(a, device=device)
    for axis in AXES:
        for keepdims in (False, True):
            got = getattr(x, name)(axis=axis, keepdims=keepdims)
            check(got, getattr(a, name)(axis=axis, keepdims=keepdims), rtol=2e-5)
            check(getattr(anp, name)(x, axis, keepdims=keepdims), getattr(a, name)(axis=axis, keepdims=keepdims),
                  rtol=2e-5)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_take_the_first_best_and_the_first_nan(device, name):
    a = np.float32([[3, 1, 3, -2], [0, 5, 5, 1], [2, np.nan, 7, np.nan]])
    x = anp.array(a, device=device)
    for axis in (None, 0, 1, -1):
        check(getattr(x, name)(axis=axis), getattr(a, name)(axis=axis))
        check(getattr(x, name)(axis=axis, keepdims=True), getattr(a, name)(axis=axis, keepdims=True))
    b = RNG.integers(-5, 5, size=(4, 6)).astype(np.int32)
    check(getattr(anp.array(b, device=device), name)(axis=1), getattr(b, name)(axis=1))
    with pytest.raises(ArrayError, match="takes one axis"):
        getattr(x, name)(axis=(0, 1))


def test_nan_propagates_through_max_and_sum(device):
    a = np.float32([[1, np.nan, 3], [4, 5, 6]])
    x = anp.array(a, device=device)
    check(x.max(), a.max())
    check(x.max(axis=1), a.max(axis=1))
    check(x.sum(axis=0), a.sum(axis=0))


def test_integer_reductions_use_numpys_types(device):
    a = RNG.integers(-1000, 1000, size=(6, 7)).astype(np.int32)
    x = anp.array(a, device=device)
    check(x.max(axis=0), a.max(axis=0))
    check(x.min(), a.min())
    if has(device, Type.I64):
        check(x.sum(), a.sum())
        check(x.sum(axis=1), a.sum(axis=1))
        check(anp.array(np.uint8([200, 100, 7]), device=device).sum(), np.uint8([200, 100, 7]).sum())
        check((x > 0).sum(), (a > 0).sum())
    if has(device, Type.F64):
        check(x.mean(axis=0), a.mean(axis=0))


def test_var(device):
    a = RNG.normal(size=(4, 5)).astype(np.float32)
    x = anp.array(a, device=device)
    check(x.var(), a.var(), rtol=1e-5)
    check(x.var(axis=1, keepdims=True), a.var(axis=1, keepdims=True), rtol=1e-5)
    check(anp.var(x, 0, ddof=1), a.var(axis=0, ddof=1), rtol=1e-5)


def test_large_full_reduction_and_dtype_argument(device):
    a = RNG.uniform(-1, 1, size=100_003).astype(np.float32)
    x = anp.array(a, device=device)
    check(x.sum(), a.astype(np.float64).sum().astype(np.float32), rtol=1e-4)
    check(x.max(), a.max())
    b = a[:1001].copy()  # three chunks of atlas_web.numpy.reductions.ARG_CHUNK and a tail
    check(anp.array(b, device=device).argmin(), b.argmin())
    check(anp.array(b, device=device).argmax(keepdims=True), b.argmax(keepdims=True))
    b[[5, 700]] = np.nan
    check(anp.array(b, device=device).argmax(), b.argmax())
    check(x.sum(dtype="float32"), a.sum(dtype=np.float32), rtol=1e-4)


def test_empty_reductions(device):
    e = np.zeros((0, 3), np.float32)
    x = anp.array(e, device=device)
    check(x.sum(), e.sum())
    check(x.sum(axis=0), e.sum(axis=0))
    check(x.prod(axis=0), e.prod(axis=0))
    check(x.max(axis=1), e.max(axis=1))
    with pytest.raises(ArrayError, match=r"max\(float32\[0, 3\], axis=None\): a zero-size reduction"):
        x.max()
    with pytest.raises(ArrayError, match="axis 2 is out of range"):
        x.sum(axis=2)
