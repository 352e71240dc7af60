"""Making arrays and reading them back, on every available backend: host data of every kind keeps its
dtype (a float64 NumPy array is never reinterpreted as float32), the filled constructors match NumPy,
to_host / tolist / item / to_host_async."""

from __future__ import annotations

import array
import asyncio

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web import ArrayError, Type, UnsupportedOperation

from .helpers import check, has


def test_numpy_arrays_keep_their_dtype(device):
    for dtype in (np.float32, np.int32, np.uint8, np.int16, np.float16, np.int64, np.bool_):
        a = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
        check(anp.array(a, device=device), a)
    x = np.arange(4.0)  # float64: the allocate_typed(np.arange(4.0)) read as f32 gave [0, 1.875, 0, 3.75]
    if has(device, Type.F64):
        check(anp.array(x, device=device), x)
        check(anp.array(x, device=device) + anp.array(x, device=device), x + x)
    else:
        with pytest.raises(UnsupportedOperation):
            anp.array(x, device=device) + anp.array(x, device=device)
    check(anp.array(x, dtype="float32", device=device), x.astype(np.float32))
    check(anp.array(x, dtype=np.float32, device=device) * 2, x.astype(np.float32) * 2)


def test_python_data_and_buffers(device):
    check(anp.array([[1.5, 2], [3, 4]], device=device), np.float32([[1.5, 2], [3, 4]]))
    check(anp.array([1, 2, 3], device=device), np.int32([1, 2, 3]))
    check(anp.array([True, False], device=device), np.array([True, False]))
    check(anp.array(2.5, device=device), np.float32(2.5))
    check(anp.array([1, 2], dtype="uint16", device=device), np.uint16([1, 2]))
    check(anp.array(array.array("d", [1.0, 2.5]), dtype="float32", device=device), np.float32([1.0, 2.5]))
    check(anp.array(array.array("h", [1, -2]), device=device), np.int16([1, -2]))
    check(anp.array(memoryview(array.array("f", [1.0, 2.0])), device=device), np.float32([1, 2]))
    check(anp.array(memoryview(np.int32([[1, 2], [3, 4]])), device=device), np.int32([[1, 2], [3, 4]]))
    check(anp.array([], device=device), np.zeros(0, np.int32))
    with pytest.raises(ArrayError, match="ragged"):
        anp.array([[1, 2], [3]], device=device)
    with pytest.raises(ArrayError, match="'x' is not a number"):
        anp.array([1, "x"], device=device)
    with pytest.raises(ArrayError, match="cannot be stored as U8"):
        anp.array([300], dtype="uint8", device=device)


def test_filled_constructors(device):
    check(anp.zeros((2, 3), device=device), np.zeros((2, 3), np.float32))
    check(anp.ones(4, dtype="int8", device=device), np.ones(4, np.int8))
    check(anp.full((2, 2), 7, device=device), np.full((2, 2), 7, np.int32))
    check(anp.full(3, -1.25, dtype=anp.float16, device=device), np.full(3, -1.25, np.float16))
    check(anp.arange(5, device=device), np.arange(5, dtype=np.int32))
    check(anp.arange(1.0, 2.0, 0.25, device=device), np.arange(1.0, 2.0, 0.25, dtype=np.float32))
    check(anp.arange(10, 0, -3, dtype="int16", device=device), np.arange(10, 0, -3, dtype=np.int16))
    check(anp.linspace(-1, 1, 7, device=device), np.linspace(-1, 1, 7, dtype=np.float32))
    check(anp.linspace(0, 1, 4, endpoint=False, device=device), np.linspace(0, 1, 4, endpoint=False, dtype=np.float32))
    check(anp.eye(3, 4, k=1, device=device), np.eye(3, 4, k=1, dtype=np.float32))
    x = anp.arange(6, device=device)
    check(anp.zeros_like(x), np.zeros(6, np.int32))
    check(anp.full_like(x, 3), np.full(6, 3, np.int32))
    with pytest.raises(ArrayError, match="step must not be zero"):
        anp.arange(0, 1, 0)
    with pytest.raises(ArrayError, match="negative dimension"):
        anp.zeros((2, -1))


def test_results_on_the_host(device):
    x = anp.array(np.float32([[1, 2], [3, 4]]), device=device)
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert x.sum().item() == 10.0 and isinstance(x.sum().item(), float)
    assert (x > 2).tolist() == [[False, False], [True, True]]
    assert x.shape == (2, 2) and x.ndim == 2 and x.size == 4 and x.nbytes == 16 and x.dtype is Type.F32
    assert x.device is device and len(x) == 2 and float(x[1, 1]) == 4.0
    assert np.asarray(x).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert repr(x) == f"Array([[1.0, 2.0], [3.0, 4.0]], dtype=float32, device={device.name})"
    host = asyncio.run(x.to_host_async())
    assert host.dtype == np.float32 and host.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ArrayError, match=r"item: the array float32\[2, 2\] has 4 elements"):
        x.item()


def test_default_device_is_settable(device):
    anp.set_default_device(device)
    try:
        assert anp.zeros(3).device is device and anp.default_device() is device
        assert anp.array([1.0]).device is device
    finally:
        anp.set_default_device(None)
