"""JsRunner: the runner interface on the browser's ``WebAssembly`` API, through Pyodide.

Registered as runner ``"js"``, the default under Emscripten (``sys.platform ==
"emscripten"``, see ``runners.DEFAULT_RUNNER_BY_PLATFORM``). Imports ``js`` and
``pyodide.ffi`` at import time: import this module only inside Pyodide.

Compiling. ``compile_async`` awaits ``WebAssembly.compile`` (any size; the page
keeps running). The synchronous ``compile`` blocks on the same promise with
``run_sync`` where JS Promise Integration allows it (``can_run_sync()``: code
entered through ``runPythonAsync`` or a coroutine); elsewhere it falls back to
``new WebAssembly.Module``, which Chromium refuses on the page's main thread
for modules over 8 MB: that refusal is reported as WasmInterfaceError saying
how to get around it (a call through ``runPythonAsync`` or a coroutine,
``compile_async`` first, or a worker).
Import and export types come from the module's own type, import, function,
memory and export sections (the JS API reports names and kinds only).

Memory. Every memory is a ``WebAssembly.Memory`` outside Pyodide's heap, so no
zero-copy view exists (``zero_copy_views`` is False): ``write_memory`` copies
in with ``JsBuffer.assign``, ``read_memory`` copies out with ``to_bytes`` and
``read_memory_into`` with ``JsBuffer.assign_to`` into the caller's buffer; each
is one copy. Growth detaches the old ``ArrayBuffer``; every access takes the
memory's current buffer.

Values. i64 parameters and results cross as BigInt (``JsBigInt``); f32 and f64
always come back as Python floats; imported Python functions get and return
values converted the same way. Exceptions raised by an imported Python
function pass through the wasm frames and come back unchanged.

Traps. V8 throws ``WebAssembly.RuntimeError`` whose message names the trap;
``TRAP_KINDS_BY_MESSAGE`` maps those messages to WasmTrapKind, and a
``RangeError`` of an exhausted call stack is STACK_OVERFLOW. The instance and
the runner stay usable after a trap.

Threads. ``threads`` (None: the browser's core count; at most 8) asks for a pool
of Web Workers (``js_threads.JsThreadPool``) that run ``parallel_call`` batches
with the calling thread over one shared ``WebAssembly.Memory``. It needs a
cross-origin isolated page and Python running in a worker (the browser refuses
to wait on the page's thread); elsewhere the runner runs on one thread and
``threads_reason`` says why. With threads, ``shared_memory`` is True and
memories are created shared. The workers start with the first runner that asks for
that many threads and serve every later one; ``close`` drops their instances. A
batch's arguments travel as Float64, so an i64 argument of a batch on the workers
must be below 2**53 - 1 in magnitude: ``parallel_call`` and a ``parallel_caller`` of an
export with i64 parameters raise WasmInterfaceError naming the parameter otherwise
(a caller of an export without one checks nothing). A ``ParallelDispatch`` import is a
JS function (``JsThreadPool.dispatcher``) that keeps the batch of each of its recent
argument tuples, as a Float64Array: a repeated dispatch (the same launch again) runs its
batch without entering Python, where the wasm -> Python -> JS round trip cost 0.3-0.5 ms
of a 16M-element Sum on 2 threads (after the launch's 64 MiB evicted Python's working set
from the caches).

Budget. A browser can neither meter nor interrupt synchronous WebAssembly on
the page's thread, so this runner has no budget: ``supports_budget`` is False,
``call(..., budget=n)`` raises UnsupportedOperation and ``budgeted=True`` is
refused. The Atlas execution budget does not depend on it: the wasm backend's
generated code counts backward jumps per lane itself.
"""

from __future__ import annotations

import gc
import hashlib
from typing import Any, Callable

import js
from pyodide.ffi import JsBigInt, JsException, can_run_sync, create_proxy, run_sync, to_js

from atlas_web.errors import AllocationFailed, UnsupportedOperation
from atlas_web.user_agent import this_browser

from ..encoding.leb128 import decode_uleb128, encode_uleb128
from ..encoding.reader import decode_module
from ..encoding.types import ExternKind, FuncType, Limits, SectionId, ValType
from ..encoding.writer import MAGIC, VERSION
from ..errors import WasmDecodeError, WasmInterfaceError, WasmTrap, WasmTrapKind, WasmValidationError
from ..parallel_dispatch import PLANS_KEPT, ParallelDispatch
from ..runner import CompiledModule, ModuleExport, ModuleImport, WasmInstance, WasmMemory, WasmRunner
from .js_threads import MAX_THREADS, JsThreadPool, batch_failure, shared_pool, thread_support

__all__ = ["JsRunner", "TRAP_KINDS_BY_MESSAGE", "module_interface"]

#: V8's WebAssembly.RuntimeError messages -> engine-neutral trap kinds (messages absent here map to OTHER)
TRAP_KINDS_BY_MESSAGE: dict[str, WasmTrapKind] = {
    "unreachable": WasmTrapKind.UNREACHABLE,
    "memory access out of bounds": WasmTrapKind.MEMORY_OUT_OF_BOUNDS,
    "operation does not support unaligned accesses": WasmTrapKind.MISALIGNED_ACCESS,
    "divide by zero": WasmTrapKind.INTEGER_DIVIDE_BY_ZERO,
    "remainder by zero": WasmTrapKind.INTEGER_DIVIDE_BY_ZERO,
    "divide result unrepresentable": WasmTrapKind.INTEGER_OVERFLOW,
    "float unrepresentable in integer range": WasmTrapKind.INVALID_CONVERSION_TO_INTEGER,
    "table index is out of bounds": WasmTrapKind.TABLE_OUT_OF_BOUNDS,
    "null function or function signature mismatch": WasmTrapKind.INDIRECT_CALL_TYPE_MISMATCH,
    "function signature mismatch": WasmTrapKind.INDIRECT_CALL_TYPE_MISMATCH,
    "dereferencing a null pointer": WasmTrapKind.NULL_REFERENCE,
}
#: the RangeError V8 throws when the call stack is exhausted (wasm recursion included)
_STACK_OVERFLOW_MESSAGE = "Maximum call stack size exceeded"

#: the sections that describe a module's interface (the rest is code and data)
_INTERFACE_SECTIONS = (SectionId.TYPE, SectionId.IMPORT, SectionId.MEMORY, SectionId.EXPORT)
_SECTION_IDS = frozenset(int(s) for s in SectionId)

#: Python value -> what the JS API accepts for a parameter or host result of each type
_TO_JS: dict[ValType, Callable[[Any], Any]] = {
    ValType.I32: lambda v: int(v),
    ValType.I64: lambda v: JsBigInt(int(v)),
    ValType.F32: lambda v: float(v),
    ValType.F64: lambda v: float(v),
}
#: what the JS API passes for each type -> the runner's Python value (Pyodide turns integral numbers into ints)
_FROM_JS: dict[ValType, Callable[[Any], Any]] = {
    ValType.I32: lambda v: int(v),
    ValType.I64: lambda v: int(v),
    ValType.F32: lambda v: float(v),
    ValType.F64: lambda v: float(v),
}
_WRAP = {ValType.I32: 32, ValType.I64: 64}
#: a batch's arguments travel as Float64, and Pyodide passes an int as a Number only below this in magnitude
#: (Number.MAX_SAFE_INTEGER; from it on, a BigInt, which a Float64 cannot take)
_FLOAT64_EXACT = (1 << 53) - 1

_Uint8Array = js.Uint8Array
_WebAssembly = js.WebAssembly


def _signed(value: int, valtype: ValType) -> int:
    bits = _WRAP[valtype]
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _check_float64_exact(export_name: str, wide: list[int], argument_lists: list[tuple]) -> None:
    """Raises WasmInterfaceError naming the first i64 argument (parameter index in ``wide``) of
    ``argument_lists`` that a batch cannot pass: its Float64 arguments take integers below 2**53 - 1 in
    magnitude (from there on Pyodide passes a BigInt, and the batch threw a bare JsException)."""
    for arguments in argument_lists:
        for p in wide:
            if not -_FLOAT64_EXACT < arguments[p] < _FLOAT64_EXACT:
                raise WasmInterfaceError(
                    f"{export_name!r} parameter {p} is i64; {arguments[p]!r} is beyond what a batch on the worker "
                    f"threads passes (below 2**53 - 1 in magnitude: its arguments travel as Float64)")


def _sections(data: bytes) -> dict[SectionId, tuple[int, int]]:
    """section id -> (payload start, payload end) of the known sections; raises WasmDecodeError."""
    if data[:4] != MAGIC or data[4:8] != VERSION:
        raise WasmDecodeError("not a WebAssembly 1.0 module (magic or version bytes differ)", offset=0)
    found: dict[SectionId, tuple[int, int]] = {}
    pos = 8
    while pos < len(data):
        section_id = data[pos]
        size, start = decode_uleb128(data, pos + 1, 32)
        if start + size > len(data):
            raise WasmDecodeError(f"section {section_id} of {size} bytes runs past the end", offset=pos)
        if section_id in _SECTION_IDS:
            found[SectionId(section_id)] = (start, start + size)
        pos = start + size
    return found


def module_interface(data: bytes) -> tuple[tuple[ModuleImport, ...], tuple[ModuleExport, ...]]:
    """The imports and exports of the module ``data``, with function types and memory limits.

    Decodes only the type, import, function, memory and export sections (the
    code is not parsed). Raises WasmDecodeError for malformed framing.
    """
    sections = _sections(data)
    interface = bytearray(MAGIC + VERSION)
    for section_id in _INTERFACE_SECTIONS:
        if section_id in sections:
            start, end = sections[section_id]
            interface += bytes([section_id]) + encode_uleb128(end - start, 32) + data[start:end]
    described = decode_module(bytes(interface))
    function_types: list[FuncType] = []
    memories: list[Limits] = []
    imports = []
    for imp in described.imports:
        functype = limits = None
        if imp.kind == ExternKind.FUNC:
            functype = described.types[imp.desc]  # type: ignore[index]
            function_types.append(functype)
        elif imp.kind == ExternKind.MEMORY:
            limits = imp.desc
            memories.append(imp.desc)  # type: ignore[arg-type]
        imports.append(ModuleImport(imp.module, imp.name, imp.kind, functype, limits))  # type: ignore[arg-type]
    if SectionId.FUNCTION in sections:
        pos, end = sections[SectionId.FUNCTION]
        count, pos = decode_uleb128(data, pos, 32)
        for _ in range(count):
            type_index, pos = decode_uleb128(data, pos, 32)
            function_types.append(described.types[type_index])
        if pos != end:
            raise WasmDecodeError("function section has unread bytes at its end", offset=pos)
    memories.extend(described.memories)
    exports = tuple(ModuleExport(exp.name, exp.kind,
                                 function_types[exp.index] if exp.kind == ExternKind.FUNC else None)
                    for exp in described.exports)
    return tuple(imports), exports


def _memory_limits(data: bytes, module_imports: tuple[ModuleImport, ...]) -> Limits | None:
    """The limits of the module's own (first) memory, or of its imported one; None without a memory."""
    for imp in module_imports:
        if imp.kind == ExternKind.MEMORY:
            return imp.limits
    sections = _sections(data)
    if SectionId.MEMORY not in sections:
        return None
    start, end = sections[SectionId.MEMORY]
    interface = MAGIC + VERSION + bytes([SectionId.MEMORY]) + encode_uleb128(end - start, 32) + data[start:end]
    memories = decode_module(interface).memories
    return memories[0] if memories else None


class _Native:
    """What JsRunner keeps in CompiledModule.native: the ``WebAssembly.Module`` and its own memory's limits."""

    __slots__ = ("module", "memory_limits")

    def __init__(self, module: Any, memory_limits: Limits | None) -> None:
        self.module = module
        self.memory_limits = memory_limits


class JsRunner(WasmRunner):
    """The runner on the browser's WebAssembly API (see the module docstring).

    ``cache_size``: compiled modules kept (by digest). ``budgeted``: must be
    False (accepted so that callers may pass the option every runner takes).
    Raises UnsupportedOperation for ``budgeted=True``.
    """

    engine_name = "js"
    zero_copy_views = False

    def __init__(self, *, budgeted: bool = False, cache_size: int = 64, threads: int | None = 1) -> None:
        super().__init__(cache_size=cache_size)
        if budgeted:
            raise UnsupportedOperation("budget", "runner", self.engine_name,
                                       "the browser can neither meter nor interrupt synchronous WebAssembly; "
                                       "the Atlas budget is counted by the generated code instead")
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool)
                                    or not 1 <= threads <= MAX_THREADS):
            raise WasmInterfaceError(f"threads must be an int in 1..{MAX_THREADS} or None, got {threads!r}")
        self._threads, self.threads_reason = (1, "one thread was asked for") if threads == 1 else \
            thread_support(threads)
        self.shared_memory = self._threads > 1
        self._pool: JsThreadPool | None = None
        if self._threads > 1:
            self._start_pool()

    def engine_description(self) -> str:
        """``"js in Chrome 140"``: the browser whose WebAssembly engine runs the modules (its user agent)."""
        return f"{self.engine_name} in {this_browser()}"

    def _start_pool(self) -> None:
        """Take this Python's pool of ``threads`` threads and, where the call may wait, wait until its workers
        run (see ``JsThreadPool.wait_until_started``). Should the browser refuse workers, the runner runs on
        one thread and ``threads_reason`` says why."""
        try:
            self._pool = shared_pool(self._threads)
            self._pool.wait_until_started()
        except JsException as exc:
            self._pool = None
            self._threads, self.threads_reason = 1, f"the browser could not start workers: {exc.message}"

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def worker_calls(self) -> int:
        return self._pool.worker_calls if self._pool is not None else 0

    # --- modules -------------------------------------------------------------------------------------------

    async def compile_async(self, wasm: bytes | bytearray | memoryview) -> CompiledModule:
        """Compile ``wasm`` with ``WebAssembly.compile`` without blocking the page (cached by digest, shared
        with ``compile``). Raises WasmValidationError when the engine refuses the module."""
        data = self._as_bytes(wasm)
        digest = hashlib.sha256(data).hexdigest()
        cached = None if self._cache is None else self._cache.get(digest)
        if cached is not None:
            return cached
        try:
            native = await _WebAssembly.compile(self._js_bytes(data))
        except JsException as exc:
            raise self._compile_error(exc) from None
        module = self._describe(data, digest, native)
        return module if self._cache is None else self._cache.get_or_build(digest, lambda: module)

    def _compile(self, data: bytes, digest: str) -> CompiledModule:
        array = self._js_bytes(data)
        try:
            if can_run_sync():
                native = run_sync(_WebAssembly.compile(array))
            else:
                native = _WebAssembly.Module.new(array)
        except JsException as exc:
            if exc.name == "RangeError":
                raise WasmInterfaceError(
                    f"the browser refuses to compile a module of {len(data)} bytes synchronously on the page's "
                    f"thread ({exc.message}), and run_sync (JS Promise Integration) is not available in this "
                    "call: call from runPythonAsync or a coroutine, compile it first with `await "
                    "JsRunner.compile_async(...)` (cached by digest), or run in a worker") from None
            raise self._compile_error(exc) from None
        return self._describe(data, digest, native)

    def _validate(self, data: bytes) -> None:
        if _WebAssembly.validate(self._js_bytes(data)):
            return
        # validate() answers only false: compiling raises WasmValidationError with the engine's reason
        self._compile(data, hashlib.sha256(data).hexdigest())
        raise WasmValidationError("the browser's WebAssembly.validate rejected the module")

    def _describe(self, data: bytes, digest: str, native: Any) -> CompiledModule:
        imports, exports = module_interface(data)
        return CompiledModule(digest, len(data), imports, exports, _Native(native, _memory_limits(data, imports)))

    def _compile_error(self, exc: JsException) -> WasmValidationError:
        return WasmValidationError(f"the browser rejected the module: {exc.message}",
                                   engine_message=f"{exc.name}: {exc.message}")

    @staticmethod
    def _js_bytes(data: bytes) -> Any:
        array = _Uint8Array.new(len(data))
        array.assign(data)
        return array

    # --- instances -----------------------------------------------------------------------------------------

    def _create_memory(self, limits: Limits) -> WasmMemory:
        descriptor = {"initial": limits.min}
        if limits.max is not None:
            descriptor["maximum"] = limits.max
        if limits.shared:
            descriptor["shared"] = True
        descriptor_js = to_js(descriptor, dict_converter=js.Object.fromEntries)
        try:
            native = _WebAssembly.Memory.new(descriptor_js)
        except JsException:
            # V8 reserves address space per memory (about 10 GiB) and caps the total; memories of dropped
            # backends stay reserved while Python reference cycles still hold them: collect those, retry once
            gc.collect()
            try:
                native = _WebAssembly.Memory.new(descriptor_js)
            except JsException as exc:
                raise AllocationFailed(f"the browser could not create a memory of {limits.min} pages "
                                       f"(maximum {limits.max}): {exc.message}") from None
        return WasmMemory(native, None, limits)

    def _instantiate(self, module: CompiledModule, memory: WasmMemory | None,
                     functions: dict[tuple[str, str], Callable[..., Any]]) -> WasmInstance:
        proxies: list[Any] = []
        namespaces: dict[str, dict[str, Any]] = {}
        for imp in module.imports:
            if imp.kind == ExternKind.MEMORY:
                value = memory.native  # type: ignore[union-attr]
            elif isinstance(functions[(imp.module, imp.name)], _JsImport):
                value, made = functions[(imp.module, imp.name)]
                proxies.extend(made)
            else:
                proxy = create_proxy(self._host_function(functions[(imp.module, imp.name)], imp.functype))
                proxies.append(proxy)
                value = proxy
            namespaces.setdefault(imp.module, {})[imp.name] = value
        imports = to_js(namespaces, dict_converter=js.Object.fromEntries)
        try:
            native = _WebAssembly.Instance.new(module.native.module, imports)
        except JsException as exc:
            for proxy in proxies:
                proxy.destroy()
            raise self._engine_error(exc, "start function") from None
        exports = native.exports
        if memory is None:
            memory = self._exported_memory(module, exports)
        return WasmInstance(module, memory, native, _InstanceContext(proxies, exports))

    @staticmethod
    def _host_function(func: Callable[..., Any], functype: FuncType | None) -> Callable[..., Any]:
        """``func`` taking and returning values as the JS API passes them for ``functype``."""
        params = tuple(_FROM_JS[t] for t in functype.params) if functype else ()
        results = functype.results if functype else ()

        def host(*args: Any) -> Any:
            value = func(*(convert(a) for convert, a in zip(params, args)))
            if not results:
                return None
            values = (value,) if len(results) == 1 else tuple(value)
            converted = [_TO_JS[t](_signed(v, t) if t in _WRAP else v) for t, v in zip(results, values)]
            return converted[0] if len(results) == 1 else to_js(converted)

        return host

    @staticmethod
    def _exported_memory(module: CompiledModule, exports: Any) -> WasmMemory | None:
        for export in module.exports:
            if export.kind == ExternKind.MEMORY:
                limits = module.native.memory_limits or Limits(0)
                return WasmMemory(getattr(exports, export.name), None, limits)
        return None

    def _call(self, instance: WasmInstance, export_name: str, args: tuple, budget: int | None) -> Any:
        functype = instance.module.export(export_name).functype
        function = getattr(instance.context.exports, export_name)
        values = [_TO_JS[t](v) for t, v in zip(functype.params, args)]  # type: ignore[union-attr]
        try:
            result = function(*values)
        except JsException as exc:
            raise self._engine_error(exc, export_name) from None
        return self._results(result, functype.results)  # type: ignore[union-attr]

    def _bind(self, instance: WasmInstance, export_name: str) -> Callable[[], Any]:
        """A caller of the export's JS function that skips the argument checks (it takes no arguments)."""
        function = getattr(instance.context.exports, export_name)
        results = instance.module.export(export_name).functype.results  # type: ignore[union-attr]
        convert = self._results
        error = self._engine_error

        def caller() -> Any:
            try:
                result = function()
            except JsException as exc:
                raise error(exc, export_name) from None
            return convert(result, results)

        return caller

    @staticmethod
    def _results(result: Any, results: tuple[ValType, ...]) -> Any:
        if not results:
            return None
        if len(results) == 1:
            return _FROM_JS[results[0]](result)
        return tuple(_FROM_JS[t](v) for t, v in zip(results, result.to_py()))

    def _parallel_call(self, instance: WasmInstance, export_name: str, argument_lists: list[tuple]) -> None:
        """The calls run as one JsThreadPool batch (the workers started with the runner)."""
        params = instance.module.export(export_name).functype.params  # type: ignore[union-attr]
        self._parallel_caller(instance, export_name, params)(argument_lists)

    def _parallel_caller(self, instance: WasmInstance, export_name: str,
                         params: tuple[ValType, ...]) -> Callable[[list[tuple]], None]:
        """One per instance and export, kept in the instance's context: a JsThreadPool batch runner made once
        (a batch then converts the numbers only; see ``parallel_caller``). Where the browser refused workers
        (or nothing is shared) the calls run one after the other on this thread, by a caller made each time:
        it refers to the instance, which its context would then keep alive (a cycle, freed by the collector
        only, with its host functions' proxies)."""
        if not self._threaded(instance):
            return lambda argument_lists: [self._call(instance, export_name, args, None) for args in argument_lists]
        callers = instance.context.parallel_callers
        caller = callers.get(export_name)
        if caller is None:
            caller = callers[export_name] = self._new_parallel_caller(instance, export_name, params)
        return caller

    def _new_parallel_caller(self, instance: WasmInstance, export_name: str,
                             params: tuple[ValType, ...]) -> Callable[[list[tuple]], None]:
        """The pool's batch runner of the export (it refers to the module, memory and exports, not the
        instance)."""
        wide = [p for p, t in enumerate(params) if t is ValType.I64]
        run = self._pool.batch(instance.module.native.module, instance.memory.native,  # type: ignore[union-attr]
                               instance.context.exports, export_name, len(params), sum(1 << p for p in wide))
        fail = self._batch_failed

        def caller(argument_lists: list[tuple]) -> None:
            if wide:   # only exports with i64 parameters pay for the check (the backend's have none)
                _check_float64_exact(export_name, wide, argument_lists)
            failed = run(argument_lists)
            if failed is not None:
                fail(export_name, failed)

        return caller

    def _batch_failed(self, export_name: str, failed: tuple[int, str, str]) -> None:
        """Raise the error of a failed batch ``(first failing index, exception name, message)``: WasmInterfaceError
        when a worker could not instantiate the module (index -2), else the engine's error (WasmTrap ...)."""
        index, name, message = failed
        if index < 0:
            raise WasmInterfaceError(f"{export_name}: a worker could not instantiate the module: {name}: {message}")
        raise self._error_of(name, message, export_name)

    def dispatch_count(self) -> Any:
        """A JS object whose ``value`` the dispatch imports increment (read from Python as an int)."""
        count = js.Object.new()
        count.value = 0
        return count

    def _dispatch_import(self, dispatch: ParallelDispatch, instance_ref: list) -> Any:
        """The pool's JS dispatcher (``JsThreadPool.dispatcher``): Python plans the calls of new arguments once
        (their batch runner and a Float64Array of their arguments); the calls of an instance whose memory is
        not shared, or of an export with i64 parameters, run through ``parallel_caller`` from Python each
        time. Without a pool: the Python dispatch function."""
        if self._pool is None:
            return super()._dispatch_import(dispatch, instance_ref)
        plan, pool = dispatch.plan, self._pool

        def planned(*arguments: Any) -> Any:
            instance = instance_ref[0]()
            export_name, argument_lists = plan(*(int(a) for a in arguments))
            params = self._parallel_params(instance, export_name)
            if not self._threaded(instance) or ValType.I64 in params:
                self._parallel_caller(instance, export_name, params)(argument_lists)
                return None
            context = instance.context
            run = context.batch_functions.get(export_name)
            if run is None:
                run = context.batch_functions[export_name] = pool.batch_function(
                    instance.module.native.module, instance.memory.native, context.exports, export_name,
                    len(params))
            flat = js.Float64Array.new(to_js([value for arguments in argument_lists for value in arguments]))
            return to_js([run, len(argument_lists), flat, export_name])

        def failed(export_name: str, failure: Any) -> None:
            self._batch_failed(export_name, batch_failure(failure))

        made = (create_proxy(planned), create_proxy(failed))
        return _JsImport((pool.dispatcher(*made, dispatch.count, PLANS_KEPT), made))

    def close(self) -> None:
        """Drop cached modules and the workers' instances (the workers stay for other runners)."""
        super().close()
        if self._pool is not None:
            self._pool.forget()

    def _engine_error(self, exc: JsException, what: str) -> Exception:
        """The runner's error for a JS exception thrown by wasm code: WasmTrap for a trap, else
        WasmInterfaceError (a link or argument error the checks above did not catch)."""
        return self._error_of(exc.name, exc.message, what)

    def _error_of(self, name: str, message: str, what: str) -> Exception:
        if name == "RuntimeError":
            kind = TRAP_KINDS_BY_MESSAGE.get(message, WasmTrapKind.OTHER)
            return WasmTrap(kind, engine=self.engine_name, engine_message=message, export=what)
        if name == "RangeError" and message == _STACK_OVERFLOW_MESSAGE:
            return WasmTrap(WasmTrapKind.STACK_OVERFLOW, engine=self.engine_name, engine_message=message,
                            export=what)
        return WasmInterfaceError(f"{what}: the browser refused: {name}: {message}")

    # --- memory --------------------------------------------------------------------------------------------

    def _memory_bytes(self, memory: WasmMemory) -> int:
        return int(memory.native.buffer.byteLength)

    def _grow(self, memory: WasmMemory, delta_pages: int) -> int:
        try:
            return int(memory.native.grow(delta_pages))
        except JsException as exc:
            raise AllocationFailed(f"growing memory by {delta_pages} pages failed: {exc.message}") from None

    def _read(self, memory: WasmMemory, offset: int, length: int) -> bytes:
        if not length:
            return b""
        return _Uint8Array.new(memory.native.buffer, offset, length).to_bytes()

    def _read_into(self, memory: WasmMemory, offset: int, target: memoryview) -> None:
        if target.nbytes:
            _Uint8Array.new(memory.native.buffer, offset, target.nbytes).assign_to(target)

    def _write(self, memory: WasmMemory, offset: int, data: memoryview) -> None:
        if data.nbytes:
            _Uint8Array.new(memory.native.buffer, offset, data.nbytes).assign(data)


class _JsImport(tuple):
    """``(function, proxies)``: an import made in JS (``JsRunner._dispatch_import``) and the proxies of Python
    functions it calls, destroyed with the instance."""

    __slots__ = ()


class _InstanceContext:
    """An instance's ``context``: the JS proxies of its imported Python functions, destroyed with it (a proxy
    keeps its Python function alive until destroyed); its ``exports`` object, taken once (Pyodide makes a new
    proxy of it on every attribute access, which costs hundreds of microseconds); its parallel callers
    (``JsRunner._parallel_caller``) and the JS batch runners of its dispatch imports, by export."""

    __slots__ = ("proxies", "exports", "parallel_callers", "batch_functions")

    def __init__(self, proxies: list[Any], exports: Any) -> None:
        self.proxies = proxies
        self.exports = exports
        self.parallel_callers: dict[str, Callable[[list[tuple]], None]] = {}
        self.batch_functions: dict[str, Any] = {}

    def __del__(self) -> None:
        for proxy in self.proxies:
            proxy.destroy()
