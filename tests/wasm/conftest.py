"""Shared fixtures for the WebAssembly backend tests."""

from __future__ import annotations

import pytest

from wasm_backend.runners.wasmtime_runner import WasmtimeRunner


@pytest.fixture(scope="module")
def runner() -> WasmtimeRunner:
    """A budgeted wasmtime runner shared by one test module (compiles are cached)."""
    r = WasmtimeRunner()
    yield r
    r.close()
