"""The GPU driver over the browser's ``navigator.gpu``, through Pyodide (``sys.platform == "emscripten"``).

Imports ``js`` and ``pyodide.ffi`` at import time: ``drivers.default_driver``
imports this module only under Pyodide.

The device. WebGPU hands out adapters and devices asynchronously. ``await
JsWebGpuDriver.create()`` works everywhere; the plain constructor blocks on the
same promises with ``run_sync``, which needs JS Promise Integration and a call
entered through ``runPythonAsync`` or a coroutine (``can_run_sync()``), and
raises BackendUnavailable saying so otherwise. The device is requested with
the adapter's own limits as ``requiredLimits`` (without them WebGPU gives the
defaults: 128 MiB storage bindings) and with the OPTIONAL_FEATURES the adapter
offers (``shader-f16``; SwiftShader lacks it). A fresh adapter is requested
per driver: WebGPU lets an adapter make one device.

Waiting. Reading a buffer back waits for ``mapAsync``: ``read_buffer_async``
awaits it; ``read_buffer`` (and ``submit_and_wait``) block on it with
``run_sync`` where it can run and otherwise raise ExecutionFailed explaining
why and naming the async call to use instead.

Errors. ``createShaderModule`` reports WGSL errors through
``getCompilationInfo()`` (Tint's messages with line and column), which becomes
ShaderCompilationError; pipeline creation is checked in a validation error
scope and buffer creation in an out-of-memory scope. These answers are
asynchronous: they are awaited at once with ``run_sync`` where it can run,
otherwise at the next ``read_buffer_async`` (the first await point), which
raises the error then. Errors no scope caught (``uncapturederror``) and a lost
device are raised as ExecutionFailed at the next read.

Copies. ``write_buffer`` hands ``queue.writeBuffer`` a view of Python's bytes
in Pyodide's heap (``PyProxy.getBuffer``): one copy, into WebGPU's staging.
Reads copy once out of the mapped staging buffer into a new ``bytes``.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Sequence

import js
from pyodide.ffi import JsException, can_run_sync, create_once_callable, create_proxy, run_sync, to_js

from atlas_web.errors import AllocationFailed, BackendUnavailable, ExecutionFailed
from atlas_web.user_agent import this_browser

from ..driver import OPTIONAL_FEATURES, GpuDriver, ResolvedBinding, bind_group_entries, layout_entries
from ..errors import ShaderCompilationError
from ..resources import BindingSpec, ComputePipeline, ShaderModule
from .staging import StagingPool

__all__ = ["JsWebGpuDriver", "adapter_limits", "compilation_errors"]

#: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST: the staging buffers reads go through
_STAGING_USAGE = 0x0001 | 0x0008
_MAP_READ = 0x0001
#: idle staging memory kept for reuse
_MAX_POOLED_STAGING = 64 << 20
#: why a synchronous wait cannot happen here (the messages of BackendUnavailable and ExecutionFailed end with it)
_NO_RUN_SYNC = ("a synchronous call can wait for WebGPU only through pyodide.ffi.run_sync, which needs JS Promise "
                "Integration and a call entered through runPythonAsync or a coroutine (can_run_sync() is False here)")


def _js(value: Any) -> Any:
    """A Python dict / list tree as JS objects and arrays (JS proxies inside pass through)."""
    return to_js(value, dict_converter=js.Object.fromEntries)


def adapter_limits(limits: Any) -> dict[str, int]:
    """Every limit of a ``GPUSupportedLimits`` by its WebGPU name (the attributes of its prototype)."""
    names = js.Object.getOwnPropertyNames(js.Object.getPrototypeOf(limits))
    values = {str(name): getattr(limits, name) for name in names if name != "constructor"}
    return {name: int(value) for name, value in values.items() if isinstance(value, (int, float))}


def compilation_errors(info: Any) -> list[tuple[str, int | None, int | None]]:
    """(message, line, column) of each error in a ``GPUCompilationInfo`` (lines and columns 1-based)."""
    errors = []
    for message in info.messages:
        if message.type == "error":
            line = int(message.lineNum) or None
            errors.append((str(message.message), line, (int(message.linePos) or None) if line else None))
    return errors


async def _open_device(optional_features: Sequence[str]) -> tuple[Any, Any, list[str]]:
    """(adapter, device, features asked) from navigator.gpu; raises BackendUnavailable."""
    gpu = getattr(js.navigator, "gpu", None)
    if not gpu:
        raise BackendUnavailable("this browser offers no navigator.gpu (WebGPU is off, or the page is not a "
                                 "secure context; headless Chromium needs --enable-unsafe-webgpu)")
    adapter = await gpu.requestAdapter()
    if not adapter:
        raise BackendUnavailable("navigator.gpu.requestAdapter() found no adapter (no GPU, and no software "
                                 "adapter such as SwiftShader enabled)")
    wanted = [name for name in optional_features if adapter.features.has(name)]
    descriptor = {"label": "atlas-web", "requiredFeatures": wanted,
                  "requiredLimits": adapter_limits(adapter.limits)}
    try:
        device = await adapter.requestDevice(_js(descriptor))
    except JsException as exc:
        raise BackendUnavailable(f"the WebGPU adapter refused a device: {exc.name}: {exc.message}") from None
    return adapter, device, wanted


class JsWebGpuDriver(GpuDriver):
    """A GpuDriver on one ``navigator.gpu`` device (see the module docstring).

    ``optional_features``: features requested when the adapter offers them
    (default: shader-f16). Raises BackendUnavailable when there is no WebGPU,
    no adapter, no device, or when the device cannot be waited for here (use
    ``await JsWebGpuDriver.create()`` then).
    """

    engine = "navigator.gpu"

    def __init__(self, optional_features: Sequence[str] = OPTIONAL_FEATURES, *,
                 _opened: tuple[Any, Any, list[str]] | None = None) -> None:
        super().__init__()
        if _opened is None:
            if not can_run_sync():
                raise BackendUnavailable(f"opening a WebGPU device waits for promises: {_NO_RUN_SYNC}; "
                                         "use `await JsWebGpuDriver.create()` and pass it as WebGpuBackend(driver=)")
            _opened = run_sync(_open_device(optional_features))
        self._adapter, self._device, _ = _opened
        self._queue = self._device.queue
        self._adopt_device(self._device.features.keys(), adapter_limits(self._device.limits))
        self._staging = StagingPool(self._create_staging, lambda buffer: buffer.destroy(),
                                    max_buffer_size=self.limit("maxBufferSize"), max_pooled_bytes=_MAX_POOLED_STAGING)
        #: checks whose answer is a promise, kept until the next await point where run_sync cannot wait
        self._deferred: list[Callable[[], Awaitable[None]]] = []
        self._device_errors: list[str] = []
        self._on_error = create_proxy(self._uncaptured)
        self._device.addEventListener("uncapturederror", self._on_error)
        self._device.lost.then(create_once_callable(self._lost))

    @classmethod
    async def create(cls, optional_features: Sequence[str] = OPTIONAL_FEATURES) -> "JsWebGpuDriver":
        """A driver opened by awaiting navigator.gpu (works without run_sync); raises BackendUnavailable."""
        return cls(optional_features, _opened=await _open_device(optional_features))

    def _uncaptured(self, event: Any) -> None:
        """Keep an error no scope caught for the next read to raise (and keep it off the console)."""
        event.preventDefault()
        self._device_errors.append(str(event.error.message))

    def _lost(self, info: Any) -> None:
        if not self._closed:
            self._device_errors.append(f"the WebGPU device was lost ({info.reason}): {info.message}")

    # ---- the device -------------------------------------------------------------------------
    def adapter_info(self) -> dict[str, str]:
        info = self._adapter.info
        fields = ("vendor", "architecture", "device", "description")
        out = {name: str(getattr(info, name, "") or "") for name in fields}
        if not out["device"]:
            out["device"] = out["description"] or " ".join(filter(None, (out["vendor"], out["architecture"])))
        out["backend"] = "WebGPU"
        out["adapter_type"] = "CPU" if getattr(info, "isFallbackAdapter", False) else "unknown"
        out["engine"] = f"{self.engine} ({this_browser()})"
        return out

    def submit_and_wait(self) -> None:
        self._check_open()
        self._wait(self._queue.onSubmittedWorkDone, "submit_and_wait", "read_buffer_async")
        self._raise_device_errors()

    async def submit_and_wait_async(self) -> None:
        self._check_open()
        await self._run_deferred()
        await self._queue.onSubmittedWorkDone()
        self._raise_device_errors()

    # ---- waiting ----------------------------------------------------------------------------------
    def _wait(self, start: Callable[[], Awaitable[Any]], what: str, instead: str) -> Any:
        """The value of the awaitable ``start()`` makes, blocking with run_sync; raises ExecutionFailed
        (before starting anything) where run_sync cannot wait."""
        if not can_run_sync():
            raise ExecutionFailed(f"{what} must wait for the GPU, and {_NO_RUN_SYNC}; await {instead} instead")
        return run_sync(start())

    def _check_later_or_now(self, check: Callable[[], Awaitable[None]]) -> None:
        """Run an asynchronous check now (run_sync) where possible, else at the next await point."""
        if can_run_sync():
            run_sync(check())
        else:
            self._deferred.append(check)

    async def _run_deferred(self) -> None:
        """Await every pending check; raise the first failure (after all have run)."""
        checks, self._deferred = self._deferred, []
        failures = []
        for check in checks:
            try:
                await check()
            except (ShaderCompilationError, AllocationFailed) as failure:
                failures.append(failure)
        if failures:
            raise failures[0]

    def _raise_device_errors(self) -> None:
        if self._device_errors:
            errors, self._device_errors = self._device_errors, []
            raise ExecutionFailed("the WebGPU device reported: " + "; ".join(errors))

    # ---- engine hooks ----------------------------------------------------------------------------
    def _native_create_buffer(self, size: int, usage: Any) -> Any:
        self._device.pushErrorScope("out-of-memory")
        try:
            buffer = self._device.createBuffer(_js({"size": size, "usage": int(usage)}))
        except JsException as exc:
            self._device.popErrorScope()
            raise AllocationFailed(f"the device could not allocate {size} bytes: {exc.message}") from None
        scope = self._device.popErrorScope()

        async def check() -> None:
            error = await scope
            if error:
                raise AllocationFailed(f"the device could not allocate {size} bytes: {error.message}")

        self._check_later_or_now(check)
        return buffer

    def _native_destroy_buffer(self, native: Any) -> None:
        native.destroy()

    def _native_write(self, native: Any, offset: int, data: memoryview) -> None:
        proxy = create_proxy(data)
        try:
            view = proxy.getBuffer("u8")
            try:
                self._queue.writeBuffer(native, offset, view.data)
            finally:
                view.release()
        finally:
            proxy.destroy()

    def _create_staging(self, size: int) -> Any:
        return self._device.createBuffer(_js({"size": size, "usage": _STAGING_USAGE, "label": "atlas-staging"}))

    def _copy_to_staging(self, native: Any, offset: int, size: int) -> tuple[int, Any]:
        staging = self._staging.take(size)
        try:
            self._native_submit(lambda encoder: encoder.copyBufferToBuffer(native, offset, staging[1], 0, size),
                                f"reading {size} bytes back")
        except BaseException:
            self._staging.give_back(staging)   # never mapped: it serves the next read
            raise
        return staging

    def _native_read(self, native: Any, offset: int, size: int) -> memoryview:
        self._check_open()
        return self._wait(lambda: self._native_read_async(native, offset, size), f"reading {size} bytes back",
                          "read_buffer_async (WebGpuBackend.execute_async)")

    async def _native_read_async(self, native: Any, offset: int, size: int) -> memoryview:
        await self._run_deferred()
        staging = self._copy_to_staging(native, offset, size)
        try:
            await staging[1].mapAsync(_MAP_READ, 0, size)
            data = js.Uint8Array.new(staging[1].getMappedRange(0, size)).to_bytes()
            staging[1].unmap()
        except JsException as exc:
            staging[1].destroy()
            self._raise_device_errors()
            raise ExecutionFailed(f"reading {size} bytes back from the GPU failed: {exc.message}") from None
        self._staging.give_back(staging)
        self._raise_device_errors()
        return memoryview(data)

    def _native_copy(self, source: Any, source_offset: int, destination: Any, destination_offset: int,
                     size: int) -> None:
        self._native_submit(lambda encoder: encoder.copyBufferToBuffer(
            source, source_offset, destination, destination_offset, size), "the copy")

    def _native_clear(self, native: Any, offset: int, size: int) -> None:
        self._native_submit(lambda encoder: encoder.clearBuffer(native, offset, size), "the clear")

    def _native_compile(self, source: str, label: str) -> Any:
        # the scope takes the validation error of bad WGSL (else it would surface as uncaptured later);
        # getCompilationInfo gives the same errors with lines and columns
        self._device.pushErrorScope("validation")
        module = self._device.createShaderModule(_js({"label": label, "code": source}))
        scope = self._device.popErrorScope()

        async def check() -> None:
            scope_error = await scope
            errors = compilation_errors(await module.getCompilationInfo())
            if scope_error and not errors:
                errors = [(str(scope_error.message), None, None)]
            if errors:
                message = "\n".join(f"{label}:{line}:{column}: error: {text}" if line else f"error: {text}"
                                    for text, line, column in errors)
                raise ShaderCompilationError(message, source=source, line=errors[0][1], column=errors[0][2],
                                             stage="module", label=label)

        self._check_later_or_now(check)
        return module

    def _native_create_pipeline(self, module: ShaderModule, entry_point: str,
                                layout: tuple[BindingSpec, ...]) -> tuple[Any, Any]:
        label = f"{module.native.label}:{entry_point}"
        self._device.pushErrorScope("validation")
        try:
            group_layout = self._device.createBindGroupLayout(_js({"entries": layout_entries(layout)}))
            pipeline_layout = self._device.createPipelineLayout(_js({"bindGroupLayouts": [group_layout]}))
            pipeline = self._device.createComputePipeline(_js({
                "label": label, "layout": pipeline_layout,
                "compute": {"module": module.native, "entryPoint": entry_point}}))
        except JsException as exc:
            raise ShaderCompilationError(f"{exc.name}: {exc.message}", source=module.source, stage="pipeline",
                                         label=label) from None
        finally:
            scope = self._device.popErrorScope()

        async def check() -> None:
            error = await scope
            if error:
                raise ShaderCompilationError(str(error.message), source=module.source, stage="pipeline",
                                             label=label)

        self._check_later_or_now(check)
        return pipeline, group_layout

    def _native_create_bind_group(self, pipeline: ComputePipeline, bindings: tuple[ResolvedBinding, ...]) -> Any:
        try:
            return self._device.createBindGroup(_js({"layout": pipeline.native_bind_group_layout,
                                                     "entries": bind_group_entries(bindings)}))
        except JsException as exc:
            raise ExecutionFailed(f"binding buffers to {pipeline.entry_point!r} failed: {exc.message}") from None

    def _native_submit(self, record: Callable[[Any], None], what: str) -> None:
        encoder = self._device.createCommandEncoder()
        try:
            record(encoder)
            self._queue.submit(_js([encoder.finish()]))
        except JsException as exc:
            raise ExecutionFailed(f"{what} was refused by WebGPU: {exc.message}") from None

    def _native_compute_pass(self, encoder: Any, pipeline: Any, bind_group: Any,
                             workgroups: tuple[int, int, int]) -> None:
        compute_pass = encoder.beginComputePass()
        compute_pass.setPipeline(pipeline)
        compute_pass.setBindGroup(0, bind_group)
        compute_pass.dispatchWorkgroups(*workgroups)
        compute_pass.end()

    def _native_close(self) -> None:
        self._staging.clear()
        self._device.removeEventListener("uncapturederror", self._on_error)
        self._on_error.destroy()
        self._device.destroy()

