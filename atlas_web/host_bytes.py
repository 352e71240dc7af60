"""Host-side byte views for the copies of every backend: any buffer-protocol object as a flat byte memoryview.

``source_bytes`` views the data to copy in (no copy when it is C-contiguous, else one); ``target_bytes``
views a writable destination (never a copy). Both raise InvalidBuffer naming the call for objects that do
not fit. Only the standard library: this runs in the browser too, where Pyodide has no NumPy (NumPy
arrays are taken through their buffer protocol).
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidBuffer

__all__ = ["source_bytes", "target_bytes"]


def _flat(view: memoryview) -> memoryview:
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def source_bytes(data: Any, what: str) -> memoryview:
    """The bytes of a buffer-protocol object as a flat byte memoryview (a view when it is C-contiguous)."""
    try:
        view = memoryview(data)
    except (TypeError, ValueError):  # ValueError: a NumPy dtype without a buffer format
        raise InvalidBuffer(f"{what}: data must support the buffer protocol (bytes, array, NumPy array), "
                            f"got {type(data).__name__}") from None
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    return _flat(view)


def target_bytes(out: Any, what: str) -> memoryview:
    """A writable flat byte memoryview over ``out`` (a writable C-contiguous buffer-protocol object), no copy."""
    try:
        view = memoryview(out)
    except (TypeError, ValueError):
        raise InvalidBuffer(f"{what}: out must be a writable buffer, got {type(out).__name__}") from None
    if view.readonly or not view.c_contiguous:
        raise InvalidBuffer(f"{what}: out must be a writable C-contiguous buffer")
    return _flat(view)
