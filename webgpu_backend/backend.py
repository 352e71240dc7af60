"""WebGpuBackend ("webgpu"): Atlas programs compiled to WGSL compute shaders.

Memory is ``GpuMemory`` (buffers and pools suballocated from a few large storage buffers,
resolved on the device through a handle table); programs are verified, lowered
(``compiler``), compiled to one shader per stage plus cooperative kernels, and run by the
``Launcher``, which reads back only what it must. Pipelines are cached per (program digest,
launch shape, memory chunks). The driver is chosen per platform (wgpu-py natively,
``navigator.gpu`` under Pyodide); nothing here imports NumPy.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from atlas_web.backend import Backend, resolve_op
from atlas_web.errors import AtlasTrap, ExecutionFailed, InvalidBuffer
from atlas_web.exclusive import check_open, closes, exclusive_lock, one_thread_at_a_time
from atlas_web.host_bytes import target_bytes
from atlas_web.isa.addresses import BufferHandle, PoolHandle
from atlas_web.isa.enums import BinaryMapOperation, MapOperation, ReduceOperation
from atlas_web.isa.floats import float_to_bits
from atlas_web.isa.opcodes import OpcodeInfo
from atlas_web.isa.operations import ELEMENT_FUNCTIONS
from atlas_web.isa.types import Type
from atlas_web.launch import DEFAULT_BUDGET, ExecutionParams, LaunchConfig, check_budget, check_optimize, plain_params
from atlas_web.pipeline import DEFAULT_OPTIMIZE, CompilePipeline, PipelineProgram
from atlas_web.program import Program
from atlas_web.registry import DeviceProbe

from .compiler import CompiledProgram, compile_program
from .launcher import Launcher, LaunchOutcome
from .memory import GpuMemory
from .wgsl import TYPE_MAP, ShaderFeatures
from .wgsl.accuracy import TOLERANCE_ULP
from .wgsl.emitter import LLVMPIPE_LOOP_LIMIT
from .wgsl.rules_atlas import RES_FLAG_NAN, RES_FLAG_NEG_INF, RES_FLAG_POS_INF, RES_LIMBS, RES_STRIDE, RES_WORDS
from .wgsl.stage_shader import SHARED_RESERVED_BYTES
from atlas_web.lowering.expansions import original_traps, run_expanded
from .wgsl.support import has_kernel, operation_supported, supports_instruction

__all__ = ["WebGpuBackend"]

_PROGRAM_CACHE_SIZE = 256
#: bindings a stage shader needs besides the memory chunks (launch, rt, device table, lane state)
_RUNTIME_BINDINGS = 3


def _preset_words(ty: Type, value: int | float) -> tuple[int, ...]:
    wt = TYPE_MAP[ty]
    if wt.family == "float":
        return (float_to_bits(float(value), Type.F32),)
    bits = int(value) & ((1 << wt.bits) - 1)
    return tuple((bits >> (32 * k)) & 0xFFFFFFFF for k in range(wt.words))


class WebGpuBackend(Backend):
    """The WebGPU backend.

    ``driver``: a GpuDriver to use (default: the platform's, owned and closed by the backend).
    ``budget``: backward jumps each lane may take (ExecutionParams.budget overrides it); by default
    2**24, or, on a device that silently ends a lane's loops after a count per dispatch (Mesa's
    llvmpipe/lavapipe: ``features.loop_limit``), that count less room for helpers (60000), so a runaway
    loop traps BUDGET_EXCEEDED exactly as on the other backends with the same budget. A larger budget
    given there holds until one lane takes ``loop_limit`` backward jumps in one dispatch, which raises
    ExecutionFailed instead of a wrong result.
    ``memory_limit``: optional cap in bytes on buffers and pools together. ``chunk_capacity`` /
    ``max_chunks``: the size of one storage chunk (default: the device's binding limit) and how
    many may exist. ``optimize``: the optimization level of its programs (0, 1 or 2: atlas_web.opt;
    ExecutionParams.optimize overrides it per launch). Raises BackendUnavailable when no WebGPU device can
    be had, ExecutionFailed for a bad ``budget`` or ``optimize``.

    Threads may share a backend: its methods take turns (``atlas_web.exclusive``), so each launch's
    trap and results are its own.
    """

    name = "webgpu"

    def __init__(self, *, driver: Any = None, budget: int | None = None, memory_limit: int | None = None,
                 chunk_capacity: int | None = None, max_chunks: int | None = None,
                 optimize: int = DEFAULT_OPTIMIZE) -> None:
        self._exclusive = exclusive_lock()
        if budget is not None:
            check_budget(budget, "WebGpuBackend budget")
        check_optimize(optimize, "WebGpuBackend optimize")
        if driver is None:
            from .drivers import default_driver
            driver = default_driver()
            self._owns_driver = True
        else:
            self._owns_driver = False
        self._driver = driver
        device = driver.adapter_info()["device"]
        self.features = ShaderFeatures(shader_f16="shader-f16" in driver.features,
                                       loop_limit=LLVMPIPE_LOOP_LIMIT if "llvmpipe" in device else 0)
        self.budget = budget if budget is not None else (self.features.loop_limit or DEFAULT_BUDGET)
        if max_chunks is None:
            storage = driver.limit("maxStorageBuffersPerShaderStage")
            max_chunks = max(1, min(4, (storage - _RUNTIME_BINDINGS) // 2))
        self._memory = GpuMemory(driver, chunk_capacity=chunk_capacity, max_chunks=max_chunks,
                                 memory_limit=memory_limit)
        self._launcher = Launcher(driver, self._memory, self.features)
        # verified (and optimized) programs, plans, CompiledPrograms
        self._pipeline = CompilePipeline(_PROGRAM_CACHE_SIZE, optimize=optimize, target=self)
        self._resonance: list[float] | None = [0.0] * 96
        self._pending_resonance: int | None = None

    @classmethod
    def probe(cls) -> DeviceProbe:
        """The device that would run this backend and its device type ("gpu" or "software-gpu");
        raises BackendUnavailable when there is none."""
        from .drivers import default_driver
        driver = default_driver()
        try:
            info = driver.adapter_info()
            return DeviceProbe((f"{info['device']} ({info['backend']}, {info['adapter_type']})",),
                               driver.device_type())
        finally:
            driver.close()

    # ---- buffers and pools -------------------------------------------------------------------
    @one_thread_at_a_time
    def allocate_buffer(self, size: int) -> BufferHandle:
        """A new zero-filled buffer of ``size`` bytes. Raises AllocationFailed."""
        return BufferHandle(self._memory.allocate("buffer", size).handle)

    @one_thread_at_a_time
    def free_buffer(self, handle: int) -> None:
        """Release a buffer. Raises InvalidBuffer (also for a pool or the boundary memory)."""
        self._memory.free(handle, "buffer")

    @one_thread_at_a_time
    def copy_to_buffer(self, handle: int, data: Any, offset: int = 0) -> None:
        """Copy the bytes of ``data`` into the buffer at ``offset`` (one copy). Raises InvalidBuffer."""
        self._memory.write(self._memory.get(handle, "buffer"), offset, data, "copy_to_buffer")

    @one_thread_at_a_time
    def copy_from_buffer(self, handle: int, out: Any = None, offset: int = 0) -> Any:
        """Copy bytes from the buffer at ``offset`` into ``out`` and return it; with ``out=None`` a new
        ``bytes`` of the rest of the buffer. Waits for the GPU; one copy. Raises InvalidBuffer."""
        return self._copy_out(self._memory.get(handle, "buffer"), offset, out, "copy_from_buffer")

    async def copy_from_buffer_async(self, handle: int, out: Any = None, offset: int = 0) -> Any:
        """As ``copy_from_buffer``, but awaits the GPU without blocking the event loop (the browser's
        way to read results without ``run_sync``). One copy. Raises InvalidBuffer or BackendClosed."""
        check_open(self, "copy_from_buffer_async")
        alloc = self._memory.get(handle, "buffer")
        what = "copy_from_buffer_async"
        if out is None:
            self._memory.table.check_range(alloc, offset, 0, what)
            return bytes(await self._memory.read_async(alloc, offset, alloc.size - offset, what))
        target = target_bytes(out, what)
        target[:] = await self._memory.read_async(alloc, offset, target.nbytes, what)
        return out

    @one_thread_at_a_time
    def buffer_size(self, handle: int) -> int:
        """Size in bytes of a live buffer (or of the boundary memory). Raises InvalidBuffer."""
        return self._memory.get(handle, "buffer").size

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
        self._memory.write(self._memory.get(handle, "pool"), offset, data, "copy_to_pool")

    @one_thread_at_a_time
    def copy_from_pool(self, handle: int, offset: int, out: Any) -> Any:
        """Fill ``out`` (a writable buffer; or an int: that many new bytes) from the pool at ``offset``.
        Waits for the GPU; one copy. Raises InvalidBuffer."""
        alloc = self._memory.get(handle, "pool")
        if isinstance(out, int) and not isinstance(out, bool):
            if out < 0:
                raise InvalidBuffer(f"copy_from_pool: byte count must be non-negative, got {out}")
            return bytes(self._memory.read(alloc, offset, out, "copy_from_pool"))
        return self._copy_out(alloc, offset, out, "copy_from_pool")

    @one_thread_at_a_time
    def pool_size(self, handle: int) -> int:
        """Size in bytes of a live pool. Raises InvalidBuffer."""
        return self._memory.get(handle, "pool").size

    def _copy_out(self, alloc, offset: int, out: Any, what: str) -> Any:
        if out is None:
            self._memory.table.check_range(alloc, offset, 0, what)
            return bytes(self._memory.read(alloc, offset, alloc.size - offset, what))
        target = target_bytes(out, what)
        target[:] = self._memory.read(alloc, offset, target.nbytes, what)
        return out

    # ---- execution (Backend.execute_program_with_params calls these hooks) ---------------------
    async def execute_async(self, program: Any, config: LaunchConfig | ExecutionParams) -> None:
        """As execute_program, awaiting the GPU without blocking the event loop; returns once the launch
        has finished on the GPU. Cancelling the await stops waiting at once: what the launch submitted
        still runs on the GPU, and the next call on the backend waits for it (docs/semantics.md, Traps)."""
        check_open(self, "execute_async")
        params = config if isinstance(config, ExecutionParams) else plain_params(config)
        program, expanded = run_expanded(program, has_kernel)   # no kernel here: its default expansion
        with original_traps(expanded):
            compiled, budget, pipelined = self._prepare_launch(program, params)
            presets = self._preset_words(compiled, params)
            try:
                self._finish(await self._launcher.run_async(compiled, params.config, presets, budget))
            except AtlasTrap as trap:  # a trap of the optimized program, as the program's (the source map)
                raise pipelined.original_trap(trap) from None

    def _compile(self, compiled: PipelineProgram, config: LaunchConfig) -> CompiledProgram:
        """The compiled program of ``compiled`` (any launch shape), kept with it. Raises UnsupportedOperation."""
        program = compiled.plans.get("webgpu")
        if program is None:
            plan = self._pipeline.plan(compiled, form="structured", backend="webgpu")
            program = compiled.plans.setdefault("webgpu", compile_program(compiled.info, compiled.info.preset_types,
                                                                          plan=plan))
        return program

    def _launch(self, compiled: CompiledProgram, params: ExecutionParams, budget: int) -> None:
        presets = self._preset_words(compiled, params)
        self._finish(self._launcher.run(compiled, params.config, presets, budget))

    def _preset_words(self, compiled: CompiledProgram, params: ExecutionParams) -> dict:
        """The preset register words of a launch (ExecutionParams normalized the values like MOV_IMM
        immediates); resets the ResAccum sums the launch will replace."""
        presets = params.registers
        words = {("preset", vid): _preset_words(vreg.type, presets[vreg.register][1])
                 for vid, vreg in compiled.presets.items()}
        self._resonance, self._pending_resonance = [0.0] * 96, None
        return words

    def _finish(self, outcome: LaunchOutcome) -> None:
        self._pending_resonance = outcome.resonance_offset
        if outcome.resonance_offset is not None:
            self._resonance = None

    def _check_launch(self, config: LaunchConfig) -> None:
        """ExecutionFailed for a launch shape over the device's limits."""
        limits = self._driver.limits
        for axis, size in zip("XYZ", config.block):
            if size > limits[f"maxComputeWorkgroupSize{axis}"]:
                raise ExecutionFailed(f"block dimension {axis.lower()} of {size} lanes exceeds the device's "
                                      f"maxComputeWorkgroupSize{axis} of {limits[f'maxComputeWorkgroupSize{axis}']}")
        if config.block_lanes > limits["maxComputeInvocationsPerWorkgroup"]:
            raise ExecutionFailed(f"a block of {config.block_lanes} lanes exceeds the device's "
                                  f"maxComputeInvocationsPerWorkgroup of {limits['maxComputeInvocationsPerWorkgroup']}")
        room = limits["maxComputeWorkgroupStorageSize"] - SHARED_RESERVED_BYTES
        if config.shared_memory > room:
            raise ExecutionFailed(f"{config.shared_memory} bytes of shared memory per block exceed the {room} bytes "
                                  "the device's maxComputeWorkgroupStorageSize leaves for programs")
        if config.num_blocks > limits["maxComputeWorkgroupsPerDimension"] ** 3:
            raise ExecutionFailed(f"{config.num_blocks} blocks exceed what the device can dispatch")

    @one_thread_at_a_time
    def generated_code(self, program: Program, config: LaunchConfig) -> str:
        """The WGSL this backend runs for ``program`` launched with ``config``: stage shaders and the
        cooperative steps' kernels (see webgpu_backend.generated_code.wgsl_listing: what it raises)."""
        from .generated_code import wgsl_listing
        return wgsl_listing(self, program, config)

    # ---- capabilities --------------------------------------------------------------------------
    _has_kernel = staticmethod(has_kernel)

    def supports_op(self, info: OpcodeInfo, ty: Type | None) -> bool:
        """Whether the WGSL generator has rules for ``info`` on ``ty`` (never for F64)."""
        if info.types and ty not in info.types:
            return False
        return supports_instruction(info, ty)

    def supports_operation(self, operation: object, ty: Type) -> bool:
        """Whether the cooperative ``operation`` (a MapOperation, BinaryMapOperation or ReduceOperation
        member) has a kernel for ``ty``."""
        return operation_supported(operation, ty)

    def ulp_tolerance(self, op: object, ty: Type) -> float:
        """The measured error bound (ulp of ``ty``) of a transcendental (accuracy table); 0 for the
        exact operations. ``op`` may also be a cooperative operation enum member."""
        if isinstance(op, (MapOperation, BinaryMapOperation, ReduceOperation)):
            name = ELEMENT_FUNCTIONS[op]
        else:
            name = resolve_op(op).name
        wt = TYPE_MAP.get(ty)
        row = TOLERANCE_ULP.get(name)
        if row is None or wt is None or wt.family != "float":
            return 0.0
        return float(row[wt.format])

    @classmethod
    def documentation(cls):
        """The webgpu section of docs/backends.md (``webgpu_backend.docs``: WGSL rule tables, measured ulps,
        notes); needs no adapter."""
        from .docs import backend_documentation
        return backend_documentation()

    @one_thread_at_a_time
    def device_info(self) -> dict:
        """``name``, ``device_type`` ("gpu", or "software-gpu" on lavapipe, llvmpipe or SwiftShader),
        ``subnormals`` ("flushed" where the device flushes f32 subnormals in arithmetic, found by a probe
        shader the first time; "unknown" where the probe cannot be read back synchronously), ``device``, ``engine``, ``backend``, ``features``, ``memory_limit``, ``memory_used``,
        ``max_memory`` (what the chunks can hold), ``chunk_capacity``, ``max_allocation`` (the largest buffer
        or pool: one chunk)."""
        info = self._driver.adapter_info()
        capacity = self._memory.chunk_capacity * self._memory.max_chunks
        limit = self._memory.memory_limit
        return {
            "name": self.name, "device_type": self._driver.device_type(), "subnormals": self._subnormals(),
            "device": info["device"],
            "engine": info["engine"], "backend": info["backend"],
            "adapter_type": info["adapter_type"], "features": sorted(self._driver.features),
            "memory_limit": limit, "memory_used": self._memory.used,
            "max_memory": capacity if limit is None else min(limit, capacity),
            "chunk_capacity": self._memory.chunk_capacity,
            "max_allocation": self._memory.chunk_capacity if limit is None else min(limit, self._memory.chunk_capacity),
        }

    def _subnormals(self) -> str:
        try:
            return self._driver.subnormals()
        except ExecutionFailed:
            return "unknown"

    @one_thread_at_a_time
    def resonance_accumulator(self) -> list[float]:
        """The 96 ResAccum sums of the last launch (zeros before any), each the exact sum rounded once
        to f64. Reads them back from the GPU on first use after a launch (one copy)."""
        if self._resonance is None:
            offset = self._pending_resonance
            raw = bytes(self._driver.read_buffer(self._launcher.rt, 4 * offset, 4 * RES_WORDS))
            words = [int.from_bytes(raw[4 * k:4 * k + 4], "little") for k in range(RES_WORDS)]
            self._resonance = [_exact_sum(words[c * RES_STRIDE:(c + 1) * RES_STRIDE]) for c in range(96)]
        return list(self._resonance)

    @closes
    def close(self) -> None:
        """Release the device memory: buffers, pools and the launcher's scratch buffers (lane state and its
        windows, runtime words, kernel work memory), destroyed now also on a driver the backend shares with
        others; and the device, when the backend made its driver. The backend is closed (later calls raise
        BackendClosed)."""
        try:
            self._launcher.close()
        finally:
            self._memory.close()
            if self._owns_driver:
                self._driver.close()


def _exact_sum(words: list[int]) -> float:
    flags = words[0]
    if flags & RES_FLAG_NAN or (flags & RES_FLAG_POS_INF and flags & RES_FLAG_NEG_INF):
        return float("nan")
    if flags & RES_FLAG_POS_INF:
        return float("inf")
    if flags & RES_FLAG_NEG_INF:
        return float("-inf")
    positive = sum(w << (32 * k) for k, w in enumerate(words[1:1 + RES_LIMBS]))
    negative = sum(w << (32 * k) for k, w in enumerate(words[1 + RES_LIMBS:1 + 2 * RES_LIMBS]))
    total = Fraction(positive - negative, 1 << 149)
    try:
        return float(total)
    except OverflowError:
        return float("inf") if total > 0 else float("-inf")

