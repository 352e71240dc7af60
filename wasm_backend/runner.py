"""The runner interface: compile, instantiate and call WebAssembly modules on some engine.

A runner hides one WebAssembly engine (wasmtime natively; the browser's
``WebAssembly`` API through Pyodide) behind the same methods, so the code
that lowers Atlas programs never names the engine. The argument checks, the
compile cache and the memory bounds checks are written once here; an engine
implements the ``_``-prefixed hooks.

Memory model. A module may import one linear memory; ``instantiate`` creates
it (``memory_pages`` … ``max_pages``, shared when the import declares
``shared``) unless one is passed, so several instances can share one memory
(the backend's arena). A module that defines its own memory exposes it when it
exports it. Memory operations take a ``WasmMemory`` or an instance (meaning
its memory). Runners with ``shared_memory`` create shared memories
(``create_memory(..., shared=True)``; the threads proposal): such a memory never
moves when it grows, and instances in other threads may use it.

Threads. ``threads`` is the number of threads ``parallel_call`` runs on (the
calling thread included); runners without worker threads have 1 and run the
calls one after the other on the calling thread.

Copies. ``read_memory`` and ``read_array`` return copies, ``read_memory_into``
fills a host buffer, ``write_memory`` copies in. ``memory_view`` is a zero-copy NumPy view where the engine allows
it (``zero_copy_views``); the view is only valid until the memory grows (by
``grow_memory`` or by ``memory.grow`` in wasm code), after which it must be
taken again.

Values. Exported functions take and return i32, i64, f32 and f64 values as
Python ints and floats; ints may be given in the signed or unsigned range and
come back signed. A call returns None, one value, or a tuple.

Errors: WasmValidationError (compile), WasmInterfaceError (imports, exports,
arguments, memory settings), WasmTrap (the code trapped; the runner stays
usable), InvalidBuffer (a host memory access outside the memory),
AllocationFailed (a memory cannot grow), UnsupportedOperation (a feature the
engine lacks). Exceptions raised by imported Python functions propagate
unchanged. Runners are not thread-safe (``parallel_call`` uses its own
threads, but one caller at a time).
"""

from __future__ import annotations

import abc
import functools
import hashlib
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from atlas_web.cache import ProgramCache
from atlas_web.errors import AllocationFailed, InvalidBuffer, UnsupportedOperation

from .encoding.types import MAX_PAGES, PAGE_SIZE, ExternKind, FuncType, Limits, ValType
from .errors import WasmInterfaceError
from .parallel_dispatch import DispatchCount, ParallelDispatch, dispatch_function

__all__ = ["ModuleImport", "ModuleExport", "CompiledModule", "WasmMemory", "WasmInstance", "WasmRunner"]

_INT_RANGES = {ValType.I32: 32, ValType.I64: 64}
_FLOAT_TYPES = frozenset({ValType.F32, ValType.F64})


@dataclass(frozen=True, slots=True)
class ModuleImport:
    """An import the module needs: ``functype`` for functions, ``limits`` for memories."""

    module: str
    name: str
    kind: ExternKind
    functype: FuncType | None = None
    limits: Limits | None = None


@dataclass(frozen=True, slots=True)
class ModuleExport:
    """An export the module offers: ``functype`` for functions."""

    name: str
    kind: ExternKind
    functype: FuncType | None = None


@dataclass(frozen=True, eq=False)
class CompiledModule:
    """A compiled module: ``digest`` (SHA-256 of its bytes), ``size``, imports, exports, the engine's ``native``."""

    digest: str
    size: int
    imports: tuple[ModuleImport, ...]
    exports: tuple[ModuleExport, ...]
    native: Any

    @functools.cached_property
    def _exports_by_name(self) -> dict[str, ModuleExport]:
        # made once per module: ``export`` runs on every call and every parallel batch of a launch
        return {export.name: export for export in self.exports}

    def export(self, name: str) -> ModuleExport:
        """The export called ``name``; raises WasmInterfaceError listing the exports."""
        export = self._exports_by_name.get(name)
        if export is None:
            raise WasmInterfaceError(f"the module has no export {name!r} (exports: {[e.name for e in self.exports]})")
        return export


class WasmMemory:
    """A linear memory owned by a runner: ``native`` is the engine's memory, ``context`` what it lives in."""

    __slots__ = ("native", "context", "limits")

    def __init__(self, native: Any, context: Any, limits: Limits) -> None:
        self.native = native
        self.context = context
        self.limits = limits


class WasmInstance:
    """An instantiated module: its ``module``, ``memory`` (or None), the engine's ``native`` and ``context``
    (weakly referable: host functions that need their own instance refer to it weakly)."""

    __slots__ = ("module", "memory", "native", "context", "__weakref__")

    def __init__(self, module: CompiledModule, memory: WasmMemory | None, native: Any, context: Any) -> None:
        self.module = module
        self.memory = memory
        self.native = native
        self.context = context


def _check_count(value: object, what: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise WasmInterfaceError(f"{what} must be an int in {low}..{high}, got {value!r}")
    return value


def _check_argument(export: str, index: int, valtype: ValType, value: object) -> object:
    if valtype in _INT_RANGES:
        bits = _INT_RANGES[valtype]
        if isinstance(value, int) and not isinstance(value, bool) and -(1 << (bits - 1)) <= value < (1 << bits):
            return value - (1 << bits) if value >= 1 << (bits - 1) else value
    elif valtype in _FLOAT_TYPES:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    else:
        raise WasmInterfaceError(f"{export!r} parameter {index} is {valtype.text}, which hosts cannot pass")
    raise WasmInterfaceError(f"{export!r} parameter {index} is {valtype.text}; {value!r} does not fit")


class WasmRunner(abc.ABC):
    """Compile, instantiate and call WebAssembly modules on one engine (see the module docstring)."""

    #: the engine's name, used in error messages and WasmTrap.engine
    engine_name: str = ""
    #: whether ``memory_view`` gives zero-copy NumPy views
    zero_copy_views: bool = False
    #: whether ``create_memory`` makes shared memories (which ``parallel_call`` needs to run in parallel)
    shared_memory: bool = False

    def __init__(self, *, cache_size: int = 64) -> None:
        # compiled modules by the SHA-256 of their bytes (None: cache_size 0, nothing kept)
        size = _check_count(cache_size, "cache_size", 0, 1 << 20)
        self._cache: ProgramCache | None = ProgramCache(size, plain_keys=True) if size else None

    def engine_description(self) -> str:
        """The engine for device descriptions: its name and, where it is an installed distribution, its
        version (``"wasmtime 50.0.1"``); runners on another engine say more. Never raises."""
        try:
            from importlib.metadata import version
            return f"{self.engine_name} {version(self.engine_name)}"
        except Exception:  # the version is informative only
            return self.engine_name

    @property
    def supports_budget(self) -> bool:
        """Whether ``call`` accepts an execution ``budget``."""
        return False

    @property
    def threads(self) -> int:
        """The threads ``parallel_call`` runs on, the calling thread included (1: no worker threads)."""
        return 1

    @property
    def worker_calls(self) -> int:
        """Calls of ``parallel_call`` that ran on worker threads rather than the calling thread (0 without)."""
        return 0

    # --- modules -------------------------------------------------------------------------------------------

    def compile(self, wasm: bytes | bytearray | memoryview) -> CompiledModule:
        """Compile ``wasm`` (cached by the SHA-256 of the bytes); raises WasmValidationError."""
        data = self._as_bytes(wasm)
        digest = hashlib.sha256(data).hexdigest()
        if self._cache is None:
            return self._compile(data, digest)
        return self._cache.get_or_build(digest, lambda: self._compile(data, digest))

    def validate(self, wasm: bytes | bytearray | memoryview) -> None:
        """Raise WasmValidationError unless the engine accepts ``wasm``."""
        self._validate(self._as_bytes(wasm))

    @property
    def cached_modules(self) -> int:
        return 0 if self._cache is None else len(self._cache)

    # --- instances -----------------------------------------------------------------------------------------

    def create_memory(self, min_pages: int, max_pages: int | None = None, *, shared: bool = False) -> WasmMemory:
        """A new linear memory of ``min_pages`` … ``max_pages`` (None: up to 4 GiB) 64 KiB pages; ``shared``
        makes a shared memory (it needs ``max_pages``). Raises WasmInterfaceError for bad counts or a shared
        memory without a maximum, UnsupportedOperation for a shared memory on a runner without them."""
        _check_count(min_pages, "min_pages", 0, MAX_PAGES)
        if max_pages is not None:
            _check_count(max_pages, "max_pages", min_pages, MAX_PAGES)
        if shared:
            if not self.shared_memory:
                raise UnsupportedOperation("shared memory", "linear memory", self.engine_name,
                                           "this runner has no shared memories (it runs on one thread)")
            if max_pages is None:
                raise WasmInterfaceError("a shared memory needs max_pages")
        return self._create_memory(Limits(min_pages, max_pages, bool(shared)))

    def instantiate(self, module: CompiledModule, *, memory_pages: int | None = None, max_pages: int | None = None,
                    memory: WasmMemory | None = None,
                    imports: Mapping[str, Mapping[str, Callable[..., Any] | WasmMemory]] | None = None
                    ) -> WasmInstance:
        """Instantiate ``module``: its imported memory is ``memory``, one given in ``imports``, or a new one of
        ``memory_pages`` (default: the module's minimum) … ``max_pages`` pages; imported functions are Python
        callables from ``imports[module][name]``, or ``ParallelDispatch`` plans of batches on the threads
        (``parallel_dispatch``). Runs the start function (a trap raises WasmTrap).

        Raises WasmInterfaceError when an import is missing or of the wrong kind, or when memory settings
        are given for a module that imports no memory.
        """
        if not isinstance(module, CompiledModule):
            raise WasmInterfaceError(f"instantiate needs a CompiledModule from compile(), got {type(module).__name__}")
        provided = imports or {}
        memory_imports = [imp for imp in module.imports if imp.kind == ExternKind.MEMORY]
        if len(memory_imports) > 1:
            raise WasmInterfaceError("the module imports more than one memory; runners give it one")
        if not memory_imports:
            if memory is not None or memory_pages is not None or max_pages is not None:
                raise WasmInterfaceError("memory, memory_pages and max_pages apply only to a module that imports "
                                         "its memory; this one does not")
        else:
            memory = self._memory_for_import(memory_imports[0], provided, memory, memory_pages, max_pages)
        functions: dict[tuple[str, str], Any] = {}
        dispatches: list[tuple[tuple[str, str], ParallelDispatch]] = []
        for imp in module.imports:
            if imp.kind == ExternKind.FUNC:
                func = provided.get(imp.module, {}).get(imp.name)
                if isinstance(func, ParallelDispatch):
                    dispatches.append(((imp.module, imp.name), func))
                    continue
                if not callable(func):
                    signature = imp.functype.text() if imp.functype else ""
                    raise WasmInterfaceError(f"import {imp.module}.{imp.name} ({signature}) needs a Python callable "
                                             f"in imports[{imp.module!r}][{imp.name!r}]")
                functions[(imp.module, imp.name)] = func
            elif imp.kind != ExternKind.MEMORY:
                raise WasmInterfaceError(f"import {imp.module}.{imp.name} is a {imp.kind.text}; runners provide only "
                                         "functions and one memory")
        # made once every import passed its check: the browser's hold proxies that only the instance releases
        instance_ref: list = []
        for key, dispatch in dispatches:
            functions[key] = self._dispatch_import(dispatch, instance_ref)
        instance = self._instantiate(module, memory, functions)
        instance_ref.append(weakref.ref(instance))
        return instance

    def dispatch_count(self) -> Any:
        """A new count of dispatches (``value``) for the ``ParallelDispatch`` imports of one backend."""
        return DispatchCount()

    def _dispatch_import(self, dispatch: ParallelDispatch, instance_ref: list) -> Any:
        """Hook: what ``_instantiate`` receives for a ParallelDispatch import (``instance_ref[0]()``: the instance,
        once made). Default: a Python function (``parallel_dispatch.dispatch_function``)."""
        return dispatch_function(self, dispatch, instance_ref)

    def call(self, instance: WasmInstance, export_name: str, *args: object, budget: int | None = None) -> Any:
        """Call exported function ``export_name``; returns None, one value or a tuple.

        ``budget`` caps the work the call may do, in the engine's units (see the
        runner); exhausting it raises WasmTrap(BUDGET_EXHAUSTED). Raises
        WasmInterfaceError for an unknown export or unfitting arguments,
        UnsupportedOperation for a budget on a runner without budgets.
        """
        export = instance.module.export(export_name)
        if export.kind != ExternKind.FUNC or export.functype is None:
            raise WasmInterfaceError(f"export {export_name!r} is a {export.kind.text}, not a function")
        params = export.functype.params
        if len(args) != len(params):
            raise WasmInterfaceError(f"{export_name!r} takes {len(params)} argument(s) "
                                     f"({export.functype.text() or 'none'}), got {len(args)}")
        values = tuple(_check_argument(export_name, i, t, v) for i, (t, v) in enumerate(zip(params, args)))
        if budget is not None:
            if not self.supports_budget:
                raise UnsupportedOperation("budget", "call", self.engine_name, "this runner cannot bound a call")
            _check_count(budget, "budget", 0, (1 << 63) - 1)
        return self._call(instance, export_name, values, budget)

    def bind(self, instance: WasmInstance, export_name: str) -> Callable[[], Any]:
        """A caller of exported function ``export_name``, which must take no parameters: calling it equals
        ``call(instance, export_name)`` (same results, traps and errors) with less overhead per call where
        the engine allows it. Raises WasmInterfaceError for an unknown export or one with parameters."""
        export = instance.module.export(export_name)
        if export.kind != ExternKind.FUNC or export.functype is None or export.functype.params:
            raise WasmInterfaceError(f"bind needs an exported function without parameters; {export_name!r} is "
                                     f"{export.functype.text() if export.functype else export.kind.text}")
        return self._bind(instance, export_name)

    def _bind(self, instance: WasmInstance, export_name: str) -> Callable[[], Any]:
        """Engines with a faster call path override this."""
        return lambda: self.call(instance, export_name)

    def parallel_call(self, instance: WasmInstance, export_name: str, argument_lists: list[tuple]) -> None:
        """Call exported function ``export_name`` (no results) once per tuple of ``argument_lists``, on up
        to ``threads`` threads at once; returns when every call has ended.

        Calls beyond the first run in worker instances of the same module on the same (shared) memory,
        so the function must use neither globals nor tables of the instance, nor call its imports.
        Where the runner has no worker threads or the memory is not shared, the calls run one after the
        other on the calling thread. After a call raised (WasmTrap for a trap), or the calling thread was
        interrupted (KeyboardInterrupt), no further call starts; the exception is raised once no call of
        this ``parallel_call`` runs any more (so nothing writes the memory after it returned): an
        interrupt first, else the one of the first failing tuple (the failure one thread calling in order
        meets first). Raises WasmInterfaceError for an unknown export, one with results, or unfitting
        arguments (before any call runs; the browser's runner on worker threads also refuses an i64 argument
        of 2**53 - 1 or more in magnitude: see runners/js_runner.py).
        """
        params = self._parallel_params(instance, export_name)
        checked = []
        for args in argument_lists:
            if len(args) != len(params):
                raise WasmInterfaceError(f"{export_name!r} takes {len(params)} argument(s), got {len(args)}")
            checked.append(tuple(_check_argument(export_name, i, t, v) for i, (t, v) in enumerate(zip(params, args))))
        if not checked:
            return
        if len(checked) == 1 or not self._threaded(instance):
            for args in checked:
                self._call(instance, export_name, args, None)
            return
        self._parallel_call(instance, export_name, checked)

    def parallel_caller(self, instance: WasmInstance, export_name: str) -> Callable[[list[tuple]], None]:
        """A function of ``argument_lists`` that equals ``parallel_call(instance, export_name, argument_lists)``
        for arguments that fit the export's parameters (each tuple as long as its parameter list, each value
        an int within its i32/i64 range, signed or unsigned, or a number for an f32/f64), which it does not
        check: for callers whose arguments come from the module itself (the backend's host functions), on
        engines where checking them costs much of a short batch (the browser's). The export is checked
        now: raises WasmInterfaceError for an unknown export or one with results. Engines with a faster
        path override ``_parallel_caller``; the default checks the arguments all the same."""
        return self._parallel_caller(instance, export_name, self._parallel_params(instance, export_name))

    def _threaded(self, instance: WasmInstance) -> bool:
        """Whether ``parallel_call`` on ``instance`` may use worker threads: more than one thread and a shared
        memory (else its calls run one after the other on the calling thread)."""
        memory = instance.memory
        return self.threads > 1 and memory is not None and memory.limits.shared

    @staticmethod
    def _parallel_params(instance: WasmInstance, export_name: str) -> tuple[ValType, ...]:
        """The parameter types of ``export_name``, an exported function without results; raises
        WasmInterfaceError for an unknown export or one with results."""
        export = instance.module.export(export_name)
        if export.kind != ExternKind.FUNC or export.functype is None or export.functype.results:
            raise WasmInterfaceError(f"parallel_call needs an exported function without results; {export_name!r} "
                                     f"is {export.functype.text() if export.functype else export.kind.text}")
        return export.functype.params

    def _parallel_caller(self, instance: WasmInstance, export_name: str,
                         params: tuple[ValType, ...]) -> Callable[[list[tuple]], None]:
        """Engines with a cheaper unchecked batch override this (see ``parallel_caller``)."""
        return lambda argument_lists: self.parallel_call(instance, export_name, argument_lists)

    def _parallel_call(self, instance: WasmInstance, export_name: str, argument_lists: list[tuple]) -> None:
        """Engines with worker threads override this (see ``parallel_call``; arguments are checked)."""
        for args in argument_lists:
            self._call(instance, export_name, args, None)

    # --- memory --------------------------------------------------------------------------------------------

    def memory_size(self, target: WasmInstance | WasmMemory) -> int:
        """The memory's current size in bytes."""
        return self._memory_bytes(self._memory_of(target))

    def memory_pages(self, target: WasmInstance | WasmMemory) -> int:
        """The memory's current size in 64 KiB pages."""
        return self.memory_size(target) // PAGE_SIZE

    def grow_memory(self, target: WasmInstance | WasmMemory, delta_pages: int) -> int:
        """Grow the memory by ``delta_pages``; returns the old size in pages. Views taken before must be taken
        again. Raises AllocationFailed beyond the memory's maximum."""
        memory = self._memory_of(target)
        old = self.memory_pages(memory)
        _check_count(delta_pages, "delta_pages", 0, MAX_PAGES)
        ceiling = MAX_PAGES if memory.limits.max is None else memory.limits.max
        if old + delta_pages > ceiling:
            raise AllocationFailed(f"growing memory from {old} by {delta_pages} pages exceeds its maximum of "
                                   f"{ceiling} pages")
        return self._grow(memory, delta_pages)

    def read_memory(self, target: WasmInstance | WasmMemory, offset: int, length: int) -> bytes:
        """A copy of ``length`` bytes at ``offset``; raises InvalidBuffer outside the memory."""
        memory = self._memory_of(target)
        self._check_range(memory, offset, length, "read_memory")
        return self._read(memory, offset, length)

    def write_memory(self, target: WasmInstance | WasmMemory, offset: int, data: bytes | bytearray | memoryview
                     ) -> None:
        """Copy ``data`` (any bytes-like object) to ``offset``; raises InvalidBuffer outside the memory."""
        memory = self._memory_of(target)
        view = memoryview(data).cast("B")
        self._check_range(memory, offset, view.nbytes, "write_memory")
        self._write(memory, offset, view)

    def read_memory_into(self, target: WasmInstance | WasmMemory, offset: int, out: Any) -> Any:
        """Fill ``out`` (a writable contiguous bytes-like object) from ``offset`` and return it: one copy on
        engines that copy straight into a host buffer. Raises InvalidBuffer outside the memory or for an
        ``out`` that is not a writable contiguous buffer."""
        memory = self._memory_of(target)
        try:
            view = memoryview(out)
        except TypeError:
            raise InvalidBuffer(f"read_memory_into: out must be a writable buffer, got {type(out).__name__}") from None
        if view.readonly or not view.c_contiguous:
            raise InvalidBuffer("read_memory_into: out must be a writable C-contiguous buffer")
        view = view.cast("B")
        self._check_range(memory, offset, view.nbytes, "read_memory_into")
        self._read_into(memory, offset, view)
        return out

    def memory_view(self, target: WasmInstance | WasmMemory, dtype: Any = "uint8", offset: int = 0,
                    count: int | None = None):
        """A zero-copy NumPy array of ``count`` items (default: to the end) of ``dtype`` at ``offset``.

        Valid until the memory grows. Raises UnsupportedOperation where the engine
        cannot share its memory, InvalidBuffer for a range outside the memory or an
        offset not a multiple of the item size.
        """
        import numpy
        memory = self._memory_of(target)
        dt = numpy.dtype(dtype)
        total = self._memory_bytes(memory)
        nbytes = self._array_range(total, dt.itemsize, offset, count)
        return self._view(memory, offset, nbytes).view(dt)

    def read_array(self, target: WasmInstance | WasmMemory, dtype: Any, offset: int = 0, count: int | None = None):
        """A NumPy array copied from ``count`` items of ``dtype`` at ``offset`` (works on every engine)."""
        import numpy
        memory = self._memory_of(target)
        dt = numpy.dtype(dtype)
        nbytes = self._array_range(self._memory_bytes(memory), dt.itemsize, offset, count)
        return numpy.frombuffer(bytearray(self._read(memory, offset, nbytes)), dtype=dt)

    def close(self) -> None:
        """Drop cached modules; instances and memories stay usable while referenced."""
        if self._cache is not None:
            self._cache.clear()

    # --- helpers -------------------------------------------------------------------------------------------

    def _memory_for_import(self, imp: ModuleImport, provided: Mapping, memory: WasmMemory | None,
                           memory_pages: int | None, max_pages: int | None) -> WasmMemory:
        given = provided.get(imp.module, {}).get(imp.name)
        if memory is None and isinstance(given, WasmMemory):
            memory = given
        if memory is not None:
            if memory_pages is not None or max_pages is not None:
                raise WasmInterfaceError("give either a memory or memory_pages/max_pages, not both")
            if not isinstance(memory, WasmMemory):
                raise WasmInterfaceError(f"memory must be a WasmMemory from this runner, got {type(memory).__name__}")
            return memory
        declared = imp.limits or Limits(0)
        pages = declared.min if memory_pages is None else memory_pages
        if max_pages is None:
            max_pages = declared.max
        if pages < declared.min:
            raise WasmInterfaceError(f"memory_pages {pages} is below the module's minimum of {declared.min} pages")
        if declared.max is not None and (max_pages is None or max_pages > declared.max):
            raise WasmInterfaceError(f"max_pages {max_pages} exceeds the module's declared maximum of "
                                     f"{declared.max} pages")
        return self.create_memory(pages, max_pages, shared=declared.shared)

    @staticmethod
    def _memory_of(target: object) -> WasmMemory:
        if isinstance(target, WasmMemory):
            return target
        if isinstance(target, WasmInstance):
            if target.memory is None:
                raise InvalidBuffer("the instance has no linear memory (it neither imports nor exports one)")
            return target.memory
        raise InvalidBuffer(f"expected a WasmInstance or WasmMemory, got {type(target).__name__}")

    def _check_range(self, memory: WasmMemory, offset: object, length: int, what: str) -> None:
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise InvalidBuffer(f"{what}: offset must be a non-negative int, got {offset!r}")
        if not isinstance(length, int) or isinstance(length, bool) or length < 0:
            raise InvalidBuffer(f"{what}: length must be a non-negative int, got {length!r}")
        size = self._memory_bytes(memory)
        if offset + length > size:
            raise InvalidBuffer(f"{what}: bytes {offset}..{offset + length} are outside the memory of {size} bytes")

    @staticmethod
    def _array_range(total: int, itemsize: int, offset: object, count: object) -> int:
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0 or offset % itemsize:
            raise InvalidBuffer(f"array offset must be a non-negative multiple of the item size {itemsize}, "
                                f"got {offset!r}")
        if count is None:
            count = max(total - offset, 0) // itemsize
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InvalidBuffer(f"array count must be a non-negative int, got {count!r}")
        nbytes = count * itemsize
        if offset + nbytes > total:
            raise InvalidBuffer(f"array of {count} items at byte {offset} ends at {offset + nbytes}, past the "
                                f"memory of {total} bytes")
        return nbytes

    @staticmethod
    def _as_bytes(wasm: object) -> bytes:
        if isinstance(wasm, bytes):
            return wasm
        if isinstance(wasm, (bytearray, memoryview)):
            return bytes(wasm)
        raise WasmInterfaceError(f"WebAssembly binary must be bytes, got {type(wasm).__name__}")

    # --- engine hooks --------------------------------------------------------------------------------------

    @abc.abstractmethod
    def _compile(self, data: bytes, digest: str) -> CompiledModule: ...

    @abc.abstractmethod
    def _validate(self, data: bytes) -> None: ...

    @abc.abstractmethod
    def _create_memory(self, limits: Limits) -> WasmMemory: ...

    @abc.abstractmethod
    def _instantiate(self, module: CompiledModule, memory: WasmMemory | None,
                     functions: dict[tuple[str, str], Callable[..., Any]]) -> WasmInstance: ...

    @abc.abstractmethod
    def _call(self, instance: WasmInstance, export_name: str, args: tuple, budget: int | None) -> Any: ...

    @abc.abstractmethod
    def _memory_bytes(self, memory: WasmMemory) -> int: ...

    @abc.abstractmethod
    def _grow(self, memory: WasmMemory, delta_pages: int) -> int: ...

    @abc.abstractmethod
    def _read(self, memory: WasmMemory, offset: int, length: int) -> bytes: ...

    @abc.abstractmethod
    def _write(self, memory: WasmMemory, offset: int, data: memoryview) -> None: ...

    def _read_into(self, memory: WasmMemory, offset: int, target: memoryview) -> None:
        """Copy ``target.nbytes`` bytes at ``offset`` into ``target`` (a flat writable byte view). Engines that
        can copy straight into a host buffer override this default, which copies through ``_read``."""
        target[:] = self._read(memory, offset, target.nbytes)

    def _view(self, memory: WasmMemory, offset: int, nbytes: int):
        """A uint8 NumPy view of ``nbytes`` at ``offset``. Engines with ``zero_copy_views`` override this; the
        others answer that they cannot share their memory."""
        raise UnsupportedOperation("memory_view", "linear memory", self.engine_name,
                                   "the engine cannot share its memory; use read_array, which copies")
