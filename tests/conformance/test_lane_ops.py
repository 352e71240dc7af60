"""Every per-lane register instruction x type on every backend, against the reference."""

from __future__ import annotations

import pytest

from atlas_web import UnsupportedOperation
from atlas_web.reference import CpuBackend

from .backends import compiled_backends
from .harness import compare_with_reference, run_case
from .lane_cases import lane_cases

CASES = lane_cases()
BACKENDS = compiled_backends()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reference_runs_case(reference, case):
    """The generated program verifies and runs on the reference with a result or a trap."""
    result = run_case(reference, case)
    assert result.trap is not None or len(result.outputs) == 1


# Without a compiled backend installed there is nothing to compare, so no such test exists (rather than skipped ones).
@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_backend_matches_reference(reference, backend_name, case):
    backend = BACKENDS.get(backend_name) or CpuBackend()
    if not all(backend.supports(name, ty) for name, ty in case.needs):
        with pytest.raises(UnsupportedOperation):
            backend.execute_program(case.program([2 + i for i in range(len(case.buffers))]), case.config)
        return
    problems = compare_with_reference(reference, backend, case,
                                      backend.ulp_tolerance(case.op, case.ty) if case.ty else 0.0)
    assert not problems, f"{backend_name} {case}: " + "; ".join(problems)
