"""The reference backend every conformance module compares with (one per test module), and the session's
summary lines: the cases each compiled backend skipped as unsupported (computed by
test_unsupported_summary.py) and the backends the suite ran without (``ATLAS_CONFORMANCE_WITHOUT``, backends.py)."""

from __future__ import annotations

import pytest

from atlas_web.reference import CpuBackend

from .backends import WITHOUT
from .unsupported import SKIPPED


@pytest.fixture(scope="module")
def reference():
    return CpuBackend()


def pytest_terminal_summary(terminalreporter) -> None:
    if SKIPPED:
        counts = ", ".join(f"{name} {skipped} of {cases}" for name, (skipped, cases) in sorted(SKIPPED.items()))
        terminalreporter.write_line(f"conformance: cases skipped as unsupported (as docs/backends.md lists): {counts}")
    for name, reason in sorted(WITHOUT.items()):
        terminalreporter.write_line(f"conformance: ran WITHOUT backend {name} (ATLAS_CONFORMANCE_WITHOUT): {reason}")
