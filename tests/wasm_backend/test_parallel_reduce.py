"""ParallelReduce on several threads (WasmBackend(threads=N)): fixed chunks combined in chunk order, so every
thread count gives the same bits; results meet the reference (float sums within count * eps, the rest
exact, NaN and infinities wherever they are); the parallel-dispatch counter shows which path ran."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import STG, Address, ParallelReduce, ReduceOperation, Register, Type
from atlas_web.verify import verify
from wasm_backend.lowering import compile_program
from wasm_backend.lowering.coop_reduce import reduce_chunked
from wasm_backend.thread_policy import PARALLEL_REDUCE_THRESHOLD, REDUCE_CHUNK_ELEMENTS
from tests.wasm_backend.thread_counts import THREAD_COUNTS

ONE = LaunchConfig()
#: over the threshold, odd: the last chunk is short and ends in a scalar tail
COUNT = PARALLEL_REDUCE_THRESHOLD + 4099
_DTYPES = {Type.F32: np.float32, Type.F64: np.float64, Type.F16: np.float16, Type.I8: np.int8, Type.U8: np.uint8,
           Type.I16: np.int16, Type.U16: np.uint16, Type.I32: np.int32, Type.U32: np.uint32, Type.I64: np.int64,
           Type.U64: np.uint64}


def _bf16_bytes(values: np.ndarray) -> bytes:
    bits = values.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # ties to even (the values here are finite)
    return rounded.astype(np.uint16).tobytes()


def _value_bytes(ty: Type, values: np.ndarray) -> bytes:
    return _bf16_bytes(values) if ty is Type.BF16 else values.astype(_DTYPES[ty]).tobytes()


def _float_values(count: int, seed: int) -> np.ndarray:
    """Magnitudes spread over many binades (the order of a sum changes its rounding), signed zeros."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(-1.0, 1.0, count) * np.exp2(rng.integers(-12, 12, count))
    values[::97] = 0.0
    values[1::101] = -0.0
    return values


def _values(ty: Type, count: int, seed: int, operation: ReduceOperation) -> np.ndarray:
    if ty.is_float():
        values = _float_values(count, seed)
        if operation is ReduceOperation.Product:  # near 1, so the product stays finite and nonzero for a while
            values = 1.0 + values * 1e-4
        return values
    info = np.iinfo(_DTYPES[ty])
    return np.random.default_rng(seed).integers(info.min, info.max, count, dtype=_DTYPES[ty], endpoint=True)


def _reduce_bits(backend, operation: ReduceOperation, ty: Type, data: bytes, count: int) -> int:
    """The result's bit pattern (reduce on one lane, stored to a buffer)."""
    size = ty.size_bytes()
    src = backend.allocate_buffer(max(len(data), size))
    backend.copy_to_buffer(src, data)
    out = backend.allocate_buffer(size)
    program = ProgramBuilder().add(ParallelReduce(dst=Register(1), src_array=Address.BufferOffset(src), count=count,
                                                  operation=operation, ty=ty)).add(
        STG(dst=Address.BufferOffset(out), src=Register(1), ty=ty)).build()
    backend.execute_program(program, ONE)
    result = int.from_bytes(bytes(backend.copy_from_buffer(out)), "little")
    backend.free_buffer(src)
    backend.free_buffer(out)
    return result


def _float_of(ty: Type, bits: int) -> float:
    if ty is Type.BF16:
        return float(np.array([bits << 16], dtype=np.uint32).view(np.float32)[0])
    unsigned = {2: np.uint16, 4: np.uint32, 8: np.uint64}[ty.size_bytes()]
    return float(np.array([bits], dtype=unsigned).view(_DTYPES[ty])[0])


def _on_every_thread_count(backends, operation, ty, data: bytes, count: int = COUNT, dealt: bool = False) -> int:
    """The result's bits, the same for every thread count; each parallel backend dispatched exactly when
    the reduction is chunked and over the threshold (and, ``dealt``, its workers ran a group each at least)."""
    results = {}
    parallel = reduce_chunked(operation, ty) and count >= PARALLEL_REDUCE_THRESHOLD
    for threads, backend in backends.items():
        before, groups = backend.device_info()["parallel_dispatches"], backend.device_info()["parallel_worker_chunks"]
        results[threads] = _reduce_bits(backend, operation, ty, data, count)
        assert backend.device_info()["parallel_dispatches"] == before + (threads > 1 and parallel)
        if dealt and parallel:
            assert backend.device_info()["parallel_worker_chunks"] >= groups + threads - 1
    for threads in THREAD_COUNTS[1:]:
        assert results[threads] == results[1], f"threads={threads} gives other bits than threads=1"
    return results[1]


def _check_against_reference(ty: Type, operation: ReduceOperation, got_bits: int, want_bits: int, count: int) -> None:
    if not ty.is_float() or operation is not ReduceOperation.Sum:
        if ty.is_float() and np.isnan(_float_of(ty, want_bits)):
            assert np.isnan(_float_of(ty, got_bits))
        else:
            assert got_bits == want_bits
        return
    got, want = _float_of(ty, got_bits), _float_of(ty, want_bits)
    if not np.isfinite(want):
        assert got == want or (np.isnan(got) and np.isnan(want))
        return
    eps = {Type.F16: 2.0 ** -10, Type.BF16: 2.0 ** -7, Type.F32: 2.0 ** -23, Type.F64: 2.0 ** -52}[ty]
    assert abs(got - want) <= count * eps * max(abs(want), 1e-30), (got, want)


CASES = [(op, ty) for op in ReduceOperation for ty in (Type.F32, Type.F64)] + [
    (ReduceOperation.Sum, Type.F16), (ReduceOperation.Max, Type.BF16), (ReduceOperation.Sum, Type.BF16),
    (ReduceOperation.Min, Type.F16), (ReduceOperation.Product, Type.I8), (ReduceOperation.Sum, Type.U8),
    (ReduceOperation.Min, Type.I16), (ReduceOperation.Max, Type.U32), (ReduceOperation.Sum, Type.I64),
    (ReduceOperation.Product, Type.U64), (ReduceOperation.Max, Type.I32),
]


@pytest.mark.parametrize("operation, ty", CASES, ids=[f"{op.name}-{ty.name}" for op, ty in CASES])
def test_reduce_is_the_same_on_every_thread_count_and_meets_the_reference(backends, reference, dealt, operation, ty):
    data = _value_bytes(ty, _values(ty, COUNT, ty.code * 7 + len(operation.name), operation))
    got = _on_every_thread_count(backends, operation, ty, data, dealt=True)
    want = _reduce_bits(reference, operation, ty, data, COUNT)
    _check_against_reference(ty, operation, got, want, COUNT)


def _with_specials(count: int, placements: dict[int, float]) -> np.ndarray:
    values = _float_values(count, 5)
    for index, value in placements.items():
        values[index] = value
    return values


LAST = COUNT - 1  # in the scalar tail of the short last chunk
SPECIALS = [
    ("nan-in-third-chunk", {2 * REDUCE_CHUNK_ELEMENTS + 5: np.nan}),
    ("inf-first-chunk-minus-inf-tail", {3: np.inf, LAST: -np.inf}),
    ("inf-and-nan-in-other-chunks", {REDUCE_CHUNK_ELEMENTS: np.inf, 40 * REDUCE_CHUNK_ELEMENTS + 1: np.nan}),
    ("minus-inf-alone-at-the-end", {LAST: -np.inf}),
    ("both-infinities-mid", {10 * REDUCE_CHUNK_ELEMENTS - 1: -np.inf, 10 * REDUCE_CHUNK_ELEMENTS: np.inf}),
]


@pytest.mark.parametrize("operation", list(ReduceOperation), ids=lambda op: op.name)
@pytest.mark.parametrize("ty", [Type.F32, Type.F64], ids=lambda ty: ty.name)
@pytest.mark.parametrize("name, placements", SPECIALS, ids=[name for name, _ in SPECIALS])
def test_nan_and_infinities_in_different_chunks(backends, reference, operation, ty, name, placements):
    data = _value_bytes(ty, _with_specials(COUNT, placements))
    got = _on_every_thread_count(backends, operation, ty, data)
    want = _reduce_bits(reference, operation, ty, data, COUNT)
    _check_against_reference(ty, operation, got, want, COUNT)
    if any(np.isnan(v) for v in placements.values()) or (operation is ReduceOperation.Sum and len(placements) == 2
                                                          and np.inf in placements.values()):
        assert np.isnan(_float_of(ty, got))  # the NaN (or inf + -inf) reaches the result from any chunk


#: type -> its largest finite value: two of them overflow a partial sum
_LARGEST = {Type.F32: float(np.finfo(np.float32).max), Type.F64: float(np.finfo(np.float64).max)}
OVERFLOWS = [
    ("cancelling-in-one-block", lambda big: {0: big, 16: big, 1: -big, 17: -big}),  # one accumulator lane each
    ("cancelling-across-chunks", lambda big: {5: big, REDUCE_CHUNK_ELEMENTS + 7: big, 20 * REDUCE_CHUNK_ELEMENTS: -big,
                                              LAST: -big}),
    ("overflowing-then-minus-inf", lambda big: {0: big, 1: big, REDUCE_CHUNK_ELEMENTS: big, LAST: -np.inf}),
]


@pytest.mark.parametrize("ty", [Type.F32, Type.F64], ids=lambda ty: ty.name)
@pytest.mark.parametrize("name, placements", OVERFLOWS, ids=[name for name, _ in OVERFLOWS])
def test_overflowing_partial_sums_give_no_nan_on_any_thread_count(backends, reference, ty, name, placements):
    """Partials past the type's range (in one f32 block, in a chunk, across chunks on other threads) give
    the contract's result: the sum of the rest when the large values cancel, the infinity of the values."""
    values = _with_specials(COUNT, placements(_LARGEST[ty]))
    data = _value_bytes(ty, values)
    got = _float_of(ty, _on_every_thread_count(backends, ReduceOperation.Sum, ty, data))
    want = _float_of(ty, _reduce_bits(reference, ReduceOperation.Sum, ty, data, COUNT))
    if not np.isfinite(want):
        assert got == want
        return
    assert np.isfinite(got)
    eps = {Type.F32: 2.0 ** -23, Type.F64: 2.0 ** -52}[ty]
    with np.errstate(over="ignore"):  # the contract's bound, count * eps * sum(|x|) (inf for F64: finite is all)
        assert abs(got - want) <= COUNT * eps * float(np.sum(np.abs(values.astype(np.float64))))


def test_a_float_sum_gives_the_same_bits_on_every_thread_count_run_after_run(backends):
    """Values whose sum depends on the order: every thread count gives the same bits, run after run."""
    values = _float_values(COUNT, 21) * np.exp2(np.random.default_rng(3).integers(-40, 40, COUNT))
    data = _value_bytes(Type.F32, values)
    first = _on_every_thread_count(backends, ReduceOperation.Sum, Type.F32, data)
    assert _on_every_thread_count(backends, ReduceOperation.Sum, Type.F32, data) == first


@pytest.mark.parametrize("count", [0, 1, REDUCE_CHUNK_ELEMENTS - 1, REDUCE_CHUNK_ELEMENTS,
                                   3 * REDUCE_CHUNK_ELEMENTS + 17, PARALLEL_REDUCE_THRESHOLD - 1])
def test_below_the_threshold_nothing_is_dispatched_and_results_meet_the_reference(backends, reference, count):
    values = _float_values(max(count, 1), 9)
    data = _value_bytes(Type.F32, values)
    for operation in (ReduceOperation.Sum, ReduceOperation.Max):
        got = _on_every_thread_count(backends, operation, Type.F32, data, count)
        want = _reduce_bits(reference, operation, Type.F32, data, count)
        _check_against_reference(Type.F32, operation, got, want, max(count, 1))


def _program(count: int, operation: ReduceOperation, ty: Type):
    return ProgramBuilder().add(ParallelReduce(dst=Register(1), src_array=Address.BufferOffset(2), count=count,
                                               operation=operation, ty=ty)).build()


def test_only_large_chunked_reductions_of_parallel_modules_import_parallel_reduce():
    large, small = _program(COUNT, ReduceOperation.Sum, Type.F32), _program(COUNT - 5000, ReduceOperation.Sum, Type.F32)
    product = _program(COUNT, ReduceOperation.Product, Type.F32)
    integer_product = _program(COUNT, ReduceOperation.Product, Type.I32)
    compiled = compile_program(large, verify(large), ONE, shared_memory=True, parallel=True)
    assert "parallel_reduce" in compiled.host_imports and compiled.parallel_reduces == {0: "reduce_kernel_0"}
    assert "parallel_reduce" not in compile_program(large, verify(large), ONE).host_imports
    assert "parallel_reduce" not in compile_program(small, verify(small), ONE, parallel=True).host_imports
    assert "parallel_reduce" not in compile_program(product, verify(product), ONE, parallel=True).host_imports
    assert "parallel_reduce" in compile_program(integer_product, verify(integer_product), ONE,
                                                parallel=True).host_imports


def test_device_info_counts_reduce_dispatches(backends):
    backend = backends[2]
    data = _value_bytes(Type.I32, _values(Type.I32, COUNT, 1, ReduceOperation.Sum))
    before = backend.device_info()["parallel_dispatches"]
    _reduce_bits(backend, ReduceOperation.Sum, Type.I32, data, COUNT)
    _reduce_bits(backend, ReduceOperation.Product, Type.F32, _value_bytes(Type.F32, np.ones(COUNT)), COUNT)
    assert backend.device_info()["parallel_dispatches"] == before + 1
    assert backend.device_info()["parallel_reduce_threshold"] == PARALLEL_REDUCE_THRESHOLD



@pytest.mark.parametrize("threads", THREAD_COUNTS)
def test_f32_sums_keep_their_partials_in_binary64(backends, threads):
    """4M values of 0.1f: a running f32 sum is off by 4% (over 500,000 ulps); 32-value f32 blocks flushed
    into binary64 (docs/backends.md) stay within a few ulps of the exact sum (4 here)."""
    values = np.full(COUNT, 0.1, np.float32)
    exact = float(np.float32(0.1)) * COUNT
    backend = backends[threads]
    source, out = backend.allocate_typed(values), backend.allocate_typed(1, Type.F32)
    program = ProgramBuilder().add(ParallelReduce(dst=Register(1), src_array=Address.BufferOffset(source),
                                                  count=COUNT, operation=ReduceOperation.Sum)) \
        .add(STG(dst=Address.BufferOffset(out), src=Register(1), ty=Type.F32)).build()
    backend.execute_program(program, ONE)
    got = float(backend.copy_typed_from(out, Type.F32)[0])
    assert abs(got - exact) <= 8 * np.spacing(np.float32(exact))
    backend.free_buffer(source)
    backend.free_buffer(out)
