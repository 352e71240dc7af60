"""ModuleContext: one program module being assembled (imports, globals, functions, runtime helpers).

Every module imports the backend's linear memory as ("env", "memory") (declared ``shared``, up to
4 GiB, when the module is compiled for a runner with shared memories) and, when the program has
pool instructions or cooperative maps that may need a scratch copy or may run on several threads,
the host functions ``env.pool_alloc(size) -> handle`` (0: exhausted), ``env.pool_free(handle) ->
status`` (0: freed, 1: not a live pool), ``env.scratch(bytes) -> address`` and
``env.parallel_map(instruction, dst, src_a, src_b, count)`` (runs the exported
``map_kernel_<instruction>`` over chunks of ``0 .. count`` on the runner's threads). Globals mirror
the runtime header for the duration of a launch (see ``layout``).

Runtime helpers (the trap routine, f16/bf16 rounding, fmod, the extended-integer library, the math
library) are functions added on first use: ``helper(name)`` returns the function index, building it
with the builder registered in ``HELPERS`` under that name.
"""

from __future__ import annotations

from typing import Callable

from .. import layout
from ..encoding.module import FunctionBuilder, ModuleBuilder
from ..encoding.types import MAX_PAGES, ValType
from ..errors import WasmEncodingError
from .emitter import Emitter

__all__ = ["ModuleContext", "HELPERS", "runtime_helper", "GLOBALS", "HOST_IMPORTS"]

#: helper name -> builder(mctx) that defines the function with mctx.define(name, ...)
HELPERS: dict[str, Callable[["ModuleContext"], None]] = {}

#: the module's globals: name -> (value type, initial value)
GLOBALS: dict[str, tuple[ValType, int]] = {
    "table_base": (ValType.I32, 0), "table_capacity": (ValType.I32, 0), "budget": (ValType.I64, 0),
    "launch_base": (ValType.I32, 0), "shared_base": (ValType.I32, 0), "coop_at": (ValType.I32, -1),
}

#: host imports: name -> (params, results)
HOST_IMPORTS: dict[str, tuple[tuple[ValType, ...], tuple[ValType, ...]]] = {
    "pool_alloc": ((ValType.I32,), (ValType.I32,)),
    "pool_free": ((ValType.I32,), (ValType.I32,)),
    "scratch": ((ValType.I32,), (ValType.I32,)),
    "parallel_map": ((ValType.I32,) * 5, ()),
}


def runtime_helper(name: str):
    """Register the decorated ``builder(mctx)`` as the runtime helper ``name``; raises ValueError if taken."""
    def register(builder: Callable[["ModuleContext"], None]) -> Callable[["ModuleContext"], None]:
        if name in HELPERS:
            raise ValueError(f"runtime helper {name!r} is registered twice")
        HELPERS[name] = builder
        return builder
    return register


class ModuleContext:
    """Builds one module; ``host_imports`` names the HOST_IMPORTS the module needs; ``shared_memory``
    declares the imported memory shared (it must match the runner's memory)."""

    def __init__(self, name: str, host_imports: tuple[str, ...] = (), *, shared_memory: bool = False) -> None:
        self.builder = ModuleBuilder(name)
        self.imports: dict[str, int] = {}
        for imp in host_imports:
            params, results = HOST_IMPORTS[imp]
            self.imports[imp] = self.builder.import_function("env", imp, params, results, as_name=f"host.{imp}")
        self.shared_memory = shared_memory
        if shared_memory:
            self.builder.import_memory("env", "memory", 1, MAX_PAGES, shared=True)
        else:
            self.builder.import_memory("env", "memory", 1)
        self.globals = {name: self.builder.add_global(vt, value, mutable=True, name=name)
                        for name, (vt, value) in GLOBALS.items()}
        self._helpers: dict[str, int] = {}
        self._building: set[str] = set()
        #: name -> function index of the functions defined so far
        self.functions: dict[str, int] = {}
        self._data_written: set[int] = set()
        self._math = None

    def define(self, name: str, params: tuple = (), results: tuple = (), *, export: bool = False
               ) -> tuple[FunctionBuilder, Emitter]:
        """A new function ``name`` with an Emitter as its code; returns (builder, emitter)."""
        fb = self.builder.add_function(name, params, results, export=export)
        emitter = Emitter()
        fb.code = emitter  # type: ignore[assignment]  # an Emitter has the finish() a FunctionBuilder calls
        self.functions[name] = fb.index
        return fb, emitter

    def helper(self, name: str) -> int:
        """The function index of runtime helper ``name``, defining it on first use."""
        index = self._helpers.get(name)
        if index is None:
            if name in self._building:
                raise ValueError(f"runtime helper {name!r} needs itself")
            self._building.add(name)
            HELPERS[name](self)
            self._building.discard(name)
            index = self._helpers[name] = self.functions[name]
        return index

    def global_index(self, name: str) -> int:
        return self.globals[name]

    def host(self, name: str) -> int:
        """The function index of host import ``name`` (it must have been asked for at construction)."""
        return self.imports[name]

    def math_library(self):
        """The module's ``wasm_backend.mathlib.MathLibrary`` (created on first use; it adds the math
        functions a program calls to this module). Its polynomial steps use relaxed SIMD ``relaxed_madd``:
        fused on hosts with FMA (wasmtime and V8 alike), two roundings elsewhere; every function keeps
        its published bound in both forms (tests/wasm_mathlib checks both)."""
        if self._math is None:
            from ..mathlib.library import MathLibrary
            self._math = MathLibrary(self.builder, relaxed_simd=True)
        return self._math

    def data_at(self, offset: int, data: bytes) -> None:
        """An active data segment writing ``data`` at ``offset`` (once per module).

        Only the constant Atlas tables region may be written so: every instantiation rewrites the
        segment into the shared memory (worker threads instantiate a module mid-launch), which is
        harmless only for bytes that never change. Raises WasmEncodingError for anything else.
        """
        end = layout.ATLAS_TABLES + layout.ATLAS_TABLE_BYTES
        if not layout.ATLAS_TABLES <= offset <= offset + len(data) <= end:
            raise WasmEncodingError(f"data segment at {offset} (+{len(data)} bytes) is outside the constant Atlas "
                                    f"tables region {layout.ATLAS_TABLES}..{end}")
        if offset not in self._data_written:
            self._data_written.add(offset)
            self.builder.add_data(data, offset=offset)

    def to_bytes(self) -> bytes:
        return self.builder.to_bytes()
