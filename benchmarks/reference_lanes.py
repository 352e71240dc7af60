"""The reference backend on a million lanes: ten arithmetic instructions over 1,048,576 lanes.

Not a test: it prints the launch time (the first, cold launch and the median
of ``--repeat`` warm ones) and NumPy's time for the same arithmetic written
directly, measured in the same run, after checking the result. The
acceptance target of the reference backend is under two seconds per launch.

    python3 benchmarks/reference_lanes.py [--lanes N] [--repeat R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from atlas_web import LaunchConfig, Program  # noqa: E402
from atlas_web.isa import ADD, CVT, MOV_IMM, MUL, STG, Address, Register, Type  # noqa: E402
from atlas_web.reference import CpuBackend  # noqa: E402

LANES = 1 << 20


def ten_instructions(out: int) -> Program:
    """x = lane id as f32; eight alternating multiplies and adds by 1.5; stored at out[lane] (10 + 5 instructions)."""
    r = Register
    body = [CVT(dst=r(1), src=r(255), src_ty=Type.U32, dst_ty=Type.F32), MOV_IMM(dst=r(2), value=1.5, ty=Type.F32)]
    body += [(MUL if k % 2 == 0 else ADD)(dst=r(1), lhs=r(1), rhs=r(2), ty=Type.F32) for k in range(8)]
    store = [CVT(dst=r(3), src=r(255), src_ty=Type.U32, dst_ty=Type.U64), MOV_IMM(dst=r(4), value=4, ty=Type.U64),
             MUL(dst=r(3), lhs=r(3), rhs=r(4), ty=Type.U64),
             MOV_IMM(dst=r(5), value=int(out) << 32, ty=Type.U64), ADD(dst=r(3), lhs=r(3), rhs=r(5), ty=Type.U64),
             STG(dst=Address.RegisterIndirect(r(3)), src=r(1), ty=Type.F32)]
    return Program(body + store)


def numpy_same(lanes: int) -> np.ndarray:
    x = np.arange(lanes, dtype=np.uint32).astype(np.float32)
    c = np.float32(1.5)
    for k in range(8):
        x = x * c if k % 2 == 0 else x + c
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=LANES)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    backend = CpuBackend()
    out = backend.allocate_buffer(4 * args.lanes)
    program = ten_instructions(out)
    config = LaunchConfig.linear(args.lanes)
    start = time.perf_counter()
    backend.execute_program(program, config)
    cold = time.perf_counter() - start
    warm = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        backend.execute_program(program, config)
        warm.append(time.perf_counter() - start)
    expected = numpy_same(args.lanes)
    got = backend.copy_typed_from(out, Type.F32)
    if not np.array_equal(got, expected):
        raise SystemExit("reference result differs from NumPy's")
    numpy_times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        numpy_same(args.lanes)
        numpy_times.append(time.perf_counter() - start)
    median, baseline = statistics.median(warm), statistics.median(numpy_times)
    print(f"reference, {args.lanes} lanes x 10 arithmetic instructions (+ store):")
    print(f"  first launch {cold:.3f} s (verify + plan + launch), warm median {median:.3f} s")
    print(f"  NumPy directly {baseline:.4f} s; reference / NumPy = {median / baseline:.1f}x")
    print(f"  target: under 2 s per launch -> {'met' if max(cold, median) < 2.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
