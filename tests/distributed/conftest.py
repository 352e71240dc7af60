"""The multi-device tests close what they make: the ``close`` fixture."""

from __future__ import annotations

from contextlib import ExitStack

import pytest


@pytest.fixture
def close():
    """``close(thing)`` returns ``thing`` (a backend, an executor, anything with ``__enter__``/``__exit__``) and
    closes it when the test ends, passed or failed, the last handed over first (an executor before its
    backends): no worker thread, wasm memory or GPU device outlives its test."""
    with ExitStack() as stack:
        yield stack.enter_context
