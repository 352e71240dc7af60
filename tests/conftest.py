"""Shared test configuration: the hypothesis profile and the per-backend parametrization.

A test that asks for the ``available_backend_name`` fixture (or
``available_backend``, a fresh started backend of that name) runs once per
backend the registry finds available here. When none is available such a test
fails instead of being skipped.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import pytest
from hypothesis import HealthCheck, settings

# The Ctrl-C tests send SIGINT and expect KeyboardInterrupt. A suite started in the background by a
# non-interactive shell (`.ci/run &`, nohup) inherits SIGINT ignored, and the backends rightly leave an ignored
# Ctrl-C alone (the launch runs on): give the test process Python's own handler whatever it inherited.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)



@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item, settings):
    """pytest-timeout's "thread" method, naming the test: a test past the timeout ends the run (os._exit) with
    every thread's stack and, as the last line, the test's node id and how long it ran (pytest-timeout's own
    report does not name the test, and a CI log keeps only its tail). The "signal" method is left to it."""
    if settings.method != "thread":
        return None
    import pytest_timeout

    def expire() -> None:
        terminal = item.config.get_terminal_writer()
        try:
            capture = item.config.pluginmanager.getplugin("capturemanager")
            if capture:
                capture.suspend_global_capture(item)
            terminal.sep("+", title=f"Timeout: {item.nodeid}")
            pytest_timeout.dump_stacks(terminal)
            terminal.sep("+", title=f"Timeout: {item.nodeid} ran past {settings.timeout:g} s; the run ends here")
        finally:
            terminal.flush()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)

    timer = threading.Timer(settings.timeout, expire)
    timer.name = f"timeout of {item.nodeid}"
    timer.daemon = True

    def cancel() -> None:
        timer.cancel()
        timer.join()

    item.cancel_timeout = cancel
    timer.start()
    return True


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
