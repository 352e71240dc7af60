"""The examples' expected outputs and their comparison in NumPy, for the native demo at large sizes.

Each example module computes its expected output in pure Python (it must run
under Pyodide without NumPy); at a million elements that took the native demo
28 s for 1.3 s of launches. ``EXPECTED`` holds the same computations over
arrays, one per example (tests check them against the pure-Python ones), and
``compare_arrays`` is ``examples.compare_outputs`` over arrays: the same
tolerances (``math.isclose``'s symmetric rule) and the same problem lines.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from atlas_web import atlas

import examples

__all__ = ["EXPECTED", "expected_arrays", "input_arrays", "compare_arrays", "as_array"]


def as_array(example: examples.Example, name: str, values) -> np.ndarray:
    """``values`` (an array.array, a list or an ndarray) of buffer ``name`` as an ndarray of its type."""
    spec = example.buffer(name)
    dtype = np.dtype(spec.data.typecode)
    if isinstance(values, np.ndarray):
        return values.astype(dtype, copy=False)
    if hasattr(values, "typecode"):
        return np.frombuffer(values, dtype=np.dtype(values.typecode)).astype(dtype, copy=False)
    return np.asarray(values, dtype=dtype)


def input_arrays(example: examples.Example) -> dict[str, np.ndarray]:
    """The initial values of every buffer (name -> ndarray, sharing the example's memory)."""
    return {spec.name: as_array(example, spec.name, spec.data) for spec in example.buffers}


def _vector_add(x: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    # the f32 sum of two f32 values is the double sum rounded once
    return {"out": (x["a"].astype(np.float64) + x["b"]).astype(np.float32)}


def _relu_chain(x: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    xs = x["x"].astype(np.float64)
    return {"pos": np.where(xs > 0, xs, 0.0), "neg": np.where(xs < 0, -xs, 0.0),
            "out": np.sqrt(np.abs(xs)).astype(np.float32)}


def _softmax(x: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    xs = x["x"].astype(np.float64)
    exps = np.exp(xs - xs.max())
    return {"out": exps / np.sum(exps)}


def _collatz(x: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    # the step count of each distinct value (the inputs repeat: 1..10000), then spread back
    distinct, inverse = np.unique(x["x"].astype(np.int64), return_inverse=True)
    return {"out": _collatz_steps(distinct)[inverse.reshape(-1)]}


def _collatz_steps(values: np.ndarray) -> np.ndarray:
    steps = np.zeros(values.shape, dtype=np.int64)
    active = np.flatnonzero(values > 1)
    current = values[active]
    step = 0
    while active.size:  # only the lanes still running: the set shrinks quickly
        current = np.where(current & 1, 3 * current + 1, current >> 1)
        step += 1
        running = current > 1
        steps[active[~running]] = step  # a lane that reached 1 took this many steps
        active, current = active[running], current[running]
    return steps


def _atlas_bytes(x: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    data = x["data"].astype(np.int64)
    index = np.arange(data.size, dtype=np.int64)
    class_of = np.array([atlas.classify(b) for b in range(256)], dtype=np.int64)
    mirror_of = np.array([atlas.mirror(c) for c in range(atlas.NUM_CLASSES)], dtype=np.int64)
    neighbour_of = np.array([[examples.atlas_bytes._neighbour(c, i) for i in range(6)]
                             for c in range(atlas.NUM_CLASSES)], dtype=np.int64)
    classes = class_of[data]
    mirrors = mirror_of[classes]
    pages = index % atlas.PAGES
    # bound_map over the distinct (mirror, page, byte) triples only: at most 96 * 48 * 256
    keys = (mirrors * atlas.PAGES + pages) * 256 + data
    unique, inverse = np.unique(keys, return_inverse=True)
    bounds = np.array([atlas.bound_map(int(k) // (256 * atlas.PAGES), int(k) // 256 % atlas.PAGES, int(k) % 256)
                       for k in unique], dtype=np.uint64)
    return {"class": classes, "mirror": mirrors, "neighbour": neighbour_of[classes, index % 6],
            "boundary": bounds[inverse.reshape(-1)]}


#: example name -> its expected outputs computed over arrays (inputs name -> ndarray)
EXPECTED: dict[str, Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]] = {
    "vector_add": _vector_add, "relu_chain": _relu_chain, "softmax": _softmax, "collatz": _collatz,
    "atlas_bytes": _atlas_bytes,
}


def expected_arrays(example: examples.Example) -> dict[str, np.ndarray]:
    """The expected value of every output buffer of ``example``. Raises KeyError for an example that has no
    NumPy computation in EXPECTED."""
    try:
        compute = EXPECTED[example.name]
    except KeyError:
        raise KeyError(f"example {example.name!r} has no NumPy expected outputs in demo.expected.EXPECTED") from None
    return compute(input_arrays(example))


def compare_arrays(example: examples.Example, actual: Mapping[str, object],
                   expected: Mapping[str, np.ndarray]) -> list[str]:
    """Mismatches between ``actual`` and ``expected``, one line per output buffer, worded as
    examples.compare_outputs words them (empty: all agree)."""
    problems = []
    for output in example.outputs:
        ty = example.buffer(output.buffer).ty
        got = as_array(example, output.buffer, actual[output.buffer])
        want = np.asarray(expected[output.buffer])
        if got.size != want.size:
            problems.append(f"{output.buffer}: {got.size} values, expected {want.size}")
            continue
        if ty.is_float():
            g, w = got.astype(np.float64), want.astype(np.float64)
            with np.errstate(invalid="ignore", over="ignore"):
                close = (g == w) | (np.abs(g - w) <= np.maximum(
                    output.rel_tol * np.maximum(np.abs(g), np.abs(w)), output.abs_tol))
            same = np.where(np.isnan(w), np.isnan(g), close)
        else:
            same = got == as_array(example, output.buffer, want)  # integers compare exactly, in their type
        bad = np.flatnonzero(~same)
        if bad.size:
            i = int(bad[0])
            problems.append(f"{output.buffer}: {bad.size} of {want.size} values differ; "
                            f"first at {i}: got {got[i].item()!r}, expected {want[i].item()!r}")
    return problems
