"""Memory growth with many distinct programs (issue 17 item 6): RSS per program, per backend.

A long-lived page or notebook compiles many programs; every compile cache is bounded, so once the
caches are full the resident memory should stop growing. This launches ``--programs`` distinct small
programs (each stores its own constant into a buffer, and is checked) once each, on one backend, and
prints the RSS every ``--every`` programs and the growth per program over the second half (after
the caches filled: they hold 256 programs). Not a test (it takes minutes; tests check the cache
sizes and the release of evicted entries instead: tests/{wasm,webgpu}_backend/test_cache_release.py).

Measured on the loaded 2-core development machine, 3,000 programs (``--programs 3000 --every 500``):
wasm 46.9 -> 135.9 MiB before (23.1 KiB per program, steadily), 46.8 -> 76.4 MiB after (flat from
program 1,000 on); webgpu 170 -> 453 MiB before, 155 -> 312 MiB after (6 KiB per program over the
second half, levelling off).

Session 7 (main at 5111e96, MESA_SHADER_CACHE_DISABLE=true), 3,000 programs each, RSS at programs 0 / 500 / 1,000 /
1,500 / 2,000 / 2,500 / 3,000 (MiB): wasm 49.0 / 79.7 / 80.2 / 80.3 / 80.3 / 80.3 / 80.3 (0.0 KiB per program
over the second half); cpu 39.0 / 49.9 / 50.0 / 50.0 / 50.0 / 50.0 / 50.0 (0.0 KiB); webgpu (lavapipe)
119.9 / 328.3 / 338.2 / 340.9 / 342.7 / 343.4 / 344.4 (2.4 KiB per program over the second half, 1.2 KiB over
the last 1,000). From program 500 to 3,000: wasm +0.6 MiB, cpu +0.1 MiB, webgpu +16 MiB.

    python benchmarks/memory_growth.py [--backend wasm|webgpu|cpu ...] [--programs N] [--every K]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from atlas_web import LaunchConfig, Program, init_backend  # noqa: E402
from atlas_web.isa import Type  # noqa: E402


def rss_mib() -> float:
    """This process's resident set size in MiB (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return 0.0


def program(value: int, out: int) -> Program:
    """A distinct program per ``value``: lane i stores ``value + i`` at ``out[i]``."""
    return Program.from_text(f"""
        mov_imm.u32 r1, {value}
        add.u32 r1, r1, r252
        mov_imm.u32 r2, 4
        mul.u32 r3, r252, r2
        mov_imm.u32 r4, {out}
        stg.u32 [r4 + r3], r1
        exit
    """)


def run(backend_name: str, programs: int, every: int) -> None:
    backend = init_backend(backend_name)
    out = backend.allocate_buffer(16)
    config = LaunchConfig.linear(4)
    samples = []
    start = time.perf_counter()
    for k in range(programs + 1):
        if k % every == 0:
            gc.collect()
            samples.append((k, rss_mib()))
            print(f"{backend_name:7s} {k:6d} programs  RSS {samples[-1][1]:8.1f} MiB  "
                  f"{time.perf_counter() - start:6.1f} s", flush=True)
        if k == programs:
            break
        backend.execute_program(program(k, out), config)
        got = backend.copy_typed_from(out, Type.U32)
        assert [int(v) for v in got] == [(k + i) & 0xFFFFFFFF for i in range(4)], (k, got)
    half = [s for s in samples if s[0] >= programs // 2]
    (k0, r0), (k1, r1) = half[0], half[-1]
    per = (r1 - r0) * 1024 / max(1, k1 - k0)
    info = backend.device_info()
    print(f"{backend_name}: RSS {samples[0][1]:.1f} -> {samples[-1][1]:.1f} MiB over {programs} programs; "
          f"{per:.1f} KiB per program from program {k0} to {k1}; device_info compiled_programs="
          f"{info.get('compiled_programs', '-')}")
    backend.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", action="append", choices=("cpu", "wasm", "webgpu"))
    parser.add_argument("--programs", type=int, default=1500)
    parser.add_argument("--every", type=int, default=250)
    args = parser.parse_args()
    for name in args.backend or ["wasm", "webgpu"]:
        run(name, args.programs, args.every)


if __name__ == "__main__":
    main()
