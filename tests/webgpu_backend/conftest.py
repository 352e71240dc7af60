"""One WebGpuBackend for the whole session (pipelines compile slowly on lavapipe: share the caches).

Tests that need a fresh handle space make their own backend on the shared driver with ``fresh``.
"""

from __future__ import annotations

import pytest

from tests.webgpu.gpu import require_adapter

require_adapter()


@pytest.fixture(scope="session")
def gpu_driver():
    """The platform's default GpuDriver, closed at the end of the session."""
    from webgpu_backend import default_driver
    driver = default_driver()
    yield driver
    driver.close()


@pytest.fixture(scope="session")
def webgpu(gpu_driver):
    """A WebGpuBackend shared by the session (tests free what they allocate)."""
    from webgpu_backend import WebGpuBackend
    backend = WebGpuBackend(driver=gpu_driver)
    yield backend
    backend.close()


@pytest.fixture
def fresh(gpu_driver):
    """A new WebGpuBackend on the shared driver: its first buffer gets handle 2."""
    from webgpu_backend import WebGpuBackend
    backend = WebGpuBackend(driver=gpu_driver)
    yield backend
    backend.close()
