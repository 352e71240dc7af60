"""The host cost of a cached launch: µs per ``execute_program_with_params`` of a tiny program.

A tiny one-lane program (one ``mov_imm`` and ``exit``) launched again and again with the same Program,
LaunchConfig and ExecutionParams measures what a cached launch costs besides running the code: the
template method (``atlas_web.backend.Backend.execute_program_with_params``), the compile pipeline's
lookups, the backend's launch hook. Prints the best of ``--repeats`` runs of ``--launches`` launches
per backend (the best is the least disturbed by other work on the machine; timings are noisy on a
shared machine: compare runs taken one after the other). ``--profile`` prints cProfile's top entries.

Measured on the loaded 2-core development machine (wasm, runs alternated): before the compile
pipeline (e1327da) 9.3-10.9 us; with it (937429b) 20.5-37.3 us; after the last-entry fast paths of the
pipeline, the expansion cache and the wasm module cache, plain cache keys and no per-launch import or
context manager 7.8-7.9 us.

    python benchmarks/launch_overhead.py [--backend wasm|cpu|webgpu ...] [--launches N] [--repeats R] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from atlas_web import LaunchConfig, Program, init_backend  # noqa: E402
from atlas_web.launch import ExecutionParams  # noqa: E402

TINY = "    mov_imm.u32 r1, 7\n    exit\n"


def measure(name: str, launches: int, repeats: int, profile: bool) -> None:
    backend = init_backend(name)
    program = Program.from_text(TINY)
    params = ExecutionParams(LaunchConfig.linear(1))
    launch = backend.execute_program_with_params
    for _ in range(200):                 # compile, and warm the caches
        launch(program, params)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(launches):
            launch(program, params)
        best = min(best, (time.perf_counter() - start) / launches)
    print(f"{name}: {best * 1e6:.1f} us per cached launch (best of {repeats} x {launches} launches)", flush=True)
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(launches):
            launch(program, params)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
    backend.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", action="append", choices=("cpu", "wasm", "webgpu"))
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    for name in args.backend or ["wasm"]:
        measure(name, args.launches, args.repeats, args.profile)


if __name__ == "__main__":
    main()
