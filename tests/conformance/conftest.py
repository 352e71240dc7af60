"""The reference backend every conformance module compares with (one per test module)."""

from __future__ import annotations

import pytest

from atlas_web.reference import CpuBackend


@pytest.fixture(scope="module")
def reference():
    return CpuBackend()
