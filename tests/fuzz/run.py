"""The long fuzzing run: ``python -m tests.fuzz.run --seconds 600 [--backend wasm] [--seed 0] [--big]``.

Generates programs from consecutive seeds, runs each on the reference and on every available backend that
supports its instructions (or only ``--backend``), and prints per backend how many ran, matched, met a known
issue (tests/fuzz/known_issues.py) or mismatched. Each new mismatch is minimized and printed as text assembly
with its launch and inputs. ``--big`` adds, every 50th seed, a launch of 2M lanes and a 1M-element map (the
wasm threaded and SIMD paths; slow on the reference). Exit status 1 when anything new mismatched.
"""

from __future__ import annotations

import argparse
import sys
import time

from atlas_web.reference import CpuBackend

from tests.conformance.backends import compiled_backends

from .campaign import check, minimize, repro_text
from .generator import generate
from .big import big_cases


def inexact_for(backends):
    """(name, ty) -> whether any of ``backends`` documents a nonzero tolerance for it."""
    def inexact(name, ty):
        return ty is not None and ty.is_float() and any(b.ulp_tolerance(name, ty) > 0 for b in backends)
    return inexact


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--backend", action="append", help="only these backends (default: every available one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="name each case before it runs (to find a crash)")
    args = ap.parse_args(argv)
    backends = {n: b for n, b in compiled_backends().items() if not args.backend or n in args.backend}
    reference = CpuBackend()
    inexact = inexact_for(list(backends.values()))
    stats = {n: {"ran": 0, "ok": 0, "known": 0, "new": 0, "unsupported": 0} for n in backends}
    deadline = time.monotonic() + args.seconds
    seed, new = args.seed, 0
    while time.monotonic() < deadline:
        cases = [generate(seed, inexact)]
        if args.big and seed % 50 == 0:
            cases += big_cases(seed)
        for case in cases:
            for name, backend in backends.items():
                if not all(backend.supports(n, t) for n, t in case.needs):
                    stats[name]["unsupported"] += 1
                    continue
                stats[name]["ran"] += 1
                if args.verbose:
                    print(f"{name} {case.name}", flush=True)
                problems, known = check(reference, backend, case)
                if not problems:
                    stats[name]["ok"] += 1
                elif known:
                    stats[name]["known"] += 1
                    print(f"known {known}: {name} {case.name}: {problems[0]}", flush=True)
                else:
                    stats[name]["new"] += 1
                    new += 1
                    program = minimize(reference, backend, case)
                    print("NEW MISMATCH\n" + repro_text(name, case, program, problems), flush=True)
        seed += 1
    print(f"seeds {args.seed}..{seed - 1} in {args.seconds:.0f} s")
    for name, s in stats.items():
        print(f"{name}: {s['ran']} programs ran, {s['ok']} matched, {s['known']} known issues, "
              f"{s['new']} new mismatches, {s['unsupported']} unsupported")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
