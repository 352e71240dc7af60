"""Threads sharing a backend take turns: the lock of a backend's public methods.

A backend's engine state (a wasmtime Store, a GPU queue with its runtime and lane-state buffers, the
memory's allocator, the compile caches) is not safe to use from two threads at once. A backend makes
``self._exclusive = exclusive_lock()`` in ``__init__`` and wraps each public method that touches that
state with ``@one_thread_at_a_time``: a second thread waits until the first one's call has returned,
so each launch's outcome (its trap or its results) is its own. The lock is re-entrant: a locked method
may call another. Coroutines are not covered (two launches awaited on one event loop run in one
thread). Standard library only; under Pyodide, which has one thread, the lock is never contended.
"""

from __future__ import annotations

import functools
import threading

__all__ = ["exclusive_lock", "one_thread_at_a_time"]


def exclusive_lock() -> threading.RLock:
    """The lock a backend keeps as ``self._exclusive``."""
    return threading.RLock()


def one_thread_at_a_time(method):
    """Run ``method`` holding its backend's ``_exclusive`` lock (see the module docstring)."""
    @functools.wraps(method)
    def exclusive(self, *args, **kwargs):
        with self._exclusive:
            return method(self, *args, **kwargs)
    return exclusive
