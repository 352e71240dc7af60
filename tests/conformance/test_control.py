"""Control flow, barriers, stages and preset registers on every backend against the reference."""

from __future__ import annotations

import pytest

from atlas_web.reference import CpuBackend

from .backends import compiled_backends
from .case_tools import check_case
from .control_cases import control_cases, preset_cases, run_preset_case
from .harness import run_case

CASES = control_cases()
PRESET_CASES = preset_cases()
BACKENDS = compiled_backends()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reference_runs_case(reference, case):
    result = run_case(reference, case)
    assert result.trap is None and any(any(out) for out in result.outputs)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_backend_matches_reference(reference, backend_name, case):
    check_case(reference, backend_name, BACKENDS.get(backend_name) or CpuBackend(), case)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("case", PRESET_CASES, ids=str)
def test_backend_matches_reference_with_presets(reference, backend_name, case):
    check_case(reference, backend_name, BACKENDS.get(backend_name) or CpuBackend(), case, runner=run_preset_case)
