"""jit's matmul epilogue fusion (atlas_web/numpy/epilogue.py): ``relu(x @ w + b)`` as one program (the GEMM, then
the bias add and relu over its product: one launch) against the same function traced without the epilogue pass
(``jit(..., epilogues=False)``: the GEMM's launch, then the fused pass's), on the same backend, in one run, interleaved, best of ``--repeats``
rounds of ``--calls`` warm calls each (a result read back at the end of each round). Shapes: a decoding step's
projection (1 x 256 @ 256 x 512), 4 and 64 rows (x 256 @ 256 x 256) unless ``--shapes`` says (products past
EPILOGUE_MAX elements are not merged: both columns then time two launches).

Run ``PYTHONPATH=. python benchmarks/jit_epilogue.py [--backends wasm,cpu] [--repeats 7] [--calls 20]``. The
machine may be shared: say so with the figures. Not a test.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import atlas_web.numpy as anp
from atlas_web.registry import get_backend

def layer(x, w, b):
    return anp.relu(x @ w + b)


def measure(device, m: int, k: int, n: int, repeats: int, calls: int) -> dict:
    rng = np.random.default_rng(0)
    x, w, b = (anp.array(rng.standard_normal(s).astype(np.float32), device=device) for s in ((m, k), (k, n), (n,)))
    fused = anp.jit(layer)
    fused(x, w, b).to_host()
    apart = anp.jit(layer, epilogues=False)
    apart(x, w, b).to_host()
    same = fused(x, w, b).to_host().tobytes() == apart(x, w, b).to_host().tobytes()
    best = {"fused": float("inf"), "apart": float("inf")}
    for _ in range(repeats):
        for label, fn in (("fused", fused), ("apart", apart)):
            start = time.perf_counter()
            for _ in range(calls):
                out = fn(x, w, b)
            out.to_host()
            best[label] = min(best[label], (time.perf_counter() - start) / calls)
    return {**best, "same": same, "steps": ([k for k, _ in fused.trace_steps(x, w, b)],
                                            [k for k, _ in apart.trace_steps(x, w, b)])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="wasm,cpu")
    parser.add_argument("--shapes", default="1x256x512,4x256x256,64x256x256", help="m x k x n, comma separated")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    options = parser.parse_args(argv)
    for name in options.backends.split(","):
        with get_backend(name) as device:
            for shape in options.shapes.split(","):
                m, k, n = (int(v) for v in shape.split("x"))
                r = measure(device, m, k, n, options.repeats, options.calls)
                print(f"{name:7} relu({m}x{k} @ {k}x{n} + b): epilogue {r['fused'] * 1e6:8.0f} us {r['steps'][0]}, "
                      f"apart {r['apart'] * 1e6:8.0f} us {r['steps'][1]}, apart/epilogue "
                      f"{r['apart'] / r['fused']:.2f}, same bits: {'yes' if r['same'] else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
