"""The first launch of a long straight-line program on wasm and webgpu (issue 17 item 9), in CPU seconds.

The program: ``--instructions`` random u32 ADD/MUL/XOR over 32 registers that depend on the lane id (the
optimizer cannot fold them), then every register stored; 64 lanes. For each backend it prints the wall time
and the CPU time of the process (every thread: lavapipe compiles on its own threads) of the first launch
(verify, optimize, lower, generate, compile, run) and of a second, cached one. Mesa's shader disk cache
(~/.cache/mesa_shader_cache) makes a repeated run of the same WGSL fast, so it is disabled here
(MESA_SHADER_CACHE_DISABLE, set before the driver loads). Run
``PYTHONPATH=. python benchmarks/compile_large.py [--instructions 10000] [--backend webgpu] [--memory 0.5]``. Not
a test; on a shared machine the wall time follows the load, the CPU time much less.

``--memory F``: the memory-heavy form (``memory_heavy``): a fraction F of the random operations are u32 loads
and stores through the lane's own pointer. webgpu, first launch, CPU s of the process (``--memory 0.5``),
loaded 2-core machine, Mesa 22.3 lavapipe. Before the handle-table entry and the handle check were made once
per pointer register and run of straight-line code (bounds and alignment one check): 250 instructions 7.9 s,
500: 20.0 s, 1000: 54.7 s; after: 250: 2.0 s, 500: 4.1 s, 1000: 10.0 s. Where it went (perf): LLVM (coroutine frame
building, live ranges) and Mesa's NIR passes, both growing faster than the length; every storage-buffer
access at a lane-dependent index is a loop over the SIMD lanes with a branch per lane in llvmpipe, and the
record of a lane's first trap is a chain of selects per check. What remains still grows faster than the
length: 3,032 instructions 51.7 s CPU, 261 s wall (wasm 1.6 s CPU); before, one did not compile in 900 s.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import time

os.environ.setdefault("MESA_SHADER_CACHE_DISABLE", "true")

from atlas_web import ExecutionParams, LaunchConfig, Program  # noqa: E402
from atlas_web.isa import ADD, CVT, LDG, MOV_IMM, MUL, STG, XOR, Address, Register as R, Type  # noqa: E402
from atlas_web.registry import get_backend  # noqa: E402

REGISTERS = 32
LANES = 64
#: r20: the pointer to the output buffer (handle 2), r21/r22 scratch, r30 on: the program's registers
OUT, FIRST = 20, 30


def _lane_pointer() -> list:
    """r21 (u64) = the output pointer (r20) + the lane's slot of REGISTERS words."""
    u32, u64 = Type.U32, Type.U64
    return [CVT(dst=R(21), src=R(255), src_ty=u32, dst_ty=u64), MOV_IMM(dst=R(22), value=4 * REGISTERS, ty=u64),
            MUL(dst=R(21), lhs=R(21), rhs=R(22), ty=u64), ADD(dst=R(21), lhs=R(OUT), rhs=R(21), ty=u64)]


def _lane_registers(regs: list) -> list:
    """``regs`` set from the lane id (the optimizer cannot fold them)."""
    u32 = Type.U32
    body = [MOV_IMM(dst=R(100), value=7, ty=u32), ADD(dst=regs[0], lhs=R(255), rhs=R(100), ty=u32)]
    return body + [MUL(dst=regs[k], lhs=regs[k - 1], rhs=R(255), ty=u32) for k in range(1, REGISTERS)]


def _stores(regs: list) -> list:
    return [STG(dst=Address.RegisterIndirect(R(21), 4 * k), src=reg, ty=Type.U32) for k, reg in enumerate(regs)]


def straight_line(instructions: int, seed: int = 1) -> Program:
    """``instructions`` u32 operations on registers derived from the lane id, then one store per register."""
    rng = random.Random(seed)
    regs = [R(FIRST + k) for k in range(REGISTERS)]
    body = _lane_registers(regs)
    while len(body) < instructions:
        op = rng.choice((ADD, MUL, XOR))
        body.append(op(dst=rng.choice(regs), lhs=rng.choice(regs), rhs=rng.choice(regs), ty=Type.U32))
    return Program(body + _lane_pointer() + _stores(regs), {})


def memory_heavy(instructions: int, seed: int = 1, memory: float = 0.5) -> Program:
    """Like ``straight_line``, but a fraction ``memory`` of the random operations are u32 loads and stores
    (LDG/STG through the lane's own pointer, r21, at one of ``REGISTERS`` word offsets of its slot)."""
    u32 = Type.U32
    rng = random.Random(seed)
    regs = [R(FIRST + k) for k in range(REGISTERS)]
    body = _lane_pointer() + _lane_registers(regs)
    while len(body) < instructions:
        slot = Address.RegisterIndirect(R(21), 4 * rng.randrange(REGISTERS))
        if rng.random() < memory / 2:
            body.append(LDG(dst=rng.choice(regs), src=slot, ty=u32))
        elif rng.random() < memory / (2 - memory):
            body.append(STG(dst=slot, src=rng.choice(regs), ty=u32))
        else:
            op = rng.choice((ADD, MUL, XOR))
            body.append(op(dst=rng.choice(regs), lhs=rng.choice(regs), rhs=rng.choice(regs), ty=u32))
    return Program(body + _stores(regs), {})


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(backend_name: str, program: Program) -> tuple[float, float, float]:
    """(first launch wall s, first launch CPU s, cached launch wall s) on a fresh backend."""
    with get_backend(backend_name) as backend:
        out = backend.allocate_buffer(4 * REGISTERS * LANES)
        params = ExecutionParams(LaunchConfig.linear(LANES), {R(OUT): (Type.U64, int(out) << 32)})
        wall, cpu = time.perf_counter(), _cpu()
        backend.execute_program_with_params(program, params)
        backend.copy_from_buffer(out)
        first_wall, first_cpu = time.perf_counter() - wall, _cpu() - cpu
        wall = time.perf_counter()
        backend.execute_program_with_params(program, params)
        backend.copy_from_buffer(out)
        return first_wall, first_cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", type=int, default=10_000)
    parser.add_argument("--backend", action="append", dest="backends", help="default: wasm and webgpu")
    parser.add_argument("--memory", type=float, default=0.0, help="fraction of loads and stores (memory_heavy)")
    args = parser.parse_args()
    program = memory_heavy(args.instructions, memory=args.memory) if args.memory else straight_line(args.instructions)
    for name in args.backends or ("wasm", "webgpu"):
        first_wall, first_cpu, cached = measure(name, program)
        print(f"{name:7s} {len(program.instructions):6d} instructions: first launch {first_wall:7.2f} s wall, "
              f"{first_cpu:6.2f} s CPU; cached {cached * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
