"""Local devices at once: the jobs of several backends of one process run concurrently, one thread per device.

Standard library only. ``DeviceThreads.run(jobs)`` takes (device, job) pairs: the jobs of the first job's device
run on the calling thread, those of every other local device on that device's own worker thread (made on first
use, kept until ``close``), the jobs of one device one after another in the order given. A device with a
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
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Callable, Sequence

__all__ = ["DeviceThreads", "THREADS"]

#: whether this platform starts threads (Pyodide does not: every job then runs on the calling thread)
THREADS = sys.platform != "emscripten"


class DeviceThreads:
    """One worker thread per distinct local device (keyed by the backend object); see the module docstring."""

    def __init__(self) -> None:
        self._pools: dict[int, ThreadPoolExecutor] = {}
        self._lock = threading.Lock()

    def _pool(self, key: int, rank: int) -> ThreadPoolExecutor:
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = ThreadPoolExecutor(1, thread_name_prefix=f"atlas-device-{rank}")
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
                futures.append(self._pool(key, rank).submit(run_group, indices))
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
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.shutdown(wait=True)


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
