"""Softmax and LogSoftmax launched on the wasm backend (coop_softmax), on what only the wasm kernel has: row lengths
around its vector blocks (the unrolled blocks, single vectors, the scalar tail), in place, F16/BF16 rows through
the f32 scratch, a NaN or -inf in each position class of a row (block, vector, tail), and rows over threads
giving the bits of one thread. Results are compared with the reference within the contract's bound (the
conformance suite's ``compare``); the conformance suite checks the rows' generated cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import EXIT, LogSoftmax, Softmax, Type
from wasm_backend.lowering.coop_softmax import UNROLL
from wasm_backend.thread_policy import PARALLEL_MAP_THRESHOLDS

from tests.conformance.matrix_cases import decode_array, encode_array
from tests.conformance.softmax_cases import SoftmaxCase, compare
from tests.wasm_backend.thread_counts import THREAD_COUNTS

CLASSES = {"Softmax": Softmax, "LogSoftmax": LogSoftmax}


def softmax(backend, name: str, ty: Type, x: np.ndarray, *, in_place: bool = False) -> np.ndarray:
    """The output (float64 values of ty) of one launch over the (rows, n) values ``x`` of ty."""
    rows, n = x.shape
    data = encode_array(ty, x.reshape(-1))
    handles = []
    for content in (data, bytes(len(data))):
        handle = int(backend.allocate_buffer(max(4, len(content))))
        backend.copy_to_buffer(handle, content)
        handles.append(handle)
    src, dst = handles[0], handles[0 if in_place else 1]
    builder = ProgramBuilder()
    builder.add(CLASSES[name](output=Address.BufferOffset(dst), input=Address.BufferOffset(src), n=n, rows=rows,
                              ty=ty))
    builder.add(EXIT())
    backend.execute_program(builder.build(), LaunchConfig())
    out = decode_array(ty, bytes(backend.copy_from_buffer(dst))[:len(data)])
    for handle in handles:
        backend.free_buffer(handle)
    return out


def _logits(ty: Type, rows: int, n: int, seed: int = 3) -> np.ndarray:
    x = np.random.default_rng(seed).uniform(-10, 10, (rows, n))
    return decode_array(ty, encode_array(ty, x.reshape(-1))).reshape(rows, n)


def _within_contract(name: str, ty: Type, x: np.ndarray, got: np.ndarray) -> None:
    rows, n = x.shape
    case = SoftmaxCase(name, type("Info", (), {"name": name})(), ty, dict(n=n, rows=rows))
    bad = compare(case, {"input": x.reshape(-1)}, got)
    assert not bad, f"{name} {ty.name} {rows}x{n}: {len(bad)} outside the bound, first {bad[:3]}"


def _lengths(lanes: int) -> list[int]:
    block = UNROLL * lanes
    return sorted({1, lanes - 1 or 1, lanes, lanes + 1, block - 1, block, block + lanes + 1, 3 * block + 2})


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("ty", [Type.F32, Type.F64, Type.F16, Type.BF16], ids=lambda t: t.name)
def test_row_lengths_around_the_vector_blocks(backends, name, ty):
    lanes = 2 if ty is Type.F64 else 4
    for n in _lengths(lanes):
        x = _logits(ty, 3, n, seed=n)
        _within_contract(name, ty, x, softmax(backends[1], name, ty, x))


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_in_place_gives_the_out_of_place_bits(backends, name):
    x = _logits(Type.F32, 4, 37)
    out = softmax(backends[1], name, Type.F32, x)
    assert np.array_equal(softmax(backends[1], name, Type.F32, x, in_place=True), out)


@pytest.mark.parametrize("special", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_specials_in_the_block_vector_and_tail_positions(backends, reference, name, special):
    n = UNROLL * 4 + 4 + 3   # one unrolled block, one vector, a tail of three
    x = _logits(Type.F32, 3, n)
    for row, position in enumerate((1, UNROLL * 4 + 2, n - 1)):
        x[row, position] = special
    got = softmax(backends[1], name, Type.F32, x)
    want = softmax(reference, name, Type.F32, x)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
    _within_contract(name, Type.F32, x, got)


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_threads_give_the_bits_of_one_thread(backends, name):
    n = 1031
    rows = -(-PARALLEL_MAP_THRESHOLDS["math library"] // n)
    x = _logits(Type.F32, rows, n)
    results = set()
    for threads in THREAD_COUNTS:
        before = backends[threads].device_info()["parallel_dispatches"]
        results.add(softmax(backends[threads], name, Type.F32, x).tobytes())
        assert backends[threads].device_info()["parallel_dispatches"] - before == (1 if threads > 1 else 0)
    assert len(results) == 1
    _within_contract(name, Type.F32, x, np.frombuffer(results.pop()))


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_logits_across_exps_range_down_to_the_flush(backends, name):
    x = np.stack([np.linspace(-90.0, 0.0, 4099), np.linspace(0.0, 88.0, 4099)]).astype(np.float32).astype(np.float64)
    _within_contract(name, Type.F32, x, softmax(backends[1], name, Type.F32, x))
