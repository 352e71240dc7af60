"""``atlas_web.kernels``: the LLM inference kernels (the torchless seed's ``KernelBackend``) over any
atlas-web backend, backend selection with fallback, and the memory estimate. See docs/kernels.md.

    from atlas_web.kernels import best_available_backend
    kb = best_available_backend()
    y = kb.matmul_vec(kb.tensor(w), kb.tensor(x))
"""

from __future__ import annotations

from typing import Any

from ..registry import BackendPreference, init_backend
from ..registry import init_backend_with_memory_check as _init_checked
from .backend import KernelBackend
from .memory import DeviceInfo, MemoryEstimate, device_info, estimate_inference_memory

__all__ = ["KernelBackend", "BackendPreference", "best_available_backend", "init_kernel_backend",
           "init_backend_with_memory_check", "estimate_inference_memory", "MemoryEstimate", "DeviceInfo",
           "device_info"]


def init_kernel_backend(preference: BackendPreference | str = BackendPreference.AUTO, **options: Any) -> KernelBackend:
    """A KernelBackend on the backend ``atlas_web.registry.init_backend(preference)`` starts (AUTO falls back
    from webgpu to wasm to cpu as the registry does). Raises BackendUnavailable."""
    return KernelBackend(init_backend(preference, **options))


def best_available_backend() -> KernelBackend:
    """``init_kernel_backend(BackendPreference.AUTO)``: the best backend that starts here."""
    return init_kernel_backend(BackendPreference.AUTO)


def init_backend_with_memory_check(preference: BackendPreference | str, needed: MemoryEstimate | int,
                                   **options: Any) -> KernelBackend:
    """A KernelBackend on the first backend (in ``preference``'s order) that can hold ``needed`` (an
    estimate's ``total_bytes``, or bytes). Raises AllocationFailed when every backend that started is too
    small, BackendUnavailable when none started."""
    nbytes = needed.total_bytes if isinstance(needed, MemoryEstimate) else needed
    return KernelBackend(_init_checked(preference, nbytes, **options))
