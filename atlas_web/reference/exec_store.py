"""The reference backend's device memory: buffers, pools and the boundary memory as NumPy byte arrays.

One HandleTable (atlas_web.memory) gives the handles (from 2, never reused;
handle 1 is the boundary memory of 96 x 12288 bytes, allocated here). Each
live handle owns one zero-initialised ``uint8`` array; ``limit`` optionally
caps the bytes of buffers and pools together (the boundary memory does not
count).
"""

from __future__ import annotations

import numpy as np

from ..errors import AllocationFailed
from ..isa.addresses import BOUNDARY_BYTES, BOUNDARY_HANDLE
from ..memory import MAX_ALLOCATION, Allocation, HandleTable

__all__ = ["MemoryStore"]


class MemoryStore:
    """Live allocations and their bytes.

    ``allocate`` raises AllocationFailed; ``free``/``get`` raise InvalidBuffer
    (from the HandleTable) for a handle that names nothing of the asked kind.
    """

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
            raise AllocationFailed(f"memory_limit must be a non-negative int or None, got {limit!r}")
        self.table = HandleTable()
        self.limit = limit
        self.used = 0
        self._arrays: dict[int, np.ndarray] = {BOUNDARY_HANDLE: np.zeros(BOUNDARY_BYTES, dtype=np.uint8)}

    def allocate(self, kind: str, size: int) -> Allocation:
        """A new zero-filled allocation of ``kind`` ("buffer" or "pool"); raises AllocationFailed."""
        size = HandleTable.check_size(size, kind)
        if self.limit is not None and self.used + size > self.limit:
            raise AllocationFailed(
                f"{kind} of {size} bytes asked; {self.limit - self.used} of the backend's memory_limit of "
                f"{self.limit} bytes are free")
        try:
            data = np.zeros(size, dtype=np.uint8)
        except MemoryError:
            raise AllocationFailed(f"{kind} of {size} bytes asked; the host could not provide it") from None
        alloc = self.table.add(kind, size)
        self._arrays[alloc.handle] = data
        self.used += size
        return alloc

    def free_bytes(self) -> int:
        """The most bytes one more allocation may have now (a POOL_EXHAUSTED trap reports it)."""
        return MAX_ALLOCATION if self.limit is None else min(MAX_ALLOCATION, self.limit - self.used)

    def free(self, handle: object, kind: str) -> None:
        """Release a live allocation of ``kind``; raises InvalidBuffer."""
        alloc = self.table.remove(handle, kind)
        del self._arrays[alloc.handle]
        self.used -= alloc.size

    def get(self, handle: object, kind: str | None = None) -> tuple[Allocation, np.ndarray]:
        """``(allocation, bytes)`` of a live handle (of ``kind`` when given); raises InvalidBuffer."""
        alloc = self.table.get(handle, kind)
        return alloc, self._arrays[alloc.handle]

    def lookup(self, handle: int) -> tuple[Allocation, np.ndarray] | None:
        """``(allocation, bytes)`` of a live handle, or None (device-side checks)."""
        alloc = self.table.lookup(handle)
        return None if alloc is None else (alloc, self._arrays[alloc.handle])
