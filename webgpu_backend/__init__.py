"""The WebGPU backend of atlas-web: Atlas programs as WGSL compute shaders.

``WebGpuBackend`` (registry name "webgpu", ``backend``) verifies and lowers programs, generates one
WGSL compute shader per stage and a kernel per cooperative step (``wgsl``), keeps buffers and
pools in a few large storage buffers (``memory``) and runs launches (``launcher``). Beneath it:

- ``driver.GpuDriver``: the engine-neutral driver interface (buffers, WGSL
  modules, cached pipelines, dispatches in one submit, sync and async
  readback), with limits under WebGPU's camelCase names;
- ``drivers.default_driver()``: picks the engine once, by ``sys.platform``
  (wgpu-py natively, ``navigator.gpu`` under Pyodide);
- ``errors.ShaderCompilationError``: WGSL the engine refuses, with its line;
- ``resources``: buffers, usages, binding layouts, dispatch commands.

Importing the package imports neither ``wgpu`` nor ``js``; only the chosen
driver module does.
"""

from __future__ import annotations

from .backend import WebGpuBackend
from .driver import OPTIONAL_FEATURES, REQUIRED_LIMITS, GpuDriver
from .drivers import default_driver, driver_class
from .errors import ShaderCompilationError
from .resources import (
    BindingKind, BindingSpec, BufferBinding, BufferUsage, ComputePipeline, DispatchCommand, GpuBuffer, ShaderModule,
    split_workgroups,
)

__all__ = [
    "WebGpuBackend", "GpuDriver", "default_driver", "driver_class", "ShaderCompilationError", "BufferUsage",
    "BindingKind",
    "BindingSpec", "BufferBinding", "GpuBuffer", "ShaderModule", "ComputePipeline", "DispatchCommand",
    "split_workgroups", "REQUIRED_LIMITS", "OPTIONAL_FEATURES",
]
