"""Local devices run their launches at once (one thread per device): two devices' launches meet at a barrier
inside them (bounded: a launch that waited alone would break it), with the results equal to NumPy; with
parallel=False they run one after the other (the barrier breaks); DeviceThreads keeps one device's jobs in
order and raises a KeyboardInterrupt of the calling thread only after the other devices finished."""

from __future__ import annotations

import signal
import threading
import time
from contextlib import closing

import numpy as np
import pytest

from atlas_web import LaunchConfig
from atlas_web.distributed import DataParallel, MultiDeviceExecutor, Sharded
from atlas_web.distributed.device_threads import DeviceThreads
from atlas_web.isa import Type

from .helpers import X, Y, square_program, start


class _Meeting:
    """A backend whose launches wait (at most 10 s) at a barrier shared with the other devices' launches."""

    def __init__(self, backend, barrier: threading.Barrier, seen: list) -> None:
        self._backend, self._barrier, self._seen = backend, barrier, seen

    def execute_program_with_params(self, program, params):
        self._seen.append(threading.current_thread().name)
        self._barrier.wait(timeout=10)
        return self._backend.execute_program_with_params(program, params)

    def __getattr__(self, name):
        return getattr(self._backend, name)


def _run(close, names, parallel: bool):
    barrier, seen = threading.Barrier(len(names) if parallel else 1), []
    devices = [_Meeting(backend, barrier, seen) for backend in start(names, close)]
    x = np.random.default_rng(2).standard_normal(8 * len(names)).astype(np.float32)
    with MultiDeviceExecutor(devices, parallel=parallel) as ex:
        xs, ys = ex.array(x, Type.F32, Sharded()), ex.empty(x.size, Type.F32, Sharded())
        ex.execute_distributed(square_program(Type.F32), DataParallel(
            LaunchConfig(grid=(2 * len(names), 1, 1), block=(4, 1, 1)), pointers={X: xs, Y: ys}))
        return ys.read() == (x * x).tobytes(), seen


@pytest.mark.parametrize("names", [("wasm", "wasm"), ("wasm", "cpu", "wasm")], ids="+".join)
def test_local_devices_launch_at_once(names, close):
    equal, seen = _run(close, names, parallel=True)
    assert equal
    assert threading.current_thread().name in seen and len(set(seen)) == len(names)   # rank 0 on this thread


def test_parallel_false_runs_the_devices_one_after_another_here(close):
    equal, seen = _run(close, ("wasm", "cpu"), parallel=False)
    assert equal and seen == [threading.current_thread().name] * 2


def test_without_threads_every_job_runs_here(monkeypatch, close):
    from atlas_web.distributed import device_threads
    monkeypatch.setattr(device_threads, "THREADS", False)     # as under Pyodide
    threads = close(closing(DeviceThreads()))
    assert threads.run([(object(), threading.current_thread), (object(), threading.current_thread)]) == \
        [(True, threading.current_thread())] * 2


def test_jobs_of_one_device_keep_their_order_and_an_interrupt_waits_for_the_others():
    threads, order, other_done = DeviceThreads(), [], threading.Event()
    a, b = object(), object()
    try:
        out = threads.run([(a, lambda: order.append(1) or 1), (b, lambda: 2), (a, lambda: order.append(3) or 3)])
        assert out == [(True, 1), (True, 2), (True, 3)] and order == [1, 3]
        release = threading.Event()

        def slow():
            release.wait(timeout=10)
            other_done.set()

        def interrupted():
            release.set()
            raise KeyboardInterrupt
        with pytest.raises(KeyboardInterrupt):
            threads.run([(a, interrupted), (b, slow)])
        assert other_done.is_set()
        failed = threads.run([(a, lambda: 1 / 0), (b, lambda: "ok")])
        assert isinstance(failed[0][1], ZeroDivisionError) and failed[1] == (True, "ok")
    finally:
        threads.close()


def test_an_interrupt_while_waiting_for_the_other_devices_is_raised_after_they_finished():
    """Rank 0's jobs are done and the calling thread waits for another device's job when Ctrl-C lands: the
    wait goes on until that job finished (it may be using buffers the caller frees once run() raised), then
    the KeyboardInterrupt is raised."""
    threads, here_done, other_done = DeviceThreads(), threading.Event(), threading.Event()
    main = threading.main_thread().ident
    assert threading.current_thread().ident == main

    def slow():
        here_done.wait(timeout=10)
        time.sleep(0.1)      # the calling thread is in its wait by now
        signal.pthread_kill(main, signal.SIGINT)
        time.sleep(0.5)      # still running when the interrupt lands
        other_done.set()

    try:
        with pytest.raises(KeyboardInterrupt):
            threads.run([(object(), here_done.set), (object(), slow)])
        assert other_done.is_set(), "run() raised the interrupt while another device's job was still running"
    finally:
        threads.close()


class _Device:
    """A device that takes weak references (a backend does)."""


def test_a_collected_device_s_thread_ends_and_a_new_device_at_its_address_gets_its_own():
    """The threads were keyed by id(device) alone: a dead device's thread lived until close() and a new device
    given the dead one's address (CPython reuses it at once) ran on the dead one's thread."""
    threads = DeviceThreads()
    try:
        here, device = _Device(), _Device()
        (_, _), (_, old) = threads.run([(here, lambda: 0), (device, threading.current_thread)])
        assert old is not threading.current_thread()
        address = id(device)
        del device
        old.join(timeout=10)          # bounded: a thread that is kept fails below
        assert not old.is_alive(), "the collected device's thread is still running"
        kept = []                     # new devices, held, until one is at the dead one's address
        while len(kept) < 1000 and (not kept or id(kept[-1]) != address):
            kept.append(_Device())
        assert id(kept[-1]) == address, "no new object got the collected device's address"
        (_, _), (_, new) = threads.run([(here, lambda: 0), (kept[-1], threading.current_thread)])
        assert new is not old and new.is_alive()
        # a device without weak references keeps its one thread across calls
        other = object()
        (_, _), (_, a) = threads.run([(here, lambda: 0), (other, threading.current_thread)])
        (_, _), (_, b) = threads.run([(here, lambda: 0), (other, threading.current_thread)])
        assert a is b
    finally:
        threads.close()
