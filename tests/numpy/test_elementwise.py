"""Elementwise operations of atlas_web.numpy against NumPy computed here, on every available backend:
broadcasting, Python scalars, comparisons and where, unary math, dtype promotion, empty arrays, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web import ArrayError, Type, UnsupportedOperation
from atlas_web.numpy.runtime import cached_kernels

from .helpers import check, has

RNG = np.random.default_rng(14)


def data(shape, dtype=np.float32, low=-4.0, high=4.0):
    return RNG.uniform(low, high, size=shape).astype(dtype)


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum,
}
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (5,)), ((4, 1), (1, 6)), ((1,), (2, 3))]


@pytest.mark.parametrize("name", BINARY)
def test_binary_ops_broadcast_like_numpy(device, name):
    for sa, sb in SHAPES:
        a, b = data(sa), data(sb, low=0.5)
        check(getattr(anp, name)(anp.array(a, device=device), anp.array(b, device=device)), BINARY[name](a, b))
        check(getattr(anp, name)(anp.array(b, device=device), anp.array(a, device=device)), BINARY[name](b, a))


def test_operators_and_python_scalars(device):
    a = data((3, 5))
    x = anp.array(a, device=device)
    check(x + 1.5, a + np.float32(1.5))
    check(2 - x, np.float32(2) - a)
    check(x * 3, a * np.float32(3))
    check(1 / (x * x + 1), np.float32(1) / (a * a + np.float32(1)))
    check(-x, -a)
    check(abs(x), np.abs(a))
    check(anp.relu(2 * x - 0.5), np.maximum(np.float32(2) * a - np.float32(0.5), 0))
    check(abs(x) ** 2, np.abs(a) ** 2, rtol=1e-5)
    check(2.0 ** anp.array(a[0], device=device), np.float32(2) ** a[0], rtol=1e-5)
    exponents = np.float32([2, 1, 0.5, 3, 1])
    check(abs(x) ** anp.array(exponents, device=device), np.abs(a) ** exponents, rtol=1e-5)


def test_a_new_scalar_value_reuses_the_program(device):
    x = anp.array(data((7,)), device=device)
    (x + 1.0).to_host()
    before = cached_kernels()
    for value in (2.0, -3.5, 1e-3):
        check(x + value, x.to_host() + np.float32(value))
    assert cached_kernels() == before


@pytest.mark.parametrize("name, cond", [("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
                                        ("less_equal", np.less_equal), ("greater", np.greater),
                                        ("greater_equal", np.greater_equal)])
def test_comparisons_give_boolean_arrays(device, name, cond):
    a = np.float32([[1, 2, np.nan, 4], [0, -1, 3, 3]])
    b = np.float32([1, 3, 2, np.nan])
    check(getattr(anp, name)(anp.array(a, device=device), anp.array(b, device=device)), cond(a, b))
    check(getattr(anp, name)(anp.array(a, device=device), 2.0), cond(a, np.float32(2)))


def test_where_and_operators_on_comparisons(device):
    a, b = data((4, 3)), data((3,))
    x, y = anp.array(a, device=device), anp.array(b, device=device)
    check(anp.where(x > y, x, y), np.where(a > b, a, b))
    check(anp.where(x > 0, x, 0.0), np.where(a > 0, a, np.float32(0)))
    check(anp.where(anp.array([1, 0, 2], dtype="int32", device=device), 1.0, y), np.where([1, 0, 2], np.float32(1), b))
    check(x == x, a == a)
    mask = (x < 0).to_host()
    assert mask.dtype == np.bool_ and mask.tolist() == (a < 0).tolist()
    assert (x < 0).tolist() == (a < 0).tolist()


UNARY = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "sigmoid": lambda v: 1 / (1 + np.exp(-v.astype(np.float64))),
    "relu": lambda v: np.maximum(v, 0),
    "gelu": lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v.astype(np.float64) ** 3))),
    "silu": lambda v: v / (1 + np.exp(-v.astype(np.float64))),
}


@pytest.mark.parametrize("name", UNARY)
def test_unary_math(device, name):
    a = data((5, 6), low=0.1 if name in ("log", "sqrt") else -4.0)
    for x, expected in ((anp.array(a, device=device), a), (anp.array(a, device=device)[::2, 1:], a[::2, 1:])):
        want = np.asarray(UNARY[name](expected)).astype(np.float32)
        check(getattr(anp, name)(x), want, rtol=2e-5, atol=1e-6)


def test_unary_of_integers_computes_in_numpys_float(device):
    a = np.int16([[1, 2], [3, 4]])
    check(anp.exp(anp.array(a, device=device)), np.exp(a), rtol=1e-6)
    check(anp.negative(anp.array(a, device=device)), -a)
    check(abs(anp.array(np.int32([-3, 5, -(2 ** 31)]), device=device)), np.abs(np.int32([-3, 5, -(2 ** 31)])))


def test_integer_arithmetic_wraps_and_promotes_as_numpy(device):
    a = np.int32([2 ** 31 - 1, -5, 7, 0])
    b = np.int32([1, 3, -2, 9])
    x, y = anp.array(a, device=device), anp.array(b, device=device)
    check(x + y, a + b)
    check(x * y, a * b)
    check(x - 3, a - 3)
    check(anp.maximum(x, y), np.maximum(a, b))
    check(anp.array(np.uint8([250, 3]), device=device) + anp.array(np.int8([-1, 100]), device=device),
          np.uint8([250, 3]) + np.int8([-1, 100]))
    if has(device, Type.F64):
        check(x / y, a / b)
        check(x + 0.5, a + 0.5)
        check(x + anp.array(np.float32([1, 2, 3, 4]), device=device), a + np.float32([1, 2, 3, 4]))
    else:
        with pytest.raises(UnsupportedOperation, match="divide"):
            x / y


def test_astype(device):
    a = np.float32([1.7, -2.5, 0.0, 300.2])
    x = anp.array(a, device=device)
    check(x.astype("int32"), a.astype(np.int32))
    check(x.astype(anp.int16), a.astype(np.int16))
    check(x.astype(bool), a.astype(bool))
    check(anp.array(np.int32([1, -2]), device=device).astype(np.float32), np.float32([1, -2]))
    check(x.astype(Type.F16), a.astype(np.float16))
    if has(device, Type.F64):
        check(x.astype(np.float64), a.astype(np.float64))


def test_empty_arrays(device):
    e = np.zeros((0, 3), np.float32)
    x = anp.array(e, device=device)
    check(x + anp.array(np.float32([1, 2, 3]), device=device), e + np.float32([1, 2, 3]))
    check(anp.exp(x), np.exp(e))
    check(x > 1.0, e > 1)
    assert anp.zeros((2, 0), device=device).tolist() == [[], []]


def test_shape_and_dtype_errors_name_the_operation(device):
    x = anp.array(data((3, 4)), device=device)
    with pytest.raises(ArrayError, match=r"add\(float32\[3, 4\], float32\[3\]\).*\(3, 4\), \(3,\) do not broadcast"):
        x + anp.array(data((3,)), device=device)
    with pytest.raises(ArrayError, match="multiply.*'two' is not a number"):
        x * "two"
    with pytest.raises(ArrayError, match="not an array element type"):
        x.astype("complex64")
    with pytest.raises(ArrayError, match="add takes 2 arguments"):
        anp.add(x)


def test_arrays_on_different_devices_are_refused(device):
    from atlas_web.registry import get_backend
    other = get_backend(device.name)  # another backend of the same kind: its buffers are not this one's
    try:
        x, y = anp.array([1.0], device=device), anp.array([2.0], device=other)
        with pytest.raises(ArrayError, match="different devices"):
            x + y
    finally:
        other.close()


def test_bool_and_int_scalars_with_every_array_type(device):
    i = np.int32([1, -2, 3])
    x = anp.array(i, device=device)
    check(x + True, i + True)
    check(x * False, i * False)
    check(anp.array(np.float32([0.5]), device=device) + True, np.float32([0.5]) + True)
    check(anp.maximum(x, 2), np.maximum(i, 2))


def test_recycled_buffers_do_not_leak_values_into_zeros(device):
    x = anp.array(np.float32([1, 2, 3, 4]), device=device)
    y = x + 1.0
    handle = y.buffer.handle
    del y
    z = anp.zeros(4, device=device)  # never a recycled buffer: its zeros are the allocation's
    assert z.tolist() == [0.0] * 4 and z.buffer.handle != handle
    w = x * 3.0  # a result may take the recycled buffer; it writes every element
    assert w.tolist() == [3.0, 6.0, 9.0, 12.0]


def test_scalars_with_large_arrays(device):
    # from SPLAT_MIN elements a scalar goes to the cooperative map as a cached constant array
    from atlas_web.numpy.elementwise import SPLAT_MIN
    a = data((SPLAT_MIN + 5,))
    x = anp.array(a, device=device)
    check(2 * x - 0.5, np.float32(2) * a - np.float32(0.5))
    check(x * -0.0, a * np.float32(-0.0))
    check(x * 0.0, a * np.float32(0.0))
    check(anp.maximum(x, float("nan")), np.maximum(a, np.float32("nan")))
    check(1.5 / x, np.float32(1.5) / a)
    check(x > 0.25, a > np.float32(0.25))
