"""WasmBackend ("wasm"): Atlas programs compiled to WebAssembly (SIMD128) and run by a wasm runner.

Memory: one linear memory shared by every module (``DeviceMemory``): the runtime header, the device
handle table, the boundary memory (handle 1), buffers and pools in an arena, the per-launch area.
Programs: verified once per (digest, preset register types), compiled and instantiated once per
(digest, preset types, launch shape); a cached launch writes a few header words and makes one call.

Copies: ``copy_to_*``/``copy_from_*`` copy once; ``buffer_view`` is a zero-copy NumPy view valid until
the linear memory grows (any allocation may grow it).

Threads: natively the memory is shared and, on ``threads`` threads (the launching thread and
``threads - 1`` workers of the runner), results bit-identical for every thread count:

* a ParallelMap/ParallelMapBinary of at least ``thread_policy.parallel_map_threshold(operation)`` elements
  (1M for math-library operations, 2M for arithmetic) over disjoint (or exactly aliased) arrays runs its
  kernel in chunks (``env.parallel_map``);
* a ParallelReduce of at least ``thread_policy.PARALLEL_REDUCE_THRESHOLD`` elements (4M; not the float
  Product) runs its fixed chunks in groups (``env.parallel_reduce``: partials in the per-launch area,
  folded by the module in chunk order, as one thread folds them);
* a SIMD lane-mode launch of at least ``thread_policy.PARALLEL_LANES_THRESHOLD`` lanes (2M) whose lanes
  cannot see each other's effects runs in ranges of lanes (``env.parallel_lanes``);
* a GEMM/BatchedGEMM item of at least ``thread_policy.PARALLEL_GEMM_THRESHOLD`` multiply-adds (16M) runs its
  kernel over one range of rows per thread, and a BatchedGEMM of smaller items adding up to it over ranges of
  items (``env.parallel_gemm``: each range's packing scratch taken from the arena once per launch; without
  room, the module runs it in one call).

The first three are ``parallel_dispatch.ParallelDispatch`` imports: how the host cuts them depends on their
arguments only, so the runner keeps the cut (in the browser, in JS: a repeated launch's dispatch does not
enter Python). ``device_info()["parallel_dispatches"]`` counts the four, ``["parallel_worker_chunks"]`` the
chunks worker threads ran. A failure or a KeyboardInterrupt stops the chunks of a launch between two
chunks, and the launch raises once no worker runs any (no write to the memory after it raised). In the
browser the threads are Web Workers where the page is cross-origin isolated and Python runs in a worker
(``runners/js_threads.py``), else one thread runs everything (the same chunks, the same bits).
"""

from __future__ import annotations

import functools
import platform
import weakref
from typing import Any

from atlas_web.atlas import NUM_CLASSES
from atlas_web.backend import Backend
from atlas_web.cache import ProgramCache
from atlas_web.errors import (
    AllocationFailed, ExecutionFailed, InvalidBuffer,
)
from atlas_web.exclusive import closes, exclusive_lock, one_thread_at_a_time
from atlas_web.host_bytes import source_bytes, target_bytes
from atlas_web.isa.addresses import BufferHandle, PoolHandle
from atlas_web.isa.opcodes import OpcodeInfo
from atlas_web.isa.types import Type
from atlas_web.launch import DEFAULT_BUDGET, ExecutionParams, LaunchConfig, check_budget, check_optimize
from atlas_web.pipeline import DEFAULT_OPTIMIZE, CompilePipeline, PipelineProgram
from atlas_web.program import Program
from atlas_web.trap_report import RECORD_NUMBERS, program_trap
from atlas_web.registry import DeviceProbe

from . import layout
from .device_memory import MAX_MEMORY_BYTES, DeviceMemory
from .errors import WasmTrap
from .parallel_dispatch import ParallelDispatch
from .thread_policy import (
    PARALLEL_LANES_THRESHOLD, PARALLEL_MAP_THRESHOLDS, PARALLEL_REDUCE_THRESHOLD, chunk_ranges, gemm_row_ranges,
    reduce_chunk_count,
)
from .lowering.simd_function import LANES_PER_RANGE_STEP, SIMD_CHUNK
from .lowering import (
    COOPERATIVE_RULES, compile_program, cooperative_operation_supported, op_supported,
)
from .lowering.launch_layout import LaunchLayout
from .lowering.rules import BACKEND_NAME
from .tolerances import ulp_tolerance_of

__all__ = ["WasmBackend"]

_MAX_BUDGET = (1 << 63) - 1
#: the header's budget (i64) and the per-launch area's address (i32), which follows it
_BUDGET_AND_BASE = "<qI"
assert layout.HEADER_LAUNCH_BASE == layout.HEADER_BUDGET + 8
#: the most threads a backend accepts
MAX_THREADS = 64


def _check_threads(threads: object) -> int | None:
    if threads is None:
        return None
    if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= MAX_THREADS:
        raise ExecutionFailed(f"WasmBackend threads must be an int in 1..{MAX_THREADS} or None (the host's "
                              f"CPU count, at most 8), got {threads!r}")
    return threads


class _Loaded:
    """A compiled program instantiated on the backend's memory, with its bound ``launch`` caller."""

    __slots__ = ("compiled", "instance", "launch", "presets", "program")

    def __init__(self, compiled, instance, launch, presets, program) -> None:
        self.compiled = compiled
        self.instance = instance
        self.launch = launch
        self.presets = presets
        self.program = program  # what runs, for its trap reports


class WasmBackend(Backend):
    """The WebAssembly backend.

    ``budget``: backward jumps each lane may take (ExecutionParams.budget overrides it per launch).
    ``memory_limit``: the most bytes the linear memory may grow to (default and ceiling 4 GiB).
    ``runner``: the runner name (default: the platform's, wasmtime natively). ``cache_size``: compiled
    programs kept. ``optimize``: the optimization level of its programs (0, 1 or 2: atlas_web.opt;
    ExecutionParams.optimize overrides it per launch). ``threads``: threads large maps, reductions and SIMD launches run on, the launching
    thread included (None: the host's CPU count, at most 8; 1: no worker threads). In the browser the
    threads are Web Workers over a shared memory; they need a cross-origin isolated page and Python in a
    worker, else the backend runs on one thread and ``device_info()["threads_reason"]`` says why. Raises
    ExecutionFailed / AllocationFailed for bad arguments, BackendUnavailable when no runner can start.

    Threads may share a backend: its launches, allocations and copies take turns (a lock); give each
    thread a backend of its own to run launches side by side.
    """

    name = "wasm"

    def __init__(self, *, budget: int = DEFAULT_BUDGET, memory_limit: int | None = None, runner: str | None = None,
                 cache_size: int = 256, threads: int | None = None, optimize: int = DEFAULT_OPTIMIZE) -> None:
        from .runners import create_runner, runner_name
        self._exclusive = exclusive_lock()
        self.budget = check_budget(budget, "WasmBackend budget")
        check_optimize(optimize, "WasmBackend optimize")
        threads = _check_threads(threads)
        options = {"budgeted": False, "threads": threads} if runner_name(runner) == "wasmtime" else {"threads": threads}
        self._runner = create_runner(runner, **options)
        self._dispatches = self._runner.dispatch_count()   # of the ParallelDispatch imports and parallel_gemm
        limit = MAX_MEMORY_BYTES if memory_limit is None else memory_limit
        self._memory = DeviceMemory(self._runner, limit)
        # verified (and optimized) programs and their lowering plans
        self._pipeline = CompilePipeline(cache_size, optimize=optimize, target=self)
        # (digest, preset types, level, config) -> _Loaded; an evicted program's instance goes with its Store
        self._loaded = ProgramCache(cache_size, plain_keys=True)
        self._area_base: int | None = None
        self._area_size = 0
        # the (budget, per-launch area) last written to the header: only the host writes those two words
        self._header: tuple[int, int] | None = None
        self._scratch: list[int] = []
        #: GEMM instruction index -> its threads' packing scratch in the running launch (one for every batch item)
        self._gemm_scratch: dict[int, int] = {}
        self._resaccum_valid = False

    @classmethod
    def probe(cls) -> DeviceProbe:
        """The engine this backend would run on (a "cpu" device); raises BackendUnavailable when it cannot start."""
        from .runners import create_runner
        runner = create_runner()
        runner.close()
        return DeviceProbe((f"{runner.engine_description()} (SIMD128) on {_host_cpu()}",),
                           "cpu")

    # ---- buffers and pools ------------------------------------------------------------------------------
    @one_thread_at_a_time
    def allocate_buffer(self, size: int) -> BufferHandle:
        """A new zero-filled buffer of ``size`` bytes. Raises AllocationFailed (asked and left in the message)."""
        return BufferHandle(self._memory.allocate("buffer", size).handle)

    @one_thread_at_a_time
    def free_buffer(self, handle: int) -> None:
        """Release a buffer. Raises InvalidBuffer (also for a pool or the boundary memory)."""
        self._memory.free(handle, "buffer")

    @one_thread_at_a_time
    def copy_to_buffer(self, handle: int, data: Any, offset: int = 0) -> None:
        """Copy the bytes of ``data`` into the buffer at ``offset`` (one copy). Raises InvalidBuffer."""
        self._memory.write(self._memory.get(handle, "buffer"), offset, source_bytes(data, "copy_to_buffer"),
                           "copy_to_buffer")

    @one_thread_at_a_time
    def copy_from_buffer(self, handle: int, out: Any = None, offset: int = 0) -> Any:
        """Copy bytes from the buffer at ``offset`` into ``out`` and return it; with ``out=None`` a new
        ``bytes`` of the rest of the buffer. One copy. Raises InvalidBuffer."""
        return self._copy_out(handle, "buffer", offset, out, "copy_from_buffer")

    @one_thread_at_a_time
    def buffer_size(self, handle: int) -> int:
        """Size in bytes of a live buffer (or of the boundary memory). Raises InvalidBuffer."""
        return self._memory.get(handle, "buffer").size

    @one_thread_at_a_time
    def buffer_view(self, handle: int, ty: Type | None = None) -> Any:
        """A zero-copy NumPy view of a buffer's bytes (of ``ty``'s dtype when given). Valid until the
        linear memory grows (any allocation may grow it): take it again after allocating. Raises
        InvalidBuffer, or UnsupportedOperation for a type without a NumPy dtype or where the runner cannot
        share its memory (the browser)."""
        from atlas_web.backend import typed_format
        view = self._memory.view(self._memory.get(handle, "buffer"))
        if ty is None:
            return view
        dtype = typed_format(ty)[1]
        usable = view.size - view.size % ty.size_bytes()
        return view[:usable].view(dtype)

    @one_thread_at_a_time
    def allocate_pool(self, size: int) -> PoolHandle:
        """A new zero-filled pool of ``size`` bytes. Raises AllocationFailed."""
        return PoolHandle(self._memory.allocate("pool", size).handle)

    @one_thread_at_a_time
    def free_pool(self, handle: int) -> None:
        """Release a pool. Raises InvalidBuffer (also for a buffer handle)."""
        self._memory.free(handle, "pool")

    @one_thread_at_a_time
    def copy_to_pool(self, handle: int, offset: int, data: Any) -> None:
        """Copy ``data`` into the pool at ``offset`` (one copy). Raises InvalidBuffer."""
        self._memory.write(self._memory.get(handle, "pool"), offset, source_bytes(data, "copy_to_pool"),
                           "copy_to_pool")

    @one_thread_at_a_time
    def copy_from_pool(self, handle: int, offset: int, out: Any) -> Any:
        """Fill ``out`` (a writable buffer; or an int: that many new bytes) from the pool at ``offset``.

        One copy. Raises InvalidBuffer.
        """
        if isinstance(out, int) and not isinstance(out, bool):
            if out < 0:
                raise InvalidBuffer(f"copy_from_pool: byte count must be non-negative, got {out}")
            return self._memory.read(self._memory.get(handle, "pool"), offset, out, "copy_from_pool")
        return self._copy_out(handle, "pool", offset, out, "copy_from_pool")

    @one_thread_at_a_time
    def pool_size(self, handle: int) -> int:
        """Size in bytes of a live pool. Raises InvalidBuffer."""
        return self._memory.get(handle, "pool").size

    def _copy_out(self, handle: int, kind: str, offset: int, out: Any, what: str) -> Any:
        alloc = self._memory.get(handle, kind)
        if out is None:
            return self._memory.read(alloc, offset, None, what)
        self._memory.read_into(alloc, offset, target_bytes(out, what), what)
        return out

    # ---- execution (Backend.execute_program_with_params calls these hooks) -------------------------------
    @one_thread_at_a_time
    def generated_code(self, program: Program, config: LaunchConfig) -> str:
        """The WebAssembly module this backend runs for ``program`` launched with ``config``, disassembled
        (see wasm_backend.generated_code.wasm_listing: what it raises; nothing runs)."""
        from .generated_code import wasm_listing
        return wasm_listing(self, program, config)

    def _compile(self, compiled: PipelineProgram, config: LaunchConfig) -> _Loaded:
        """The module of ``compiled`` for ``config``, instantiated on the memory (cached per launch shape).
        Raises UnsupportedOperation, ExecutionFailed (the engine refused the module)."""
        last = self._loaded.last   # ((PipelineProgram, LaunchConfig), _Loaded) of the last launch
        if last is not None and last[0][0] is compiled and (last[0][1] is config or last[0][1] == config):
            return last[1]
        key = (compiled.digest, compiled.preset_key, compiled.level, config)
        loaded = self._loaded.get(key)
        if loaded is None:
            loaded = self._loaded.insert(key, self._load(compiled, config))
        self._loaded.remember((compiled, config), loaded)
        return loaded

    def _launch(self, loaded: _Loaded, params: ExecutionParams, budget: int) -> None:
        self._run(loaded, params, min(budget, _MAX_BUDGET))

    def _module(self, compiled: PipelineProgram, config: LaunchConfig) -> Any:
        """The CompiledProgram (module bytes and layout) of ``compiled`` for ``config``; loads nothing."""
        runner = self._runner
        return compile_program(compiled.program, compiled.info, config, name=f"atlas_{compiled.digest[:16]}",
                               shared_memory=runner.shared_memory, parallel=runner.threads > 1,
                               plan=self._pipeline.plan(compiled, backend=BACKEND_NAME),
                               fuse=compiled.level >= 1)

    def _load(self, compiled_program: PipelineProgram, config: LaunchConfig) -> _Loaded:
        runner = self._runner
        compiled = self._module(compiled_program, config)
        module = runner.compile(compiled.wasm)
        instance_cell: list = []
        instance = runner.instantiate(module, memory=self._memory.memory,
                                      imports={"env": _host_imports(self, compiled, instance_cell)})
        instance_cell.append(weakref.ref(instance))
        info = compiled_program.info
        presets = [(reg, ty, compiled.launch.presets[reg.index]) for reg, ty in info.preset_types.items()]
        return _Loaded(compiled, instance, self._runner.bind(instance, "launch"), presets, compiled_program.program)

    def _area(self, launch: LaunchLayout) -> int:
        """The base of a per-launch area of at least ``launch.total`` bytes (kept between launches)."""
        if self._area_base is None or self._area_size < launch.total:
            if self._area_base is not None:
                self._memory.release(self._area_base)
                self._area_base = None
            try:
                self._area_base = self._memory.scratch(max(launch.total, 2 * self._area_size), "per-launch area")
            except AllocationFailed:
                try:
                    self._area_base = self._memory.scratch(launch.total, "per-launch area")
                except AllocationFailed as failure:
                    raise ExecutionFailed(f"the launch needs {launch.total} bytes of per-launch state (lane "
                                          f"records, shared memory): {failure}") from None
            self._area_size = self._memory.arena.size_of(self._area_base)
        return self._area_base

    def _run(self, loaded: _Loaded, params: ExecutionParams, budget: int) -> None:
        compiled = loaded.compiled
        base = self._area(compiled.launch)
        access = self._memory.access
        for reg, ty, offset in loaded.presets:
            _write_preset(access, base + offset, ty, params.registers[reg][1])
        if self._header != (budget, base):  # a write costs 30-50 us in the browser (through JS); launches repeat them
            access.pack(_BUDGET_AND_BASE, layout.HEADER_BUDGET, budget, base)  # two adjacent header words at once
            self._header = (budget, base)
        self._resaccum_valid = False
        try:
            status = loaded.launch()
        except WasmTrap as trap:
            raise ExecutionFailed(f"the WebAssembly engine trapped running the launch ({trap}); this is a "
                                  "bug of the wasm backend") from None
        finally:
            for scratch in self._scratch:
                self._memory.release(scratch)
            self._scratch.clear()
            self._gemm_scratch.clear()
        self._resaccum_valid = compiled.uses_resaccum
        if status != layout.STATUS_DONE:
            code, index, lane = self._memory.access.unpack("<iii", layout.HEADER_TRAP_CODE)
            numbers = self._memory.access.unpack(f"<{RECORD_NUMBERS}q", layout.HEADER_TRAP_NUMBERS)
            raise program_trap(loaded.program, code, index, lane, numbers, budget=budget,
                               free=self._memory.free_bytes())

    # ---- host functions the modules import ------------------------------------------------------------------
    def _host_pool_alloc(self, size: int) -> int:
        try:
            return self._memory.allocate("pool", size & 0xFFFFFFFF).handle
        except AllocationFailed:
            return 0

    def _host_pool_free(self, handle: int) -> int:
        alloc = self._memory.table.lookup(handle & 0xFFFFFFFF)
        if alloc is None or alloc.kind != "pool":
            return 1
        self._memory.free(alloc.handle, "pool")
        return 0

    def _parallel_gemm(self, instance, compiled, index: int, a: int, b: int, c: int) -> int:
        """``env.parallel_gemm``: run GEMM ``index``'s export over one range (of rows, GEMV outputs or batch items)
        per thread, each with packing scratch of its own from the arena (taken once per launch, for every batch
        item; released after the launch); 1 when there is no room for it (the module then runs it in one
        call), else 0."""
        export, count, step, slot_bytes = compiled.parallel_gemms[index]
        ranges = gemm_row_ranges(count, self._runner.threads, step)
        scratch = self._gemm_scratch.get(index)
        if scratch is None:
            try:
                scratch = self._memory.scratch(len(ranges) * slot_bytes, "GEMM packing scratch")
            except AllocationFailed:
                return 1
            self._scratch.append(scratch)
            self._gemm_scratch[index] = scratch
        operands = (a & 0xFFFFFFFF, b & 0xFFFFFFFF, c & 0xFFFFFFFF)
        calls = [(*operands, scratch + k * slot_bytes, lo, hi) for k, (lo, hi) in enumerate(ranges)]
        self._dispatches.value += 1
        self._runner.parallel_caller(instance, export)(calls)
        return 0

    def _host_scratch(self, nbytes: int) -> int:
        base = self._memory.scratch(nbytes & 0xFFFFFFFF, "overlapping operand copy")
        self._scratch.append(base)
        return base

    # ---- capabilities -------------------------------------------------------------------------------------
    @staticmethod
    def _has_kernel(info: OpcodeInfo) -> bool:
        return _has_kernel(info)

    def supports_op(self, info: OpcodeInfo, ty: Type | None) -> bool:
        """Whether the rule tables compile ``info`` for ``ty``: a lane rule, the registered cooperative rule's own
        support (for some operation), or the default expansion (``lowering.rules.op_supported``)."""
        return op_supported(info, ty)

    def supports_operation(self, operation: object, ty: Type) -> bool:
        """Whether the cooperative ``operation`` (a MapOperation, BinaryMapOperation or ReduceOperation
        member) compiles for ``ty``: as the rule of the instruction carrying it answers."""
        return cooperative_operation_supported(operation, ty)

    def ulp_tolerance(self, op: object, ty: Type) -> float:
        """The measured largest error in ulps of ``op`` on ``ty`` against the reference (0: bit-exact)."""
        return ulp_tolerance_of(op, ty)

    @classmethod
    def documentation(cls):
        """The wasm section of docs/backends.md (``wasm_backend.docs``: rule tables, measured ulps, notes)."""
        from .docs import backend_documentation
        return backend_documentation()

    @one_thread_at_a_time
    def device_info(self) -> dict:
        """``name``, ``device``, ``engine``, ``memory_limit``, ``memory_used``, ``memory_size``, ``max_memory``,
        ``max_allocation`` (the largest buffer or pool: the arena's room in an empty linear memory),
        ``compiled_programs``, ``threads`` (threads large maps run on), ``threads_reason`` (in the browser, why
        ``threads`` is 1 where it is: "" otherwise), ``parallel_map_thresholds`` (the
        fewest elements a map needs to run on them, by the cost of its operation),
        ``parallel_reduce_threshold`` (the fewest elements a reduction needs), ``parallel_lanes_threshold``
        (the fewest SIMD lanes a launch needs), ``parallel_dispatches``
        (maps, reductions, SIMD lane ranges and GEMMs that ran on the threads so far), ``parallel_worker_chunks``
        (the chunks of those that worker threads, not the launching thread, ran)."""
        return {
            "name": self.name,
            "device_type": "cpu",
            "subnormals": "preserved",
            "device": f"{_host_cpu()} (WebAssembly SIMD128)",
            "engine": self._runner.engine_description(),
            "memory_limit": self._memory.limit,
            "memory_used": self._memory.used,
            "memory_size": self._memory.size,
            "max_allocation": self._memory.max_allocation,
            "max_memory": self._memory.limit - layout.ARENA_START - self._memory.arena.size_of(
                self._memory.get(1).base),
            "compiled_programs": len(self._loaded),
            "threads": self._runner.threads,
            "threads_reason": getattr(self._runner, "threads_reason", ""),
            "parallel_map_thresholds": dict(PARALLEL_MAP_THRESHOLDS),
            "parallel_reduce_threshold": PARALLEL_REDUCE_THRESHOLD,
            "parallel_lanes_threshold": PARALLEL_LANES_THRESHOLD,
            "parallel_dispatches": int(self._dispatches.value),
            "parallel_worker_chunks": self._runner.worker_calls,
        }

    @one_thread_at_a_time
    def resonance_accumulator(self) -> list[float]:
        """The 96 ResAccum sums of the last launch (zeros before any), as Python floats (a copy)."""
        if not self._resaccum_valid:
            return [0.0] * NUM_CLASSES
        return list(self._memory.access.unpack(f"<{NUM_CLASSES}d", layout.RES_SUMS))

    @closes
    def close(self) -> None:
        """Drop compiled programs and instances and stop the worker threads, returning once they have ended;
        the backend is closed (later calls raise BackendClosed; its memory goes with it). A backend dropped
        without ``close`` stops its workers when it is collected (nothing it registers with the engine
        refers to it strongly)."""
        self._loaded.clear()
        self._pipeline.clear()
        self._runner.close()


def _has_kernel(info: OpcodeInfo) -> bool:
    """Whether the wasm lowering has a cooperative rule for ``info`` (else its default expansion runs)."""
    return info.name in COOPERATIVE_RULES


def _host_imports(backend: WasmBackend, compiled: Any, instance_cell: list) -> dict:
    """The ``env`` functions a compiled program imports. wasmtime-py keeps a host function in a global table
    until its Store is freed, and the Store lives as long as the backend: so each function reaches the
    backend through a weak proxy and its instance through the weak reference put in ``instance_cell``
    after instantiation (a strong one would keep the backend, its memory and its threads alive for ever)."""
    proxy = weakref.proxy(backend)
    host = {name: _weak_method(proxy, f"_host_{name}") for name in compiled.host_imports
            if not name.startswith("parallel")}
    threads = backend._runner.threads
    plans = {"parallel_map": functools.partial(_map_plan, compiled.parallel_maps, threads),
             "parallel_reduce": functools.partial(_reduce_plan, compiled.parallel_reduces, threads),
             "parallel_lanes": functools.partial(_lanes_plan, threads)}
    for name, plan in plans.items():
        if name in compiled.host_imports:
            host[name] = ParallelDispatch(plan, backend._dispatches)
    if "parallel_gemm" in compiled.host_imports:
        host["parallel_gemm"] = lambda index, a, b, c: proxy._parallel_gemm(
            instance_cell[0](), compiled, index, a, b, c)
    return host


def _map_plan(maps: dict, threads: int, index: int, dst: int, src_a: int, src_b: int, count: int
              ) -> tuple[str, list[tuple]]:
    """``env.parallel_map``'s calls: map ``index``'s kernel over pieces of ``0 .. count`` (``chunk_ranges``: each
    starts at a multiple of the elements per vector chunk, so results equal one call's)."""
    export, per_chunk = maps[index]
    operands = (dst & 0xFFFFFFFF, src_a & 0xFFFFFFFF, src_b & 0xFFFFFFFF)
    return export, [(*operands, lo, hi) for lo, hi in chunk_ranges(count & 0xFFFFFFFF, threads, per_chunk)]


def _reduce_plan(reduces: dict, threads: int, index: int, src: int, count: int, partials: int
                 ) -> tuple[str, list[tuple]]:
    """``env.parallel_reduce``'s calls: reduction ``index``'s kernel over groups of its fixed chunks, each
    writing its chunks' partials at ``partials`` (the module's per-launch area; the module folds them)."""
    count &= 0xFFFFFFFF
    return reduces[index], [(src & 0xFFFFFFFF, first, end, count, partials & 0xFFFFFFFF)
                            for first, end in chunk_ranges(reduce_chunk_count(count), threads, 1, 1)]


def _lanes_plan(threads: int, lanes: int) -> tuple[str, list[tuple]]:
    """``env.parallel_lanes``'s calls: the SIMD kernel over ranges of ``0 .. lanes`` (starts are multiples of a
    whole unrolled step, so every lane runs the code it runs in one call)."""
    return SIMD_CHUNK, chunk_ranges(lanes & 0xFFFFFFFF, threads, LANES_PER_RANGE_STEP)


def _weak_method(proxy: Any, name: str) -> Any:
    return lambda *args: getattr(proxy, name)(*args)


_PRESET_FORMATS = {Type.F32: "<f", Type.F64: "<d", Type.F16: "<f", Type.BF16: "<f"}


def _write_preset(access, address: int, ty: Type, value: int | float) -> None:
    """A preset register's value in the launch area (native form: narrow floats as their f32 value), written
    through ``access`` (DeviceMemory.access)."""
    if ty.is_float():
        from atlas_web.isa.floats import round_float
        access.pack(_PRESET_FORMATS[ty], address, round_float(float(value), ty))
        return
    bits = int(value) & ((1 << ty.bits) - 1)
    size = max(8, ty.size_bytes())
    for limb in range(size // 8):
        access.pack("<Q", address + 8 * limb, (bits >> (64 * limb)) & 0xFFFFFFFFFFFFFFFF)


def _host_cpu() -> str:
    return platform.processor() or platform.machine() or "host CPU"
