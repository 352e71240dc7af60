"""MathHarness: runs math library functions over NumPy arrays under a WebAssembly runner (tests, benchmarks).

One module imports a memory and exports, per requested (op, shape), a loop
``map_<op>_<shape>(in0, in1, out, count)`` that applies the function to
``count`` elements (a multiple of the lane count for vector shapes; inputs
are padded) at the given byte addresses. ``evaluate`` copies the inputs into
the memory through zero-copy views, calls the loop once and returns a copy
of the results. Needs NumPy.

Raises UnsupportedOperation for an unknown op or shape (from MathLibrary),
WasmInterfaceError for the wrong number of input arrays, and the runner's
errors.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ..encoding.immediates import MemArg
from ..encoding.module import ModuleBuilder
from ..encoding.types import PAGE_SIZE, ValType
from ..errors import WasmInterfaceError
from .library import MathLibrary
from .registry import math_op
from .shapes import Shape, as_shape

__all__ = ["MathHarness", "loop_name", "DTYPES"]

#: NumPy dtype of each lane format
DTYPES = {"f32": np.float32, "f64": np.float64}

_I32 = ValType.I32
_MAX_PAGES = 65536


def loop_name(op: str, shape: Shape) -> str:
    return f"map_{op}_{shape.value}"


def _add_loop(mb: ModuleBuilder, library: MathLibrary, op: str, shape: Shape, *, inline: bool) -> None:
    """``map(in0, in1, out, count)``: out[i] = op(in0[i], in1[i]) for i < count (one vector per step)."""
    entry = math_op(op)
    fmt = shape.format
    step = 16 if shape.is_vector else fmt.bits // 8
    load, store = (("v128.load", "v128.store") if shape.is_vector
                   else (f"{fmt.name}.load", f"{fmt.name}.store"))
    fn = mb.add_function(loop_name(entry.name, shape), [_I32] * 4, [], export=True,
                         param_names=("in0", "in1", "out", "count"))
    end = fn.add_local(_I32, "end")
    args = [fn.add_local(ValType.V128) for _ in range(entry.arity)] if inline else []
    callee = None if inline else library.function(entry.name, shape)
    w = fn.code
    w.local_get("in0").local_get("count").i32_const(fmt.bits // 8).i32_mul().i32_add().local_set(end)
    with w.block(label="done"):
        with w.loop(label="next"):
            w.local_get("in0").local_get(end).i32_ge_u().br_if("done")
            w.local_get("out")
            for i, base in enumerate(("in0", "in1")[:entry.arity]):
                w.local_get(base).emit(load, MemArg())
                if inline:
                    w.local_set(args[i])
            if inline:
                library.emit_inline(fn, entry.name, shape, args)
            else:
                w.call(callee)
            w.emit(store, MemArg())
            for base in ("in0", "in1", "out"):
                w.local_get(base).i32_const(step).i32_add().local_set(base)
            w.br("next")


class MathHarness:
    """Runs the math functions ``pairs`` ((op, shape) pairs) under ``runner`` (default: a new wasmtime one
    without fuel). ``inline=True`` writes vector routines into the loops instead of calling them;
    ``relaxed_simd`` is passed to the MathLibrary."""

    def __init__(self, pairs: Iterable[tuple[str, object]], *, runner=None, inline: bool = False,
                 relaxed_simd: bool = False, initial_pages: int = 16) -> None:
        if runner is None:
            from ..runners import create_runner
            runner = create_runner("wasmtime", budgeted=False)
        self.runner = runner
        self.pairs = [(math_op(op).name, as_shape(shape)) for op, shape in pairs]
        mb = ModuleBuilder("mathlib_harness")
        mb.import_memory("env", "memory", 1, _MAX_PAGES)
        self.library = MathLibrary(mb, relaxed_simd=relaxed_simd)
        for op, shape in self.pairs:
            _add_loop(mb, self.library, op, shape, inline=inline)
        self.wasm = mb.to_bytes()
        self.memory = runner.create_memory(initial_pages, _MAX_PAGES)
        self.instance = runner.instantiate(runner.compile(self.wasm), memory=self.memory)

    def _ensure(self, nbytes: int) -> None:
        have = self.runner.memory_size(self.memory)
        if nbytes > have:
            self.runner.grow_memory(self.memory, -(-(nbytes - have) // PAGE_SIZE))

    def evaluate(self, op: str, shape: object, *inputs: np.ndarray) -> np.ndarray:
        """``op`` in ``shape`` applied elementwise to ``inputs`` (converted to the shape's dtype; a copy)."""
        entry, sh = math_op(op), as_shape(shape)
        dtype = DTYPES[sh.format.name]
        arrays = [np.ascontiguousarray(a, dtype=dtype).ravel() for a in inputs]
        if len(arrays) != entry.arity:
            raise WasmInterfaceError(f"{entry.name} takes {entry.arity} input array(s), got {len(arrays)}")
        n = arrays[0].size
        lanes = sh.format.lanes if sh.is_vector else 1
        padded = -(-n // lanes) * lanes
        size = np.dtype(dtype).itemsize
        region = padded * size + 64
        self._ensure(3 * region)
        view = self.runner.memory_view(self.memory, np.uint8)
        bases = [0, region, 2 * region]
        for base, array in zip(bases, arrays):
            target = view[base:base + padded * size].view(dtype)
            target[:n] = array
            target[n:] = 1
        self.runner.call(self.instance, loop_name(entry.name, sh), bases[0], bases[1], bases[2], padded)
        view = self.runner.memory_view(self.memory, np.uint8)
        return view[bases[2]:bases[2] + n * size].view(dtype).copy()

    def call_loop(self, op: str, shape: object, in0: int, in1: int, out: int, count: int) -> None:
        """Run the loop of (op, shape) over ``count`` elements at the given byte addresses (no copies)."""
        sh = as_shape(shape)
        self.runner.call(self.instance, loop_name(math_op(op).name, sh), in0, in1, out, count)
