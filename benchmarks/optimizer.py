"""The program optimizer (atlas_web.opt): how long it takes, and what it changes in instructions and run time.

1. Optimizing a 1,000-instruction program (target: under 50 ms): a straight-line program of per-lane pointer
   arithmetic, constants, copies, MUL+ADD pairs and integer CVT round trips stored to memory, and the longest
   pessimized fuzz program of 40 seeds (tests/opt/pessimize.py over tests/fuzz's generator), each at
   levels 1 and 2, given the verifier's ProgramInfo as the compile pipeline gives it (best of ``--repeats``).
2. The examples (examples/) and a per-lane dot product (``LOOP`` over k with LDG, LDG, MUL, ADD: the MUL+ADD
   pair becomes MAD): instruction count and best launch time per level on every available backend (or those
   named with ``--backend``).

Timings are wall clock on whatever machine runs it (a loaded shared machine gives noisy figures: the best of
several runs is printed). Run ``PYTHONPATH=. python3 benchmarks/optimizer.py [--backend wasm] [--repeats 5]``;
``--optimize-only`` times the optimizer alone with the standard library (any Python 3.11+). Not a test.
"""

from __future__ import annotations

import argparse
import time

from atlas_web import ExecutionParams, LaunchConfig, Program
from atlas_web.opt import ProgramOptimizer


LEVELS = (0, 1, 2)


def straight_program(groups: int = 100) -> Program:
    """About ``10 * groups`` instructions of redundant per-lane arithmetic, every result stored."""
    lines = ["    mov_imm.u64 r200, 8589934592"]
    for k in range(groups):
        b = k % 20
        lines += [f"    mov_imm.u32 r{b}, {k}", f"    mov_imm.u32 r{b + 20}, 3", f"    add.u32 r{b + 40}, r{b}, r{b + 20}",
                  f"    mov.u32 r{b + 60}, r{b + 40}", f"    mul.f32 r{b + 80}, r{b + 100}, r{b + 101}",
                  f"    add.f32 r{b + 120}, r{b + 80}, r{b + 102}", f"    cvt.i64.i32 r{b + 140}, r{b + 160}",
                  f"    cvt.i32.i64 r{b + 180}, r{b + 140}", f"    stg.u32 [r200+{4 * k}], r{b + 60}",
                  f"    stg.f32 [r200+{4 * k + 4 * groups}], r{b + 120}"]
    lines.append("    exit")
    return Program.from_text("\n".join(lines))


def fuzz_program(seeds: int = 40) -> Program:
    """The longest pessimized fuzz program of the first ``seeds`` seeds (about 400 instructions: the
    generator's programs are short)."""
    from tests.fuzz.generator import generate
    from tests.opt.pessimize import pessimize
    programs = (pessimize(generate(seed, lambda name, ty: False, statements=64).build(list(range(2, 60))), seed)
                for seed in range(seeds))
    return max(programs, key=len)


def optimize_times(repeats: int, fuzz: bool = True) -> None:
    print("== optimizing programs (best of %d) ==" % repeats)
    programs = [("straight-line", straight_program())] + ([("pessimized fuzz", fuzz_program())] if fuzz else [])
    for name, program in programs:
        info = program.verify()
        for level in (1, 2):
            best = min(_timed(lambda: ProgramOptimizer(level).optimize(program, info)) for _ in range(repeats))
            done = ProgramOptimizer(level).optimize(program, info)
            print(f"  {name:16s} level {level}: {len(program)} -> {len(done.program)} instructions, "
                  f"{best * 1e3:.1f} ms")
        verify_best = min(_timed(program.verify) for _ in range(repeats))
        print(f"  {name:16s} (one verify of it alone: {verify_best * 1e3:.1f} ms)")


def _timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


#: the dot product's loop, after wasm_simd_lanes' prelude (guard, r5/r7/r9: lane pointers into a, b, out)
DOT_LOOP = """
    mov_imm.u64 r10, {stride}
    mov_imm.f32 r11, 0.0
    mov_imm.u32 r12, {k}
top:
    ldg.f32 r13, [r5+0]
    ldg.f32 r14, [r7+0]
    mul.f32 r15, r13, r14
    add.f32 r11, r15, r11
    add.u64 r5, r5, r10
    add.u64 r7, r7, r10
    loop r12, @top
    stg.f32 [r9+0], r11
done:
    exit
"""


def dot_times(backend, repeats: int, n: int = 1 << 16, k: int = 64) -> None:
    """Per-lane dot products: lane i sums a[j*n + i] * b[j*n + i] over j < k (MUL+ADD in the loop)."""
    a = backend.allocate_buffer(4 * n * k)
    b = backend.allocate_buffer(4 * n * k)
    out = backend.allocate_buffer(4 * n)
    from wasm_simd_lanes import _PRELUDE  # benchmarks/ is the script's directory
    program = Program.from_text(_PRELUDE.format(n=n, a=int(a) << 32, b=int(b) << 32, c=int(out) << 32)
                                + DOT_LOOP.format(stride=4 * n, k=k))
    config = LaunchConfig.linear(n)
    row = []
    for level in LEVELS:
        params = ExecutionParams(config, optimize=level)
        backend.execute_program_with_params(program, params)  # compile first
        best = min(_timed(lambda: backend.execute_program_with_params(program, params)) for _ in range(repeats))
        count = len(backend._pipeline.compile(program, {}, optimize=level).program)
        row.append(f"level {level}: {count} instr {best * 1e3:8.2f} ms")
    print(f"  {'dot (LOOP, MUL+ADD)':22s} " + " | ".join(row))
    for h in (a, b, out):
        backend.free_buffer(h)


def example_times(name: str, repeats: int, size: int) -> None:
    from atlas_web.registry import get_backend
    from examples import allocate_buffers, build_all
    for example in build_all(size):
        backend = get_backend(name)  # a fresh backend: the example's program names its buffers' handles
        if not all(backend.supports(op, ty) for op, ty in example.needs()):
            backend.close()
            continue
        program = example.program_object()
        allocate_buffers(example, backend)  # the program names these handles
        row = []
        try:
            for level in LEVELS:
                params = ExecutionParams(example.config, optimize=level)
                backend.execute_program_with_params(program, params)
                best = min(_timed(lambda: backend.execute_program_with_params(program, params))
                           for _ in range(repeats))
                count = len(backend._pipeline.compile(program, {}, optimize=level).program)
                row.append(f"level {level}: {count} instr {best * 1e3:8.2f} ms")
        finally:
            backend.close()
        print(f"  {example.name:22s} " + " | ".join(row))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", action="append", help="only these backends (default: every available one)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--size", type=int, default=1 << 16, help="elements of each example")
    ap.add_argument("--optimize-only", action="store_true",
                    help="only the optimizer's time on the straight-line program (standard library only)")
    args = ap.parse_args(argv)
    optimize_times(args.repeats, fuzz=not args.optimize_only)
    if args.optimize_only:
        return 0
    from atlas_web.registry import discover_backends, get_backend
    for status in discover_backends():
        if not status.available or (args.backend and status.name not in args.backend):
            continue
        print(f"== {status.name}: instructions and best launch time of {args.repeats} per level ==")
        example_times(status.name, args.repeats, args.size)
        backend = get_backend(status.name)
        dot_times(backend, args.repeats)
        backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
