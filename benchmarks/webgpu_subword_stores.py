"""What an 8- or 16-bit store costs on WebGpuBackend next to a 32-bit one (wgsl/subword.py). Not a test.

Each lane stores its own element 32 times (a loop; the elements of neighbouring lanes share words), as U32, U16
and U8: the median launch time of each and its ratio to U32's, measured in this run. Then the time of a first
launch (pipeline creation: lavapipe compiles with LLVM) of a program of 64 unrolled stores, per type, made unique
per run so no shader cache answers. Run it on two checkouts, interleaved, to compare the ratios:

    python benchmarks/webgpu_subword_stores.py [--lanes N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from atlas_web import LaunchConfig, Program  # noqa: E402

TYPES = {"u32": 4, "u16": 2, "u8": 1}
STORES = 32
UNROLLED = 64


def _value(ty: str) -> str:
    return "add.u32 r6, r255, r0" if ty == "u32" else f"cvt.{ty}.u32 r6, r255"


def loop_program(ty: str, lanes: int, handle: int) -> Program:
    """Lane g stores its value at element g + k * lanes, k < STORES."""
    size = TYPES[ty]
    return Program.from_text(f"""
    cvt.u64.u32 r1, r255
    mov_imm.u64 r2, {size}
    mul.u64 r3, r1, r2
    mov_imm.u64 r4, {handle << 32}
    or.u64 r5, r3, r4
    {_value(ty)}
    mov_imm.u64 r7, {lanes * size}
    mov_imm.u32 r10, 0
    mov_imm.u32 r11, {STORES}
    mov_imm.u32 r12, 1
loop:
    stg.{ty} [r5 + 0], r6
    add.u64 r5, r5, r7
    add.u32 r10, r10, r12
    set.lt.u32 p1, r10, r11
    bra.p1 @loop
""")


def unrolled_program(ty: str, handle: int, salt: int) -> Program:
    """UNROLLED stores at static offsets; ``salt`` makes the shader's text unique (no cache hit)."""
    size = TYPES[ty]
    lines = [f"mov_imm.u32 r1, {salt}", "add.u32 r2, r255, r1",
             "add.u32 r6, r2, r0" if ty == "u32" else f"cvt.{ty}.u32 r6, r2"]
    lines += [f"stg.{ty} [buf{handle} + {k * size}], r6" for k in range(UNROLLED)]
    return Program.from_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=1 << 16)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    from webgpu_backend import WebGpuBackend
    backend = WebGpuBackend()
    config = LaunchConfig(grid=(args.lanes // 64, 1, 1), block=(64, 1, 1))
    buf = backend.allocate_buffer(4 * STORES * args.lanes)
    programs = {ty: loop_program(ty, args.lanes, int(buf)) for ty in TYPES}
    for program in programs.values():
        backend.execute_program(program, config)                  # compile and warm up
    times: dict[str, list[float]] = {ty: [] for ty in TYPES}
    for _ in range(args.repeat):                                  # interleaved
        for ty, program in programs.items():
            start = time.perf_counter()
            backend.execute_program(program, config)
            times[ty].append(time.perf_counter() - start)
    base = statistics.median(times["u32"])
    for ty in TYPES:
        median = statistics.median(times[ty])
        print(f"{ty:4s} {STORES} stores x {args.lanes} lanes: median {1e3 * median:8.2f} ms  "
              f"min {1e3 * min(times[ty]):8.2f} ms  {median / base:5.2f}x u32")
    salt = int.from_bytes(os.urandom(3), "little")
    one = LaunchConfig(grid=(1, 1, 1), block=(64, 1, 1))
    for ty in TYPES:
        start = time.perf_counter()
        backend.execute_program(unrolled_program(ty, int(buf), salt), one)
        elapsed = time.perf_counter() - start
        print(f"{ty:4s} first launch of {UNROLLED} unrolled stores (compile): {1e3 * elapsed:8.1f} ms")
    backend.close()


if __name__ == "__main__":
    main()
