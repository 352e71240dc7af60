"""``jit`` against eager atlas_web.numpy and NumPy (not a test; prints times and ratios from one run).

Two functions, each run warm (traced and compiled before timing), interleaved, best of ``--repeats``
wall-clock times:

* the README's ``relu(2x - 0.5)`` and ``dot`` over ``--size`` float32 (default 1M): jit is one fused
  pass plus one ParallelReduce; eager is five launches;
* an 8-operation elementwise chain over ``--chain-size`` float32 (default 4M; issue 14's target: jit >= 2x
  eager on the same backend and >= NumPy's unfused chain natively on wasm);
* ``softmax`` over 1024 x 1024 float32: the Softmax instruction where the backend has it, against its
  composition of array operations (the kernel hidden from ``supports``), eager and under jit, and NumPy.

    python3 benchmarks/jit.py [--size N] [--chain-size N] [--repeats R] [--backend NAME ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import atlas_web.numpy as anp
from atlas_web.registry import discover_backends, get_backend


def relu_dot(x):
    return anp.dot(anp.relu(2 * x - 0.5), x)


def chain(x):
    y = x * 1.5 - 0.25          # 2 ops
    y = anp.maximum(y, -1.0)    # 3
    y = y * x + 0.5             # 5
    y = abs(y) - x              # 7
    return anp.minimum(y, 2.0)  # 8


def numpy_relu_dot(x):
    return np.dot(np.maximum(np.float32(2) * x - np.float32(0.5), np.float32(0)), x)


def numpy_chain(x):
    f32 = np.float32
    y = x * f32(1.5) - f32(0.25)
    y = np.maximum(y, f32(-1))
    y = y * x + f32(0.5)
    y = np.abs(y) - x
    return np.minimum(y, f32(2))


def best(actions: dict, repeats: int) -> dict:
    """The least wall seconds of each action over ``repeats`` rounds, the actions interleaved per round."""
    times = {name: [] for name in actions}
    for _ in range(repeats):
        for name, action in actions.items():
            start = time.perf_counter()
            action()
            times[name].append(time.perf_counter() - start)
    return {name: min(values) for name, values in times.items()}


def measure(label: str, fn, numpy_fn, host: np.ndarray, device, repeats: int) -> None:
    x = anp.array(host, device=device)
    fast = anp.jit(fn)
    finish = (lambda a: a.item()) if fn is relu_dot else (lambda a: a.to_host())
    start = time.perf_counter()
    first = finish(fast(x))
    cold = time.perf_counter() - start
    eager_value, numpy_value = finish(fn(x)), numpy_fn(host)
    agree = np.allclose(first, numpy_value, rtol=1e-4, atol=1e-4) and np.allclose(first, eager_value, rtol=1e-6)
    # each timed action waits for its result: the scalar for relu-and-dot, the device for the chain
    sync = (lambda a: a.item()) if fn is relu_dot else (lambda a: a[:1].item())
    t = best({"jit": lambda: sync(fast(x)), "eager": lambda: sync(fn(x)), "numpy": lambda: numpy_fn(host)},
             repeats)
    launches = len(fast.trace_steps(x))
    print(f"{device.name:7} {label:24} jit {t['jit'] * 1e3:8.2f} ms ({launches} launches; first call "
          f"{cold * 1e3:.0f} ms)  eager {t['eager'] * 1e3:8.2f} ms  numpy {t['numpy'] * 1e3:8.2f} ms  "
          f"eager/jit {t['eager'] / t['jit']:5.2f}x  numpy/jit {t['numpy'] / t['jit']:5.2f}x  "
          f"{'agree' if agree else 'DISAGREE'}")


def softmax_rows(device, repeats: int) -> None:
    host = np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32)
    x = anp.array(host, device=device)
    kernel = device.supports("Softmax", anp.float32)
    real = device.supports
    composite = anp.jit(anp.softmax)

    def hidden(action):
        def run():
            device.supports = lambda op, ty=None: op != "Softmax" and real(op, ty)
            try:
                return action()
            finally:
                del device.supports
        return run
    eager_composite = hidden(lambda: anp.softmax(x)[:1, :1].item())
    jit_composite = hidden(lambda: composite(x)[:1, :1].item())

    def numpy_softmax():
        e = np.exp(host - host.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    actions = {"composite eager": eager_composite, "composite jit": jit_composite, "numpy": numpy_softmax}
    if kernel:
        actions["Softmax kernel"] = lambda: anp.softmax(x)[:1, :1].item()
    for action in actions.values():
        action()
    t = best(actions, repeats)
    print(f"{device.name:7} softmax 1024x1024        " + "  ".join(f"{k} {v * 1e3:.2f} ms" for k, v in t.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--chain-size", type=int, default=4_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--backend", nargs="*", default=None)
    args = parser.parse_args()
    names = args.backend or [s.name for s in discover_backends() if s.available]
    rng = np.random.default_rng(0)
    small = np.linspace(-1, 1, args.size, dtype=np.float32)
    big = rng.uniform(-2, 2, args.chain_size).astype(np.float32)
    for name in names:
        device = get_backend(name)
        measure(f"relu-and-dot {args.size}", relu_dot, numpy_relu_dot, small, device, args.repeats)
        measure(f"8-op chain {args.chain_size}", chain, numpy_chain, big, device, args.repeats)
        softmax_rows(device, args.repeats)
        device.close()


if __name__ == "__main__":
    main()
