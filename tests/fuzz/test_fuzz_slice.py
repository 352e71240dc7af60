"""The campaign's seeded CI slice: a fixed set of generated programs per backend agree with the reference.

Deterministic (seeds 0..N-1); a mismatch listed in tests/fuzz/known_issues.py is reported as a warning, any
other fails with the minimized repro. The long run is ``python -m tests.fuzz.run --seconds 600``.
"""

from __future__ import annotations

import warnings

import pytest

from atlas_web.reference import CpuBackend
from atlas_web.isa import Type

from tests.conformance.backends import compiled_backends

from .campaign import check, minimize, repro_text, run
from .generator import LANE_ROWS, FUZZ_TYPES, generate
from .run import inexact_for

BACKENDS = compiled_backends()
_REFERENCE = CpuBackend()
_INEXACT = inexact_for(list(BACKENDS.values()))
#: programs per backend in the slice (the GPU backend compiles shaders per program: fewer)
SEEDS = 24


def test_generator_covers_the_table():
    """Over the slice's seeds the generator uses most per-lane rows of the table and every fuzzed type."""
    rows, types = set(), set()
    for seed in range(200):
        case = generate(seed, _INEXACT)
        rows |= {n for n, _ in case.needs}
        types |= {t for _, t in case.needs if t is not None}
    assert {r.name for r in LANE_ROWS} - {"MIRROR", "NbrCount"} <= rows
    assert {"ParallelMap", "ParallelMapBinary", "ParallelReduce", "BarSync", "LDS", "STS", "BRA", "LOOP"} <= rows
    assert set(FUZZ_TYPES) <= types


def test_generated_programs_trap_on_purpose_on_the_reference():
    traps = sum(run(_REFERENCE, generate(seed, _INEXACT)).trap is not None for seed in range(40))
    assert traps >= 5


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
def test_fuzz_slice(backend_name):
    backend = BACKENDS.get(backend_name) or CpuBackend()
    ran = 0
    for seed in range(SEEDS):
        case = generate(seed, _INEXACT)
        if not all(backend.supports(n, t) for n, t in case.needs):
            continue
        ran += 1
        problems, known = check(_REFERENCE, backend, case)
        if known:
            warnings.warn(f"{backend_name} {case.name}: known issue {known}: {problems[0]}")
        elif problems:
            program = minimize(_REFERENCE, backend, case)
            pytest.fail(repro_text(backend_name, case, program, problems))
    assert ran >= SEEDS // 3
