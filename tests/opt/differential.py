"""Differential runs of the optimizer: a program at optimization level 0 and at level 1 or 2 on the same backend
must give bit-identical buffers and the identical trap (code, instruction index, lane, message). One allowance:
docs/semantics.md says where a result is NaN, not which NaN, and a wasm engine's f32.min/max gives +NaN or -NaN
by the shape of the surrounding code (found here: removing an unrelated dead MOV_IMM flipped MIN.f32's NaN
sign on wasm), so a NaN equals any NaN of its type; every other value compares by its bits.

``at_level(backend, level)`` is the backend launching every program at ``level`` (ExecutionParams.optimize).
``conformance_programs()`` are the conformance suite's programs with the runner each needs; ``fuzz_outcomes``
runs one tests/fuzz generated case, ``fuzz_case(seed)`` made worse on purpose first (tests/opt/pessimize.py)
so that every pass has work in it. A program the optimizer leaves unchanged for a backend runs the same
instructions at both levels, so only changed programs are launched (``changed``).
``python -m tests.opt.differential [backend ...] [--seeds N] [--every K]`` runs every (K-th) conformance program
and N (150) fuzz seeds on every available backend (or those named) and prints how many changed and agreed (the CI slice in test_differential.py runs a deterministic part).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time

from atlas_web import ExecutionParams
from atlas_web.opt import ProgramOptimizer
from atlas_web.reference import CpuBackend

from tests.conformance.atlas_cases import atlas_cases
from tests.conformance.control_cases import control_cases, preset_cases, run_preset_case
from tests.conformance.cooperative_cases import cooperative_cases, operation_supported
from tests.conformance.harness import run_case
from tests.conformance.lane_cases import lane_cases
from tests.conformance.memory_cases import memory_cases, pool_cases, run_pool_case
from tests.conformance.trap_cases import budget_cases, trap_cases
from tests.conformance.values import decode
from tests.fuzz.campaign import run as run_fuzz

from .pessimize import pessimize

__all__ = ["at_level", "conformance_programs", "changed", "agree", "fuzz_agree", "backends", "fuzz_case",
           "same_bits"]


class _AtLevel:
    """``backend`` launching every program at optimization ``level`` (everything else passed through)."""

    def __init__(self, backend, level: int) -> None:
        self._backend, self._level = backend, level

    def execute_program(self, program, config) -> None:
        self._backend.execute_program_with_params(program, ExecutionParams(config, optimize=self._level))

    def execute_program_with_params(self, program, params) -> None:
        self._backend.execute_program_with_params(program, dataclasses.replace(params, optimize=self._level))

    def __getattr__(self, name):
        return getattr(self._backend, name)


def at_level(backend, level: int):
    """``backend`` launching at optimization ``level``."""
    return _AtLevel(backend, level)


def backends() -> dict:
    """name -> backend: the reference and every available compiled backend."""
    from tests.conformance.backends import compiled_backends
    return {"cpu": CpuBackend(), **compiled_backends()}


def _needs_met(backend, case) -> bool:
    if hasattr(case, "operation"):
        return operation_supported(backend, case)
    return all(backend.supports(n, t) for n, t in case.needs)


def conformance_programs() -> list:
    """(case, runner) of every conformance program (lane, control, presets, Atlas, memory, pools, traps,
    budget, cooperative)."""
    out = []
    for cases, runner in ((lane_cases(), run_case), (control_cases(), run_case), (preset_cases(), run_preset_case),
                          (atlas_cases(), run_case), (memory_cases(), run_case), (pool_cases(), run_pool_case),
                          (trap_cases(), run_case), (budget_cases(), run_preset_case),
                          (cooperative_cases(), run_case)):
        out.extend((case, runner) for case in cases)
    return out


def _handles(case) -> list[int]:
    return [2 + k for k in range(len(case.buffers) + len(getattr(case, "pools", ())))]


def changed(backend, case, level: int) -> bool:
    """Whether the optimizer at ``level`` for ``backend`` changes ``case``'s program (handles as a fresh
    backend gives them)."""
    program = case.program(_handles(case))
    presets = getattr(case, "presets", None)
    types = {reg: ty for reg, (ty, _v) in presets(_handles(case)).items()} if presets else None
    return ProgramOptimizer(level, target=backend).optimize(program, preset_types=types).program != program


def same_bits(ty, want: bytes, got: bytes) -> bool:
    """Whether two buffers of ``ty`` elements hold the same bits, a NaN matching any NaN."""
    if want == got:
        return True
    if not ty.is_float() or len(want) != len(got):
        return False
    size = ty.size_bytes()
    for k in range(0, len(want) - len(want) % size, size):
        a, b = want[k:k + size], got[k:k + size]
        if a != b and not all(math.isnan(v) for v in decode(ty, a) + decode(ty, b)):
            return False
    return want[len(want) - len(want) % size:] == got[len(got) - len(got) % size:]


def agree(backend, case, runner, level: int) -> list[str]:
    """Mismatches between ``case`` run at level 0 and at ``level`` on ``backend`` (empty: identical)."""
    want = runner(at_level(backend, 0), case)
    got = runner(at_level(backend, level), case)
    problems = []
    if (want.trap, want.trap_message) != (got.trap, got.trap_message):
        problems.append(f"trap: level 0 {want.trap} {want.trap_message!r}, level {level} {got.trap} "
                        f"{got.trap_message!r}")
    outputs = [buf.ty for buf in case.buffers if buf.output]
    if want.trap is None and not all(same_bits(ty, w, g) for ty, w, g in zip(outputs, want.outputs, got.outputs)):
        problems.append("output buffers differ")
    if want.resonance != got.resonance:
        problems.append("resonance accumulator differs")
    return problems


def fuzz_case(seed: int, inexact, statements: int = 16):
    """tests/fuzz's case of ``seed`` (at most ``statements`` statements) with its program pessimized
    (tests/opt/pessimize.py)."""
    from tests.fuzz.generator import generate
    case = generate(seed, inexact, statements)
    worse = dataclasses.replace(case, build=lambda handles: pessimize(case.build(handles), seed))
    program = worse.build(list(range(2, 2 + len(case.buffers))))
    needs = {(ins.INFO.name, ins.type) for ins in program.instructions}
    return dataclasses.replace(worse, needs=tuple(sorted(needs, key=lambda n: (n[0], n[1].code if n[1] else -1))))


def fuzz_agree(backend, case, level: int) -> list[str]:
    """Mismatches between tests/fuzz ``case`` run at level 0 and at ``level`` (every buffer, bit for bit, and
    the trap; after a trap the outputs are unspecified, the inputs must still agree)."""
    want = run_fuzz(at_level(backend, 0), case)
    got = run_fuzz(at_level(backend, level), case)
    if want.trap != got.trap:
        return [f"trap: level 0 {want.trap}, level {level} {got.trap}"]
    inputs = [k for k, key in enumerate(case.tolerance_ops) if key is None]
    compared = inputs if want.trap is not None else range(len(case.buffers))
    return [f"buffer {k} differs" for k in compared
            if not same_bits(case.buffers[k].ty, want.buffers[k], got.buffers[k])]


def main(argv=None) -> int:
    import argparse
    from tests.fuzz.run import inexact_for

    ap = argparse.ArgumentParser(description="optimized vs unoptimized programs on every backend")
    ap.add_argument("backend", nargs="*", help="only these backends (default: every available one)")
    ap.add_argument("--seeds", type=int, default=150, help="fuzz seeds per backend and level")
    ap.add_argument("--every", type=int, default=1, help="every Nth conformance program only (a slow backend)")
    args = ap.parse_args(argv)
    found = {n: b for n, b in backends().items() if not args.backend or n in args.backend}
    inexact = inexact_for([b for n, b in found.items() if n != "cpu"])
    failures = 0
    programs = conformance_programs()[::args.every]
    for name, backend in found.items():
        for level in (1, 2):
            start, ran, same = time.perf_counter(), 0, 0
            for case, runner in programs:
                if not _needs_met(backend, case):
                    continue
                if not changed(backend, case, level):
                    same += 1
                    continue
                ran += 1
                problems = agree(backend, case, runner, level)
                if problems:
                    failures += 1
                    print(f"MISMATCH {name} level {level} {case}: {problems}")
            fuzz_ran = 0
            for seed in range(args.seeds):
                case = fuzz_case(seed, inexact)
                if not all(backend.supports(n, t) for n, t in case.needs):
                    continue
                fuzz_ran += 1
                problems = fuzz_agree(backend, case, level)
                if problems:
                    failures += 1
                    print(f"MISMATCH {name} level {level} {case.name}: {problems}")
            print(f"{name} level {level}: {ran} changed conformance programs run at 0 and {level} "
                  f"({same} unchanged), {fuzz_ran} fuzz programs, {time.perf_counter() - start:.0f} s")
    print("mismatches:", failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
