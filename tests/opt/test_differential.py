"""Optimized vs unoptimized on every backend: bit-identical buffers and identical traps (code, index, lane,
message). The CI slice: a fixed spread of conformance programs (traps and the budget among them) and a few
pessimized fuzz programs (tests/opt/pessimize.py) per backend at level 2. The whole run, every conformance
program and 150 fuzz seeds at levels 1 and 2: ``python -m tests.opt.differential [backend ...]``."""

from __future__ import annotations

import pytest

from tests.fuzz.run import inexact_for

from .differential import agree, backends, changed, conformance_programs, fuzz_agree, fuzz_case

BACKENDS = backends()
PROGRAMS = conformance_programs()
_INEXACT = inexact_for([b for n, b in BACKENDS.items() if n != "cpu"])
#: the first conformance program whose name starts with each of these (traps, the budget, presets, calls,
#: loops, a pool, the phase, a lane op over u32)
PICKED = ("divide_by_zero", "oob", "budget", "presets", "calls", "loops", "stages", "pool.u32", "atlas.phase",
          "MAD.f32")
FUZZ_SEEDS = (0, 5)


def _picked():
    seen, out = set(), []
    for case, runner in PROGRAMS:
        for key in PICKED:
            if case.name.startswith(key) and key not in seen:
                seen.add(key)
                out.append((case, runner))
    return out


def test_the_slice_has_what_it_names():
    assert len(_picked()) == len(PICKED)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
def test_conformance_programs_agree_optimized(backend_name):
    backend = BACKENDS[backend_name]
    ran = 0
    for case, runner in _picked():
        if not all(backend.supports(n, t) for n, t in case.needs) or not changed(backend, case, 2):
            continue
        ran += 1
        problems = agree(backend, case, runner, 2)
        assert not problems, f"{backend_name} {case}: {problems}"
    assert ran >= 3


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
def test_fuzz_programs_agree_optimized(backend_name):
    backend = BACKENDS[backend_name]
    for seed in FUZZ_SEEDS:
        case = fuzz_case(seed, _INEXACT, statements=6)  # short programs: a GPU backend compiles each
        if all(backend.supports(n, t) for n, t in case.needs):
            problems = fuzz_agree(backend, case, 2)
            assert not problems, f"{backend_name} fuzz seed {seed}: {problems}"
