"""Building the examples' random inputs: a Python loop per element (as the examples did) against examples.inputs.

For ``--size`` f32 values in [-100, 100]: ``typed_array(F32, [rng.uniform(-100, 100) for _ in range(n)])`` (the
former build) and ``inputs.uniform_f32`` on each engine that runs here (numpy, stdlib; the javascript engine
runs in the page), interleaved, best of ``--repeats``; then ``examples.build_all(size)`` once (every example's
inputs, NumPy imported beforehand); then a declared program's random inputs (webdemo.declared: f32 in [-10, 10]
and i32 in [-5, 5]) at ``--size`` or the largest count a declaration allows, built by the former loop per element
(``rng.uniform`` / ``rng.randint``) and by ``declared.parse_declarations`` (examples.inputs).

    PYTHONPATH=. python3 benchmarks/example_inputs.py [--size 10000000] [--repeats 3]

Benchmarks are not tests: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

import examples
from atlas_web import Type
from examples import inputs, typed_array
from webdemo import declared


def _loop(n: int):
    rng = random.Random("bench")
    return typed_array(Type.F32, [rng.uniform(-100, 100) for _ in range(n)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args(argv)
    engines = {"python loop per element": _loop}
    for name in ("numpy", "stdlib"):
        if inputs.ENGINES[name][0]():
            engines[f"inputs.uniform_f32 ({name})"] = (
                lambda n, name=name: inputs.uniform_f32(random.Random("bench"), n, -100, 100, engine=name))
    best = dict.fromkeys(engines, float("inf"))
    for _ in range(options.repeats):
        for name, build in engines.items():
            start = time.perf_counter()
            build(options.size)
            best[name] = min(best[name], time.perf_counter() - start)
    print(f"{options.size} f32 values, best of {options.repeats}, load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    for name, seconds in best.items():
        print(f"  {name:<32}{seconds:8.2f} s")
    start = time.perf_counter()
    examples.build_all(options.size)
    print(f"  examples.build_all({options.size}){time.perf_counter() - start:8.2f} s (engine {inputs.engine_name()})")
    _declared(min(options.size, declared.MAX_DECLARED_ELEMENTS), options.repeats)
    return 0


def _declared(n: int, repeats: int) -> None:
    lines = {"f32": (Type.F32, "b", (-10.0, 10.0)), "i32": (Type.I32, "k", (-5, 5))}
    print(f"declared random inputs of {n} elements, best of {repeats}")
    for word, (ty, name, (low, high)) in lines.items():
        text = f"; @in {name} {word} random {n} {low} {high}"

        def loop():
            rng = random.Random(f"{name}:{n}")
            draw = rng.uniform if ty.is_float() else rng.randint
            return typed_array(ty, list(tuple(draw(low, high) for _ in range(n))))
        best = {"loop per element (before)": float("inf"), "parse_declarations": float("inf")}
        for _ in range(repeats):
            for label, build in (("loop per element (before)", loop),
                                 ("parse_declarations", lambda: declared.parse_declarations(text))):
                start = time.perf_counter()
                build()
                best[label] = min(best[label], time.perf_counter() - start)
        print("  " + text + "".join(f"\n    {label:<32}{seconds:8.2f} s" for label, seconds in best.items()))


if __name__ == "__main__":
    sys.exit(main())
