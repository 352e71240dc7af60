"""WasmBackend against NumPy on the design notes' targets, measured in one run (ratios = NumPy time / wasm time).

* ParallelMapBinary Add f32 over 16M values vs ``np.add(a, b, out=c)``            (target >= 0.8)
* a per-lane kernel (2 LDG, ADD, STG by GLOBAL_LANE_ID) over 4M lanes vs ``a + b`` (target >= 0.5)
* ParallelReduce Sum f32 over 16M values vs ``np.sum``                             (target >= 0.8)
  (these three and Exp: once with the default thread count and once with ``threads=1``)
* ParallelMap Exp f32 over 4M values vs ``np.exp(x, out=y)``                       (target >= 1)
* compile time of a 200-instruction program (verify, lower, engine compile)       (target < 20 ms)
* host overhead of a cached launch (a one-lane program that does nothing)          (target < 30 us)

Timings are wall time (``time.perf_counter``: large maps run on several threads, so the CPU time of
the process would add theirs up), interleave the two sides and keep the best of ``--repeats`` (the
machine may be shared).
Run ``PYTHONPATH=. python benchmarks/wasm_vs_numpy.py [--scale 0.25]``. Benchmarks are not tests.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from atlas_web import Address, LaunchConfig, Program, ProgramBuilder
from atlas_web.isa import (
    STG, BinaryMapOperation, MapOperation, ParallelMap, ParallelMapBinary, ParallelReduce, ReduceOperation, Register,
    Type,
)
from wasm_backend import WasmBackend


#: wall time: maps may run on several threads (CPU time would add the threads' times up)
clock = time.perf_counter


def best_pair(wasm_action, numpy_action, repeats: int) -> tuple[float, float]:
    """Best wall times of the two actions, measured alternately."""
    wasm_best = numpy_best = float("inf")
    wasm_action()
    numpy_action()
    for _ in range(repeats):
        start = clock()
        wasm_action()
        wasm_best = min(wasm_best, clock() - start)
        start = clock()
        numpy_action()
        numpy_best = min(numpy_best, clock() - start)
    return wasm_best, numpy_best


def report(label: str, wasm_time: float, numpy_time: float, target: float) -> None:
    ratio = numpy_time / wasm_time
    mark = "ok" if ratio >= target else "below target"
    print(f"{label:<44} wasm {wasm_time * 1e3:8.2f} ms  numpy {numpy_time * 1e3:8.2f} ms  "
          f"ratio {ratio:5.2f} (target >= {target}: {mark})")


def per_lane_add_program(a: int, b: int, c: int) -> Program:
    return Program.from_text(f"""
    cvt.u64.u32 r1, r255
    mov_imm.u64 r2, 4
    mul.u64 r3, r1, r2
    mov_imm.u64 r4, {a << 32}
    or.u64 r5, r3, r4
    mov_imm.u64 r6, {b << 32}
    or.u64 r7, r3, r6
    mov_imm.u64 r8, {c << 32}
    or.u64 r9, r3, r8
    ldg.f32 r10, [r5 + 0]
    ldg.f32 r11, [r7 + 0]
    add.f32 r12, r10, r11
    stg.f32 [r9 + 0], r12
    exit
""")


def two_hundred_instructions(variant: int) -> Program:
    """A 200-instruction per-lane program (``variant`` changes a constant, so each has its own digest)."""
    lines = ["    cvt.u64.u32 r1, r255", "    mov_imm.u64 r2, 4", "    mul.u64 r3, r1, r2",
             f"    mov_imm.u64 r4, {(2 + variant) << 32}", "    or.u64 r5, r3, r4", "    ldg.f32 r10, [r5 + 0]"]
    ops = ("add", "mul", "sub", "max", "min")
    for k in range(193):
        lines.append(f"    {ops[k % 5]}.f32 r{11 + k % 50}, r10, r{10 + (k * 7) % 50}")
    lines.append("    stg.f32 [r5 + 0], r11")
    return Program.from_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the array sizes")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    backend = WasmBackend()
    single = WasmBackend(threads=1)
    threads = backend.device_info()["threads"]
    big = int(16 * 1024 * 1024 * args.scale)
    mid = int(4 * 1024 * 1024 * args.scale)
    print(f"WasmBackend ({backend.device_info()['engine']}, {threads} threads for large maps, reductions and "
          f"per-lane launches) vs NumPy "
          f"{np.__version__}, wall time, best of {args.repeats}")

    a = rng.standard_normal(big, dtype=np.float32)
    b = rng.standard_normal(big, dtype=np.float32)
    out = np.empty_like(a)
    one = LaunchConfig()
    handles = {}
    for label, each in ((f"threads={threads}", backend), ("threads=1", single)):
        handles[label] = ha, hb, hc = (each.allocate_typed(a), each.allocate_typed(b),
                                       each.allocate_typed(big, Type.F32))
        add = ProgramBuilder().add(ParallelMapBinary(dst_array=Address.BufferOffset(hc),
                                                     src_a=Address.BufferOffset(ha), src_b=Address.BufferOffset(hb),
                                                     count=big, operation=BinaryMapOperation.Add)).build()
        times = best_pair(lambda each=each, add=add: each.execute_program(add, one), lambda: np.add(a, b, out=out),
                          args.repeats)
        report(f"ParallelMapBinary Add f32, {label}", *times, 0.8)
        assert np.array_equal(each.copy_typed_from(hc, Type.F32), a + b)
        if each is single:
            for handle in handles[label]:
                each.free_buffer(handle)
    ha, hb, hc = handles[f"threads={threads}"]

    lanes = LaunchConfig.linear(mid)
    a4, b4 = a[:mid], b[:mid]
    sums = {}
    for label, each in ((f"threads={threads}", backend), ("threads=1", single)):
        own = (ha, hb, hc) if each is backend else (each.allocate_typed(a), each.allocate_typed(b),
                                                     each.allocate_typed(big, Type.F32))
        kernel = per_lane_add_program(*own)
        times = best_pair(lambda each=each, kernel=kernel: each.execute_program(kernel, lanes), lambda: a4 + b4,
                          args.repeats)
        report(f"per-lane LDG, LDG, ADD, STG f32, {label}", *times, 0.5)
        assert np.array_equal(each.copy_typed_from(own[2], Type.F32, mid), a4 + b4)
        total = ProgramBuilder().add(ParallelReduce(dst=Register(1), src_array=Address.BufferOffset(own[0]),
                                                    count=big, operation=ReduceOperation.Sum)).add(
            STG(dst=Address.BufferOffset(own[2]), src=Register(1), ty=Type.F32)).build()
        times = best_pair(lambda each=each, total=total: each.execute_program(total, one), lambda: np.sum(a),
                          args.repeats)
        report(f"ParallelReduce Sum f32, {label}", *times, 0.8)
        sums[label] = each.copy_from_buffer(own[2], bytearray(4))
        if each is single:
            for handle in own:
                each.free_buffer(handle)
    assert len(set(map(bytes, sums.values()))) == 1, "the sum differs between thread counts"

    x = (rng.random(mid, dtype=np.float32) * 20 - 10).astype(np.float32)
    y = np.empty_like(x)
    for label, each in ((f"threads={threads}", backend), ("threads=1", single)):
        if not each.supports_operation(MapOperation.Exp, Type.F32):
            break
        hx, hy = each.allocate_typed(x), each.allocate_typed(mid, Type.F32)
        exp = ProgramBuilder().add(ParallelMap(dst_array=Address.BufferOffset(hy),
                                               src_array=Address.BufferOffset(hx), count=mid,
                                               operation=MapOperation.Exp)).build()
        times = best_pair(lambda each=each, exp=exp: each.execute_program(exp, one), lambda: np.exp(x, out=y),
                          args.repeats)
        report(f"ParallelMap Exp f32, {label}", *times, 1.0)
    single.close()

    from atlas_web.verify import verify
    from wasm_backend.lowering import compile_program
    config = LaunchConfig.linear(256)
    compile_program(two_hundred_instructions(0), verify(two_hundred_instructions(0)), config)  # warm-up
    phases = {"verify": [], "lower": [], "engine": []}
    for variant in range(1, 6):
        program = two_hundred_instructions(variant)
        start = clock()
        info = verify(program)
        verified = clock()
        compiled = compile_program(program, info, config, shared_memory=backend._runner.shared_memory)
        lowered = clock()
        backend._runner.compile(compiled.wasm)
        engine = clock()
        phases["verify"].append(verified - start)
        phases["lower"].append(lowered - verified)
        phases["engine"].append(engine - lowered)
    best = {name: min(times) * 1e3 for name, times in phases.items()}
    print(f"compile, {len(program)} instructions (best of 5): verify {best['verify']:.1f} ms, lower "
          f"{best['lower']:.1f} ms, engine {best['engine']:.1f} ms; lower + engine "
          f"{best['lower'] + best['engine']:.1f} ms (target < 20 ms)")

    nothing = ProgramBuilder().add(Program.from_text("    exit").instructions[0]).build()
    backend.execute_program(nothing, one)
    launches = 2000
    start = clock()
    for _ in range(launches):
        backend.execute_program(nothing, one)
    overhead = (clock() - start) / launches
    print(f"cached launch host overhead: {overhead * 1e6:.1f} us per launch (target < 30 us)")


if __name__ == "__main__":
    main()
