"""tests/conformance/backends.py fails loudly when a registered backend's probe fails, and runs without it (saying
so) only where ATLAS_CONFORMANCE_WITHOUT names it."""

from __future__ import annotations

import pytest

from atlas_web import registry
from atlas_web.registry import BackendStatus

from . import backends


def _one_missing(monkeypatch, reason: str = "ImportError: no module named 'wasmtime'"):
    statuses = [BackendStatus("cpu", True), BackendStatus("wasm", False, reason)]
    monkeypatch.setattr(registry, "discover_backends", lambda **_: statuses)
    monkeypatch.setattr(backends, "WITHOUT", {})


def test_a_backend_whose_probe_fails_is_not_dropped_silently(monkeypatch):
    _one_missing(monkeypatch)
    monkeypatch.delenv("ATLAS_CONFORMANCE_WITHOUT", raising=False)
    with pytest.raises(backends.ConformanceBackendMissing, match="'wasm' is registered but not available: "
                                                                 "ImportError: no module named 'wasmtime'"):
        backends.compiled_backends()


def test_a_backend_named_in_the_environment_is_left_out_with_its_reason(monkeypatch):
    _one_missing(monkeypatch, "no Vulkan adapter")
    monkeypatch.setenv("ATLAS_CONFORMANCE_WITHOUT", "webgpu, wasm")
    assert backends.compiled_backends() == {}
    assert backends.WITHOUT == {"wasm": "no Vulkan adapter"}
