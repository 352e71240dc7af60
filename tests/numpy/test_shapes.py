"""reshape, transpose, swapaxes, broadcast_to, concatenate, stack and basic slicing of atlas_web.numpy
against NumPy computed here, on every available backend."""

from __future__ import annotations

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web import ArrayError
from atlas_web.numpy.runtime import cached_kernels

from .helpers import check

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_reshape_shares_and_infers(device):
    x = anp.array(A, device=device)
    check(x.reshape(6, 4), A.reshape(6, 4))
    check(x.reshape((-1, 2)), A.reshape(-1, 2))
    check(anp.reshape(x, 24), A.reshape(24))
    assert x.reshape(4, 6).buffer is x.buffer
    check(anp.expand_dims(x, 1), np.expand_dims(A, 1))
    check(anp.squeeze(x.reshape(1, 24, 1)), A.reshape(24))
    with pytest.raises(ArrayError, match=r"cannot reshape float32\[2, 3, 4\] \(24 elements\) into \(5, 5\)"):
        x.reshape(5, 5)


def test_transpose_and_swapaxes(device):
    x = anp.array(A, device=device)
    check(x.T, A.T)
    check(x.transpose(1, 0, 2), A.transpose(1, 0, 2))
    check(anp.transpose(x, (2, 0, 1)), A.transpose(2, 0, 1))
    check(x.swapaxes(0, -1), A.swapaxes(0, -1))
    check(anp.array(np.int8([[1, 2, 3]]), device=device).T, np.int8([[1, 2, 3]]).T)
    with pytest.raises(ArrayError, match="repeated axis"):
        x.transpose(0, 0, 1)
    with pytest.raises(ArrayError, match="not a permutation"):
        x.transpose(0, 1)


def test_broadcast_to(device):
    b = np.float32([[1], [2]])
    check(anp.broadcast_to(anp.array(b, device=device), (3, 2, 4)), np.broadcast_to(b, (3, 2, 4)))
    with pytest.raises(ArrayError, match="do not broadcast"):
        anp.broadcast_to(anp.array(b, device=device), (3, 4))


def test_concatenate_and_stack(device):
    a, b = A[0], np.int32([[7, 8, 9, 10]])
    x, y = anp.array(a, device=device), anp.array(b, device=device)
    if device.supports("LDG", anp.float64):
        check(anp.concatenate([x, y]), np.concatenate([a, b]))
    c = np.float32([[5], [6], [7]])
    check(anp.concatenate([x, anp.array(c, device=device), x], axis=1), np.concatenate([a, c, a], axis=1))
    check(anp.concatenate([x, x], axis=None), np.concatenate([a, a], axis=None))
    check(anp.stack([x, x * 2]), np.stack([a, a * 2]))
    check(anp.stack([x, x * 2], axis=-1), np.stack([a, a * 2], axis=-1))
    with pytest.raises(ArrayError, match="sizes off axis 0 differ"):
        anp.concatenate([x, anp.array(c, device=device)])
    with pytest.raises(ArrayError, match="different shapes"):
        anp.stack([x, anp.array(c, device=device)])


KEYS = [1, -1, (1, 2), (slice(None), 1), (slice(None, None, -1),), (slice(1, None), slice(None, None, 2)),
        (Ellipsis, slice(3, 0, -2)), (None, 0, Ellipsis), (0, None, slice(1, 3), None), (slice(5, 9),), ()]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_indexing(device, key):
    x = anp.array(A, device=device)
    check(x[key], A[key])


def test_indexing_reuses_one_program_for_every_offset(device):
    x = anp.array(A.reshape(6, 4), device=device)
    x[0].to_host()
    before = cached_kernels()
    for i in range(1, 6):
        check(x[i], A.reshape(6, 4)[i])
    assert cached_kernels() == before


def test_indexing_errors(device):
    x = anp.array(A, device=device)
    with pytest.raises(ArrayError, match="index 2 is out of range for axis 0 of size 2"):
        x[2]
    with pytest.raises(ArrayError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(ArrayError, match="only ints, slices"):
        x[[0, 1]]


def test_iteration_walks_the_first_axis(device):
    x = anp.array(A, device=device)
    rows = list(x)
    assert len(rows) == 2
    for row, expected in zip(rows, A):
        check(row, expected)
    assert [v.item() for v in anp.array(np.int32([4, 5]), device=device)] == [4, 5]
    with pytest.raises(TypeError, match="0-d"):
        iter(anp.array(1.0, device=device)).__next__()
