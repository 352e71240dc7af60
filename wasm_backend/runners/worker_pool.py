"""WorkerPool: a fixed set of persistent daemon threads that run one batch of tasks at a time.

``run(tasks)`` runs ``tasks[0](0)`` on the calling thread and ``tasks[k](k)`` on worker ``k`` (so a
task knows its slot and may keep per-slot state, such as a wasmtime Store, that only ever one thread
touches), then waits for all of them. The workers start with the first ``run`` and stay until
``close``. Waiting blocks on C-level queues, which release the GIL; engines whose calls release the
GIL (wasmtime-py through ctypes) therefore run the tasks truly in parallel.

Errors: an exception raised by any task is re-raised by ``run`` after every task of the batch has
ended (the one of the lowest slot when several failed); a worker never dies of a task's exception,
so ``run`` cannot hang on it. ``run`` on a closed pool, or with more tasks than slots, raises
RuntimeError (a bug of the caller). Nothing is copied: tasks share the caller's objects.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable

__all__ = ["WorkerPool"]

_STOP = None


class WorkerPool:
    """``slots`` threads in all: the calling thread (slot 0) and ``slots - 1`` workers."""

    def __init__(self, slots: int, name: str = "wasm-worker") -> None:
        if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
            raise ValueError(f"a WorkerPool needs at least one slot, got {slots!r}")
        self.slots = slots
        self._name = name
        self._inboxes: list[queue.SimpleQueue] = []
        self._threads: list[threading.Thread] = []
        self._closed = False
        #: batches run with at least one worker
        self.batches = 0

    @property
    def started(self) -> bool:
        """Whether the worker threads are running."""
        return bool(self._threads) and not self._closed

    def _start(self) -> None:
        for slot in range(1, self.slots):
            inbox: queue.SimpleQueue = queue.SimpleQueue()
            thread = threading.Thread(target=self._work, args=(slot, inbox), name=f"{self._name}-{slot}", daemon=True)
            self._inboxes.append(inbox)
            self._threads.append(thread)
            thread.start()

    def _work(self, slot: int, inbox: queue.SimpleQueue) -> None:
        while True:
            item = inbox.get()
            if item is _STOP:
                return
            task, done = item
            try:
                task(slot)
            except BaseException as exc:  # handed to the caller, which re-raises it
                done.put((slot, exc))
            else:
                done.put((slot, None))

    def run(self, tasks: list[Callable[[int], None]]) -> None:
        """Run ``tasks[k](k)`` on slot ``k`` (slot 0: this thread) and wait for all; re-raise a failure."""
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        if len(tasks) > self.slots:
            raise RuntimeError(f"{len(tasks)} tasks for a pool of {self.slots} slots")
        if len(tasks) > 1:
            if not self._threads:
                self._start()
            self.batches += 1
        # one answer queue per batch: a batch abandoned by an interrupted caller cannot feed the next one
        done: queue.SimpleQueue = queue.SimpleQueue()
        for slot in range(1, len(tasks)):
            self._inboxes[slot - 1].put((tasks[slot], done))
        failures: dict[int, BaseException] = {}
        if tasks:
            try:
                tasks[0](0)
            except BaseException as exc:
                failures[0] = exc
        for _ in range(len(tasks) - 1):
            slot, exc = done.get()
            if exc is not None:
                failures[slot] = exc
        if failures:
            raise failures[min(failures)]

    def close(self, timeout: float = 5.0) -> None:
        """Stop the workers (each finishes its current task first) and wait up to ``timeout`` seconds each."""
        if self._closed:
            return
        self._closed = True
        for inbox in self._inboxes:
            inbox.put(_STOP)
        for thread in self._threads:
            thread.join(timeout)

    @property
    def alive_workers(self) -> int:
        """Worker threads still running."""
        return sum(thread.is_alive() for thread in self._threads)
