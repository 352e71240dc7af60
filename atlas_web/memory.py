"""Handle table and arena allocator (``ArenaAllocator``) shared by the backends.

Handles are ints numbered from 2 (1 is the boundary memory, 0 is never valid)
and never reused within a backend, so the same allocation sequence gives the
same handles everywhere and a stale pointer traps INVALID_HANDLE instead of
aliasing a newer buffer.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from .errors import AllocationFailed, InvalidBuffer
from .isa.addresses import BOUNDARY_BYTES, BOUNDARY_HANDLE, MAX_HANDLE, MAX_OFFSET

__all__ = ["Allocation", "HandleTable", "MAX_ALLOCATION", "KIND_NONE", "KIND_BUFFER", "KIND_POOL", "KIND_BOUNDARY",
           "KIND_CODES"]

#: the largest buffer or pool: offsets in pointers are 32 bits
MAX_ALLOCATION = MAX_OFFSET + 1

#: the kind code of a handle in a compiled backend's device handle table (wasm linear memory, WebGPU
#: storage buffer), which generated code tests: none (handle 0, a freed handle), buffer, pool, boundary
KIND_NONE = 0
KIND_BUFFER = 1
KIND_POOL = 2
KIND_BOUNDARY = 3
#: Allocation.kind -> its code in the device table
KIND_CODES = {"buffer": KIND_BUFFER, "pool": KIND_POOL, "boundary": KIND_BOUNDARY}


@dataclass(slots=True)
class Allocation:
    """One live buffer or pool: its handle, kind ("buffer", "pool" or "boundary"), size,
    and ``base``, the byte offset of its storage in the backend's arena (0 where a
    backend stores allocations separately)."""

    handle: int
    kind: str
    size: int
    base: int = 0


def _is_handle(value: object) -> bool:
    """Whether ``value`` can be a handle: an int (BufferHandle, PoolHandle included) that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


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
            raise AllocationFailed(f"{what} of {size} bytes asked; the limit is {MAX_ALLOCATION} bytes "
                                   "(32-bit offsets)")
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
        """The live allocation of ``handle`` (of ``kind`` when given).

        Raises InvalidBuffer naming the handle when it is not an int (a bool is not a handle, though
        ``True == 1``), names no live allocation, or names one of another kind.
        """
        if not _is_handle(handle):
            raise InvalidBuffer(f"handle {handle!r} is not a handle: handles are ints, "
                                f"got {type(handle).__name__}")
        alloc = self._live.get(handle)
        if alloc is None:
            raise InvalidBuffer(f"handle {handle!r} names no live buffer or pool")
        if kind is not None and alloc.kind != kind and not (kind == "buffer" and alloc.kind == "boundary"):
            raise InvalidBuffer(f"handle {int(handle)} is a {alloc.kind}, not a {kind}")
        return alloc

    def lookup(self, handle: int) -> Allocation | None:
        """The live allocation of ``handle`` or None (for device-side checks; None for a non-int or bool)."""
        return self._live.get(handle) if _is_handle(handle) else None

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
                f"{what}: bytes {offset}..{offset + length} are outside {alloc.kind} {alloc.handle} of "
                f"{alloc.size} bytes")
        return offset

    def __iter__(self):
        return iter(self._live.values())

    def __len__(self) -> int:
        return len(self._live)


class ArenaAllocator:
    """First-fit allocation of byte ranges inside one growable arena (a wasm linear memory, a GPU
    storage buffer), with coalescing of freed neighbours and ``alignment``-byte alignment (16 by default).

    The arena spans ``[start, end)``; when no free range fits, ``grow(new_end)`` is asked to extend
    it to at least ``new_end`` (never beyond ``limit``) and returns the end it reached, or raises
    AllocationFailed. Offsets returned are absolute (``start`` included). Only bookkeeping happens
    here: no bytes are copied or zeroed. ``allocate`` raises AllocationFailed with the size asked
    and the bytes left; ``free`` raises InvalidBuffer for an offset that is not a live allocation.
    """

    def __init__(self, start: int, end: int, *, limit: int, grow=None, alignment: int = 16) -> None:
        if alignment < 1 or alignment & (alignment - 1):
            raise AllocationFailed(f"arena alignment must be a power of two, got {alignment}")
        if start % alignment:
            raise AllocationFailed(f"arena start {start} is not a multiple of the alignment {alignment}")
        if not start <= end <= limit:
            raise AllocationFailed(f"arena bounds must satisfy start <= end <= limit, got {start}, {end}, {limit}")
        self.start = start
        self.end = end
        self.limit = limit
        self.alignment = alignment
        self._grow = grow
        #: free ranges as parallel sorted lists of offsets and sizes (address order)
        self._free_offsets: list[int] = []
        self._free_sizes: list[int] = []
        #: live allocations: offset -> rounded size
        self._live: dict[int, int] = {}
        aligned_end = end - end % alignment
        if aligned_end > start:
            self._free_offsets.append(start)
            self._free_sizes.append(aligned_end - start)
        self.used = 0

    def _rounded(self, size: int) -> int:
        step = self.alignment
        return max(step, (size + step - 1) // step * step)

    @property
    def free_bytes(self) -> int:
        """Bytes that can still be allocated: the free ranges plus the growth left up to ``limit``."""
        return sum(self._free_sizes) + (self.limit - self.limit % self.alignment) - max(
            self.end - self.end % self.alignment, self.start)

    def allocate(self, size: int, what: str = "allocation") -> int:
        """The offset of a new range of at least ``size`` bytes (a zero size still gets a distinct range)."""
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise AllocationFailed(f"{what} size must be a non-negative int, got {size!r}")
        need = self._rounded(size)
        offsets, sizes = self._free_offsets, self._free_sizes
        for k, free_size in enumerate(sizes):
            if free_size >= need:
                offset = offsets[k]
                if free_size == need:
                    del offsets[k], sizes[k]
                else:
                    offsets[k] += need
                    sizes[k] -= need
                self._live[offset] = need
                self.used += need
                return offset
        return self._allocate_by_growing(need, size, what)

    def _allocate_by_growing(self, need: int, asked: int, what: str) -> int:
        aligned_end = max(self.end - self.end % self.alignment, self.start)
        tail = aligned_end
        if self._free_offsets and self._free_offsets[-1] + self._free_sizes[-1] == aligned_end:
            tail = self._free_offsets[-1]  # the last free range touches the end: grow it
        wanted = tail + need
        if wanted > self.limit or self._grow is None:
            raise AllocationFailed(f"{what} of {asked} bytes asked; {self.free_bytes} bytes are left in the arena "
                                   f"(limit {self.limit - self.start} bytes)")
        reached = self._grow(wanted)
        if reached < wanted:
            raise AllocationFailed(f"{what} of {asked} bytes asked; the arena could only grow to {reached} bytes "
                                   f"of the {wanted} needed")
        self.end = reached
        if tail != aligned_end:
            del self._free_offsets[-1], self._free_sizes[-1]
        new_end = reached - reached % self.alignment
        if new_end > tail + need:
            self._free_offsets.append(tail + need)
            self._free_sizes.append(new_end - tail - need)
        self._live[tail] = need
        self.used += need
        return tail

    def free(self, offset: int) -> None:
        """Return the range at ``offset`` to the free list, merging it with free neighbours."""
        size = self._live.pop(offset, None)
        if size is None:
            raise InvalidBuffer(f"arena offset {offset!r} is not a live allocation")
        self.used -= size
        offsets, sizes = self._free_offsets, self._free_sizes
        k = bisect.bisect_left(offsets, offset)
        if k < len(offsets) and offset + size == offsets[k]:  # merge with the next range
            size += sizes[k]
            del offsets[k], sizes[k]
        if k > 0 and offsets[k - 1] + sizes[k - 1] == offset:  # merge with the previous range
            sizes[k - 1] += size
        else:
            offsets.insert(k, offset)
            sizes.insert(k, size)

    def size_of(self, offset: int) -> int:
        """The (rounded) size of the live allocation at ``offset``; raises InvalidBuffer."""
        try:
            return self._live[offset]
        except KeyError:
            raise InvalidBuffer(f"arena offset {offset!r} is not a live allocation") from None

    def free_ranges(self) -> list[tuple[int, int]]:
        """The free ``(offset, size)`` ranges in address order (a copy)."""
        return list(zip(self._free_offsets, self._free_sizes))


__all__.append("ArenaAllocator")
