"""Fixtures of the KernelBackend tests: ``kb``, a KernelBackend on each available backend, once with the
kernel instructions the device supports and once composing array operations instead (every backend
runs both paths)."""

from __future__ import annotations

import pytest

from atlas_web.kernels import KernelBackend

_devices: dict = {}


class Composed(KernelBackend):
    """A KernelBackend that takes no kernel instruction: every method runs its composition."""

    def has_kernel(self, instruction: str) -> bool:
        return False


@pytest.fixture
def device(available_backend_name: str):
    from atlas_web.registry import get_backend
    backend = _devices.get(available_backend_name)
    if backend is None or backend._closed:
        backend = _devices[available_backend_name] = get_backend(available_backend_name)
    return backend


@pytest.fixture(params=["kernels", "composed"])
def kb(request, device) -> KernelBackend:
    return KernelBackend(device) if request.param == "kernels" else Composed(device)


def pytest_sessionfinish(session, exitstatus):
    for backend in _devices.values():
        backend.close()
    _devices.clear()
