"""Shared test configuration: the hypothesis profile and the per-backend parametrization.

A test that asks for the ``available_backend_name`` fixture (or
``available_backend``, a fresh started backend of that name) runs once per
backend the registry finds available here. When none is available such a test
fails instead of being skipped.
"""

from __future__ import annotations

import os
import signal

import pytest
from hypothesis import HealthCheck, settings

# The Ctrl-C tests send SIGINT and expect KeyboardInterrupt. A suite started in the background by a
# non-interactive shell (`.ci/run &`, nohup) inherits SIGINT ignored, and the backends rightly leave an ignored
# Ctrl-C alone (the launch runs on): give the test process Python's own handler whatever it inherited.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# modest examples and no deadline (the first run of a backend compiles); HYPOTHESIS_PROFILE=thorough for more
settings.register_profile("atlas", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", parent=settings.get_profile("atlas"), max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "atlas"))

_NONE_AVAILABLE = "no-backend-available"


def available_backend_names() -> list[str]:
    """The registry names of the backends that can start here (probed once per process)."""
    from atlas_web.registry import discover_backends
    return [status.name for status in discover_backends() if status.available]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "available_backend_name" in metafunc.fixturenames:
        names = available_backend_names() or [_NONE_AVAILABLE]
        metafunc.parametrize("available_backend_name", names, indirect=True, ids=names)


@pytest.fixture
def available_backend_name(request: pytest.FixtureRequest) -> str:
    """The name of one available backend (the test runs once per available backend)."""
    if request.param == _NONE_AVAILABLE:
        from atlas_web.registry import print_backend_summary
        import io
        report = io.StringIO()
        print_backend_summary(report)
        pytest.fail("no backend can start here:\n" + report.getvalue())
    return request.param


@pytest.fixture
def available_backend(available_backend_name: str):
    """A fresh backend (no allocations yet: the first buffer gets handle 2), closed afterwards."""
    from atlas_web.registry import get_backend
    started = get_backend(available_backend_name)
    yield started
    started.close()
