"""Runner implementations and the one place that picks one for the platform.

``RUNNERS`` maps a runner name to ``(module, class name)``, imported on first
use so that no engine package loads before it is asked for. Where no name is
given, ``DEFAULT_RUNNER_BY_PLATFORM`` picks by ``sys.platform`` (the browser
runner registers itself under ``"js"`` for ``"emscripten"``), and
``"wasmtime"`` elsewhere.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from atlas_web.errors import BackendUnavailable

from ..runner import WasmRunner

__all__ = ["RUNNERS", "DEFAULT_RUNNER_BY_PLATFORM", "register_runner", "create_runner", "runner_name"]

#: runner name -> (module, class name)
RUNNERS: dict[str, tuple[str, str]] = {
    "wasmtime": ("wasm_backend.runners.wasmtime_runner", "WasmtimeRunner"),
}

#: sys.platform -> runner name, for platforms whose default is not wasmtime
DEFAULT_RUNNER_BY_PLATFORM: dict[str, str] = {"emscripten": "js"}


def register_runner(name: str, module: str, class_name: str) -> None:
    """Make ``module.class_name`` (a WasmRunner subclass) available as runner ``name``."""
    RUNNERS[name] = (module, class_name)


def runner_name(name: str | None = None) -> str:
    """The runner ``create_runner(name)`` makes: ``name``, or the platform's default when None."""
    return name or DEFAULT_RUNNER_BY_PLATFORM.get(sys.platform, "wasmtime")


def create_runner(name: str | None = None, **options: Any) -> WasmRunner:
    """A new runner called ``name`` (default: the platform's), built with ``options``.

    Raises BackendUnavailable for an unknown name or an engine that cannot load here.
    """
    chosen = runner_name(name)
    try:
        module_name, class_name = RUNNERS[chosen]
    except KeyError:
        raise BackendUnavailable(f"no WebAssembly runner is registered as {chosen!r} "
                                 f"(registered: {', '.join(sorted(RUNNERS))})") from None
    try:
        runner_class = getattr(importlib.import_module(module_name), class_name)
    except ImportError as exc:
        raise BackendUnavailable(f"the {chosen!r} WebAssembly runner cannot load: {exc}") from None
    return runner_class(**options)


# the browser's WebAssembly API through Pyodide; its module imports ``js``, so only Emscripten can load it
register_runner("js", "wasm_backend.runners.js_runner", "JsRunner")
