"""Atlas instructions with lane or launch state on every backend against the reference: ResAccum sums,
the phase across barriers and stages, class operands of several types."""

from __future__ import annotations

import pytest

from atlas_web import UnsupportedOperation
from atlas_web.isa import Type
from atlas_web.reference import CpuBackend

from .atlas_cases import RESONANCE_CASES, atlas_cases, resonance_problems
from .backends import compiled_backends
from .case_tools import check_case
from .harness import run_case

CASES = atlas_cases()
BACKENDS = compiled_backends()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reference_runs_case(reference, case):
    assert run_case(reference, case).trap is None


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_backend_matches_reference(reference, backend_name, case):
    check_case(reference, backend_name, BACKENDS.get(backend_name) or CpuBackend(), case)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("case", [c for c in CASES if c.name in RESONANCE_CASES], ids=str)
def test_resonance_sums_match_reference(reference, backend_name, case):
    """The 96 sums agree up to the order of additions (docs/semantics.md) and are zeroed per launch."""
    backend = BACKENDS.get(backend_name) or CpuBackend()
    missing = [(n, t) for n, t in case.needs if not backend.supports(n, t)]
    if missing and all(t is Type.F64 for _, t in missing):
        with pytest.raises(UnsupportedOperation):     # a backend without F64 (documented) refuses the case
            run_case(backend, case)
        return
    if missing:
        pytest.fail(f"{backend_name} cannot run {case} ({missing}): ResAccum is part of every backend's contract")
    want = run_case(reference, case).resonance
    got = run_case(backend, case).resonance
    assert len(got) == 96 and any(want)
    assert not resonance_problems(case, want, got)
    again = run_case(backend, case).resonance
    assert again == got  # zeroed at the start of each launch, not accumulated across launches
