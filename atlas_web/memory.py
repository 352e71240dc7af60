"""Handle table and arena allocator shared by the backends.

Handles are ints numbered from 2 (1 is the boundary memory, 0 is never valid)
and never reused within a backend, so the same allocation sequence gives the
same handles everywhere and a stale pointer traps INVALID_HANDLE instead of
aliasing a newer buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import AllocationFailed, InvalidBuffer
from .isa.addresses import BOUNDARY_BYTES, BOUNDARY_HANDLE, MAX_HANDLE, MAX_OFFSET

__all__ = ["Allocation", "HandleTable", "MAX_ALLOCATION"]

#: the largest buffer or pool: offsets in pointers are 32 bits
MAX_ALLOCATION = MAX_OFFSET + 1


@dataclass(slots=True)
class Allocation:
    """One live buffer or pool: its handle, kind ("buffer", "pool" or "boundary"), size,
    and ``base``, the byte offset of its storage in the backend's arena (0 where a
    backend stores allocations separately)."""

    handle: int
    kind: str
    size: int
    base: int = 0


class HandleTable:
    """Live allocations by handle. The boundary memory is entry 1 from the start."""

    def __init__(self) -> None:
        self._live: dict[int, Allocation] = {BOUNDARY_HANDLE: Allocation(BOUNDARY_HANDLE, "boundary", BOUNDARY_BYTES)}
        self._next = BOUNDARY_HANDLE + 1

    @staticmethod
    def check_size(size: object, what: str) -> int:
        """``size`` as an int in 0 … MAX_ALLOCATION; raises AllocationFailed otherwise."""
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise AllocationFailed(f"{what} size must be a non-negative int, got {size!r}")
        if size > MAX_ALLOCATION:
            raise AllocationFailed(f"{what} of {size} bytes asked; the limit is {MAX_ALLOCATION} bytes (32-bit offsets)")
        return size

    def add(self, kind: str, size: int, base: int = 0) -> Allocation:
        """Register a new allocation and return it with its fresh handle."""
        if self._next > MAX_HANDLE:
            raise AllocationFailed("no handles left: 2**32 - 2 allocations were made on this backend")
        alloc = Allocation(self._next, kind, size, base)
        self._live[self._next] = alloc
        self._next += 1
        return alloc

    def get(self, handle: object, kind: str | None = None) -> Allocation:
        """The live allocation of ``handle`` (of ``kind`` when given); raises InvalidBuffer."""
        alloc = self._live.get(handle) if isinstance(handle, int) else None
        if alloc is None:
            raise InvalidBuffer(f"handle {handle!r} names no live buffer or pool")
        if kind is not None and alloc.kind != kind and not (kind == "buffer" and alloc.kind == "boundary"):
            raise InvalidBuffer(f"handle {int(handle)} is a {alloc.kind}, not a {kind}")
        return alloc

    def lookup(self, handle: int) -> Allocation | None:
        """The live allocation of ``handle`` or None (for device-side checks)."""
        return self._live.get(handle)

    def remove(self, handle: object, kind: str) -> Allocation:
        """Forget a live allocation of ``kind``; raises InvalidBuffer (also for the boundary memory)."""
        alloc = self.get(handle, kind)
        if alloc.kind == "boundary":
            raise InvalidBuffer("the boundary memory (handle 1) belongs to the backend and cannot be freed")
        del self._live[alloc.handle]
        return alloc

    def check_range(self, alloc: Allocation, offset: object, length: int, what: str) -> int:
        """Raise InvalidBuffer unless ``[offset, offset + length)`` lies inside ``alloc``; return offset."""
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise InvalidBuffer(f"{what}: offset must be a non-negative int, got {offset!r}")
        if offset + length > alloc.size:
            raise InvalidBuffer(
                f"{what}: bytes {offset}..{offset + length} are outside {alloc.kind} {alloc.handle} of {alloc.size} bytes")
        return offset

    def __iter__(self):
        return iter(self._live.values())

    def __len__(self) -> int:
        return len(self._live)
