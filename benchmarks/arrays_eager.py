"""Eager per-operation overhead of atlas_web.numpy (not a test; prints times and ratios).

A small warm operation (its program already generated and compiled) costs one launch plus the array
bookkeeping: this measures ``x + y`` (a cooperative map), ``x * 2.0`` (per-lane, the scalar a preset
register), ``relu`` and ``x.sum()`` over ``--size`` float32 values on each backend, against NumPy's
same operation and against the bare cached launch of the same program (``execute_program_with_params``
with prepared parameters), which is what the array layer adds to. Target (issue 14): <= 50 us per small
warm operation natively on wasm. Also the README's relu-and-dot over 1M floats, end to end.

    python3 benchmarks/arrays_eager.py [--size N] [--repeats R] [--backend NAME ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import atlas_web.numpy as anp
from atlas_web.registry import discover_backends, get_backend


def per_call(action, repeats: int, inner: int = 50, clock=time.process_time) -> float:
    """The least over ``repeats`` of the mean seconds of ``inner`` calls of ``action``, by ``clock``: the
    process's CPU time by default (on a shared machine wall time mostly measures the other processes;
    every operation here runs on this process's thread, WebGPU's device work aside)."""
    action()
    times = []
    for _ in range(repeats):
        start = clock()
        for _ in range(inner):
            action()
        times.append((clock() - start) / inner)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--backend", nargs="*", default=None)
    args = parser.parse_args()
    names = args.backend or [s.name for s in discover_backends() if s.available]
    a = np.random.default_rng(0).uniform(-1, 1, args.size).astype(np.float32)
    numpy_ops = {"x + y": lambda: a + a, "x * 2.0": lambda: a * np.float32(2), "relu(x)": lambda: np.maximum(a, 0),
                 "x.sum()": lambda: a.sum()}
    print(f"warm eager operations over {args.size} float32, CPU us per call (least of {args.repeats} x 50 calls; "
          "wall-clock us in brackets; a shared machine makes both noisy)")
    print(f"{'backend':8} {'operation':10} {'atlas':>7} {'(wall)':>8} {'bare launch':>12} {'numpy':>7}")
    for name in names:
        device = get_backend(name)
        x = anp.array(a, device=device)
        ops = {"x + y": lambda: x + x, "x * 2.0": lambda: x * 2.0, "relu(x)": lambda: anp.relu(x),
               "x.sum()": lambda: x.sum()}
        for label, op in ops.items():
            seconds = per_call(op, args.repeats)
            wall = per_call(op, args.repeats, clock=time.perf_counter)
            bare = per_call(_bare_launch(op, device), args.repeats)
            numpy_seconds = per_call(numpy_ops[label], args.repeats)
            print(f"{name:8} {label:10} {seconds * 1e6:7.1f} {f'({wall * 1e6:.0f})':>8} {bare * 1e6:12.1f} "
                  f"{numpy_seconds * 1e6:7.1f}")
        big = anp.linspace(-1, 1, 1_000_000, device=device)
        start = time.perf_counter()
        value = anp.dot(anp.relu(2 * big - 0.5), big).item()
        cold = time.perf_counter() - start
        wall = time.perf_counter
        warm = per_call(lambda: anp.dot(anp.relu(2 * big - 0.5), big).item(), 3, inner=3, clock=wall)
        xs = np.linspace(-1, 1, 1_000_000, dtype=np.float32)
        ref = per_call(lambda: float(np.dot(np.maximum(2 * xs - np.float32(0.5), 0), xs)), 3, inner=3, clock=wall)
        print(f"{name:8} relu-and-dot 1M (wall): {value:.6g}; first {cold * 1e3:.1f} ms, warm {warm * 1e3:.2f} ms "
              f"(NumPy {ref * 1e3:.2f} ms, ratio {warm / ref:.1f}x)")
        device.close()


def _bare_launch(op, device):
    """The launch ``op`` makes, with its program and parameters prepared once (what the array layer adds
    its bookkeeping to)."""
    seen = []
    original = device.execute_program_with_params

    def record(program, params):
        seen.append((program, params))
        return original(program, params)

    device.execute_program_with_params = record
    try:
        result = op()
    finally:
        del device.execute_program_with_params
    program, params = seen[-1]

    def launch():
        assert result is not None  # keeps the output buffer alive
        device.execute_program_with_params(program, params)
    return launch


if __name__ == "__main__":
    main()
