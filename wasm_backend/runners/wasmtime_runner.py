"""WasmtimeRunner: the runner interface on wasmtime-py (native CPython).

Engine settings: SIMD and relaxed SIMD are switched on explicitly (they are
wasmtime's defaults; never switch SIMD off while relaxed SIMD is on, wasmtime
aborts the process). Relaxed SIMD runs with the host's native semantics
(``relaxed_simd_deterministic=False``): fastest, and allowed by the spec.

Execution budget: **fuel**. With ``budgeted=True`` (the default) every call
starts with ``budget`` units of fuel (about one per WebAssembly instruction;
None means the runner's ``default_budget``, and None there means 2**63-1,
i.e. unlimited) and traps with ``WasmTrap(BUDGET_EXHAUSTED)`` when it runs
out. Fuel was chosen over epoch interruption because it is deterministic: a
runaway loop stops after the same amount of work on every run and under any
machine load, so budget traps are reproducible in tests, and no timer thread
is needed. Measured on this project's machines, fuel costs about what epoch
checks cost: +10-25 % on memory-bound loops (benchmarks/wasm_micro.py: 1.08x
NumPy's time without fuel, 1.33x with it) and up to 4x on a loop whose body
is one instruction. ``budgeted=False`` removes the instrumentation; the
Atlas budget itself (backward branches per lane) is counted by the lowered
code, not by the engine, so it holds either way.

Interrupts: the engine also has epoch interruption on, so a SIGINT (Ctrl-C) stops a call on the main
thread within about one tick (0.1 s) and raises KeyboardInterrupt once it has returned (``interrupts``);
an epoch deadline never traps by itself, so budgets stay fuel's alone.

Each memory lives in its own ``wasmtime.Store``, and so does each instance of a shared memory or
without an imported memory; instances of a non-shared memory share its store. A Store frees its
instances only when it is dropped itself, so an instance in a Store of its own (the backend's: its
memory is shared natively) releases its code's data, host functions and tables as soon as nothing
refers to it. Memory views are zero-copy NumPy arrays over ``Memory.data_ptr`` that keep the store alive.

Threads. The engine has the threads proposal on: ``create_memory(shared=True)``
makes a ``wasmtime.SharedMemory`` (reserved up to its maximum, so it never
moves and views stay valid across growth; the calling thread's instances still
share one store). ``parallel_call`` runs on ``threads`` threads: the calling
thread and ``threads - 1`` persistent daemon workers (``worker_pool``, started
on first use, stopped by ``close`` or, for a runner collected unclosed, by a
``weakref.finalize`` that refers to the pool only; a later call after ``close``
starts new ones). A failure or an interrupt (KeyboardInterrupt) stops the
batch between calls, and ``parallel_call`` raises only once no worker runs a
call of it, so nothing writes the memory after it returned. Every thread has its own Store and, made
lazily and cached per module, its own instance of the module on the same
shared memory; those instances' imported functions refuse to run (a kernel
must not call imports). wasmtime-py 50 builds the import descriptor of a
SharedMemory wrongly (a pointer to the pointer), so ``_shared_memory_extern``
builds it here.
"""

from __future__ import annotations

import ctypes
import os
import weakref
from typing import Any, Callable

from atlas_web.cache import ProgramCache
from atlas_web.errors import AllocationFailed, BackendUnavailable

from ..encoding.types import ExternKind, FuncType, Limits, ValType
from ..errors import WasmInterfaceError, WasmTrap, WasmTrapKind, WasmValidationError
from ..runner import CompiledModule, ModuleExport, ModuleImport, WasmInstance, WasmMemory, WasmRunner
from .interrupts import EpochTicker, call_interruptibly, guard_store
from .worker_pool import WorkerPool

try:
    import wasmtime
except ImportError as exc:  # pragma: no cover - exercised only where wasmtime is missing
    raise BackendUnavailable(f"the wasmtime runner needs wasmtime-py (pip install wasmtime): {exc}") from None

__all__ = ["WasmtimeRunner", "UNLIMITED_FUEL", "MAX_THREADS", "default_threads"]

#: the fuel a call gets when no budget applies
UNLIMITED_FUEL = (1 << 63) - 1
#: the most threads a runner accepts
MAX_THREADS = 64
#: the most threads ``default_threads`` picks
DEFAULT_THREADS_CAP = 8
#: an epoch deadline (ticks) no run reaches
_NEVER = 1 << 62
#: module instances a worker thread keeps (least recently used evicted); after as many evictions it starts
#: a fresh Store for new ones, and an old Store is freed with its last instance (a Store frees nothing earlier)
_WORKER_INSTANCES = 32


def default_threads() -> int:
    """The CPUs this process may run on (its affinity where the host reports it, else the CPU count), at
    most DEFAULT_THREADS_CAP (at least 1)."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(usable or 1, DEFAULT_THREADS_CAP))

# wasmtime trap codes -> engine-neutral kinds (codes absent here map to OTHER)
_TRAP_KINDS: dict[Any, WasmTrapKind] = {
    wasmtime.TrapCode.STACK_OVERFLOW: WasmTrapKind.STACK_OVERFLOW,
    wasmtime.TrapCode.MEMORY_OUT_OF_BOUNDS: WasmTrapKind.MEMORY_OUT_OF_BOUNDS,
    wasmtime.TrapCode.HEAP_MISALIGNED: WasmTrapKind.MISALIGNED_ACCESS,
    wasmtime.TrapCode.TABLE_OUT_OF_BOUNDS: WasmTrapKind.TABLE_OUT_OF_BOUNDS,
    wasmtime.TrapCode.INDIRECT_CALL_TO_NULL: WasmTrapKind.INDIRECT_CALL_TO_NULL,
    wasmtime.TrapCode.BAD_SIGNATURE: WasmTrapKind.INDIRECT_CALL_TYPE_MISMATCH,
    wasmtime.TrapCode.INTEGER_OVERFLOW: WasmTrapKind.INTEGER_OVERFLOW,
    wasmtime.TrapCode.INTEGER_DIVISION_BY_ZERO: WasmTrapKind.INTEGER_DIVIDE_BY_ZERO,
    wasmtime.TrapCode.BAD_CONVERSION_TO_INTEGER: WasmTrapKind.INVALID_CONVERSION_TO_INTEGER,
    wasmtime.TrapCode.UNREACHABLE: WasmTrapKind.UNREACHABLE,
    wasmtime.TrapCode.INTERRUPT: WasmTrapKind.BUDGET_EXHAUSTED,
    wasmtime.TrapCode.OUT_OF_FUEL: WasmTrapKind.BUDGET_EXHAUSTED,
    wasmtime.TrapCode.NULL_REFERENCE: WasmTrapKind.NULL_REFERENCE,
}

_VALTYPE_OF_KIND = {"i32": ValType.I32, "i64": ValType.I64, "f32": ValType.F32, "f64": ValType.F64,
                    "v128": ValType.V128, "funcref": ValType.FUNCREF, "externref": ValType.EXTERNREF}


#: the C union field of each result type a bound caller reads
_RESULT_FIELDS = {ValType.I32: "i32", ValType.I64: "i64", ValType.F32: "f32", ValType.F64: "f64"}


def _functype(ft: "wasmtime.FuncType") -> FuncType:
    return FuncType(tuple(_VALTYPE_OF_KIND[str(t)] for t in ft.params),
                    tuple(_VALTYPE_OF_KIND[str(t)] for t in ft.results))


# how each wasmtime extern type describes itself to the engine-neutral interface
_EXTERN_KIND: dict[type, ExternKind] = {
    wasmtime.FuncType: ExternKind.FUNC, wasmtime.MemoryType: ExternKind.MEMORY,
    wasmtime.TableType: ExternKind.TABLE, wasmtime.GlobalType: ExternKind.GLOBAL,
}


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _shared_memory_extern(memory: "wasmtime.SharedMemory") -> Any:
    """The C import descriptor of a shared memory (``wasmtime_extern_t`` holding the memory's pointer)."""
    from wasmtime import _ffi as ffi
    union = ffi.wasmtime_extern_union(sharedmemory=memory.ptr())
    return ffi.wasmtime_extern_t(ffi.WASMTIME_EXTERN_SHAREDMEMORY, union)


class _SharedMemory(wasmtime.SharedMemory):
    """A SharedMemory that describes itself to ``wasmtime.Instance`` with ``_shared_memory_extern``."""

    def _as_extern(self) -> Any:
        return _shared_memory_extern(self)


class _MemoryBuffer:
    """Exposes wasm memory to NumPy (``__array_interface__``) and keeps its store alive while viewed."""

    def __init__(self, address: int, size: int, keep_alive: tuple) -> None:
        self.__array_interface__ = {"data": (address, False), "shape": (size,), "typestr": "|u1", "version": 3}
        self._keep_alive = keep_alive


class WasmtimeRunner(WasmRunner):
    """The runner on wasmtime-py; budgets are fuel (see the module docstring).

    ``default_budget`` is the fuel of a call given no budget (None: unlimited);
    ``cache_size`` the number of compiled modules kept (by digest).
    """

    engine_name = "wasmtime"
    zero_copy_views = True

    shared_memory = True

    def __init__(self, *, budgeted: bool = True, default_budget: int | None = None, cache_size: int = 64,
                 threads: int | None = 1) -> None:
        super().__init__(cache_size=cache_size)
        if threads is None:
            threads = default_threads()
        if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= MAX_THREADS:
            raise WasmInterfaceError(f"threads must be an int in 1..{MAX_THREADS} or None, got {threads!r}")
        self._threads = threads
        self._pool: WorkerPool | None = None
        self._pool_finalizer: weakref.finalize | None = None
        self._batches = 0
        self._worker_calls = 0
        self._slots: dict[int, _SlotInstances] = {}
        if default_budget is not None and (not isinstance(default_budget, int) or isinstance(default_budget, bool)
                                           or not 0 <= default_budget <= UNLIMITED_FUEL):
            raise WasmInterfaceError(f"default_budget must be an int in 0..2**63-1 or None, got {default_budget!r}")
        if default_budget is not None and not budgeted:
            raise WasmInterfaceError("default_budget needs budgeted=True")
        config = wasmtime.Config()
        config.wasm_simd = True
        config.wasm_relaxed_simd = True
        config.wasm_relaxed_simd_deterministic = False
        config.wasm_bulk_memory = True
        config.wasm_reference_types = True
        config.wasm_threads = True
        config.shared_memory = True
        config.consume_fuel = bool(budgeted)
        config.epoch_interruption = True  # Ctrl-C inside a call (interrupts.py)
        self._budgeted = bool(budgeted)
        self._default_fuel = UNLIMITED_FUEL if default_budget is None else default_budget
        self._engine = EpochTicker.new_engine(config)

    @property
    def supports_budget(self) -> bool:
        return self._budgeted

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def parallel_batches(self) -> int:
        """``parallel_call`` batches that ran on worker threads so far."""
        return self._batches

    @property
    def worker_calls(self) -> int:
        """Calls of ``parallel_call`` that ran on worker threads (not the calling thread) so far."""
        return self._worker_calls

    @property
    def workers_alive(self) -> int:
        """Worker threads running now (0 before the first parallel call and after ``close``)."""
        return 0 if self._pool is None else self._pool.alive_workers

    @property
    def engine(self) -> "wasmtime.Engine":
        """The wasmtime Engine (for code that must reach wasmtime directly). It has epoch interruption on and
        its epoch advances every 0.1 s: a Store made on it needs ``set_epoch_deadline`` (e.g. ``1 << 62``)
        before it runs code, else its calls trap ("interrupt")."""
        return self._engine

    # --- modules -------------------------------------------------------------------------------------------

    def _compile(self, data: bytes, digest: str) -> CompiledModule:
        try:
            native = wasmtime.Module(self._engine, data)
        except wasmtime.WasmtimeError as exc:
            raise WasmValidationError(f"wasmtime rejected the module: {_first_line(exc)}",
                                      engine_message=str(exc)) from None
        imports = []
        for imp in native.imports:
            kind = _EXTERN_KIND[type(imp.type)]
            functype = _functype(imp.type) if kind == ExternKind.FUNC else None
            limits = None
            if kind == ExternKind.MEMORY:
                limits = Limits(imp.type.limits.min, imp.type.limits.max, bool(imp.type.is_shared))
            imports.append(ModuleImport(imp.module, imp.name or "", kind, functype, limits))
        exports = []
        for exp in native.exports:
            kind = _EXTERN_KIND[type(exp.type)]
            exports.append(ModuleExport(exp.name, kind, _functype(exp.type) if kind == ExternKind.FUNC else None))
        return CompiledModule(digest, len(data), tuple(imports), tuple(exports), native)

    def _validate(self, data: bytes) -> None:
        try:
            wasmtime.Module.validate(self._engine, data)
        except wasmtime.WasmtimeError as exc:
            raise WasmValidationError(f"wasmtime rejected the module: {_first_line(exc)}",
                                      engine_message=str(exc)) from None

    # --- instances -----------------------------------------------------------------------------------------

    def _new_store(self, interruptible: bool = True) -> "wasmtime.Store":
        """A Store with the default fuel; ``interruptible``: with an EpochGuard (a SIGINT stops its calls on
        the main thread), else an epoch deadline never reached (the worker pool stops batches between
        calls, and no Python callback may run during them on the main thread: it would swallow the signal)."""
        store = wasmtime.Store(self._engine)
        if self._budgeted:
            store.set_fuel(self._default_fuel)
        if interruptible:
            store.atlas_epoch_guard = guard_store(store)  # lives as long as the store
        else:
            store.set_epoch_deadline(_NEVER)
        return store

    def _create_memory(self, limits: Limits) -> WasmMemory:
        store = self._new_store()
        memory_type = wasmtime.MemoryType(wasmtime.Limits(limits.min, limits.max), shared=limits.shared)
        try:
            native = (_SharedMemory(self._engine, memory_type) if limits.shared
                      else wasmtime.Memory(store, memory_type))
        except wasmtime.WasmtimeError as exc:
            raise AllocationFailed(f"wasmtime could not create a memory of {limits.min}..{limits.max} pages: "
                                   f"{_first_line(exc)}") from None
        return WasmMemory(native, store, limits)

    def _instantiate(self, module: CompiledModule, memory: WasmMemory | None,
                     functions: dict[tuple[str, str], Callable[..., Any]]) -> WasmInstance:
        # a Store frees nothing before it is dropped itself (an instance lives as long as its Store): an
        # instance on a shared memory (which belongs to no Store) gets a Store of its own, freed with it
        shared = memory is not None and memory.limits.shared
        store = memory.context if memory is not None and not shared else self._new_store()
        externs: list[Any] = []
        for imp, native_imp in zip(module.imports, module.native.imports):
            if imp.kind == ExternKind.MEMORY:
                externs.append(memory.native)  # type: ignore[union-attr]
            else:
                externs.append(wasmtime.Func(store, native_imp.type, functions[(imp.module, imp.name)]))
        self._refuel(store, None)
        native = self._run(lambda: wasmtime.Instance(store, module.native, externs), "start function", store)
        if memory is None:
            memory = self._exported_memory(module, native, store)
        return WasmInstance(module, memory, native, store)

    @staticmethod
    def _exported_memory(module: CompiledModule, native: "wasmtime.Instance", store: "wasmtime.Store"
                         ) -> WasmMemory | None:
        for export in module.exports:
            if export.kind == ExternKind.MEMORY:
                mem = native.exports(store)[export.name]
                limits = mem.type(store).limits
                return WasmMemory(mem, store, Limits(limits.min, limits.max))
        return None

    def _call(self, instance: WasmInstance, export_name: str, args: tuple, budget: int | None) -> Any:
        store = instance.context
        func = instance.native.exports(store)[export_name]
        self._refuel(store, budget)
        result = self._run(lambda: func(store, *args), export_name, store)
        return tuple(result) if isinstance(result, list) else result

    def _bind(self, instance: WasmInstance, export_name: str) -> Callable[[], Any]:
        """A direct call through wasmtime's C API with argument and result arrays made once (wasmtime-py's
        ``Func.__call__`` rebuilds the function type on every call, which costs tens of microseconds)."""
        from wasmtime import _ffi as ffi
        from wasmtime._func import maybe_raise_last_exn
        store = instance.context
        func = instance.native.exports(store)[export_name]
        results = instance.module.export(export_name).functype.results  # type: ignore[union-attr]
        if len(results) > 1 or any(t not in _RESULT_FIELDS for t in results):
            return super()._bind(instance, export_name)
        field = _RESULT_FIELDS[results[0]] if results else None
        params = (ffi.wasmtime_val_t * 0)()
        out = (ffi.wasmtime_val_t * len(results))()
        func_ref = ctypes.byref(func._func)
        call = ffi.wasmtime_func_call
        trap_type = ctypes.POINTER(ffi.wasm_trap_t)
        engine = self.engine_name
        guard = store.atlas_epoch_guard

        def caller() -> Any:
            self._refuel(store, None)
            trap = trap_type()
            error = call_interruptibly(guard, lambda: call(store._context(), func_ref, params, 0, out,
                                                           len(results), ctypes.byref(trap)))
            if trap:
                trap_obj = wasmtime.Trap._from_ptr(trap)
                maybe_raise_last_exn()
                kind = _TRAP_KINDS.get(trap_obj.trap_code, WasmTrapKind.OTHER)
                raise WasmTrap(kind, engine=engine, engine_message=str(trap_obj), export=export_name)
            if error:
                maybe_raise_last_exn()
                raise WasmInterfaceError(f"{export_name}: wasmtime refused: "
                                         f"{_first_line(wasmtime.WasmtimeError._from_ptr(error))}")
            return getattr(out[0].of, field) if field else None

        return caller

    def _parallel_caller(self, instance: WasmInstance, export_name: str,
                         params: tuple[ValType, ...]) -> Callable[[list[tuple]], None]:
        """Unchecked (see ``parallel_caller``): a batch of two or more calls goes to the worker pool as it is
        (each thread's direct caller stores a value into its ctypes slot, which keeps an int's low 32/64 bits,
        so an unsigned value and its signed form are the same argument). Checking the 16 argument tuples of a
        16M reduction cost 50-100 us of its 5 ms launch on 2 threads. Where the calls would run one after the
        other on this thread (one thread, one call, a memory that is not shared), ``parallel_call`` runs them,
        checked."""
        if not self._threaded(instance):
            return super()._parallel_caller(instance, export_name, params)

        def run(argument_lists: list[tuple]) -> None:
            if len(argument_lists) < 2:
                self.parallel_call(instance, export_name, argument_lists)
            else:
                self._parallel_call(instance, export_name, argument_lists)

        return run

    def _parallel_call(self, instance: WasmInstance, export_name: str, argument_lists: list[tuple]) -> None:
        """The calls run as one ``WorkerPool`` batch: every thread takes the next call not yet taken (a thread
        that starts late, on a busy machine, takes fewer); after a failure or an interrupt no thread takes
        another, and the failure is raised once no worker runs a call of the batch (see ``worker_pool``)."""
        pool = self._pool
        if pool is None:
            pool = WorkerPool(self._threads, name="wasmtime-worker")
            # stops the workers when the runner is collected unclosed (the finalizer refers to the pool only)
            self._pool_finalizer = weakref.finalize(self, pool.close)
            self._pool = pool
        module, memory, slots = instance.module, instance.memory, self._slots

        def prepare(slot: int) -> Callable[[tuple], None]:
            slot_instances = slots.get(slot)
            if slot_instances is None:
                slot_instances = slots[slot] = _SlotInstances(self)
            return slot_instances.caller(module, memory, export_name)

        self._batches += 1
        before = pool.items_on_workers
        try:
            pool.run(argument_lists, prepare)
        finally:
            self._worker_calls += pool.items_on_workers - before

    def close(self) -> None:
        """Drop cached modules, stop the worker threads (returns when they have ended) and drop their
        instances. A later ``parallel_call`` starts new workers."""
        super().close()
        if self._pool is not None:
            self._pool_finalizer()  # WorkerPool.close, once
            self._pool = None
        self._slots.clear()

    def _refuel(self, store: "wasmtime.Store", budget: int | None) -> None:
        if self._budgeted:
            store.set_fuel(self._default_fuel if budget is None else budget)

    def _run(self, action: Callable[[], Any], what: str, store: "wasmtime.Store | None" = None) -> Any:
        """Runs ``action`` (a call into ``store``); raises what a signal handler raised during it
        (KeyboardInterrupt), else WasmTrap for a trap and WasmInterfaceError for a refusal."""
        try:
            return call_interruptibly(getattr(store, "atlas_epoch_guard", None), action)
        except wasmtime.Trap as trap:

            kind = _TRAP_KINDS.get(trap.trap_code, WasmTrapKind.OTHER)
            raise WasmTrap(kind, engine=self.engine_name, engine_message=str(trap), export=what) from None
        except wasmtime.WasmtimeError as exc:
            raise WasmInterfaceError(f"{what}: wasmtime refused: {_first_line(exc)}") from None

    # --- memory --------------------------------------------------------------------------------------------

    def _memory_bytes(self, memory: WasmMemory) -> int:
        if memory.limits.shared:
            return memory.native.data_len()
        return memory.native.data_len(memory.context)

    def _address(self, memory: WasmMemory) -> int:
        pointer = memory.native.data_ptr() if memory.limits.shared else memory.native.data_ptr(memory.context)
        return ctypes.cast(pointer, ctypes.c_void_p).value or 0

    def _grow(self, memory: WasmMemory, delta_pages: int) -> int:
        try:
            if memory.limits.shared:
                return memory.native.grow(delta_pages)
            return memory.native.grow(memory.context, delta_pages)
        except wasmtime.WasmtimeError as exc:
            raise AllocationFailed(f"growing memory by {delta_pages} pages failed: {_first_line(exc)}") from None

    def _read(self, memory: WasmMemory, offset: int, length: int) -> bytes:
        return ctypes.string_at(self._address(memory) + offset, length) if length else b""

    def _write(self, memory: WasmMemory, offset: int, data: memoryview) -> None:
        if not data.nbytes:
            return
        if not data.readonly:
            source: Any = (ctypes.c_ubyte * data.nbytes).from_buffer(data)
        elif isinstance(data.obj, bytes) and len(data.obj) == data.nbytes:
            source = data.obj  # ctypes passes a bytes object's storage without copying
        else:
            source = data.tobytes()
        ctypes.memmove(self._address(memory) + offset, source, data.nbytes)

    def _view(self, memory: WasmMemory, offset: int, nbytes: int):
        import numpy
        buffer = _MemoryBuffer(self._address(memory) + offset, nbytes, (memory.native, memory.context))
        return numpy.asarray(buffer)


def _unavailable_import(module: str, name: str) -> Callable[..., Any]:
    def refuse(*_args: Any) -> Any:
        raise WasmInterfaceError(f"import {module}.{name} was called by a worker instance; functions run by "
                                 "parallel_call must not call imports")
    return refuse


class _SlotInstances:
    """The Store of one thread of ``parallel_call`` and its instances, one per (module, memory), each with
    direct callers of its exports (argument arrays made once; only this slot's thread uses them). An entry
    keeps the Store it lives in, so a Store replaced after ``_WORKER_INSTANCES`` evictions is freed when
    its last instance leaves the cache."""

    def __init__(self, runner: WasmtimeRunner) -> None:
        self._runner = runner
        self._store = runner._new_store(interruptible=False)
        self._evicted = 0
        # (module digest, id(memory)) -> (memory, instance, callers by export, its store)
        self._instances = ProgramCache(_WORKER_INSTANCES, plain_keys=True, on_evict=self._on_evict)

    def _on_evict(self, _key: tuple, _entry: tuple) -> None:
        self._evicted += 1
        if self._evicted >= _WORKER_INSTANCES:
            self._evicted = 0
            self._store = self._runner._new_store(interruptible=False)

    @property
    def instances(self) -> int:
        """Instances this thread keeps now."""
        return len(self._instances)

    def caller(self, module: CompiledModule, memory: WasmMemory, export_name: str) -> Callable[[tuple], None]:
        key = (module.digest, id(memory))
        entry = self._instances.get(key)
        if entry is None or entry[0] is not memory:
            entry = self._instances.insert(key, (memory, self._instantiate(module, memory), {}, self._store))
        callers = entry[2]
        call = callers.get(export_name)
        if call is None:
            call = callers[export_name] = _direct_caller(self._runner, module, entry[1], entry[3], export_name)
        return call

    def _instantiate(self, module: CompiledModule, memory: WasmMemory) -> "wasmtime.Instance":
        store = self._store
        externs: list[Any] = []
        for imp, native_imp in zip(module.imports, module.native.imports):
            if imp.kind == ExternKind.MEMORY:
                externs.append(memory.native)
            else:
                externs.append(wasmtime.Func(store, native_imp.type, _unavailable_import(imp.module, imp.name)))
        self._runner._refuel(store, None)
        return self._runner._run(lambda: wasmtime.Instance(store, module.native, externs), "worker instance",
                                 store)


def _direct_caller(runner: WasmtimeRunner, module: CompiledModule, native: "wasmtime.Instance",
                   store: "wasmtime.Store", export_name: str) -> Callable[[tuple], None]:
    """A caller of ``export_name`` of ``native`` (an instance in ``store``) with its argument array made
    once (for one thread)."""
    from wasmtime import _ffi as ffi
    func = native.exports(store)[export_name]
    params_types = module.export(export_name).functype.params  # type: ignore[union-attr]
    params = (ffi.wasmtime_val_t * len(params_types))()
    kinds = {ValType.I32: (ffi.WASMTIME_I32.value, "i32"), ValType.I64: (ffi.WASMTIME_I64.value, "i64"),
             ValType.F32: (ffi.WASMTIME_F32.value, "f32"), ValType.F64: (ffi.WASMTIME_F64.value, "f64")}
    fields = []
    for k, valtype in enumerate(params_types):
        kind, field = kinds[valtype]
        params[k].kind = kind
        fields.append(field)
    out = (ffi.wasmtime_val_t * 0)()
    func_ref = ctypes.byref(func._func)
    call = ffi.wasmtime_func_call
    trap_type = ctypes.POINTER(ffi.wasm_trap_t)
    context = store._context()  # the store's context pointer stays valid while the store lives
    slots = [(params[k].of, field) for k, field in enumerate(fields)]

    def caller(args: tuple) -> None:
        for (slot, field), value in zip(slots, args):
            setattr(slot, field, value)
        runner._refuel(store, None)
        trap = trap_type()
        error = call(context, func_ref, params, len(fields), out, 0, ctypes.byref(trap))
        if trap:
            trap_obj = wasmtime.Trap._from_ptr(trap)
            kind = _TRAP_KINDS.get(trap_obj.trap_code, WasmTrapKind.OTHER)
            raise WasmTrap(kind, engine=runner.engine_name, engine_message=str(trap_obj), export=export_name)
        if error:
            raise WasmInterfaceError(f"{export_name}: wasmtime refused: "
                                     f"{_first_line(wasmtime.WasmtimeError._from_ptr(error))}")

    return caller
