"""Measure the math library's ulp error per op and shape against correctly rounded references (not a test).

For every op and shape, runs the op's sweep (wasm_backend/mathlib/sweeps.py)
under wasmtime and prints the largest distance, in ulp, to the correctly
rounded result (mpmath for f64; NumPy's f64 rounded to f32 with mpmath near
rounding boundaries for f32), next to the published bound. ``--write``
stores the table in wasm_backend/mathlib/measured.py and regenerates the
table in docs/wasm-mathlib.md (refused when any op exceeds its bound).

    python3 benchmarks/wasm_mathlib_accuracy.py [--points-f32 N] [--points-f64 N] [--ops exp,log] [--relaxed]
                                                [--write] [--exhaustive-f32 exp,log]

``--exhaustive-f32 OPS`` instead runs the f32x4 function of each unary op in OPS on every f32 of its
EXHAUSTIVE_RANGES entry (default: every finite f32), in chunks; minutes per op.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

from wasm_backend.mathlib import MATH_OPS, Shape, ulp_bound
from wasm_backend.mathlib import measured as measured_module
from wasm_backend.mathlib.harness import MathHarness
from wasm_backend.mathlib.reference import correctly_rounded, ulp_distance
from wasm_backend.mathlib.sweeps import sweep

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "wasm-mathlib.md"
TABLE_START, TABLE_END = "<!-- accuracy table: generated -->", "<!-- end of accuracy table -->"


def measure(ops: list[str], points: dict[str, int], seed: int, relaxed: bool = False
            ) -> dict[tuple[str, str], tuple[int, int]]:
    harness = MathHarness([(op, shape) for op in ops for shape in Shape], relaxed_simd=relaxed)
    results = {}
    for op in ops:
        for fmt in ("f32", "f64"):
            inputs = sweep(op, fmt, points[fmt], seed)
            start = time.perf_counter()
            expected = correctly_rounded(op, fmt, *inputs)
            reference_time = time.perf_counter() - start
            for shape in (s for s in Shape if s.format.name == fmt):
                got = harness.evaluate(op, shape, *inputs)
                distance = ulp_distance(got, expected, fmt)
                worst = int(distance.max())
                at = int(distance.argmax())
                results[(op, shape.value)] = (worst, int(distance.size))
                bound = ulp_bound(op, shape)
                flag = "" if worst <= bound else "   EXCEEDS BOUND"
                where = ", ".join(repr(float(a[at])) for a in inputs)
                print(f"{op:8s} {shape.value:6s} max {worst:3d} ulp (bound {bound}) over {distance.size:8d} points, "
                      f"worst at ({where}); reference {reference_time:5.1f} s{flag}", flush=True)
    return results


#: op -> the f32 magnitudes (lo, hi) an exhaustive run covers, both signs (exp, sigmoid, tanh: outside, the
#: results are 0, 1 or inf, which the sweeps check; log: 16 binades around 1, the others differ only in e*ln2);
#: ops not listed: every finite f32
EXHAUSTIVE_RANGES = {"exp": (2.0 ** -30, 104.0), "sigmoid": (2.0 ** -30, 120.0), "tanh": (2.0 ** -30, 10.0),
                     "log": (2.0 ** -8, 2.0 ** 8)}


def exhaustive_f32(ops: list[str], relaxed: bool, chunk: int = 1 << 24) -> None:
    """Every f32 (in EXHAUSTIVE_RANGES, else every finite one) through each op's f32x4 function; prints the
    worst distance and where."""
    import numpy as np
    harness = MathHarness([(op, "f32x4") for op in ops], relaxed_simd=relaxed)
    for op in ops:
        lo, hi = EXHAUSTIVE_RANGES.get(op, (0.0, float("inf")))
        first_bits, last_bits = (int(np.float32(v).view(np.uint32)) for v in (lo, hi))
        start, worst, worst_at, checked = time.perf_counter(), -1, 0.0, 0
        for sign in (0, 1 << 31):
            for first in range(first_bits, last_bits + 1, chunk):
                bits = np.arange(first, min(first + chunk, last_bits + 1), dtype=np.uint64).astype(np.uint32)
                x = (bits | np.uint32(sign)).view(np.float32)
                x = x[np.isfinite(x)]
                expected = correctly_rounded(op, "f32", x)
                distance = ulp_distance(harness.evaluate(op, "f32x4", x), expected, "f32")
                checked += x.size
                if distance.size and int(distance.max()) > worst:
                    worst, worst_at = int(distance.max()), float(x[int(distance.argmax())])
        bound = ulp_bound(op, "f32x4")
        flag = "" if worst <= bound else "   EXCEEDS BOUND"
        print(f"{op:8s} f32x4  max {worst:3d} ulp (bound {bound}) over all {checked:,} f32 with |x| in "
              f"[{lo:g}, {hi:g}], worst at {worst_at!r}; {time.perf_counter() - start:.0f} s{flag}", flush=True)


def write(results: dict[tuple[str, str], tuple[int, int]]) -> None:
    from importlib.metadata import version
    path = pathlib.Path(measured_module.__file__)
    engine = f"wasmtime {version('wasmtime')}"
    path.write_text(measured_module.render_measured_module(results, engine, path.read_text()))
    measured_module.MEASURED.clear()
    measured_module.MEASURED.update(results)
    measured_module.MEASURED_ENGINE = engine
    text = DOC.read_text()
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    DOC.write_text(text[:start] + "\n" + measured_module.accuracy_markdown() + text[end:])
    print(f"wrote {path.relative_to(ROOT)} and the table in {DOC.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points-f32", type=int, default=1_000_000)
    parser.add_argument("--points-f64", type=int, default=50_000)
    parser.add_argument("--ops", default=",".join(sorted(MATH_OPS)))
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--relaxed", action="store_true", help="measure with relaxed_madd (fused on FMA hosts)")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--exhaustive-f32", default="", help="unary ops to run on every finite f32")
    args = parser.parse_args()
    if args.exhaustive_f32:
        exhaustive_f32([op for op in args.exhaustive_f32.split(",") if op], args.relaxed)
        return
    ops = [op for op in args.ops.split(",") if op]
    if args.write and args.relaxed:
        sys.exit("--write stores the plain (default) form; measure --relaxed separately")
    results = measure(ops, {"f32": args.points_f32, "f64": args.points_f64}, args.seed, args.relaxed)
    exceeded = [key for key, (worst, _) in results.items() if worst > ulp_bound(*key)]
    if args.write:
        if exceeded:
            sys.exit(f"not writing: {exceeded} exceed their published bounds")
        if set(ops) != set(MATH_OPS):
            sys.exit("not writing: --write needs every op measured")
        write(results)
    if exceeded:
        sys.exit(f"{len(exceeded)} op/shape pairs exceed their bounds: {exceeded}")


if __name__ == "__main__":
    main()
