"""Cooperative instructions on every backend against the reference: every operation and type, overlaps,
empty counts and addresses in lane 0's registers."""

from __future__ import annotations

import pytest

from atlas_web.reference import CpuBackend

from .backends import compiled_backends
from .case_tools import check_case
from .cooperative_cases import cooperative_cases, operation_supported, reduce_tolerance
from .harness import run_case

CASES = cooperative_cases()
BACKENDS = compiled_backends()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reference_runs_case(reference, case):
    assert run_case(reference, case).trap is None


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_backend_matches_reference(reference, backend_name, case):
    check_case(reference, backend_name, BACKENDS.get(backend_name) or CpuBackend(), case,
               supported=operation_supported, tolerance_of=reduce_tolerance)
