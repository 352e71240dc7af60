"""Fixtures of the parallel-execution tests (maps, reductions, SIMD lane ranges, stopping): one WasmBackend
per thread count in ``THREAD_COUNTS`` (tests.wasm_backend.thread_counts), the reference, and WorkerPool's
test knob that deals every worker its first item. Module-scoped fixtures are made once per test module."""

from __future__ import annotations

import pytest

from atlas_web.reference import CpuBackend
from wasm_backend import WasmBackend
from wasm_backend.runners.worker_pool import WorkerPool

from tests.wasm_backend.thread_counts import THREAD_COUNTS


@pytest.fixture(scope="module")
def backends():
    """threads -> a WasmBackend with that many threads (closed after the module)."""
    started = {threads: WasmBackend(threads=threads) for threads in THREAD_COUNTS}
    yield started
    for backend in started.values():
        backend.close()


@pytest.fixture(scope="module")
def reference():
    return CpuBackend()


@pytest.fixture
def dealt(monkeypatch):
    """Every worker of a batch runs its first item (chunk, group of chunks or range of lanes) however late
    it starts, so a test can require that the workers ran some of the work."""
    monkeypatch.setattr(WorkerPool, "deal_first_items", True)
