"""Adjacent cooperative maps fused into one pass on wasm (``atlas_web.opt.fusion``, ``coop_fusion``).

Two programs over ``--count`` f32 elements (below the threaded maps' and reductions' thresholds), run by
WasmBackend at optimization level 0 (one by one: a pass over memory each, and a lane stage between) and
level 1 (fused):

* a chain of four maps: t = exp(a), u = t + b, u = -u, v = |t| (one pass);
* a map absorbed into a reduction: t = a * b, then the sum of t (each chunk of t summed as it is written).

The buffers' bits are compared first. Interleaved, best of ``--repeats``; prints both times and the
ratio. Run ``PYTHONPATH=. python3 benchmarks/map_fusion.py [--count N] [--repeats R]``. Not a test.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from atlas_web import ExecutionParams, LaunchConfig, Program
from atlas_web.isa import Type
from wasm_backend import WasmBackend

CHAIN = """
    pmap.exp.f32 [buf{t} + 0], [buf{a} + 0], {n}
    pmap2.add.f32 [buf{u} + 0], [buf{t} + 0], [buf{b} + 0], {n}
    pmap.neg.f32 [buf{u} + 0], [buf{u} + 0], {n}
    pmap.abs.f32 [buf{v} + 0], [buf{t} + 0], {n}
"""
DOT = """
    pmap2.mul.f32 [buf{t} + 0], [buf{a} + 0], [buf{b} + 0], {n}
    preduce.sum.f32 r1, [buf{t} + 0], {n}
    mov_imm.u64 r2, {u_pointer}
    stg.f32 [r2 + 0], r1
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=1 << 19)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    n = args.count
    rng = np.random.default_rng(0)
    backend = WasmBackend()
    arrays = [rng.standard_normal(n).astype(np.float32) for _ in range(2)] + [np.zeros(n, np.float32)] * 3
    a, b, t, u, v = (backend.allocate_typed(x) for x in arrays)
    for name, text in (("4 maps (exp, add, neg, abs)", CHAIN), ("map into reduce (mul, sum)", DOT)):
        program = Program.from_text(text.format(a=a, b=b, t=t, u=u, v=v, n=n, u_pointer=u << 32))
        measure(backend, program, name, n, args.repeats, (t, u, v))


def measure(backend, program, name: str, n: int, repeats: int, outputs) -> None:
    config = LaunchConfig(grid=(1, 1, 1), block=(1, 1, 1))
    t, u, v = outputs
    results = {}
    for level in (0, 1):
        backend.execute_program_with_params(program, ExecutionParams(config, optimize=level))
        results[level] = [np.asarray(backend.copy_typed_from(h, Type.F32)).view(np.uint32).copy() for h in (t, u, v)]
    if not all(np.array_equal(x, y) for x, y in zip(results[0], results[1])):
        raise SystemExit("fused results differ from the maps one by one")
    best = {0: float("inf"), 1: float("inf")}
    for _ in range(repeats):
        for level in (0, 1):
            params = ExecutionParams(config, optimize=level)
            start = time.perf_counter()
            backend.execute_program_with_params(program, params)
            best[level] = min(best[level], time.perf_counter() - start)
    print(f"{name} over {n} f32: one by one (level 0) {best[0] * 1e3:7.2f} ms | fused (level 1) "
          f"{best[1] * 1e3:7.2f} ms | speed-up {best[0] / best[1]:4.2f}x (bits equal)")


if __name__ == "__main__":
    main()
