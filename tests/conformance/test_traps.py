"""Traps on every backend against the reference: code, instruction index, lane and message."""

from __future__ import annotations

import pytest

from atlas_web.reference import CpuBackend

from .backends import compiled_backends
from .case_tools import check_case
from .control_cases import run_preset_case
from .harness import run_case
from .trap_cases import budget_cases, trap_cases

CASES = trap_cases()
BUDGET_CASES = budget_cases()
BACKENDS = compiled_backends()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reference_traps(reference, case):
    """Every case traps on the reference (so the comparison below compares traps)."""
    assert run_case(reference, case).trap is not None


@pytest.mark.parametrize("case", BUDGET_CASES, ids=str)
def test_reference_traps_budget(reference, case):
    assert run_preset_case(reference, case).trap is not None


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_backend_traps_as_the_reference(reference, backend_name, case):
    check_case(reference, backend_name, BACKENDS.get(backend_name) or CpuBackend(), case)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("case", BUDGET_CASES, ids=str)
def test_backend_budget_as_the_reference(reference, backend_name, case):
    check_case(reference, backend_name, BACKENDS.get(backend_name) or CpuBackend(), case, runner=run_preset_case)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("case", [*CASES, *BUDGET_CASES], ids=str)
def test_backend_trap_messages_as_the_reference(reference, backend_name, case):
    """One trap report (atlas_web.trap_report): a trap reads the same, the instruction's text and its
    numbers (handle, offset, size, operands, budget) included, on every backend that runs the case (the
    others refuse it: test above), a lane's and a cooperative step's alike."""
    backend = BACKENDS.get(backend_name) or CpuBackend()
    if not all(backend.supports(n, t) for n, t in case.needs):
        pytest.skip(f"{backend_name} does not run {case}")
    runner = run_preset_case if case in BUDGET_CASES else run_case
    expected, actual = runner(reference, case), runner(backend, case)
    assert expected.trap_message is not None
    assert actual.trap_message == expected.trap_message
