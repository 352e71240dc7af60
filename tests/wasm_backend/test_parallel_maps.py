"""Cooperative maps on several threads (WasmBackend(threads=N)): results bit-identical to one thread and
equal to the reference, aliasing, overlap (serial path), traps, memory growth, workers and their errors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from atlas_web import AtlasTrap, LaunchConfig, Program, ProgramBuilder
from atlas_web.errors import ExecutionFailed, TrapCode
from atlas_web.isa import Address, BinaryMapOperation, MapOperation, ParallelMap, ParallelMapBinary, Type
from atlas_web.reference import CpuBackend
from atlas_web.verify import verify
from wasm_backend import WasmBackend
from wasm_backend.encoding.immediates import MemArg
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import ValType
from wasm_backend.errors import WasmInterfaceError, WasmTrap
from wasm_backend.lowering import compile_program
from wasm_backend.thread_policy import PARALLEL_MAP_THRESHOLD, PARALLEL_MAP_THRESHOLDS, parallel_map_threshold
from wasm_backend.runners.wasmtime_runner import WasmtimeRunner
from tests.wasm_backend.thread_counts import THREAD_COUNTS

ONE = LaunchConfig()
#: over every threshold, not a multiple of any vector width: every chunking leaves a scalar tail
COUNT = max(PARALLEL_MAP_THRESHOLDS.values()) + 4099


def _values(ty: Type, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if ty.is_float():
        values = rng.uniform(-20.0, 20.0, count)
        values[::97] = 0.0
        values[1::101] = -0.0
        return values.astype(_DTYPES[ty])
    info = np.iinfo(_DTYPES[ty])
    return rng.integers(info.min, info.max, count, dtype=_DTYPES[ty], endpoint=True)


_DTYPES = {Type.F32: np.float32, Type.F64: np.float64, Type.F16: np.float16, Type.I8: np.int8, Type.I32: np.int32,
           Type.U64: np.uint64, Type.I16: np.int16}


def _bits(array: np.ndarray) -> np.ndarray:
    return array.view(f"u{array.dtype.itemsize}")


def _run_map(backend, operation, ty: Type, inputs: list[np.ndarray], count: int = COUNT) -> np.ndarray:
    handles = [backend.allocate_typed(values, ty) for values in inputs]
    out = backend.allocate_typed(count, ty)
    if len(inputs) == 1:
        instr = ParallelMap(dst_array=Address.BufferOffset(out), src_array=Address.BufferOffset(handles[0]),
                            count=count, operation=operation, ty=ty)
    else:
        instr = ParallelMapBinary(dst_array=Address.BufferOffset(out), src_a=Address.BufferOffset(handles[0]),
                                  src_b=Address.BufferOffset(handles[1]), count=count, operation=operation, ty=ty)
    backend.execute_program(ProgramBuilder().add(instr).build(), ONE)
    result = np.asarray(backend.copy_typed_from(out, ty, count))
    for handle in (*handles, out):
        backend.free_buffer(handle)
    return result


CASES = [
    (MapOperation.Abs, Type.F32), (MapOperation.Neg, Type.I32), (MapOperation.Relu, Type.F16),
    (MapOperation.Sqrt, Type.F64), (MapOperation.Exp, Type.F32), (MapOperation.Sin, Type.F64),
    (BinaryMapOperation.Add, Type.I8), (BinaryMapOperation.Mul, Type.U64), (BinaryMapOperation.Max, Type.F32),
    (BinaryMapOperation.Div, Type.F16), (BinaryMapOperation.Pow, Type.F32),
]


@pytest.mark.parametrize("operation, ty", CASES, ids=[f"{op.name}-{ty.name}" for op, ty in CASES])
def test_map_on_threads_is_bit_identical_and_matches_reference(backends, reference, dealt, operation, ty):
    backend = backends[1]
    if not backend.supports_operation(operation, ty):
        pytest.skip(f"{operation.name}.{ty.name} is not compiled by this wasm backend")
    arity = 2 if isinstance(operation, BinaryMapOperation) else 1
    inputs = [_values(ty, COUNT, seed) for seed in range(arity)]
    if operation is BinaryMapOperation.Pow:
        inputs[0] = np.abs(inputs[0])
    results = {}
    for threads, each in backends.items():
        before, chunks = each.device_info()["parallel_dispatches"], each.device_info()["parallel_worker_chunks"]
        results[threads] = _run_map(each, operation, ty, inputs)
        assert each.device_info()["parallel_dispatches"] == before + (threads > 1)
        assert each.device_info()["parallel_worker_chunks"] >= chunks + threads - 1  # a chunk per worker at least
    for threads in THREAD_COUNTS[1:]:
        assert np.array_equal(_bits(results[threads]), _bits(results[1])), f"threads={threads} differs"
    want = _run_map(reference, operation, ty, inputs)
    tolerance = backend.ulp_tolerance(operation, ty)
    if tolerance == 0:
        assert np.array_equal(_bits(results[1]), _bits(want))
    else:
        got, expected = results[1].astype(np.float64), want.astype(np.float64)
        spacing = np.spacing(np.abs(want)).astype(np.float64)
        close = ((np.abs(got - expected) <= tolerance * spacing) | (got == expected)
                 | (np.isnan(got) & np.isnan(expected)))
        assert close.all(), f"{np.count_nonzero(~close)} values beyond {tolerance} ulp"


def _buffer_program(dst: int, dst_offset: int, src: int, src_offset: int, count: int, operation, ty: Type,
                    src_b: tuple[int, int] | None = None):
    if src_b is None:
        instr = ParallelMap(dst_array=Address.BufferOffset(dst, dst_offset),
                            src_array=Address.BufferOffset(src, src_offset), count=count, operation=operation, ty=ty)
    else:
        instr = ParallelMapBinary(dst_array=Address.BufferOffset(dst, dst_offset),
                                  src_a=Address.BufferOffset(src, src_offset), src_b=Address.BufferOffset(*src_b),
                                  count=count, operation=operation, ty=ty)
    return ProgramBuilder().add(instr).build()


def _run_same_buffer(backend, values: np.ndarray, ty: Type, program_of) -> tuple[np.ndarray, int]:
    handle = backend.allocate_typed(values, ty)
    before = backend.device_info().get("parallel_dispatches", 0)
    backend.execute_program(program_of(handle), ONE)
    result = np.asarray(backend.copy_typed_from(handle, ty))
    backend.free_buffer(handle)
    return result, backend.device_info().get("parallel_dispatches", 0) - before


def test_in_place_map_runs_on_threads(backends, dealt):
    values = _values(Type.F32, COUNT, 7)

    def program(handle):
        return _buffer_program(handle, 0, handle, 0, COUNT, MapOperation.Exp, Type.F32)

    want = _run_same_buffer(backends[1], values, Type.F32, program)[0]
    for threads in THREAD_COUNTS[1:]:
        chunks_before = backends[threads].device_info()["parallel_worker_chunks"]
        got, dispatches = _run_same_buffer(backends[threads], values, Type.F32, program)
        assert dispatches == 1
        assert backends[threads].device_info()["parallel_worker_chunks"] >= chunks_before + threads - 1
        assert np.array_equal(_bits(got), _bits(want))


def test_binary_map_into_a_source_runs_on_threads(backends, reference):
    values = _values(Type.I32, 2 * COUNT, 8)

    def program(handle):  # dst = src_a (first half), src_b the disjoint second half
        return _buffer_program(handle, 0, handle, 0, COUNT, BinaryMapOperation.Add, Type.I32,
                               src_b=(handle, 4 * COUNT))

    want = _run_same_buffer(reference, values, Type.I32, program)[0]
    for threads in THREAD_COUNTS:
        got, dispatches = _run_same_buffer(backends[threads], values, Type.I32, program)
        assert dispatches == (threads > 1)
        assert np.array_equal(got, want)


@pytest.mark.parametrize("shift", [3, -5, 4])
def test_overlapping_arrays_take_the_serial_path(backends, reference, shift):
    """The destination a few elements after (positive shift) or before the source in one buffer: chunks
    could read values another chunk already wrote, so the map runs in one call, still equal to the reference
    (every source read before the destination is written)."""
    count = COUNT
    values = _values(Type.F32, count + 8, 9)
    src_offset, dst_offset = (0, 4 * shift) if shift > 0 else (4 * -shift, 0)

    def program(handle):
        return _buffer_program(handle, dst_offset, handle, src_offset, count, MapOperation.Neg, Type.F32)

    want = _run_same_buffer(reference, values, Type.F32, program)[0]
    for threads in THREAD_COUNTS:
        got, dispatches = _run_same_buffer(backends[threads], values, Type.F32, program)
        assert dispatches == 0
        assert np.array_equal(_bits(got), _bits(want))


def test_binary_map_with_sources_on_both_sides_stays_correct(backends, reference):
    values = _values(Type.F32, COUNT + 16, 10)

    def program(handle):  # src_a behind dst, src_b ahead of it, all overlapping
        return _buffer_program(handle, 32, handle, 0, COUNT, BinaryMapOperation.Sub, Type.F32, src_b=(handle, 64))

    want = _run_same_buffer(reference, values, Type.F32, program)[0]
    for threads in THREAD_COUNTS:
        got, dispatches = _run_same_buffer(backends[threads], values, Type.F32, program)
        assert np.array_equal(_bits(got), _bits(want))


def test_a_map_over_the_threshold_that_traps_reports_the_trap(backends):
    backend = backends[2]
    src = backend.allocate_typed(_values(Type.F32, COUNT, 11))
    dst = backend.allocate_typed(np.full(COUNT - 1, 5.0, dtype=np.float32))
    before = backend.device_info()["parallel_dispatches"]
    # register-held pointers: the launch checks nothing statically, the cooperative step finds the short dst
    def program_for(dst: int, src: int) -> Program:
        return Program.from_text(f"""
    mov_imm.u64 r1, {dst << 32}
    mov_imm.u64 r2, {src << 32}
    pmap.exp.f32 [r1 + 0], [r2 + 0], {COUNT}
""")
    with pytest.raises(AtlasTrap) as trapped:
        backend.execute_program(program_for(dst, src), ONE)
    cpu = CpuBackend()
    cpu_src = cpu.allocate_typed(_values(Type.F32, COUNT, 11))
    cpu_dst = cpu.allocate_typed(np.full(COUNT - 1, 5.0, dtype=np.float32))
    with pytest.raises(AtlasTrap) as on_reference:
        cpu.execute_program(program_for(cpu_dst, cpu_src), ONE)
    assert (trapped.value.code, trapped.value.instruction_index, trapped.value.lane) == \
        (on_reference.value.code, on_reference.value.instruction_index, on_reference.value.lane)
    assert trapped.value.code is TrapCode.OUT_OF_BOUNDS and trapped.value.instruction_index == 2
    assert backend.device_info()["parallel_dispatches"] == before
    assert np.all(np.asarray(backend.copy_typed_from(dst, Type.F32)) == 5.0)
    # the backend stays usable, and the parallel path with it
    small = ProgramBuilder().add(ParallelMap(dst_array=Address.BufferOffset(src), src_array=Address.BufferOffset(src),
                                             count=COUNT, operation=MapOperation.Abs)).build()
    backend.execute_program(small, ONE)
    assert backend.device_info()["parallel_dispatches"] == before + 1
    assert np.all(np.asarray(backend.copy_typed_from(src, Type.F32)) >= 0)
    backend.free_buffer(src)
    backend.free_buffer(dst)


def test_views_survive_memory_growth_between_parallel_launches():
    backend = WasmBackend(threads=2, memory_limit=1 << 30)
    try:
        values = _values(Type.F32, COUNT, 12)
        src, dst = backend.allocate_typed(values), backend.allocate_typed(COUNT, Type.F32)
        view = backend.buffer_view(dst, Type.F32)
        program = ProgramBuilder().add(ParallelMap(dst_array=Address.BufferOffset(dst),
                                                   src_array=Address.BufferOffset(src), count=COUNT,
                                                   operation=MapOperation.Neg)).build()
        backend.execute_program(program, ONE)
        size = backend.device_info()["memory_size"]
        grown = backend.allocate_buffer(2 * size)
        assert backend.device_info()["memory_size"] > size
        backend.copy_to_buffer(src, values * 2)
        backend.execute_program(program, ONE)
        assert np.array_equal(view, -(values * 2))  # the view taken before the growth sees the new results
        assert backend.device_info()["parallel_dispatches"] == 2
        backend.free_buffer(grown)
    finally:
        backend.close()


def _worker_threads() -> int:
    return sum(thread.name.startswith("wasmtime-worker") and thread.is_alive() for thread in threading.enumerate())


def test_workers_start_with_the_first_large_map_and_close_stops_them():
    before = _worker_threads()
    backend = WasmBackend(threads=3)
    small = _values(Type.F32, 1000, 13)
    assert np.array_equal(_run_map(backend, MapOperation.Neg, Type.F32, [small], 1000), -small)
    assert backend.device_info()["parallel_dispatches"] == 0
    assert _worker_threads() == before
    _run_map(backend, MapOperation.Neg, Type.F32, [_values(Type.F32, COUNT, 14)])
    assert _worker_threads() == before + 2
    backend.close()
    assert _worker_threads() == before


def _map_program(count: int, operation) -> object:
    return ProgramBuilder().add(ParallelMap(dst_array=Address.BufferOffset(2), src_array=Address.BufferOffset(3),
                                            count=count, operation=operation)).build()


@pytest.mark.parametrize("operation", [MapOperation.Abs, MapOperation.Exp])
def test_small_maps_and_single_threaded_backends_import_no_parallel_map(operation):
    threshold = parallel_map_threshold(operation)
    small, large = _map_program(threshold - 1, operation), _map_program(threshold, operation)
    assert "parallel_map" not in compile_program(small, verify(small), ONE, parallel=True).host_imports
    assert "parallel_map" not in compile_program(large, verify(large), ONE, parallel=False).host_imports
    compiled = compile_program(large, verify(large), ONE, shared_memory=True, parallel=True)
    assert "parallel_map" in compiled.host_imports
    assert compiled.parallel_maps == {0: ("map_kernel_0", 4)}
    # the memory import declares ``shared`` as asked: the bytes (the runners' cache key) differ
    assert compile_program(large, verify(large), ONE).wasm != compile_program(
        large, verify(large), ONE, shared_memory=True).wasm


def test_a_map_between_the_two_thresholds_goes_parallel_only_for_math_functions():
    middle = _map_program(PARALLEL_MAP_THRESHOLD, MapOperation.Abs)
    assert "parallel_map" not in compile_program(middle, verify(middle), ONE, parallel=True).host_imports


@pytest.mark.parametrize("threads", [0, -1, 65, 2.0, True, "2"])
def test_bad_thread_counts_are_refused(threads):
    with pytest.raises(ExecutionFailed, match="threads"):
        WasmBackend(threads=threads)
    with pytest.raises(WasmInterfaceError, match="threads"):
        WasmtimeRunner(threads=threads)


def test_device_info_reports_threads(backends):
    for threads, backend in backends.items():
        assert backend.device_info()["threads"] == threads
    assert backends[1].device_info()["parallel_dispatches"] == 0


# ---- the runner and the pool on their own ------------------------------------------------------------------

def _trapping_module() -> bytes:
    """``k(x)``: stores x at byte 4*x, then traps (unreachable) when x is 1."""
    mb = ModuleBuilder("trapping")
    mb.import_memory("env", "memory", 1, 16, shared=True)
    fn = mb.add_function("k", [ValType.I32], [], export=True)
    w = fn.code
    w.local_get(0).i32_const(4).i32_mul().local_get(0).i32_store(MemArg(0, 2))
    w.local_get(0).i32_const(1).i32_eq()
    with w.if_():
        w.unreachable()
    return mb.to_bytes()


def test_a_trap_in_a_parallel_call_is_raised_in_the_caller_and_the_runner_stays_usable():
    runner = WasmtimeRunner(threads=2)
    try:
        instance = runner.instantiate(runner.compile(_trapping_module()), memory=runner.create_memory(1, 16,
                                                                                                      shared=True))
        for _ in range(20):  # whichever thread takes the trapping call, the caller sees the trap
            with pytest.raises(WasmTrap):
                runner.parallel_call(instance, "k", [(0,), (1,)])
        runner.parallel_call(instance, "k", [(index,) for index in range(2, 40)])  # every call runs once
        assert runner.read_array(instance, "int32", 0, 40).tolist() == list(range(40))
        assert runner.parallel_batches == 21
        with pytest.raises(WasmInterfaceError):
            runner.parallel_call(instance, "k", [(1, 2)])
    finally:
        runner.close()
    assert runner.workers_alive == 0


def test_the_unchecked_parallel_caller_runs_every_call_and_takes_unsigned_i32_forms():
    """``parallel_caller`` (the host functions' batch runner, arguments unchecked) on threads: every call runs
    once, a trap reaches the caller, an i32 given in its unsigned form is the same argument as its signed
    form; a single call, a one-thread runner and an unknown export go the checked way."""
    runner = WasmtimeRunner(threads=2)
    try:
        instance = runner.instantiate(runner.compile(_trapping_module()), memory=runner.create_memory(1, 16,
                                                                                                      shared=True))
        caller = runner.parallel_caller(instance, "k")
        for _ in range(10):
            with pytest.raises(WasmTrap):
                caller([(0,), (1,)])
        caller([(index,) for index in range(2, 40)])
        assert runner.read_array(instance, "int32", 0, 40).tolist() == list(range(40))
        for x in (-1, (1 << 32) - 1):  # the same i32 either way: a store at byte -4 (out of bounds), a trap
            with pytest.raises(WasmTrap, match="out of bounds"):
                caller([(40,), (x,)])
        with pytest.raises(WasmInterfaceError):
            caller([(1, 2)])  # one call: checked
        with pytest.raises(WasmInterfaceError):
            runner.parallel_caller(instance, "nope")
    finally:
        runner.close()
    single = WasmtimeRunner(threads=1)
    instance = single.instantiate(single.compile(_trapping_module()), memory=single.create_memory(1, 16, shared=True))
    with pytest.raises(WasmInterfaceError):
        single.parallel_caller(instance, "k")([(0, 1), (2, 3)])  # one thread: checked


def test_threads_sharing_a_backend_take_turns_and_get_their_own_results(backends):
    """Two Python threads launch large (parallel) maps on one backend at once: launches, allocations and
    copies take turns (wasmtime's Store is not safe to use from two threads), every result is right."""
    backend = backends[2]
    inputs = {seed: _values(Type.F32, COUNT, seed) for seed in range(2)}
    results: dict[int, list[np.ndarray]] = {0: [], 1: []}
    failures: list[BaseException] = []

    def launches(seed: int) -> None:
        try:
            for _ in range(4):
                results[seed].append(_run_map(backend, MapOperation.Exp, Type.F32, [inputs[seed]]))
        except BaseException as exc:  # reported by the test below
            failures.append(exc)

    threads = [threading.Thread(target=launches, args=(seed,)) for seed in inputs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    serial = {seed: _run_map(backend, MapOperation.Exp, Type.F32, [inputs[seed]]) for seed in inputs}
    for seed in inputs:
        assert len(results[seed]) == 4
        for result in results[seed]:
            assert np.array_equal(_bits(result), _bits(serial[seed]))
