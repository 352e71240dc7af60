"""The Backend protocol's typed helpers (allocate_typed, copy_typed_to, copy_typed_from) with NumPy arrays,
``array.array`` and plain sequences, with and without NumPy: the values land as the named type or the
helper raises a documented error naming the problem; nothing is reinterpreted silently."""

from __future__ import annotations

import array

import numpy as np
import pytest

import atlas_web.backend
from atlas_web import AllocationFailed, InvalidBuffer, Type, UnsupportedOperation
from atlas_web.reference import CpuBackend


@pytest.fixture(params=["numpy", "no-numpy"])
def backend(request, monkeypatch):
    """A CpuBackend whose typed helpers see NumPy, or (as under Pyodide without NumPy) do not."""
    if request.param == "no-numpy":
        monkeypatch.setattr(atlas_web.backend, "_numpy", lambda: None)
    return CpuBackend()


def _values(backend, handle, ty, **kwargs) -> list:
    return list(backend.copy_typed_from(handle, ty, **kwargs))


def test_numpy_arrays_keep_their_type_or_are_converted_to_ty():
    backend = CpuBackend()
    assert _values(backend, backend.allocate_typed(np.array([1.5, -2.0], dtype=np.float32)), Type.F32) == [1.5, -2.0]
    assert _values(backend, backend.allocate_typed(np.array([1.5, 2.25]), Type.F32), Type.F32) == [1.5, 2.25]
    assert _values(backend, backend.allocate_typed(np.ones((2, 2), dtype=np.int16)), Type.I16) == [1, 1, 1, 1]
    strided = np.arange(8, dtype=np.float32)[::2]
    assert _values(backend, backend.allocate_typed(strided), Type.F32) == [0.0, 2.0, 4.0, 6.0]


def test_big_endian_numpy_arrays_are_stored_little_endian():
    backend = CpuBackend()
    big = np.array([1.0, -2.5], dtype=">f4")
    assert _values(backend, backend.allocate_typed(big), Type.F32) == [1.0, -2.5]
    assert _values(backend, backend.allocate_typed(big.astype(">i8"), Type.I64), Type.I64) == [1, -2]


def test_array_array_of_another_type_is_converted_to_ty(backend):
    handle = backend.allocate_typed(array.array("d", [1.0, 2.5]), Type.F32)
    assert backend.buffer_size(handle) == 8
    assert _values(backend, handle, Type.F32) == [1.0, 2.5]
    backend.copy_typed_to(handle, array.array("i", [3, 4]), Type.F32)
    assert _values(backend, handle, Type.F32) == [3.0, 4.0]
    same_size = backend.allocate_typed(array.array("l" if array.array("l").itemsize == 8 else "q", [-5]), Type.I64)
    assert _values(backend, same_size, Type.I64) == [-5]
    assert _values(backend, backend.allocate_typed(array.array("H", [7, 8])), Type.U16) == [7, 8]


@pytest.mark.parametrize("ty", [Type.F16, Type.F32, Type.F64, Type.I8, Type.U64])
def test_sequences_with_ty_round_trip(backend, ty):
    values = [0, 1, 2, 100] if ty.is_integer() else [0.5, -1.25, 65504.0, 0.0]
    handle = backend.allocate_typed(values, ty)
    assert backend.buffer_size(handle) == 4 * ty.size_bytes()
    assert _values(backend, handle, ty) == values
    assert _values(backend, handle, ty, count=2, offset=ty.size_bytes()) == values[1:3]


def test_counts_allocate_zeroed_buffers(backend):
    handle = backend.allocate_typed(3, Type.BF16)
    assert backend.copy_from_buffer(handle) == bytes(6)
    assert _values(backend, backend.allocate_typed(0, Type.F32), Type.F32) == []


def test_empty_data_allocates_an_empty_buffer_like_a_zero_count(backend):
    for empty in ([], array.array("f")):
        handle = backend.allocate_typed(empty, Type.F32)
        assert backend.buffer_size(handle) == 0 and _values(backend, handle, Type.F32) == []


@pytest.mark.parametrize("call, error, match", [
    (lambda b: b.allocate_typed([1.5], Type.I32), InvalidBuffer, "cannot be stored as I32"),
    (lambda b: b.allocate_typed([300], Type.U8), InvalidBuffer, "cannot be stored as U8"),
    (lambda b: b.allocate_typed(["a"], Type.F32), InvalidBuffer, "cannot be stored as F32"),
    (lambda b: b.allocate_typed([1e6], Type.F16), InvalidBuffer, "cannot be stored as F16"),
    (lambda b: b.allocate_typed(5, Type.F32) and b.allocate_typed(array.array("d", [0.5]), Type.I32),
     InvalidBuffer, "cannot be stored as I32"),
    (lambda b: b.allocate_typed(None, Type.F32), InvalidBuffer, "cannot be stored as F32"),
    (lambda b: b.allocate_typed([1, 2]), InvalidBuffer, "a plain sequence needs the element type ty"),
    (lambda b: b.allocate_typed({7: 2, 9: 3}, Type.U8), InvalidBuffer, "a dict is not a sequence of values"),
    (lambda b: b.allocate_typed({7, 9}, Type.U8), InvalidBuffer, "a set is not a sequence of values"),
    (lambda b: b.copy_typed_to(b.allocate_typed(2, Type.U8), {1: 5}, Type.U8), InvalidBuffer,
     "a dict is not a sequence"),
    (lambda b: b.allocate_typed(5), InvalidBuffer, r"allocate_typed\(count\) needs the element type ty"),
    (lambda b: b.allocate_typed(3, "f32"), InvalidBuffer, "needs the element type ty \\(a Type\\), got 'f32'"),
    (lambda b: b.allocate_typed(-3, Type.F32), AllocationFailed, "count must be a non-negative int, got -3"),
    (lambda b: b.allocate_typed([1], Type.BF16), UnsupportedOperation, "typed copy on BF16"),
    (lambda b: b.copy_typed_from(b.allocate_typed(2, Type.F32), "f32"), InvalidBuffer, "got 'f32'"),
    (lambda b: b.copy_typed_from(b.allocate_typed(2, Type.F32), Type.F32, offset=100), InvalidBuffer,
     "offset 100 is outside buffer 2 of 8 bytes"),
    (lambda b: b.copy_typed_from(b.allocate_typed(2, Type.F32), Type.F32, offset=-4), InvalidBuffer,
     "offset must be a non-negative int, got -4"),
    (lambda b: b.copy_typed_from(b.allocate_typed(2, Type.F32), Type.F32, count=-1), InvalidBuffer,
     "count must be a non-negative int, got -1"),
    (lambda b: b.copy_typed_from(b.allocate_typed(2, Type.F32), Type.F32, count="2"), InvalidBuffer,
     "count must be a non-negative int, got '2'"),
    (lambda b: b.copy_typed_from(b.allocate_typed(2, Type.F32), Type.F32, count=3), InvalidBuffer,
     "outside buffer 2 of 8 bytes"),
    (lambda b: b.copy_typed_from(99, Type.F32), InvalidBuffer, "handle 99 names no live buffer"),
])
def test_bad_typed_copies_raise_documented_errors(backend, call, error, match):
    with pytest.raises(error, match=match):
        call(backend)


def test_numpy_object_arrays_need_ty():
    backend = CpuBackend()
    with pytest.raises(InvalidBuffer, match="array of Python objects"):
        backend.allocate_typed(np.array([object()]))
    with pytest.raises(InvalidBuffer, match="cannot be stored as F32"):
        backend.allocate_typed(np.array([object()]), Type.F32)
    assert list(backend.copy_typed_from(backend.allocate_typed(np.array([1, 2.5], dtype=object), Type.F32),
                                        Type.F32)) == [1.0, 2.5]


def test_a_numpy_integer_count_is_a_count():
    backend = CpuBackend()
    handle = backend.allocate_typed(np.int64(3), Type.F32)
    assert backend.buffer_size(handle) == 12
    assert list(backend.copy_typed_from(handle, Type.F32, count=np.int64(2), offset=np.int32(4))) == [0.0, 0.0]
