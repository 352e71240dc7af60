"""Fixtures of the KernelBackend tests: ``kb``, a KernelBackend on each available backend, once with the
kernel instructions the device supports and once composing array operations instead (every backend
runs both paths)."""

from __future__ import annotations

import pytest

from atlas_web.kernels import KernelBackend

from tests.numpy.conftest import device, pytest_sessionfinish  # noqa: F401  (fixture and hook)


class Composed(KernelBackend):
    """A KernelBackend that takes no kernel instruction: every method runs its composition."""

    def has_kernel(self, instruction: str) -> bool:
        return False


@pytest.fixture(params=["kernels", "composed"])
def kb(request, device) -> KernelBackend:
    return KernelBackend(device) if request.param == "kernels" else Composed(device)
