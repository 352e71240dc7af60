"""Threads sharing a backend take turns, and a closed backend refuses every call: the guard of a
backend's public methods.

A backend's engine state (a wasmtime Store, a GPU queue with its runtime and lane-state buffers, the
memory's allocator, the compile caches) is not safe to use from two threads at once. A backend makes
``self._exclusive = exclusive_lock()`` in ``__init__`` and wraps each public method that touches that
state with ``@one_thread_at_a_time``: a second thread waits until the first one's call has returned,
so each launch's outcome (its trap or its results) is its own. The lock is re-entrant: a locked method
may call another. Coroutines are not covered (two launches awaited on one event loop run in one
thread). Standard library only; under Pyodide, which has one thread, the lock is never contended.

``close()`` is wrapped with ``@closes`` instead: it runs once (later calls return at once) and marks the
backend closed, after which every guarded method raises BackendClosed naming the backend and the call
(docs/semantics.md, "Closing a backend").
"""

from __future__ import annotations

import functools
import threading

from .errors import BackendClosed

__all__ = ["exclusive_lock", "one_thread_at_a_time", "closes", "check_open"]


def exclusive_lock() -> threading.RLock:
    """The lock a backend keeps as ``self._exclusive``."""
    return threading.RLock()


def one_thread_at_a_time(method):
    """Run ``method`` holding its backend's ``_exclusive`` lock (see the module docstring)."""
    @functools.wraps(method)
    def exclusive(self, *args, **kwargs):
        with self._exclusive:
            check_open(self, method.__name__)
            return method(self, *args, **kwargs)
    return exclusive


def check_open(backend, what: str) -> None:
    """Raise BackendClosed (naming ``what``) when ``backend`` is closed: for the coroutine methods, which
    the lock cannot cover across their awaits."""
    if backend._closed:
        raise BackendClosed(f"{what}: the {backend.name} backend is closed (close() released its device and "
                            f"memory); make a new backend")


def closes(method):
    """Wrap a backend's ``close``: run it once, holding the lock, then mark the backend closed (also
    when releasing failed part way: nothing half-released is used again)."""
    @functools.wraps(method)
    def close(self) -> None:
        with self._exclusive:
            if self._closed:
                return
            try:
                method(self)
            finally:
                self._closed = True
    return close
