"""WorkerPool: persistent daemon threads that run one batch of items at a time, each thread taking the next.

``run(items, prepare)`` uses up to ``slots`` threads: the calling thread (slot 0) and workers 1 ..
``slots - 1``. Each thread calls ``prepare(slot)`` once, on itself, for its ``call`` (so a slot may keep
state, such as a wasmtime Store, that only ever one thread touches), then calls ``call(item)`` for the
next item not yet taken until none is left. Items are taken in index order. Waiting blocks on C-level
locks, which release the GIL; engines whose calls release the GIL (wasmtime-py through ctypes) therefore
run the items truly in parallel. The workers start with the first ``run`` and stay until ``close``.

Stopping. A batch stops when a ``call`` or a ``prepare`` raises in any thread, or when the calling thread
is interrupted (KeyboardInterrupt, or any exception raised in it while it runs an item or waits): from
then on no thread takes another item, and each finishes the call it is in (a call itself is never cut
short: natively a signal reaches Python only between calls). ``run`` returns or raises only after every
worker has left the batch, so no worker runs an item of a batch whose ``run`` has ended; an interrupt
that lands while the caller waits is remembered and the wait goes on. (Should a further interrupt land
in the few bytecodes between two waits, the batch is still marked stopped, and the next ``run`` or
``close`` waits for it before anything else.)

One thread at a time: ``run`` raises RuntimeError when another thread's batch is running, or when it is
called from inside an item (nested parallel work), instead of stopping or waiting for that batch.

Errors: ``run`` raises an interrupt (an exception not derived from Exception, such as KeyboardInterrupt)
first; else the failure of the lowest item index, a failed ``prepare`` counting as before every item.
Since items are taken in order and every taken item finishes, that is the failure one thread running the
items in order meets first. A worker never dies of an exception, so ``run`` cannot hang on one. ``run`` on
a closed pool raises RuntimeError (a bug of the caller). Nothing is copied: calls share the caller's
objects, and a worker drops its references to a batch as soon as it left it.
"""

from __future__ import annotations

import itertools
import queue
import threading
from typing import Any, Callable, Sequence

__all__ = ["WorkerPool"]

_STOP = None
#: the index a failure outside any item is recorded under (before every item)
_BEFORE_ITEMS = -1
#: per thread: how many items of some batch it is running now (a ``run`` from inside one is refused)
_running_item = threading.local()


class _Batch:
    """One ``run``: its items, the next index to take, the stop flag, the failures, and which workers are in
    it (a worker joins before it takes anything; once the caller sealed the batch, no worker joins)."""

    __slots__ = ("items", "prepare", "taken", "dealt", "workers", "stopped", "failures", "counts", "members",
                 "inside", "arrived", "sealed", "owner")

    def __init__(self, items: Sequence[Any], prepare: Callable[[int], Callable[[Any], None]], workers: int,
                 deal: bool) -> None:
        self.items = items
        self.prepare = prepare
        self.dealt = deal
        self.workers = workers
        self.taken = itertools.count(workers if deal else 0)  # next() on a count is atomic under the GIL
        self.stopped = False
        self.failures: list[tuple[int, BaseException]] = []
        self.counts = [0] * (workers + 1)  # items run by each slot (each slot writes only its own)
        self.members = threading.Condition()
        self.inside = 0  # workers in the batch now
        self.arrived = 0  # workers that joined it so far
        self.sealed = False
        self.owner = threading.get_ident()  # the thread whose ``run`` this is

    def join(self) -> bool:
        """A worker enters the batch; False when the caller sealed it (the worker then leaves it alone)."""
        with self.members:
            if self.sealed:
                return False
            self.inside += 1
            self.arrived += 1
            self.members.notify_all()
            return True

    def leave(self) -> None:
        with self.members:
            self.inside -= 1
            self.members.notify_all()

    def take_part(self, slot: int) -> None:
        """Run items on ``slot`` until none is left or the batch stopped; a failure is recorded (and stops
        the batch), not raised."""
        index = _BEFORE_ITEMS
        try:
            if self.stopped:
                return
            call = self.prepare(slot)
            index = slot - 1 if self.dealt and slot else next(self.taken)
            while index < len(self.items) and not self.stopped:
                _running_item.depth = getattr(_running_item, "depth", 0) + 1
                try:
                    call(self.items[index])
                finally:
                    _running_item.depth -= 1
                self.counts[slot] += 1
                index = next(self.taken)
        except BaseException as exc:  # raised by ``run`` in the calling thread
            self.stopped = True
            self.failures.append((index, exc))

    def finish(self) -> None:
        """The caller's end of the batch: (when items were dealt and the batch goes on: wait for every worker
        to join) seal it, then wait until no worker is inside. An interrupt meanwhile stops the batch, is
        recorded, and the wait goes on."""
        while True:
            try:
                with self.members:
                    while self.dealt and not self.stopped and self.arrived < self.workers:
                        self.members.wait()
                    self.sealed = True
                    while self.inside:
                        self.members.wait()
                # a worker may still hold the batch for a moment: it must not keep the caller's objects alive
                self.items = self.prepare = None
                return
            except BaseException as exc:  # raised by ``run`` once the workers are out
                self.stopped = True
                self.failures.append((_BEFORE_ITEMS, exc))

    def first_failure(self) -> BaseException | None:
        if not self.failures:
            return None
        return min(self.failures, key=lambda failure: (isinstance(failure[1], Exception), failure[0]))[1]


class WorkerPool:
    """``slots`` threads in all: the calling thread (slot 0) and ``slots - 1`` workers."""

    #: test knob: when True, worker ``k``'s first item is item ``k - 1`` (the calling thread starts after
    #: them, and its batch waits for every worker to join), so every worker of a batch with enough items
    #: runs at least one item however late it starts; a batch that stops first skips the items of workers
    #: that had not started them. False: every thread takes the next item, and a batch ends without the
    #: workers that had not joined it when its items ran out (a worker that starts late costs nothing).
    deal_first_items = False

    def __init__(self, slots: int, name: str = "wasm-worker") -> None:
        if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
            raise ValueError(f"a WorkerPool needs at least one slot, got {slots!r}")
        self.slots = slots
        self._name = name
        self._inboxes: list[queue.SimpleQueue] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()  # closing and handing out a batch exclude each other
        self._closed = False
        self._batch: _Batch | None = None  # the batch running now (or one whose wait an interrupt broke)
        #: batches run with at least one worker
        self.batches = 0
        #: items run by the workers (slots 1 and up) in all batches
        self.items_on_workers = 0

    @property
    def started(self) -> bool:
        """Whether the worker threads are running."""
        return bool(self._threads) and not self._closed

    @property
    def stopping(self) -> bool:
        """Whether a batch is running and has been told to stop (a failure or an interrupt)."""
        batch = self._batch
        return batch is not None and batch.stopped

    def _start(self) -> None:
        for slot in range(1, self.slots):
            inbox: queue.SimpleQueue = queue.SimpleQueue()
            thread = threading.Thread(target=_work, args=(slot, inbox), name=f"{self._name}-{slot}", daemon=True)
            self._inboxes.append(inbox)
            self._threads.append(thread)
            thread.start()

    def run(self, items: Sequence[Any], prepare: Callable[[int], Callable[[Any], None]]) -> list[int]:
        """Run ``prepare(slot)(item)`` for every item on up to ``slots`` threads (see the module docstring);
        returns the number of items each slot ran. Raises the batch's first failure (see the module
        docstring) once no worker is in the batch any more."""
        workers = max(min(self.slots, len(items)) - 1, 0)
        if getattr(_running_item, "depth", 0):
            raise RuntimeError("WorkerPool.run from inside an item of a batch (nested parallel work) is not "
                               "supported")
        batch = None
        try:
            with self._lock:  # handed to the workers before a close() can queue their stop
                if self._closed:
                    raise RuntimeError("the worker pool is closed")
                if self._batch is not None and self._batch.owner != threading.get_ident():
                    raise RuntimeError("the worker pool is running another thread's batch: a WasmBackend is "
                                       "used by one thread at a time")
                self._finish_abandoned()
                if workers and not self._threads:
                    self._start()
                batch = _Batch(items, prepare, workers, self.deal_first_items)
                self._batch = batch
                for inbox in self._inboxes[:workers]:
                    inbox.put(batch)
            if workers:
                self.batches += 1
            batch.take_part(0)
        except BaseException:  # an interrupt before the caller took part: nothing more is taken
            if batch is not None:
                batch.stopped = True
            raise
        finally:
            if batch is not None:
                batch.finish()
                self._batch = None
                self.items_on_workers += sum(batch.counts[1:])
        failure = batch.first_failure()
        if failure is not None:
            raise failure
        return batch.counts

    def _finish_abandoned(self) -> None:
        """Wait for a batch whose ``run`` an interrupt broke out of before its workers were out."""
        batch = self._batch
        if batch is not None:
            batch.stopped = True
            batch.finish()
            self._batch = None

    def close(self) -> None:
        """Stop the workers: each finishes the batch it is in (a batch still running in another thread goes
        on to its end), then ends; returns when they have ended. Closing twice does nothing. Safe from a
        worker thread (a finalizer may run there): that worker is not waited for."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for inbox in self._inboxes:
                inbox.put(_STOP)
        current = threading.current_thread()
        for thread in self._threads:
            if thread is not current:
                thread.join()

    @property
    def alive_workers(self) -> int:
        """Worker threads still running."""
        return sum(thread.is_alive() for thread in self._threads)


def _work(slot: int, inbox: queue.SimpleQueue) -> None:
    """A worker's loop (a function, not a method: a worker refers to no pool, only to the batch it is in)."""
    while True:
        batch = inbox.get()
        if batch is _STOP:
            return
        if batch.join():
            try:
                batch.take_part(slot)
            finally:
                batch.leave()
        batch = None
