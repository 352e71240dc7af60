"""atlas-web: run Atlas ISA programs on NumPy, WebAssembly and WebGPU, natively and in the browser.

``import atlas_web`` needs only the standard library (Pyodide has no NumPy
offline); the reference backend and the registry load on first use.
``from atlas_web import *`` gives the ISA, programs, launches, errors, the
registry and, where NumPy is installed, ``CpuBackend``.
"""

from __future__ import annotations

from .backend import API_VERSION, Backend
from .errors import (
    AllocationFailed, ArrayError, AtlasError, AtlasTrap, BackendClosed, BackendUnavailable, ExecutionFailed, InvalidBuffer, ProgramError,
    TrapCode, UnsupportedOperation,
)
from .isa import *  # noqa: F401,F403 - the ISA is the package's vocabulary
from .isa import __all__ as _isa_all
from .launch import ExecutionParams, LaunchConfig
from .program import Program, ProgramBuilder

__version__ = "0.1.0"

# name -> (module, attribute), imported on first access (PEP 562)
_LAZY = {
    "CpuBackend": ("atlas_web.reference", "CpuBackend"),
    "parse_program": ("atlas_web.asm", "parse_program"),
    "verify": ("atlas_web.verify", "verify"),
    "ProgramCache": ("atlas_web.cache", "ProgramCache"),
    "RingBuffer": ("atlas_web.ring_buffer", "RingBuffer"),
    "Pool": ("atlas_web.ring_buffer", "RingBuffer"),  # its name before issue 9 (README, Caches and streaming)
    "register_backend": ("atlas_web.registry", "register_backend"),
    "discover_backends": ("atlas_web.registry", "discover_backends"),
    "print_backend_summary": ("atlas_web.registry", "print_backend_summary"),
    "get_backend": ("atlas_web.registry", "get_backend"),
    "init_backend": ("atlas_web.registry", "init_backend"),
    "init_backend_with_memory_check": ("atlas_web.registry", "init_backend_with_memory_check"),
    "BackendPreference": ("atlas_web.registry", "BackendPreference"),
    "BackendStatus": ("atlas_web.registry", "BackendStatus"),
}


def __getattr__(name: str):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'atlas_web' has no attribute {name!r}") from None
    import importlib
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def _numpy_installed() -> bool:
    import importlib.util
    try:
        return importlib.util.find_spec("numpy") is not None
    except (ImportError, ValueError):  # ValueError: a None or spec-less entry in sys.modules
        return False


#: names that import NumPy on first access: left out of ``from atlas_web import *`` where NumPy is missing
_NEEDS_NUMPY = frozenset({"CpuBackend"})

__all__ = [
    "__version__", "API_VERSION", "Backend", "LaunchConfig", "ExecutionParams", "Program", "ProgramBuilder",
    "AtlasError", "ProgramError", "UnsupportedOperation", "AllocationFailed", "InvalidBuffer", "ExecutionFailed",
    "BackendUnavailable", "BackendClosed", "ArrayError", "AtlasTrap", "TrapCode", *_isa_all,
    *(name for name in _LAZY if name not in _NEEDS_NUMPY or _numpy_installed()),
]
