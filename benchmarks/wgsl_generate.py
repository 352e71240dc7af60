"""The time the WebGPU backend takes to write a long straight-line program's WGSL (no driver compile), and the
part of it spent in ``LaneContext.written`` (dropping the reused handle-table entries and checks whose pointer
register an instruction writes). Not a test; best of ``--repeat`` runs, each program's shaders built anew.

The programs: ``memory_heavy`` (benchmarks/compile_large.py: loads and stores through one pointer register) and
``many_pointers(n, k)``: ``k`` pointer registers live through the run, a load through each in turn and an ALU
write between, so ``k`` entries and ``k`` checks stay known while every instruction writes a register. Loaded
2-core machine: before ``written`` kept an index of the known values by register it rescanned them all on every
write (quadratic), best of 3 in two interleaved rounds, in ms, total (of which written): memory_heavy(2000)
62-192 (7.5-26), many_pointers(2000, 64) 263-574 (221-446), many_pointers(4000, 128) 1164-2287 (1044-2011);
after: 57-69 (3.0-4.4), 41 (2.4-2.6), 82-141 (4.6-6.6). Run
``python benchmarks/wgsl_generate.py [--repeat 3]`` on two checkouts to compare.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository and this folder importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from atlas_web import LaunchConfig, Program  # noqa: E402
from atlas_web.isa import ADD, LDG, MOV_IMM, Address, Register as R, Type  # noqa: E402
from atlas_web.registry import get_backend  # noqa: E402
from compile_large import OUT, memory_heavy  # noqa: E402
from webgpu_backend.wgsl.lane_context import LaneContext  # noqa: E402

CONFIG = LaunchConfig(grid=(1, 1, 1), block=(64, 1, 1))
U32, U64 = Type.U32, Type.U64


def many_pointers(instructions: int, pointers: int) -> Program:
    """``pointers`` u64 pointer registers (all r20's value) live through the run, loaded through in turn."""
    ptrs = [R(100 + k) for k in range(pointers)]
    regs = [R(30 + k) for k in range(32)]
    body = [MOV_IMM(dst=R(22), value=0, ty=U64)] + [ADD(dst=p, lhs=R(OUT), rhs=R(22), ty=U64) for p in ptrs]
    k = 0
    while len(body) < instructions:
        body.append(LDG(dst=regs[k % 32], src=Address.RegisterIndirect(ptrs[k % pointers], 0), ty=U32))
        body.append(ADD(dst=regs[(k + 1) % 32], lhs=regs[k % 32], rhs=R(255), ty=U32))
        k += 1
    return Program(body, {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spent = [0.0]
    written = LaneContext.written

    def timed(self, index: int) -> None:
        start = time.perf_counter()
        written(self, index)
        spent[0] += time.perf_counter() - start

    LaneContext.written = timed  # type: ignore[method-assign]
    programs = {"memory_heavy(2000)": memory_heavy(2000, memory=0.5),
                "many_pointers(2000, 64)": many_pointers(2000, 64),
                "many_pointers(4000, 128)": many_pointers(4000, 128)}
    with get_backend("webgpu") as backend:
        chunks = len(backend._memory.chunks)
        compiled = {name: backend._compile(backend._pipeline.compile(program, {R(OUT): U64}), CONFIG)
                    for name, program in programs.items()}
        best = {name: (float("inf"), 0.0) for name in programs}
        for _ in range(args.repeat):  # interleaved: the load changes between programs less than between runs
            for name, c in compiled.items():
                c._shaders.clear()  # built anew: not the cached shaders of the previous round
                spent[0] = 0.0
                start = time.perf_counter()
                c.stage_shaders(CONFIG, backend.features, chunks)
                total = time.perf_counter() - start
                best[name] = min(best[name], (total, spent[0]))
    for name, (total, in_written) in best.items():
        print(f"{name:26s} WGSL {total * 1e3:8.1f} ms, of which LaneContext.written {in_written * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
