"""Stopping parallel work: a failure or an interrupt (a real SIGINT) stops a batch between items, the call
raises only once no worker runs an item of it (no memory write after it returned), close() and dropping a
backend without close() leave no worker threads, and workers keep no reference to a finished batch."""

from __future__ import annotations

import gc
import signal
import threading
import time
import weakref

import numpy as np
import pytest

from atlas_web import BackendClosed, LaunchConfig, ProgramBuilder
from atlas_web.isa import Address, MapOperation, ParallelMap, Type
from wasm_backend import WasmBackend
from wasm_backend.encoding.immediates import MemArg
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import ValType
from wasm_backend.errors import WasmTrap
from wasm_backend.thread_policy import PARALLEL_MAP_THRESHOLDS, chunk_ranges
from wasm_backend.runners import wasmtime_runner
from wasm_backend.runners.wasmtime_runner import WasmtimeRunner
from wasm_backend.runners.worker_pool import WorkerPool

#: how long a test waits for something another thread does before it counts as a failure (not a timing
#: assertion: on an idle machine each wait ends within milliseconds)
PATIENCE = 30.0
#: spin iterations of one slow call: a few milliseconds each
SPINS = 12_000_000
#: the calls of an interrupted batch: seconds of work, so an interrupt lands long before they run out
CALLS = 1000
COUNT = max(PARALLEL_MAP_THRESHOLDS.values()) + 4099


def _wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {PATIENCE} s for {what}")
        time.sleep(0.001)


def _interrupt_main() -> None:
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


# ---- the pool on its own -----------------------------------------------------------------------------------

def _recording_pool_run(pool: WorkerPool, items, on_item) -> tuple[list[int], list[tuple[int, object]]]:
    ran: list[tuple[int, object]] = []

    def prepare(slot):
        def call(item):
            on_item(slot, item)
            ran.append((slot, item))
        return call

    return pool.run(items, prepare), ran


def test_every_item_runs_once_and_each_dealt_worker_runs_one(dealt):
    pool = WorkerPool(3, name="test-pool")
    try:
        for _ in range(5):
            counts, ran = _recording_pool_run(pool, list(range(100)), lambda slot, item: None)
            assert sorted(item for _, item in ran) == list(range(100))
            assert sum(counts) == 100 and counts[1] >= 1 and counts[2] >= 1
            assert {item for slot, item in ran if slot} >= {0, 1}  # each worker's dealt item
        assert pool.items_on_workers >= 10
        counts, ran = _recording_pool_run(pool, ["only"], lambda slot, item: None)
        assert counts == [1] and ran == [(0, "only")]  # one item: no worker takes part
    finally:
        pool.close()
    assert pool.alive_workers == 0
    with pytest.raises(RuntimeError, match="closed"):
        pool.run([1], lambda slot: print)


def test_after_a_failure_no_thread_takes_another_item(dealt):
    pool = WorkerPool(3, name="test-pool")
    ran = []

    def prepare(slot):
        def call(item):
            ran.append(item)
            if item == 0:  # worker 1's dealt item
                raise ValueError("item 0 failed")
            _wait_until(lambda: pool.stopping, "the batch to stop")  # items 1 (worker 2) and 2 (the caller)
        return call

    try:
        with pytest.raises(ValueError, match="item 0 failed"):
            pool.run(list(range(100)), prepare)
        assert {0, 2} <= set(ran) <= {0, 1, 2}  # worker 2's dealt item 1 runs only if it joined in time
        counts, again = _recording_pool_run(pool, list(range(10)), lambda slot, item: None)  # still works
        assert sorted(item for _, item in again) == list(range(10))
    finally:
        pool.close()


def test_the_failure_of_the_lowest_item_is_raised_whichever_ends_first(dealt):
    pool = WorkerPool(2, name="test-pool")
    worker_started = threading.Event()

    def on_item(slot, item):
        if item == 0:  # the worker's: fails only after the caller's item 1 failed
            worker_started.set()
            _wait_until(lambda: pool.stopping, "the caller's failure")
        else:
            assert worker_started.wait(PATIENCE)
        raise ValueError(f"item {item} failed")

    try:
        with pytest.raises(ValueError, match="item 0 failed"):
            _recording_pool_run(pool, [0, 1, 2, 3], on_item)
    finally:
        pool.close()


def test_an_interrupt_while_the_caller_waits_is_raised_after_the_workers_left(dealt):
    """SIGINT twice while the calling thread waits for a worker: the batch stops, the wait goes on (the
    second interrupt cannot break it) and KeyboardInterrupt is raised once the worker's item ended."""
    pool = WorkerPool(2, name="test-pool")
    worker_done = threading.Event()

    def on_item(slot, item):
        if slot:
            _interrupt_main()
            _wait_until(lambda: pool.stopping, "the interrupt to stop the batch")
            _interrupt_main()
            time.sleep(0.05)  # gives the second interrupt time to land in the caller's wait
            worker_done.set()

    try:
        with pytest.raises(KeyboardInterrupt):
            _recording_pool_run(pool, [0, 1], on_item)
        assert worker_done.is_set()
        counts, ran = _recording_pool_run(pool, list(range(8)), lambda slot, item: None)
        assert sum(counts) == 8
    finally:
        pool.close()


def test_a_second_thread_gets_an_error_and_the_running_batch_completes():
    pool = WorkerPool(2, name="test-pool")
    started, release, refused = threading.Event(), threading.Event(), []

    def prepare(slot):
        def call(item):
            if item == 0:
                started.set()
                release.wait(PATIENCE)
        return call

    def intruder():
        started.wait(PATIENCE)
        try:
            pool.run(list(range(10)), prepare)
        except RuntimeError as exc:
            refused.append(str(exc))
        finally:
            release.set()

    thread = threading.Thread(target=intruder)
    thread.start()
    try:
        counts = pool.run(list(range(50)), prepare)
        thread.join(PATIENCE)
        assert sum(counts) == 50  # the owner's batch ran every item
        assert refused and "one thread at a time" in refused[0]
    finally:
        pool.close()


def test_a_run_from_inside_an_item_is_refused_and_fails_the_batch():
    pool = WorkerPool(2, name="test-pool")

    def prepare(slot):
        def call(item):
            if item == 3:
                pool.run([1, 2], lambda inner_slot: (lambda inner_item: None))
        return call

    try:
        with pytest.raises(RuntimeError, match="nested parallel work"):
            pool.run(list(range(8)), prepare)
        counts, ran = _recording_pool_run(pool, list(range(10)), lambda slot, item: None)  # still works
        assert sorted(item for _, item in ran) == list(range(10))
    finally:
        pool.close()


def test_a_worker_keeps_no_reference_to_a_finished_batch():
    pool = WorkerPool(3, name="test-pool")

    class Payload:
        pass

    try:
        payload = Payload()
        seen = weakref.ref(payload)
        pool.run(list(range(64)), lambda slot, payload=payload: (lambda item: payload))
        del payload
        gc.collect()
        assert seen() is None
    finally:
        pool.close()


def test_close_while_a_batch_runs_in_another_thread_lets_it_finish():
    pool = WorkerPool(3, name="test-pool")
    started, release = threading.Event(), threading.Event()
    outcome: list = []

    def on_item(slot, item):
        started.set()
        release.wait(PATIENCE)

    def run_batch():
        try:
            outcome.append(_recording_pool_run(pool, list(range(12)), on_item)[1])
        except BaseException as exc:  # reported below
            outcome.append(exc)

    runner_thread = threading.Thread(target=run_batch)
    runner_thread.start()
    assert started.wait(PATIENCE)
    closer = threading.Thread(target=pool.close)
    closer.start()
    release.set()
    closer.join(PATIENCE)
    runner_thread.join(PATIENCE)
    assert not closer.is_alive() and not runner_thread.is_alive()
    assert sorted(item for _, item in outcome[0]) == list(range(12))
    assert pool.alive_workers == 0


# ---- the runner: a slow kernel on a shared memory -------------------------------------------------------

def _slow_module() -> bytes:
    """``k(x, spins)``: traps (unreachable) when spins is 0, else spins that many iterations and stores 1 at
    byte 4*x."""
    mb = ModuleBuilder("slow")
    mb.import_memory("env", "memory", 1, 16, shared=True)
    fn = mb.add_function("k", [ValType.I32, ValType.I32], [], export=True)
    i = fn.add_local(ValType.I32)
    w = fn.code
    w.local_get(1).i32_eqz()
    with w.if_():
        w.unreachable()
    with w.block():
        with w.loop():
            w.local_get(i).local_get(1).i32_ge_u().br_if(1)
            w.local_get(i).i32_const(1).i32_add().local_set(i)
            w.br(0)
    w.local_get(0).i32_const(4).i32_mul().i32_const(1).i32_store(MemArg(0, 2))
    return mb.to_bytes()


@pytest.fixture
def slow():
    runner = WasmtimeRunner(threads=2, budgeted=False)
    instance = runner.instantiate(runner.compile(_slow_module()), memory=runner.create_memory(1, 16, shared=True))
    yield runner, instance
    runner.close()


def _markers(runner, instance) -> np.ndarray:
    return runner.read_array(instance, "int32", 0, CALLS)


def test_sigint_mid_call_stops_it_and_nothing_is_written_after_it_raised(slow):
    runner, instance = slow
    runner.parallel_call(instance, "k", [(0, 1), (1, 1)])  # workers and their instances made
    runner.write_memory(instance, 0, bytes(4 * CALLS))

    def interrupt_when_some_ran():
        _wait_until(lambda: _markers(runner, instance).sum() >= 4, "four calls to end")
        _interrupt_main()

    watcher = threading.Thread(target=interrupt_when_some_ran)
    watcher.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.parallel_call(instance, "k", [(index, SPINS) for index in range(CALLS)])
        at_raise = _markers(runner, instance)
    finally:
        watcher.join(PATIENCE)
    assert 4 <= at_raise.sum() < CALLS
    time.sleep(0.2)  # a worker left running would store more markers meanwhile
    assert np.array_equal(_markers(runner, instance), at_raise)
    runner.parallel_call(instance, "k", [(index, 1) for index in range(CALLS)])  # still works
    assert _markers(runner, instance).tolist() == [1] * CALLS


def test_a_trap_in_a_worker_stops_the_other_threads(slow, dealt):
    runner, instance = slow
    runner.write_memory(instance, 0, bytes(4 * CALLS))
    calls = [(0, 0)] + [(index, SPINS) for index in range(1, CALLS)]  # call 0 (the worker's) traps at once
    with pytest.raises(WasmTrap):
        runner.parallel_call(instance, "k", calls)
    at_raise = _markers(runner, instance)
    assert at_raise.sum() < CALLS - 1
    time.sleep(0.2)
    assert np.array_equal(_markers(runner, instance), at_raise)
    before = runner.worker_calls
    runner.parallel_call(instance, "k", [(index, 1) for index in range(CALLS)])
    assert _markers(runner, instance).tolist() == [1] * CALLS
    assert runner.worker_calls > before


def test_a_closed_runner_starts_new_workers_for_the_next_parallel_call(slow):
    runner, instance = slow
    runner.parallel_call(instance, "k", [(index, 1) for index in range(64)])
    assert runner.workers_alive == 1
    runner.close()
    assert runner.workers_alive == 0
    runner.write_memory(instance, 0, bytes(4 * CALLS))
    runner.parallel_call(instance, "k", [(index, 1) for index in range(64)])
    assert runner.workers_alive == 1
    assert _markers(runner, instance)[:64].tolist() == [1] * 64


# ---- the backend ---------------------------------------------------------------------------------------------

def _map_program(dst: int, src: int) -> object:
    return ProgramBuilder().add(ParallelMap(dst_array=Address.BufferOffset(dst), src_array=Address.BufferOffset(src),
                                            count=COUNT, operation=MapOperation.Neg, ty=Type.F32)).build()


def test_sigint_in_a_large_map_stops_its_chunks_and_the_backend_goes_on(dealt, monkeypatch):
    """The caller's first chunk ends with a SIGINT; the workers start their dealt chunk only once the batch
    stopped: KeyboardInterrupt comes out of execute_program after they ended, no other chunk ran, and
    nothing changes afterwards."""
    backend = WasmBackend(threads=3)
    try:
        src = backend.allocate_typed(np.arange(COUNT, dtype=np.float32) + 1, Type.F32)
        dst = backend.allocate_typed(COUNT, Type.F32)
        backend.execute_program(_map_program(dst, src), LaunchConfig())  # compiled, workers started
        backend.copy_to_buffer(dst, bytes(4 * COUNT))
        pool = backend._runner._pool
        entered, ended = [], []
        original = wasmtime_runner._SlotInstances.caller

        def caller(self, module, memory, export_name):
            call = original(self, module, memory, export_name)
            on_caller = threading.current_thread() is threading.main_thread()

            def chunk(args):
                entered.append(args)
                if not on_caller:
                    _wait_until(lambda: pool.stopping, "the interrupt to stop the map")
                call(args)
                ended.append(args)
                if on_caller:
                    _interrupt_main()  # KeyboardInterrupt here, in the caller's first chunk
            return chunk

        monkeypatch.setattr(wasmtime_runner._SlotInstances, "caller", caller)
        with pytest.raises(KeyboardInterrupt):
            backend.execute_program(_map_program(dst, src), LaunchConfig())
        at_raise = np.asarray(backend.copy_typed_from(dst, Type.F32, COUNT))
        assert len(ended) == len(entered) <= 3  # each thread ran the one chunk it had; all ended before
        ranges = chunk_ranges(COUNT, 3, 4)
        ran = {(lo, hi) for *_, lo, hi in entered}
        want = -(np.arange(COUNT, dtype=np.float32) + 1)
        for lo, hi in ranges:
            expected = want[lo:hi] if (lo, hi) in ran else np.zeros(hi - lo, np.float32)
            assert np.array_equal(at_raise[lo:hi], expected), f"chunk {lo}..{hi}"
        time.sleep(0.2)
        assert np.array_equal(np.asarray(backend.copy_typed_from(dst, Type.F32, COUNT)), at_raise)
        monkeypatch.setattr(wasmtime_runner._SlotInstances, "caller", original)
        backend.execute_program(_map_program(dst, src), LaunchConfig())
        assert np.array_equal(np.asarray(backend.copy_typed_from(dst, Type.F32, COUNT)), want)
    finally:
        backend.close()


def _backend_after_a_large_map(threads: int) -> weakref.ref:
    backend = WasmBackend(threads=threads)
    src = backend.allocate_typed(np.ones(COUNT, np.float32), Type.F32)
    dst = backend.allocate_typed(COUNT, Type.F32)
    backend.execute_program(_map_program(dst, src), LaunchConfig())
    assert backend.device_info()["parallel_dispatches"] == 1
    return weakref.ref(backend)


def test_a_backend_dropped_without_close_is_collected_with_its_workers():
    gc.collect()
    baseline = threading.active_count()
    for _ in range(3):
        dropped = _backend_after_a_large_map(3)
        gc.collect()
        assert dropped() is None
        assert threading.active_count() == baseline


def test_close_stops_the_workers_and_a_closed_backend_refuses_the_next_map(dealt):
    """close() stops the workers and closes the backend (docs/semantics.md): the next map raises
    BackendClosed and starts no worker (a runner itself restarts its workers: see the runner's test)."""
    backend = WasmBackend(threads=3)
    src = backend.allocate_typed(np.ones(COUNT, np.float32), Type.F32)
    dst = backend.allocate_typed(COUNT, Type.F32)
    backend.execute_program(_map_program(dst, src), LaunchConfig())
    assert backend._runner.workers_alive == 2
    backend.close()
    assert backend._runner.workers_alive == 0
    with pytest.raises(BackendClosed, match="execute_program_with_params: the wasm backend is closed"):
        backend.execute_program(_map_program(dst, src), LaunchConfig())
    assert backend._runner.workers_alive == 0
