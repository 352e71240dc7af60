"""GPU driver selection: the ONE place that picks the engine for this platform.

In Pyodide (``sys.platform == "emscripten"``) the driver over ``navigator.gpu``
is used (module ``webgpu_backend.drivers.js_webgpu``); everywhere else the
wgpu-py driver. The modules are imported only when chosen, so a native run
never imports ``js`` and a browser run never imports ``wgpu``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from atlas_web.errors import BackendUnavailable

__all__ = ["default_driver", "driver_class", "DRIVERS"]

#: platform -> (module, class, what the module needs); "*" is every other platform
DRIVERS: dict[str, tuple[str, str, str]] = {
    "emscripten": ("webgpu_backend.drivers.js_webgpu", "JsWebGpuDriver", "Pyodide's js module and navigator.gpu"),
    "*": ("webgpu_backend.drivers.wgpu_native", "WgpuNativeDriver", "wgpu-py (pip install wgpu)"),
}


def driver_class(platform: str | None = None) -> type:
    """The GpuDriver class for ``platform`` (default ``sys.platform``), imported on demand.

    Raises BackendUnavailable when its module cannot be imported (wgpu-py missing).
    """
    module_name, class_name, needs = DRIVERS.get(platform or sys.platform, DRIVERS["*"])
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(f"the WebGPU driver {class_name} needs {needs}: {exc}") from exc
    return getattr(module, class_name)


def default_driver(**options: Any):
    """A new driver for this platform (one device each: share it rather than making many).

    ``options`` go to the driver's constructor. Raises BackendUnavailable when the
    engine is missing or finds no adapter.
    """
    return driver_class()(**options)
