"""``device``: a started backend of each available kind, shared by the translator tests."""

from __future__ import annotations

import pytest

_devices: dict = {}


@pytest.fixture
def device(available_backend_name: str):
    from atlas_web.registry import get_backend
    backend = _devices.get(available_backend_name)
    if backend is None or backend._closed:
        backend = _devices[available_backend_name] = get_backend(available_backend_name)
    return backend


def pytest_sessionfinish(session, exitstatus):
    for backend in _devices.values():
        backend.close()
    _devices.clear()
