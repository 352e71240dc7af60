"""One driver (one device) for the whole WebGPU test session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def driver():
    """The platform's default GpuDriver, closed at the end of the session."""
    from webgpu_backend import default_driver
    started = default_driver()
    yield started
    started.close()
