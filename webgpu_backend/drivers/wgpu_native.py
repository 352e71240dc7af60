"""The GPU driver over wgpu-py (wgpu-native: Vulkan, Metal, D3D12 or OpenGL; Mesa lavapipe without a GPU).

Imports ``wgpu`` at import time: import this module only where wgpu-py is the
engine (``drivers.default_driver`` does that choice).

Waiting. On lavapipe a submission made while an earlier one still runs blocks inside wgpu's C call
until that one has finished (so does a read back, which submits a copy). The driver knows whether it
submitted since the GPU was last seen idle (``_busy``); a call that may block then runs on its
``OffThread`` worker, and the caller waits in Python: Ctrl-C reaches it at once, and the async reads
await it without blocking the event loop. Work already on the GPU still runs to its end (no engine
can stop a dispatch): the next call waits for it.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Callable, Iterator, Mapping, Sequence

import wgpu

from atlas_web.errors import AllocationFailed, BackendUnavailable, ExecutionFailed
from atlas_web.host_env import ensure_runtime_dir

from ..driver import OPTIONAL_FEATURES, GpuDriver, ResolvedBinding, bind_group_entries, layout_entries, limit_name
from ..errors import ShaderCompilationError
from ..resources import BindingSpec, BufferUsage, ComputePipeline, ShaderModule
from .off_thread import OffThread
from .staging import StagingPool

__all__ = ["WgpuNativeDriver", "available_adapters", "rank_adapter", "naga_location"]

# preferred adapters first: a real GPU over a CPU rasterizer, then the native API over OpenGL
_ADAPTER_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}
_BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 1}

_STAGING_USAGE = wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ
#: idle staging memory kept for reuse
_MAX_POOLED_STAGING = 256 << 20

# naga points at ``┌─ wgsl:LINE:COLUMN`` (parse errors) or ``┌─ LABEL:LINE:COLUMN`` (validation errors)
_NAGA_LOCATION = re.compile(r"┌─ [^\n]*?:(\d+):(\d+)")


_enumerated: list[Any] | None = None


def available_adapters() -> list[Any]:
    """wgpu's adapters, enumerated once per process (enumerating starts every API, about a second
    on lavapipe; an adapter can serve several devices). Raises BackendUnavailable when wgpu fails."""
    global _enumerated
    if _enumerated is None:
        ensure_runtime_dir()  # before Mesa's Vulkan loader starts, or it prints an error line per device
        try:
            _enumerated = list(wgpu.gpu.enumerate_adapters_sync())
        except Exception as exc:
            raise BackendUnavailable(f"wgpu could not enumerate adapters: {exc}") from exc
    return _enumerated


def rank_adapter(info: Mapping[str, Any]) -> tuple[int, int]:
    """Sort key of an adapter's info (lower is preferred): GPU before CPU, Vulkan/Metal/D3D12
    before OpenGL, so lavapipe's Vulkan adapter wins over its OpenGL one."""
    return (_ADAPTER_TYPE_RANK.get(info.get("adapter_type", ""), 4), _BACKEND_RANK.get(info.get("backend_type", ""), 2))


def naga_location(message: str) -> tuple[int | None, int | None]:
    """(line, column) of the first ``┌─ NAME:L:C`` span in a naga message, or (None, None)."""
    match = _NAGA_LOCATION.search(message)
    return (int(match.group(1)), int(match.group(2))) if match else (None, None)


class WgpuNativeDriver(GpuDriver):
    """A GpuDriver on one wgpu-py device.

    ``adapter``: a ``wgpu.GPUAdapter`` to use (default: the best one found,
    see ``rank_adapter``). ``optional_features``: features requested when the
    adapter offers them (default: shader-f16). The device is requested with the
    adapter's own limits, not WebGPU's defaults (128 MiB storage bindings).

    Raises BackendUnavailable when no adapter exists or no device can be made.
    """

    engine = "wgpu-native"

    def __init__(self, adapter: Any = None, optional_features: Sequence[str] = OPTIONAL_FEATURES) -> None:
        super().__init__()
        self._adapter = adapter if adapter is not None else self._best_adapter()
        wanted = [f for f in optional_features if f in self._adapter.features]
        try:
            self._device = self._adapter.request_device_sync(
                label="atlas-web", required_features=wanted, required_limits=dict(self._adapter.limits))
        except Exception as exc:  # wgpu raises plain RuntimeError / GPUError kinds here
            device = self._adapter.info["device"]
            raise BackendUnavailable(f"wgpu could not create a device on {device!r}: {exc}") from exc
        self._queue = self._device.queue
        self._adopt_device(self._device.features,
                           {limit_name(k): int(v) for k, v in self._device.limits.items() if isinstance(v, int)})
        self._staging = StagingPool(self._create_staging, lambda buffer: buffer.destroy(),
                                    max_buffer_size=self.limit("maxBufferSize"), max_pooled_bytes=_MAX_POOLED_STAGING)
        self._fence = self._device.create_buffer(size=4, usage=_STAGING_USAGE, label="atlas-fence")
        #: submitted since the GPU was last seen idle (a read or a wait finished): a submission may block
        self._busy = False
        self._off = OffThread("atlas-wgpu")

    @staticmethod
    def _best_adapter() -> Any:
        adapters = available_adapters()
        if not adapters:
            raise BackendUnavailable(
                "wgpu found no GPU adapter (no Vulkan/Metal/D3D12/OpenGL driver; on Linux without a GPU, "
                "install Mesa's lavapipe: mesa-vulkan-drivers)")
        return min(adapters, key=lambda a: rank_adapter(a.info))

    # ---- the device -------------------------------------------------------------------------
    def adapter_info(self) -> dict[str, str]:
        info = self._adapter.info
        fields = ("vendor", "architecture", "device", "description")
        out = {name: str(info.get(name, "")) for name in fields}
        out["backend"] = str(info.get("backend_type", ""))
        out["adapter_type"] = str(info.get("adapter_type", "unknown"))
        out["engine"] = f"{self.engine} (wgpu-py {wgpu.__version__})"
        return out

    @property
    def waiting_off_thread(self) -> bool:
        """Whether an engine call that waits for the GPU is running on the worker thread now (its caller
        waiting for it in Python, or gone: interrupted or cancelled)."""
        return self._off.running

    def submit_and_wait(self) -> None:
        """Block until every submitted command has finished (interruptibly: see the module docstring)."""
        self._check_open()
        self._blocking(self._wait_now)

    async def submit_and_wait_async(self) -> None:
        self._check_open()
        await self._blocking_async(self._wait_now)

    def _wait_now(self) -> None:
        # wgpu-py 0.32's on_submitted_work_done passes a callback of the wrong C type (TypeError),
        # so wait on a fence instead: the queue runs in order, so once a clear submitted now has
        # finished (its buffer maps), every earlier submission has finished too.
        if not self._busy:
            return
        self._submit_now(lambda encoder: encoder.clear_buffer(self._fence, 0, 4), "waiting for the GPU")
        try:
            self._fence.map_sync(wgpu.MapMode.READ, 0, 4)
            self._fence.unmap()
        except Exception as exc:
            raise ExecutionFailed(f"waiting for the GPU failed: {_first_line(exc)}") from exc
        self._busy = False

    def _blocking(self, work: Callable[[], Any]) -> Any:
        """``work()`` (engine calls that may wait for the GPU): at once when the GPU is idle, else on the
        worker thread, waited for interruptibly."""
        self._off.settle()
        return self._off.call(work) if self._busy else work()

    async def _blocking_async(self, work: Callable[[], Any]) -> Any:
        """As ``_blocking``, awaiting the worker (the event loop turns while the GPU finishes)."""
        await self._off.settle_async()
        return await self._off.call_async(work) if self._busy else work()

    # ---- engine hooks ----------------------------------------------------------------------------
    def _native_create_buffer(self, size: int, usage: BufferUsage) -> Any:
        try:
            return self._device.create_buffer(size=size, usage=int(usage))
        except (wgpu.GPUError, MemoryError) as exc:
            raise AllocationFailed(f"the device could not allocate {size} bytes: {_first_line(exc)}") from exc

    def _native_destroy_buffer(self, native: Any) -> None:
        native.destroy()

    def _native_write(self, native: Any, offset: int, data: memoryview) -> None:
        self._queue.write_buffer(native, offset, data)

    def _create_staging(self, size: int) -> Any:
        try:
            return self._device.create_buffer(size=size, usage=_STAGING_USAGE, label="atlas-staging")
        except (wgpu.GPUError, MemoryError) as exc:
            raise ExecutionFailed(f"no staging memory for reading {size} bytes back: {_first_line(exc)}") from exc

    def _copy_to_staging(self, native: Any, offset: int, size: int) -> tuple[int, Any]:
        staging = self._staging.take(size)
        try:
            self._submit_now(lambda encoder: encoder.copy_buffer_to_buffer(native, offset, staging[1], 0, size),
                                f"reading {size} bytes back")
        except BaseException:
            self._staging.give_back(staging)   # never mapped: it serves the next read
            raise
        return staging

    @contextlib.contextmanager
    def _reading(self, staging: tuple[int, Any], size: int) -> Iterator[None]:
        """Destroy ``staging`` and raise ExecutionFailed when the block (mapping or reading it) fails."""
        try:
            yield
        except Exception as exc:
            staging[1].destroy()
            raise ExecutionFailed(f"reading {size} bytes back from the GPU failed: {_first_line(exc)}") from exc

    def _unmapped_copy(self, staging: tuple[int, Any], size: int) -> memoryview:
        """The first ``size`` bytes of the mapped ``staging`` (a copy); the buffer goes back to the pool."""
        with self._reading(staging, size):
            data = staging[1].read_mapped(0, size, copy=True)
            staging[1].unmap()
        self._staging.give_back(staging)
        return data

    def _read_now(self, native: Any, offset: int, size: int) -> memoryview:
        staging = self._copy_to_staging(native, offset, size)
        with self._reading(staging, size):
            staging[1].map_sync(wgpu.MapMode.READ, 0, size)
        self._busy = False          # the copy finished, and with it every earlier submission
        return self._unmapped_copy(staging, size)

    def _native_read(self, native: Any, offset: int, size: int) -> memoryview:
        return self._blocking(lambda: self._read_now(native, offset, size))

    async def _native_read_async(self, native: Any, offset: int, size: int) -> memoryview:
        # mapped on the worker with map_sync, not with map_async: no callback of wgpu's poll thread
        # then calls into an event loop (a cancelled read's callback found the loop closed)
        return await self._blocking_async(lambda: self._read_now(native, offset, size))

    def _native_copy(self, source: Any, source_offset: int, destination: Any, destination_offset: int,
                     size: int) -> None:
        self._native_submit(lambda encoder: encoder.copy_buffer_to_buffer(
            source, source_offset, destination, destination_offset, size), "the copy")

    def _native_clear(self, native: Any, offset: int, size: int) -> None:
        self._native_submit(lambda encoder: encoder.clear_buffer(native, offset, size), "the clear")

    def _native_compile(self, source: str, label: str) -> Any:
        try:
            return self._device.create_shader_module(label=label, code=source)
        except wgpu.GPUError as exc:
            message = str(exc.message if hasattr(exc, "message") else exc)
            line, column = naga_location(message)
            raise ShaderCompilationError(message, source=source, line=line, column=column,
                                         stage="module", label=label) from None

    def _native_create_pipeline(self, module: ShaderModule, entry_point: str,
                                layout: tuple[BindingSpec, ...]) -> tuple[Any, Any]:
        try:
            group_layout = self._device.create_bind_group_layout(entries=layout_entries(layout))
            pipeline_layout = self._device.create_pipeline_layout(bind_group_layouts=[group_layout])
            pipeline = self._device.create_compute_pipeline(
                layout=pipeline_layout, compute={"module": module.native, "entry_point": entry_point})
        except (wgpu.GPUError, wgpu.GPUPipelineError) as exc:
            message = str(exc)
            line, column = naga_location(message)
            raise ShaderCompilationError(message, source=module.source, line=line, column=column,
                                         stage="pipeline", label=f"{module.native.label}:{entry_point}") from None
        return pipeline, group_layout

    def _native_create_bind_group(self, pipeline: ComputePipeline, bindings: tuple[ResolvedBinding, ...]) -> Any:
        try:
            return self._device.create_bind_group(layout=pipeline.native_bind_group_layout,
                                                  entries=bind_group_entries(bindings))
        except wgpu.GPUError as exc:
            raise ExecutionFailed(f"binding buffers to {pipeline.entry_point!r} failed: {_first_line(exc)}") from exc

    def _native_submit(self, record: Callable[[Any], None], what: str) -> None:
        self._blocking(lambda: self._submit_now(record, what))

    def _submit_now(self, record: Callable[[Any], None], what: str) -> None:
        self._busy = True
        encoder = self._device.create_command_encoder()
        try:
            record(encoder)
            self._queue.submit([encoder.finish()])
        except wgpu.GPUError as exc:
            raise ExecutionFailed(f"{what} was refused by wgpu: {_first_line(exc)}") from exc

    def _native_compute_pass(self, encoder: Any, pipeline: Any, bind_group: Any,
                             workgroups: tuple[int, int, int]) -> None:
        compute_pass = encoder.begin_compute_pass()
        compute_pass.set_pipeline(pipeline)
        compute_pass.set_bind_group(0, bind_group)
        compute_pass.dispatch_workgroups(*workgroups)
        compute_pass.end()

    def _native_close(self) -> None:
        self._off.close()
        self._staging.clear()
        self._device.destroy()


def _first_line(exc: BaseException) -> str:
    """The most specific line of a wgpu error (its messages open with 'Validation Error')."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    meaningful = [ln for ln in lines if ln not in ("Validation Error", "Caused by:") and not ln.startswith("In wgpu")]
    return meaningful[-1] if meaningful else (lines[0] if lines else type(exc).__name__)
