"""Memory instructions on every backend against the reference: LDG/STG per type and address mode,
shared memory across a barrier, pools (allocated in the program and by the host)."""

from __future__ import annotations

import pytest

from atlas_web.reference import CpuBackend

from .backends import compiled_backends
from .case_tools import check_case
from .harness import run_case
from .memory_cases import memory_cases, pool_cases, run_pool_case

CASES = memory_cases()
POOL_CASES = pool_cases()
BACKENDS = compiled_backends()


@pytest.mark.parametrize("case", CASES + POOL_CASES, ids=str)
def test_reference_runs_case(reference, case):
    """The case verifies and runs on the reference without a trap."""
    runner = run_pool_case if case in POOL_CASES else run_case
    assert runner(reference, case).trap is None


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_backend_matches_reference(reference, backend_name, case):
    check_case(reference, backend_name, BACKENDS.get(backend_name) or CpuBackend(), case)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_backend_matches_reference_with_host_pools(reference, backend_name, case):
    check_case(reference, backend_name, BACKENDS.get(backend_name) or CpuBackend(), case, runner=run_pool_case)
