"""Host-side byte views for the copies of the backends that keep device memory in NumPy-visible bytes.

``source_bytes`` views the data to copy in (no copy when it is contiguous); ``target_bytes`` views a
writable destination (never a copy). Both raise InvalidBuffer naming the call for objects that do not
fit. Imports NumPy: only backends that have it import this module.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import InvalidBuffer

__all__ = ["source_bytes", "target_bytes"]


def source_bytes(data: Any, what: str) -> np.ndarray:
    """The bytes of a buffer-protocol object as a flat uint8 array (a view when it is contiguous, else
    one copy). Raises InvalidBuffer for an object without the buffer protocol."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    try:
        view = memoryview(data)
    except TypeError:
        raise InvalidBuffer(f"{what}: data must support the buffer protocol (bytes, array, NumPy array), "
                            f"got {type(data).__name__}") from None
    if not view.contiguous:
        view = memoryview(view.tobytes())
    return np.frombuffer(view.cast("B"), dtype=np.uint8)


def target_bytes(out: Any, what: str) -> np.ndarray:
    """A writable flat uint8 array over ``out`` (a writable contiguous buffer-protocol object), no copy.
    Raises InvalidBuffer for anything else."""
    if isinstance(out, np.ndarray):
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise InvalidBuffer(f"{what}: out must be a writable C-contiguous array")
        return out.reshape(-1).view(np.uint8)
    try:
        view = memoryview(out)
    except TypeError:
        raise InvalidBuffer(f"{what}: out must be a writable buffer, got {type(out).__name__}") from None
    if view.readonly or not view.contiguous:
        raise InvalidBuffer(f"{what}: out must be a writable contiguous buffer")
    return np.frombuffer(view.cast("B"), dtype=np.uint8)
