"""What recording a trap's numbers costs a launch that does not trap (issue 9 item 3). Not a test.

The trap report's numbers are written only on the path that traps (the wasm trap helper's extra i64
arguments, the WebGPU ``trap_at`` call's extra words): this prints, for non-trapping programs full of
checks (pointer loads and stores, shared memory, integer division, class lookups, cooperative arrays),
the size of the generated wasm module and WGSL, and the median launch time on each compiled backend.
Run it on two checkouts to compare (the numbers are this checkout's):

    python benchmarks/trap_record_cost.py [--lanes N] [--repeat R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from atlas_web import LaunchConfig, Program  # noqa: E402
from atlas_web.registry import discover_backends, get_backend  # noqa: E402

#: non-trapping programs with many checks: {p0} is a pointer to the start of buffer 0 (4 bytes per lane)
PROGRAMS = {
    "loads_stores_div": """
    cvt.u64.u32 r1, r255
    mov_imm.u64 r2, 4
    mul.u64 r3, r1, r2
    mov_imm.u64 r4, {p0}
    or.u64 r5, r3, r4
    mov_imm.u32 r10, 0
    mov_imm.u32 r11, 64
    mov_imm.u32 r12, 1
    mov_imm.u32 r13, 3
loop:
    ldg.u32 r6, [r5 + 0]
    add.u32 r6, r6, r13
    div.u32 r7, r6, r13
    rem.u32 r8, r6, r13
    add.u32 r6, r7, r8
    stg.u32 [r5 + 0], r6
    add.u32 r10, r10, r12
    set.lt.u32 p1, r10, r11
    bra.p1 @loop
""",
    "shared_and_class": """
    mov_imm.u32 r1, 4
    mul.u32 r2, r252, r1
    sts.u32 [r2 + 0], r252
    bar.sync 0
    lds.u32 r3, [r2 + 0]
    mov_imm.u32 r4, 95
    rem.u32 r5, r3, r4
    mirror r6, r5
    cvt.u64.u32 r7, r255
    mov_imm.u64 r8, 4
    mul.u64 r9, r7, r8
    mov_imm.u64 r10, {p0}
    or.u64 r11, r9, r10
    cvt.u32.u8 r12, r6
    stg.u32 [r11 + 0], r12
""",
    "cooperative_arrays": """
    mov_imm.u64 r4, {p0}
    pmap.neg.f32 [r4 + 0], [r4 + 0], {lanes}
    preduce.sum.f32 r5, [r4 + 0], {lanes}
""",
}


def _sizes(backend, name: str, program: Program, config: LaunchConfig) -> str:
    if name == "wasm":
        from wasm_backend.generated_code import wasm_listing
        head = wasm_listing(backend, program, config).splitlines()[0]
        return head.split("(")[1].split(")")[0]
    from webgpu_backend.generated_code import wgsl_listing
    return f"{len(wgsl_listing(backend, program, config))} WGSL chars"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=1 << 16)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    config = LaunchConfig(grid=(args.lanes // 64, 1, 1), block=(64, 1, 1), shared_memory=256)
    for status in discover_backends():
        if not status.available or status.name == "cpu":
            continue
        backend = get_backend(status.name)
        buf = backend.allocate_buffer(4 * args.lanes)
        for label, text in PROGRAMS.items():
            program = Program.from_text(text.format(p0=int(buf) << 32, lanes=args.lanes))
            backend.execute_program(program, config)            # compile and warm up
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                backend.execute_program(program, config)
                times.append(time.perf_counter() - start)
            size = _sizes(backend, status.name, program, config)
            print(f"{status.name:7s} {label:20s} {size:>18s}  median {1e3 * statistics.median(times):8.3f} ms  "
                  f"min {1e3 * min(times):8.3f} ms")
        backend.close()


if __name__ == "__main__":
    main()
