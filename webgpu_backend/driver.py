"""The GPU driver interface: what the WebGPU backend needs from a WebGPU engine.

``GpuDriver`` is written once, engine-neutral: its public methods check their
arguments against the device limits, keep the module, pipeline and bind group
caches, record dispatches (one compute pass each, in one command encoder) and
call a few small abstract hooks (``_native_*``) that an engine implements:
wgpu-py natively (drivers/wgpu_native.py), ``navigator.gpu`` in the browser
(drivers/js_webgpu.py). Limits use WebGPU's camelCase names
(``maxStorageBufferBindingSize``) whatever the engine calls them.

Errors: AllocationFailed (a buffer over ``maxBufferSize`` or out of memory),
InvalidBuffer (a destroyed or foreign buffer, a range outside one, a buffer
without the usage an operation needs), ShaderCompilationError (WGSL or a
pipeline the engine refuses), ExecutionFailed (a dispatch that breaks a limit
or the layout; an engine failure).
"""

from __future__ import annotations

import abc
import hashlib
from typing import Any, Callable, Iterable, Mapping, Sequence

from atlas_web.cache import ProgramCache
from atlas_web.errors import AllocationFailed, BackendUnavailable, ExecutionFailed, InvalidBuffer
from atlas_web.host_bytes import source_bytes

from .resources import (
    ALL_USAGES, BindingSpec, BufferBinding, BufferUsage, ComputePipeline, DispatchCommand, GpuBuffer, ShaderModule,
    as_layout, check_buffer,
)

__all__ = [
    "GpuDriver", "REQUIRED_LIMITS", "OPTIONAL_FEATURES", "COMPUTE_STAGE", "limit_name", "ResolvedBinding",
    "EncodedDispatch", "layout_entries", "bind_group_entries", "SOFTWARE_ADAPTERS",
]

#: the limits every driver reports (WebGPU names)
REQUIRED_LIMITS = (
    "maxBufferSize", "maxStorageBufferBindingSize", "maxUniformBufferBindingSize",
    "maxStorageBuffersPerShaderStage", "maxComputeWorkgroupSizeX", "maxComputeWorkgroupSizeY",
    "maxComputeWorkgroupSizeZ", "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupsPerDimension",
    "maxComputeWorkgroupStorageSize", "maxBindingsPerBindGroup", "minStorageBufferOffsetAlignment",
    "minUniformBufferOffsetAlignment",
)

#: words in an adapter's names that mark WebGPU implemented on the CPU (Mesa's Vulkan and OpenGL
#: rasterizers, Chromium's SwiftShader)
SOFTWARE_ADAPTERS = ("lavapipe", "llvmpipe", "swiftshader")

#: features requested by default when the adapter offers them
OPTIONAL_FEATURES = ("shader-f16",)

#: copies and queue writes move whole 4-byte words (WebGPU's COPY_BUFFER_ALIGNMENT)
COPY_ALIGNMENT = 4

#: WebGPU's GPUShaderStage.COMPUTE (wgpu-py's ShaderStage.COMPUTE has the same value)
COMPUTE_STAGE = 0x4

#: (pipeline, engine bind group, workgroups) of one checked dispatch, as the engine hook receives it
EncodedDispatch = tuple[ComputePipeline, Any, tuple[int, int, int]]

# pipelines hold the engine's compiled shader code (about 0.5 MiB each on lavapipe): the caches are
# bounded, and what leaves them is dropped (WebGPU has no destroy for modules, pipelines or bind groups:
# the engine releases one when its last reference goes)
_MAX_CACHED_MODULES = 256
_MAX_CACHED_PIPELINES = 256
_MAX_CACHED_BIND_GROUPS = 256


def limit_name(engine_name: str) -> str:
    """WebGPU's camelCase name of a limit given as ``max-buffer-size`` or ``max_buffer_size``."""
    words = engine_name.replace("_", "-").split("-")
    return words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:])


def _check_int(value: object, what: str, error: type[Exception] = InvalidBuffer) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise error(f"{what} must be a non-negative int, got {value!r}")
    return value


def layout_entries(layout: Sequence[BindingSpec]) -> list[dict[str, Any]]:
    """The ``entries`` of a bind group layout descriptor (WebGPU's shape, which wgpu-py takes too):
    one buffer binding visible to the compute stage per spec."""
    return [{"binding": spec.binding, "visibility": COMPUTE_STAGE, "buffer": {"type": spec.kind.value}}
            for spec in layout]


def bind_group_entries(bindings: Sequence[ResolvedBinding]) -> list[dict[str, Any]]:
    """The ``entries`` of a bind group descriptor for checked ``bindings`` (engine buffers, offsets, sizes)."""
    return [{"binding": b.binding, "resource": {"buffer": b.buffer.native, "offset": b.offset, "size": b.size}}
            for b in bindings]


class ResolvedBinding(tuple):
    """``(binding, buffer, offset, size)`` of one checked binding, as the engine hooks receive it."""

    __slots__ = ()

    def __new__(cls, binding: int, buffer: GpuBuffer, offset: int, size: int) -> "ResolvedBinding":
        return super().__new__(cls, (binding, buffer, offset, size))

    @property
    def binding(self) -> int:
        return self[0]

    @property
    def buffer(self) -> GpuBuffer:
        return self[1]

    @property
    def offset(self) -> int:
        return self[2]

    @property
    def size(self) -> int:
        return self[3]


#: one lane multiplies two pairs of f32 read from the buffer: one product is subnormal, one reads a subnormal
_SUBNORMAL_PROBE = """
@group(0) @binding(0) var<storage, read_write> io: array<u32, 6>;
@compute @workgroup_size(1)
fn main() {
    io[4] = bitcast<u32>(bitcast<f32>(io[0]) * bitcast<f32>(io[1]));
    io[5] = bitcast<u32>(bitcast<f32>(io[2]) * bitcast<f32>(io[3]));
}
"""


class GpuDriver(abc.ABC):
    """One WebGPU device and the caches around it. Not thread-safe: use it from one thread.

    Every dispatch call encodes its commands and submits them at once; the queue
    runs submissions in order, so a later write, copy, dispatch or read sees
    the results of earlier ones. ``read_buffer`` waits for the GPU;
    ``submit_and_wait`` waits without reading.
    """

    #: short name of the engine ("wgpu-native", "navigator.gpu")
    engine: str = ""

    def __init__(self) -> None:
        self._modules = ProgramCache(_MAX_CACHED_MODULES, plain_keys=True)   # source digest -> ShaderModule
        # (digest, entry point, layout) -> ComputePipeline; an evicted pipeline takes its bind groups along
        self._pipelines = ProgramCache(_MAX_CACHED_PIPELINES, plain_keys=True,
                                       on_evict=lambda key, _pipeline: self._drop_bind_groups(key))
        self._bind_groups = ProgramCache(_MAX_CACHED_BIND_GROUPS, plain_keys=True)  # see _bind_group
        self._features: frozenset[str] = frozenset()
        self._limits: dict[str, int] = {}
        self._subnormals: str | None = None   # see subnormals()
        self._closed = False

    def _adopt_device(self, features: Iterable[str], limits: Mapping[str, int]) -> None:
        """Keep the opened device's features and limits (WebGPU names; limits copied).

        Raises BackendUnavailable when the device does not report one of REQUIRED_LIMITS.
        """
        self._features = frozenset(str(name) for name in features)
        self._limits = dict(limits)
        missing = [name for name in REQUIRED_LIMITS if name not in self._limits]
        if missing:
            raise BackendUnavailable(f"the {self.engine} device reports no {', '.join(missing)}")

    # ---- the device -------------------------------------------------------------------------
    def device_type(self) -> str:
        """"software-gpu" when the adapter is WebGPU implemented on the CPU (lavapipe, llvmpipe,
        SwiftShader, or an adapter whose type says CPU), else "gpu" (see Backend.device_info)."""
        info = self.adapter_info()
        if info.get("adapter_type") == "CPU":
            return "software-gpu"
        names = " ".join(info.get(field, "") for field in ("vendor", "architecture", "device", "description"))
        return "software-gpu" if any(word in names.lower() for word in SOFTWARE_ADAPTERS) else "gpu"

    @abc.abstractmethod
    def adapter_info(self) -> dict[str, str]:
        """What runs the device: ``vendor``, ``architecture``, ``device``, ``description``,
        ``backend`` (Vulkan, Metal, D3D12, OpenGL, WebGPU), ``adapter_type`` (CPU,
        DiscreteGPU, IntegratedGPU, unknown) and ``engine``."""

    @property
    def features(self) -> frozenset[str]:
        """The device's enabled features, WebGPU names (``"shader-f16"``)."""
        return self._features

    @property
    def limits(self) -> Mapping[str, int]:
        """The device's limits by WebGPU camelCase name; holds at least REQUIRED_LIMITS."""
        return self._limits

    def limit(self, name: str) -> int:
        """One device limit by WebGPU name; raises ExecutionFailed for an unknown name."""
        try:
            return self.limits[name]
        except KeyError:
            raise ExecutionFailed(f"the device reports no limit named {name!r}") from None

    def subnormals(self) -> str:
        """"flushed" when the device reads f32 subnormal operands or writes f32 subnormal results of
        arithmetic as zero (WGSL allows it; an NVIDIA GPU under Vulkan does), else "preserved". Found once
        by a one-lane probe shader (operands from a buffer, so nothing is folded) and kept. Raises as
        dispatch and read_buffer (in a browser without a synchronous wait: ExecutionFailed)."""
        if self._subnormals is None:
            pipeline = self.create_pipeline(self.compile(_SUBNORMAL_PROBE), "main", {0: "storage"})
            io = self.create_buffer(24)
            try:
                # 2^-100, 2^-30 (their product is subnormal); 2^-138 (subnormal), 2^40
                self.write_buffer(io, 0, b"".join(v.to_bytes(4, "little") for v in
                                                  (0x0D800000, 0x30800000, 0x00000800, 0x53800000)))
                self.dispatch(pipeline, {0: io})
                words = bytes(self.read_buffer(io, 16, 8))
            finally:
                self.destroy_buffer(io)
            kept = all(int.from_bytes(words[k:k + 4], "little") != 0 for k in (0, 4))
            self._subnormals = "preserved" if kept else "flushed"
        return self._subnormals

    # ---- buffers --------------------------------------------------------------------------------
    def create_buffer(self, size: int, usage: BufferUsage | int | None = None) -> GpuBuffer:
        """A new zero-filled buffer of ``size`` bytes (at least 1) with ``usage`` flags
        (default STORAGE | COPY_SRC | COPY_DST).

        Raises AllocationFailed for a bad size, one over ``maxBufferSize``, or when the
        device is out of memory; ExecutionFailed for unknown usage flags.
        """
        self._check_open()
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise AllocationFailed(f"a GPU buffer size is a positive int, got {size!r}")
        usage = BufferUsage.default() if usage is None else usage
        if not isinstance(usage, int) or usage == 0 or int(usage) & ~int(ALL_USAGES):
            raise ExecutionFailed(f"buffer usage must be a non-empty combination of {list(BufferUsage)}, got {usage!r}")
        usage = BufferUsage(usage)
        padded = -(-size // COPY_ALIGNMENT) * COPY_ALIGNMENT
        limit = self.limit("maxBufferSize")
        if padded > limit:
            raise AllocationFailed(f"a buffer of {size} bytes was asked; maxBufferSize is {limit} bytes")
        return GpuBuffer(size, usage, self._native_create_buffer(padded, usage), id(self))

    def destroy_buffer(self, buffer: GpuBuffer) -> None:
        """Release ``buffer`` now; later use raises InvalidBuffer. Destroying twice is allowed."""
        if not isinstance(buffer, GpuBuffer):
            raise InvalidBuffer(f"destroy_buffer: expected a GpuBuffer, got {type(buffer).__name__}")
        if not buffer.alive:
            return
        self._check_ours(buffer, "destroy_buffer")
        buffer.alive = False
        self._bind_groups.remove_where(lambda key, _group: any(entry[1] == buffer.id for entry in key[1]))
        self._native_destroy_buffer(buffer.native)
        buffer.native = None

    def write_buffer(self, buffer: GpuBuffer, offset: int, data: Any) -> None:
        """Copy the bytes of ``data`` (any buffer-protocol object) into ``buffer`` at ``offset``.

        One host copy into the engine's staging memory, queued behind earlier work.
        Where an end of the range is not 4-byte aligned, the word holding it is read
        back (a GPU wait), patched and written (the buffer then needs COPY_SRC).
        Raises InvalidBuffer (bad buffer, no COPY_DST usage, range outside the buffer).
        """
        self._check_usage(buffer, BufferUsage.COPY_DST, "write_buffer")
        view = source_bytes(data, "write_buffer")
        self._check_range(buffer, offset, view.nbytes, "write_buffer")
        if view.nbytes == 0:
            return
        end = offset + view.nbytes
        head_end = min(-(-offset // COPY_ALIGNMENT) * COPY_ALIGNMENT, end)
        tail_start = max(end - end % COPY_ALIGNMENT, head_end)
        if head_end > offset:
            self._patch_word(buffer, offset, view[:head_end - offset])
        if tail_start > head_end:
            self._native_write(buffer.native, head_end, view[head_end - offset:tail_start - offset])
        if end > tail_start:
            self._patch_word(buffer, tail_start, view[tail_start - offset:])

    def _patch_word(self, buffer: GpuBuffer, offset: int, data: memoryview) -> None:
        """Write ``data`` (inside one 4-byte word) at ``offset`` keeping the word's other bytes."""
        self._check_usage(buffer, BufferUsage.COPY_SRC, "write_buffer (an unaligned write reads the edge words)")
        start = offset - offset % COPY_ALIGNMENT
        word = bytearray(self._native_read(buffer.native, start, COPY_ALIGNMENT))
        word[offset - start:offset - start + data.nbytes] = data
        self._native_write(buffer.native, start, memoryview(word))

    def read_buffer(self, buffer: GpuBuffer, offset: int = 0, size: int | None = None) -> memoryview:
        """``size`` bytes of ``buffer`` from ``offset`` (default: to the end), after all queued work.

        Blocks until the GPU is done. Returns a new memoryview (one copy out of the
        engine's mapped staging memory). Raises InvalidBuffer (bad buffer, no
        COPY_SRC usage, range outside the buffer), ExecutionFailed (engine failure).
        """
        start, end, lo, hi = self._read_window(buffer, offset, size, "read_buffer")
        if hi == lo:
            return memoryview(b"")
        data = self._native_read(buffer.native, start, end - start)
        return data[lo:hi] if (lo, hi) != (0, end - start) else data

    async def read_buffer_async(self, buffer: GpuBuffer, offset: int = 0, size: int | None = None) -> memoryview:
        """As ``read_buffer``, but awaits the GPU without blocking the event loop."""
        start, end, lo, hi = self._read_window(buffer, offset, size, "read_buffer_async")
        if hi == lo:
            return memoryview(b"")
        data = await self._native_read_async(buffer.native, start, end - start)
        return data[lo:hi] if (lo, hi) != (0, end - start) else data

    def copy_buffer(self, source: GpuBuffer, source_offset: int, destination: GpuBuffer,
                    destination_offset: int, size: int) -> None:
        """Queue a device-side copy of ``size`` bytes (offsets and size multiples of 4).

        Raises InvalidBuffer (bad buffers, missing COPY_SRC / COPY_DST, ranges outside,
        unaligned offsets or size).
        """
        self._check_usage(source, BufferUsage.COPY_SRC, "copy_buffer source")
        self._check_usage(destination, BufferUsage.COPY_DST, "copy_buffer destination")
        self._check_range(source, source_offset, size, "copy_buffer source")
        self._check_range(destination, destination_offset, size, "copy_buffer destination")
        self._check_aligned((source_offset, destination_offset, size), "copy_buffer")
        if size:
            self._native_copy(source.native, source_offset, destination.native, destination_offset, size)

    def clear_buffer(self, buffer: GpuBuffer, offset: int = 0, size: int | None = None) -> None:
        """Queue zero-filling ``size`` bytes (default: to the end) at ``offset`` (multiples of 4).

        Raises InvalidBuffer as copy_buffer (the buffer needs COPY_DST).
        """
        self._check_usage(buffer, BufferUsage.COPY_DST, "clear_buffer")
        size = buffer.size - _check_int(offset, "clear_buffer offset") if size is None else size
        self._check_range(buffer, offset, size, "clear_buffer")
        end = offset + size
        if end == buffer.size:
            end = -(-end // COPY_ALIGNMENT) * COPY_ALIGNMENT  # the padding after the last byte may be cleared
        self._check_aligned((offset, end - offset), "clear_buffer")
        if end > offset:
            self._native_clear(buffer.native, offset, end - offset)

    # ---- shaders and pipelines -----------------------------------------------------------------
    def compile(self, wgsl_source: str) -> ShaderModule:
        """The validated module for ``wgsl_source`` (cached by the source's SHA-256 digest).

        Raises ShaderCompilationError with the engine's message and the WGSL line.
        """
        self._check_open()
        if not isinstance(wgsl_source, str):
            raise ExecutionFailed(f"WGSL source must be a str, got {type(wgsl_source).__name__}")
        digest = hashlib.sha256(wgsl_source.encode()).hexdigest()
        return self._modules.get_or_build(digest, lambda: ShaderModule(
            wgsl_source, digest, self._native_compile(wgsl_source, f"wgsl-{digest[:12]}"), id(self)))

    def create_pipeline(self, module: ShaderModule, entry_point: str,
                        bind_group_layout_spec: Sequence[Any] | Mapping[int, Any]) -> ComputePipeline:
        """The compute pipeline of ``module``'s ``entry_point`` with bind group 0 laid out as
        ``bind_group_layout_spec`` (see resources.as_layout).

        Cached by (source digest, entry point, layout): the same source, entry and
        layout give the same pipeline object. Raises ShaderCompilationError (no such
        entry point, a layout that does not match the shader), ExecutionFailed (a
        malformed layout, more storage bindings than ``maxStorageBuffersPerShaderStage``).
        """
        self._check_open()
        if not isinstance(module, ShaderModule) or module.driver_id != id(self):
            raise ExecutionFailed("create_pipeline needs a ShaderModule compiled by this driver")
        if not isinstance(entry_point, str) or not entry_point:
            raise ExecutionFailed(f"the entry point is a non-empty str, got {entry_point!r}")
        layout = as_layout(bind_group_layout_spec)
        self._check_layout(layout)
        key = (module.digest, entry_point, layout)

        def build() -> ComputePipeline:
            native, native_layout = self._native_create_pipeline(module, entry_point, layout)
            return ComputePipeline(module, entry_point, layout, native, native_layout, id(self))

        return self._pipelines.get_or_build(key, build)

    def release_pipeline(self, pipeline: ComputePipeline) -> None:
        """Drop what the driver keeps for ``pipeline`` (its cache entry, its bind groups, and its module's
        entry when no other cached pipeline uses the module), so the engine releases them once the caller
        drops its own references; a later ``create_pipeline`` builds it again. Releasing twice, or a pipeline
        the driver no longer caches, does nothing. Raises ExecutionFailed for a pipeline of another driver."""
        if not isinstance(pipeline, ComputePipeline) or pipeline.driver_id != id(self):
            raise ExecutionFailed("release_pipeline needs a ComputePipeline created by this driver")
        if self._pipelines.get(pipeline.key) is pipeline:
            self._pipelines.remove(pipeline.key)
        digest = pipeline.module.digest
        if not any(key[0] == digest for key in self._pipelines.keys()):
            self._modules.remove(digest)

    @property
    def cache_sizes(self) -> dict[str, int]:
        """How many shader modules, pipelines and bind groups the driver's caches hold now."""
        return {"modules": len(self._modules), "pipelines": len(self._pipelines),
                "bind_groups": len(self._bind_groups)}

    def _drop_bind_groups(self, pipeline_key: tuple) -> None:
        self._bind_groups.remove_where(lambda key, _group: key[0] == pipeline_key)

    # ---- dispatch -------------------------------------------------------------------------------
    def dispatch(self, pipeline: ComputePipeline, bindings: Mapping[int, GpuBuffer | BufferBinding],
                 workgroups: tuple[int, int, int] | int = (1, 1, 1)) -> None:
        """Encode and submit one dispatch; raises as dispatch_many."""
        self.dispatch_many([DispatchCommand(pipeline, bindings, workgroups)])

    def dispatch_many(self, commands: Iterable[DispatchCommand | tuple]) -> None:
        """Encode ``commands`` (DispatchCommand or (pipeline, bindings, workgroups)) as one compute
        pass each, in order, in ONE command encoder, and submit it once.

        Everything is checked before anything is encoded. Raises ExecutionFailed (a
        binding missing from or absent in the layout, a binding over its size limit or
        misaligned, workgroups over ``maxComputeWorkgroupsPerDimension``) or InvalidBuffer
        (a destroyed buffer, one without the usage its binding needs, a range outside).
        """
        self._check_open()
        encoded = []
        for index, command in enumerate(commands):
            if not isinstance(command, DispatchCommand):
                try:
                    command = DispatchCommand(*command)
                except TypeError:
                    raise ExecutionFailed(
                        f"dispatch {index}: expected a DispatchCommand or (pipeline, bindings, workgroups), "
                        f"got {command!r}") from None
            encoded.append(self._resolve_dispatch(index, command))
        if encoded:
            self._native_submit_dispatches(encoded)

    def _native_submit_dispatches(self, dispatches: Sequence[EncodedDispatch]) -> None:
        """Record checked dispatches as one compute pass each, in order, in ONE command encoder and
        submit it once (the launcher replays recorded dispatches through here). Raises ExecutionFailed
        when the engine refuses them."""
        def record(encoder: Any) -> None:
            for pipeline, bind_group, workgroups in dispatches:
                self._native_compute_pass(encoder, pipeline.native, bind_group, workgroups)

        self._native_submit(record, "the dispatch")

    @abc.abstractmethod
    def submit_and_wait(self) -> None:
        """Block until every submitted command has finished on the GPU."""

    @abc.abstractmethod
    async def submit_and_wait_async(self) -> None:
        """As ``submit_and_wait``, awaiting the GPU without blocking the event loop."""

    # ---- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Drop the caches and release the device; the driver is unusable afterwards."""
        if self._closed:
            return
        self._closed = True
        self._bind_groups.clear()
        self._pipelines.clear()
        self._modules.clear()
        self._native_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- checks ---------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ExecutionFailed(f"the {self.engine} driver was closed")

    def _check_ours(self, buffer: GpuBuffer, what: str) -> None:
        if buffer.driver_id != id(self):
            raise InvalidBuffer(f"{what}: buffer {buffer.id} belongs to another driver")

    def _check_usage(self, buffer: object, usage: BufferUsage, what: str) -> GpuBuffer:
        self._check_open()
        buffer = check_buffer(buffer, what)
        self._check_ours(buffer, what)
        if not buffer.usage & usage:
            raise InvalidBuffer(f"{what}: buffer {buffer.id} lacks usage {usage.name} (it has {buffer.usage!r})")
        return buffer

    @staticmethod
    def _check_range(buffer: GpuBuffer, offset: object, size: object, what: str) -> None:
        offset = _check_int(offset, f"{what} offset")
        size = _check_int(size, f"{what} size")
        if offset + size > buffer.size:
            raise InvalidBuffer(f"{what}: bytes {offset}..{offset + size} are outside buffer {buffer.id} "
                                f"of {buffer.size} bytes")

    @staticmethod
    def _check_aligned(values: Iterable[int], what: str) -> None:
        if any(v % COPY_ALIGNMENT for v in values):
            raise InvalidBuffer(f"{what}: offsets and sizes must be multiples of {COPY_ALIGNMENT}, got {tuple(values)}")

    def _read_window(self, buffer: GpuBuffer, offset: int, size: int | None, what: str) -> tuple[int, int, int, int]:
        """The aligned span to copy (start, end) and the slice of it asked for (lo, hi)."""
        self._check_usage(buffer, BufferUsage.COPY_SRC, what)
        size = buffer.size - _check_int(offset, f"{what} offset") if size is None else size
        self._check_range(buffer, offset, size, what)
        start = offset - offset % COPY_ALIGNMENT
        end = -(-(offset + size) // COPY_ALIGNMENT) * COPY_ALIGNMENT
        return start, end, offset - start, offset - start + size

    def _check_layout(self, layout: tuple[BindingSpec, ...]) -> None:
        storage = sum(1 for spec in layout if spec.kind.usage is BufferUsage.STORAGE)
        checks = (
            ("maxStorageBuffersPerShaderStage", storage, "storage bindings"),
            ("maxBindingsPerBindGroup", max((s.binding + 1 for s in layout), default=0), "binding numbers"),
        )
        for name, count, what in checks:
            if count > self.limit(name):
                raise ExecutionFailed(f"the layout uses {count} {what}; {name} is {self.limit(name)}")

    def _resolve_dispatch(self, index: int, command: DispatchCommand) -> EncodedDispatch:
        pipeline = command.pipeline
        if not isinstance(pipeline, ComputePipeline) or pipeline.driver_id != id(self):
            raise ExecutionFailed(f"dispatch {index}: the pipeline was not created by this driver")
        workgroups = self._check_workgroups(index, command.workgroups)
        bindings = command.bindings
        if not isinstance(bindings, Mapping):
            raise ExecutionFailed(f"dispatch {index}: bindings map binding numbers to buffers, got {bindings!r}")
        wanted = {spec.binding for spec in pipeline.layout}
        extra = sorted(set(bindings) - wanted, key=repr)
        missing = sorted(wanted - set(bindings))
        if extra or missing:
            raise ExecutionFailed(f"dispatch {index} ({pipeline.entry_point}): bindings {missing} are missing and "
                                  f"{extra} are not in the layout {[s.binding for s in pipeline.layout]}")
        resolved = tuple(self._resolve_binding(index, spec, bindings[spec.binding]) for spec in pipeline.layout)
        return pipeline, self._bind_group(pipeline, resolved), workgroups

    def _check_workgroups(self, index: int, workgroups: object) -> tuple[int, int, int]:
        if isinstance(workgroups, int) and not isinstance(workgroups, bool):
            workgroups = (workgroups, 1, 1)
        limit = self.limit("maxComputeWorkgroupsPerDimension")
        if (not isinstance(workgroups, (tuple, list)) or not 1 <= len(workgroups) <= 3
                or not all(isinstance(w, int) and not isinstance(w, bool) and 0 <= w <= limit for w in workgroups)):
            raise ExecutionFailed(f"dispatch {index}: workgroups must be 1 to 3 ints in 0..{limit} "
                                  f"(maxComputeWorkgroupsPerDimension), got {workgroups!r}")
        return tuple(workgroups) + (1,) * (3 - len(workgroups))  # type: ignore[return-value]

    def _resolve_binding(self, index: int, spec: BindingSpec, bound: object) -> ResolvedBinding:
        what = f"dispatch {index} binding {spec.binding} ({spec.kind.value})"
        if isinstance(bound, BufferBinding):
            buffer, offset, size = bound.buffer, bound.offset, bound.size
        else:
            buffer, offset, size = bound, 0, None
        buffer = self._check_usage(buffer, spec.kind.usage, what)
        size = -(-(buffer.size - _check_int(offset, f"{what} offset")) // COPY_ALIGNMENT) * COPY_ALIGNMENT \
            if size is None else size
        size = _check_int(size, f"{what} size")
        if offset + size > -(-buffer.size // COPY_ALIGNMENT) * COPY_ALIGNMENT or size == 0:
            raise InvalidBuffer(f"{what}: bytes {offset}..{offset + size} are not a non-empty range of "
                                f"buffer {buffer.id} of {buffer.size} bytes")
        limit, align = self.limit(spec.kind.limit), self.limit(spec.kind.offset_alignment_limit)
        if size > limit:
            raise ExecutionFailed(f"{what}: {size} bytes bound; {spec.kind.limit} is {limit} bytes")
        if offset % align or size % COPY_ALIGNMENT:
            raise ExecutionFailed(f"{what}: offset {offset} must be a multiple of {align} "
                                  f"({spec.kind.offset_alignment_limit}) and size {size} of {COPY_ALIGNMENT}")
        return ResolvedBinding(spec.binding, buffer, offset, size)

    def _bind_group(self, pipeline: ComputePipeline, resolved: tuple[ResolvedBinding, ...]) -> Any:
        # keyed by the pipeline's cache key: a pipeline rebuilt after eviction has an equal layout, which
        # WebGPU accepts for bind groups made with the old one
        key = (pipeline.key, tuple((r.binding, r.buffer.id, r.offset, r.size) for r in resolved))
        return self._bind_groups.get_or_build(key, lambda: self._native_create_bind_group(pipeline, resolved))

    # ---- engine hooks ----------------------------------------------------------------------------
    @abc.abstractmethod
    def _native_create_buffer(self, size: int, usage: BufferUsage) -> Any:
        """The engine's buffer of ``size`` bytes (a multiple of 4); raises AllocationFailed."""

    @abc.abstractmethod
    def _native_destroy_buffer(self, native: Any) -> None:
        """Release the engine's buffer."""

    @abc.abstractmethod
    def _native_write(self, native: Any, offset: int, data: memoryview) -> None:
        """Queue a write of ``data`` (4-byte aligned range) at ``offset``."""

    @abc.abstractmethod
    def _native_read(self, native: Any, offset: int, size: int) -> memoryview:
        """Wait for queued work, then copy out ``size`` bytes (4-byte aligned range) at ``offset``."""

    @abc.abstractmethod
    async def _native_read_async(self, native: Any, offset: int, size: int) -> memoryview:
        """As _native_read, awaiting the GPU without blocking the event loop."""

    @abc.abstractmethod
    def _native_copy(self, source: Any, source_offset: int, destination: Any, destination_offset: int,
                     size: int) -> None:
        """Queue a device-side buffer copy."""

    @abc.abstractmethod
    def _native_clear(self, native: Any, offset: int, size: int) -> None:
        """Queue zero-filling an aligned range."""

    @abc.abstractmethod
    def _native_compile(self, source: str, label: str) -> Any:
        """The engine's shader module; raises ShaderCompilationError (stage "module")."""

    @abc.abstractmethod
    def _native_create_pipeline(self, module: ShaderModule, entry_point: str,
                                layout: tuple[BindingSpec, ...]) -> tuple[Any, Any]:
        """(pipeline, bind group layout); raises ShaderCompilationError (stage "pipeline")."""

    @abc.abstractmethod
    def _native_create_bind_group(self, pipeline: ComputePipeline, bindings: tuple[ResolvedBinding, ...]) -> Any:
        """The engine's bind group for ``pipeline``'s layout with checked ``bindings``."""

    @abc.abstractmethod
    def _native_submit(self, record: Callable[[Any], None], what: str) -> None:
        """Make a command encoder, let ``record(encoder)`` record into it, finish it and submit it.

        Raises ExecutionFailed saying ``what`` the engine refused (``"the dispatch"``, ``"the copy"``).
        """

    @abc.abstractmethod
    def _native_compute_pass(self, encoder: Any, pipeline: Any, bind_group: Any,
                             workgroups: tuple[int, int, int]) -> None:
        """Record one compute pass into ``encoder``: the engine's ``pipeline`` with ``bind_group`` at group 0,
        dispatching ``workgroups`` (x, y, z)."""

    @abc.abstractmethod
    def _native_close(self) -> None:
        """Release the device."""
