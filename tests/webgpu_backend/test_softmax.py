"""The WGSL Softmax/LogSoftmax kernel on cases the conformance suite's layout does not reach: in place, the input
in the output's buffer at another offset (read through the output's binding), row lengths around the workgroup's
width (and one row past LONG_ROW: a wider workgroup), many rows per workgroup dispatch, NaN/+inf/-inf in a later
stride of a row (and a row of -inf only), subnormal logits (a device may flush them in comparisons: the kernel
orders bits); F16 and BF16 rows in place and at odd half-word offsets (two rows' elements share a word: each half
written by atomic and/or); each within the contract's bound of NumPy (tests/conformance/softmax_cases)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import Address, LogSoftmax, Softmax, Type
from webgpu_backend.wgsl.kernels.row_walk import LONG_ROW, LONG_WORKGROUP, WORKGROUP

from tests.conformance.matrix_cases import decode_array, encode_array
from tests.conformance.softmax_cases import SoftmaxCase, compare

CLASSES = {"Softmax": Softmax, "LogSoftmax": LogSoftmax}


def _run(backend, name: str, words: np.ndarray, out_at: int, in_at: int, rows: int, n: int,
         ty: Type = Type.F32) -> np.ndarray:
    """The whole buffer (values of ty) after one launch with output and input at element offsets ``out_at``,
    ``in_at``."""
    size = ty.size_bytes()
    raw = encode_array(ty, words)
    handle = backend.allocate_buffer(-(-len(raw) // 4) * 4)
    backend.copy_to_buffer(handle, raw)
    instr = CLASSES[name](output=Address.BufferOffset(handle, size * out_at),
                          input=Address.BufferOffset(handle, size * in_at), n=n, rows=rows, ty=ty)
    backend.execute_program(ProgramBuilder().add(instr).build(), LaunchConfig())
    out = decode_array(ty, bytes(backend.copy_from_buffer(handle))[:len(raw)])
    backend.free_buffer(handle)
    return out


def _check(name: str, x: np.ndarray, got: np.ndarray, ty: Type = Type.F32) -> None:
    rows, n = x.shape
    case = SoftmaxCase(name, type("Info", (), {"name": name})(), ty, dict(n=n, rows=rows))
    bad = compare(case, {"input": x.reshape(-1)}, got)
    assert not bad, f"{name} {rows}x{n}: {len(bad)} outside the bound, first {bad[:3]}"


def _logits(rows: int, n: int, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-12, 12, (rows, n)).astype(np.float32).astype(np.float64)


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("rows, n", [(3, WORKGROUP - 1), (2, WORKGROUP), (2, WORKGROUP + 1), (300, 5), (1, 1031),
                                     (1, LONG_ROW + LONG_WORKGROUP + 3)])
def test_rows_around_the_workgroup_in_place(webgpu, name, rows, n):
    x = _logits(rows, n)
    got = _run(webgpu, name, x.reshape(-1), 0, 0, rows, n)
    _check(name, x, got)


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_input_in_the_outputs_buffer_at_another_offset(webgpu, name):
    rows, n = 4, 37
    x = _logits(rows, n)
    words = np.concatenate([np.full(rows * n + 3, 9.0), x.reshape(-1)])
    got = _run(webgpu, name, words, 0, rows * n + 3, rows, n)
    _check(name, x, got[:rows * n])
    assert np.array_equal(got[rows * n:rows * n + 3], [9.0] * 3) and np.array_equal(got[rows * n + 3:], x.reshape(-1))


@pytest.mark.parametrize("special", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_specials_past_the_first_stride(webgpu, name, special):
    rows, n = 3, 2 * LONG_WORKGROUP + 9
    x = _logits(rows, n)
    x[1, LONG_WORKGROUP + 7] = special
    x[2, :] = -math.inf if special == -math.inf else x[2, :]
    got = _run(webgpu, name, x.reshape(-1), 0, 0, rows, n)
    _check(name, x, got)


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_subnormal_logits(webgpu, name):
    x = np.array([[2.0 ** -140, 2.0 ** -130, -(2.0 ** -135), 0.0, 2.0 ** -149]])
    _check(name, x, _run(webgpu, name, x.reshape(-1), 0, 0, 1, 5))


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_rows_past_the_devices_workgroups_loop_over_them(fresh, name):
    from webgpu_backend.wgsl.kernels import DeviceLimits
    launcher = fresh._launcher
    launcher.device = DeviceLimits(3, launcher.device.bind_alignment)   # 3 workgroups for 7 rows: the grid-stride loop
    x = _logits(7, 70)
    x[4, 9] = math.nan
    got = _run(fresh, name, x.reshape(-1), 0, 0, 7, 70)
    _check(name, x, got)


def _halves(ty: Type, x: np.ndarray) -> np.ndarray:
    """x's values rounded to ty (as float64)."""
    return decode_array(ty, encode_array(ty, x.astype(np.float32).astype(np.float64))).reshape(x.shape)


@pytest.mark.parametrize("ty", [Type.F16, Type.BF16])
@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("start", [0, 1])
def test_half_rows_sharing_words_in_place(webgpu, name, ty, start):
    rows, n = 9, WORKGROUP + 3          # odd n: every other row starts in the previous row's last word
    x = _halves(ty, _logits(rows, n) / 3)
    x[4, n - 2] = math.nan
    words = np.concatenate([[7.0] * start, x.reshape(-1), [5.0]])
    got = _run(webgpu, name, words, start, start, rows, n, ty)
    _check(name, x, got[start:start + rows * n], ty)
    assert np.array_equal(got[:start], [7.0] * start) and got[-1] == 5.0


@pytest.mark.parametrize("ty", [Type.F16, Type.BF16])
@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_half_input_in_the_outputs_buffer_at_an_odd_offset(webgpu, name, ty):
    rows, n = 4, 37
    x = _halves(ty, _logits(rows, n) / 3)
    words = np.concatenate([[3.0], np.full(rows * n, 9.0), x.reshape(-1)])
    got = _run(webgpu, name, words, 1, rows * n + 1, rows, n, ty)
    _check(name, x, got[1:rows * n + 1], ty)
    assert got[0] == 3.0 and np.array_equal(got[rows * n + 1:], x.reshape(-1))
