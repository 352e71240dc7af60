"""Random well-formed programs give the same results (or the same trap) on every backend as on the reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from atlas_web.reference import CpuBackend

from .backends import compiled_backends
from .case_tools import check_case
from .harness import run_case
from .random_cases import random_program_cases

BACKENDS = compiled_backends()
_REFERENCE = CpuBackend()


@settings(max_examples=max(1, settings.default.max_examples // 2))
@given(random_program_cases())
def test_random_programs_run_on_the_reference(case):
    """The generated programs verify and run (a trap, if any, is an integer division)."""
    result = run_case(_REFERENCE, case)
    assert result.trap is None or result.trap[0] in (4, 5)


# a quarter of the profile's examples per backend (each compiles a module; a GPU backend's shader compiles
# are slow): a dozen by default, 250 with HYPOTHESIS_PROFILE=thorough
@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@settings(max_examples=max(1, settings.default.max_examples // 4))
@given(case=random_program_cases())
def test_random_programs_match_reference(backend_name, case):
    check_case(_REFERENCE, backend_name, BACKENDS.get(backend_name) or CpuBackend(), case)
