"""Local devices at once: the jobs of several backends of one process run concurrently, one thread per device.

Standard library only. ``DeviceThreads.run(jobs)`` takes (device, job) pairs: the jobs of the first job's device
run on the calling thread, those of every other local device on that device's own worker thread (made on first
use, kept until ``close`` or until the device is collected), the jobs of one device one after another in the
order given. A device with a
``start_program`` method is remote (a Dask worker behind ``RemoteBackend``): its jobs only wait for work already
started, so they run on the calling thread too. Backends release Python's lock while they compute (wasmtime and
NumPy calls), so devices overlap on a machine with cores to spare.

Ctrl-C: the calling thread's device stops as a one-device launch stops (a wasm launch within a tick); the other
devices finish the job they are running (their threads do not receive signals), and the KeyboardInterrupt is
raised once they did, so no job outlives the call that started it. Where the platform has no threads (Pyodide:
``THREADS`` is False) every job runs on the calling thread, one after another.
"""

from __future__ import annotations

import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Callable, Sequence

__all__ = ["DeviceThreads", "THREADS"]

#: whether this platform starts threads (Pyodide does not: every job then runs on the calling thread)
THREADS = sys.platform != "emscripten"


class DeviceThreads:
    """One worker thread per distinct local device (keyed by the backend object); see the module docstring.
    A device that takes weak references is held weakly: once it is collected its thread ends (after its
    current job) and a new device at the same address gets a thread of its own; any other device is held
    until ``close``, so its address is not reused meanwhile."""

    def __init__(self) -> None:
        #: id(device) -> (a callable giving the device, None once it died; its pool)
        self._pools: dict[int, tuple[Callable[[], Any], ThreadPoolExecutor]] = {}
        # reentrant: a device may be collected (its weakref callback runs) while this thread holds it
        self._lock = threading.RLock()

    def _pool(self, device: Any, rank: int) -> ThreadPoolExecutor:
        key = id(device)
        with self._lock:
            entry = self._pools.get(key)
            if entry is not None and entry[0]() is device:
                return entry[1]
            if entry is not None:            # a dead device's, not yet forgotten
                entry[1].shutdown(wait=False)
            pool = ThreadPoolExecutor(1, thread_name_prefix=f"atlas-device-{rank}")
            this = weakref.ref(self)         # the callback must not keep this object alive (a cycle)
            try:
                holder: Callable[[], Any] = weakref.ref(device, lambda ref: _forget(this, key, ref))
            except TypeError:                # no weak references to it: held, so its id stays its own
                holder = lambda: device  # noqa: E731
            self._pools[key] = (holder, pool)
            return pool

    def run(self, jobs: Sequence[tuple[Any, Callable[[], Any]]], parallel: bool = True) -> list[tuple[bool, Any]]:
        """Run every job; per job (True, its result) or (False, the exception it raised), in the order given.
        A KeyboardInterrupt (or other BaseException) of a job on the calling thread, or one that lands while
        it waits for the other threads, stops that thread's remaining jobs and is raised after the other
        threads finished theirs."""
        groups: dict[int, list[int]] = {}
        for index, (device, _) in enumerate(jobs):
            groups.setdefault(id(device), []).append(index)
        outcomes: list[tuple[bool, Any] | None] = [None] * len(jobs)

        def run_group(indices: list[int]) -> None:
            for index in indices:
                try:
                    outcomes[index] = (True, jobs[index][1]())
                except Exception as error:
                    outcomes[index] = (False, error)

        here, futures = [], []
        for rank, (key, indices) in enumerate(groups.items()):
            device = jobs[indices[0]][0]
            if parallel and THREADS and rank and not hasattr(device, "start_program"):
                futures.append(self._pool(device, rank).submit(run_group, indices))
            else:
                here.append(indices)
        try:
            for indices in here:
                run_group(indices)
        finally:
            interrupt = _wait_all(futures)
        if interrupt is not None:
            raise interrupt
        for future in futures:
            future.result()   # run_group catches every Exception: only a BaseException of a thread is left
        return outcomes  # type: ignore[return-value]  # every job ran: an interrupted thread raised above

    def close(self) -> None:
        """Stop the worker threads (after their current job)."""
        with self._lock:
            pools, self._pools = self._pools, {}
        for _, pool in pools.values():
            pool.shutdown(wait=True)


def _forget(threads: "weakref.ref[DeviceThreads]", key: int, holder: Callable[[], Any]) -> None:
    """A device died: its pool is dropped and its thread ends after its current job."""
    owner = threads()
    if owner is None:
        return
    with owner._lock:
        entry = owner._pools.get(key)
        if entry is None or entry[0] is not holder:
            return
        del owner._pools[key]
    entry[1].shutdown(wait=False)


def _wait_all(futures) -> BaseException | None:
    """Wait until every future is done, whatever lands meanwhile; the first exception that interrupted the
    wait (a Ctrl-C), or None. The other devices' jobs may use buffers the caller frees once it raised."""
    interrupt = None
    while True:
        try:
            wait(futures)
            return interrupt
        except BaseException as exc:  # noqa: BLE001 -- raised by the caller once the jobs are done
            if interrupt is None:
                interrupt = exc
