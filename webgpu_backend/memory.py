"""GpuMemory: the WebGpuBackend's buffers and pools, suballocated from a few large storage buffers.

Layout
    Every buffer and pool lives in one of a few *chunks*: storage buffers of at most
    ``chunk_capacity`` bytes (the device's ``maxStorageBufferBindingSize`` and
    ``maxBufferSize``, whichever is smaller), so a shader binds all of memory with a handful
    of bindings and a register-held pointer ``(handle << 32) | offset`` is resolved on the
    device through the *device handle table*. Each chunk is an ``atlas_web.memory.ArenaAllocator``
    (aligned to max(16, minStorageBufferOffsetAlignment) bytes, first fit, coalescing); a chunk
    starts small and grows (a new, larger buffer and a device-side copy) up to the capacity; a
    new chunk is opened when no chunk can hold an allocation, up to ``max_chunks``.

Device handle table
    One ``vec4<u32>`` per handle: ``(chunk, base byte offset, size, kind)`` with
    ``KIND_NONE`` for handle 0 and freed handles (a stale pointer traps INVALID_HANDLE),
    ``KIND_BUFFER``, ``KIND_POOL`` and ``KIND_BOUNDARY`` (handle 1, the 96 x 12288 bytes of
    boundary memory at the start of chunk 0). The host keeps the authoritative
    ``HandleTable``; every change is written to the device table (one small queued write).

Copies
    ``write`` and ``read`` copy once between host memory and a chunk (the driver's staging
    memory in between). New allocations are zero-filled by a queued clear, not a host copy.
    Standard library only: no NumPy (Pyodide has none offline).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from atlas_web.errors import AllocationFailed
from atlas_web.host_bytes import source_bytes
from atlas_web.isa.addresses import BOUNDARY_BYTES, BOUNDARY_HANDLE
from atlas_web.memory import (  # the device table's kind codes are the core's
    KIND_BOUNDARY, KIND_BUFFER, KIND_CODES, KIND_NONE, KIND_POOL, Allocation, ArenaAllocator, HandleTable,
)

from .driver import GpuDriver
from .resources import BufferUsage, GpuBuffer

__all__ = [
    "GpuMemory", "Chunk", "KIND_NONE", "KIND_BUFFER", "KIND_POOL", "KIND_BOUNDARY", "KIND_CODES",
    "TABLE_ENTRY_BYTES", "ARENA_ALIGNMENT", "MAX_ARENA_ALIGNMENT", "DEFAULT_MAX_CHUNKS",
]

#: bytes of one device table entry: vec4<u32> (chunk, base, size, kind)
TABLE_ENTRY_BYTES = 16
#: the least alignment of every allocation inside a chunk (vec4 kernels read 16-byte aligned arrays);
#: a GpuMemory uses the device's minStorageBufferOffsetAlignment where that is larger (up to
#: MAX_ARENA_ALIGNMENT), so kernels can bind each array at its own offset
ARENA_ALIGNMENT = 16
MAX_ARENA_ALIGNMENT = 256
#: chunks a backend opens at most (each is one storage binding of every shader)
DEFAULT_MAX_CHUNKS = 4
#: first size of a chunk (it doubles as allocations need more, up to the capacity)
_INITIAL_CHUNK_BYTES = 4 << 20
_INITIAL_TABLE_ENTRIES = 256
_ENTRY = struct.Struct("<IIII")
_CHUNK_USAGE = BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST


@dataclass
class Chunk:
    """One storage buffer of the arena: its GpuBuffer (replaced when it grows) and its allocator."""

    index: int
    buffer: GpuBuffer
    arena: ArenaAllocator


class GpuMemory:
    """Chunks, arena allocators, the host handle table and the device handle table of one backend.

    ``chunk_capacity`` (default: the device's binding limit) caps one chunk and so one
    allocation; ``max_chunks`` caps the chunks; ``memory_limit`` (optional) caps the bytes of
    buffers and pools together. Raises AllocationFailed when the boundary memory cannot be made.
    """

    def __init__(self, driver: GpuDriver, *, chunk_capacity: int | None = None,
                 max_chunks: int = DEFAULT_MAX_CHUNKS, memory_limit: int | None = None) -> None:
        self.driver = driver
        device_cap = min(driver.limit("maxStorageBufferBindingSize"), driver.limit("maxBufferSize"))
        cap = device_cap if chunk_capacity is None else min(chunk_capacity, device_cap)
        #: alignment of every allocation (and of every chunk size)
        self.alignment = max(ARENA_ALIGNMENT, min(MAX_ARENA_ALIGNMENT,
                                                  driver.limit("minStorageBufferOffsetAlignment")))
        self.chunk_capacity = cap - cap % self.alignment
        if self.chunk_capacity < BOUNDARY_BYTES:
            raise AllocationFailed(f"a chunk of {self.chunk_capacity} bytes cannot hold the boundary memory "
                                   f"({BOUNDARY_BYTES} bytes)")
        if not isinstance(max_chunks, int) or max_chunks < 1:
            raise AllocationFailed(f"max_chunks must be a positive int, got {max_chunks!r}")
        self.max_chunks = max_chunks
        self.memory_limit = memory_limit
        self.chunks: list[Chunk] = []
        self.table = HandleTable()
        #: handle -> chunk index of every live allocation
        self.chunk_of: dict[int, int] = {}
        #: bytes of buffers and pools (rounded sizes; the boundary memory is not counted)
        self.used = 0
        #: increases whenever a chunk buffer is replaced or added (bindings must be rebuilt)
        self.generation = 0
        self._table_entries = _INITIAL_TABLE_ENTRIES
        self._table_mirror = bytearray(self._table_entries * TABLE_ENTRY_BYTES)
        self.device_table = driver.create_buffer(len(self._table_mirror), _CHUNK_USAGE)
        boundary = self.table.get(BOUNDARY_HANDLE)
        chunk = self._open_chunk(BOUNDARY_BYTES)
        boundary.base = chunk.arena.allocate(BOUNDARY_BYTES, "boundary memory")
        self.chunk_of[BOUNDARY_HANDLE] = chunk.index
        self._mirror(boundary)

    # ---- chunks ---------------------------------------------------------------------------------
    def _open_chunk(self, at_least: int) -> Chunk:
        index = len(self.chunks)
        size = min(self.chunk_capacity, max(_INITIAL_CHUNK_BYTES, _round_up(at_least, self.alignment)))
        buffer = self.driver.create_buffer(size, _CHUNK_USAGE)
        chunk = Chunk(index, buffer, None)  # type: ignore[arg-type]
        chunk.arena = ArenaAllocator(0, size, limit=self.chunk_capacity, alignment=self.alignment,
                                     grow=lambda end, c=chunk: self._grow_chunk(c, end))
        self.chunks.append(chunk)
        self.generation += 1
        return chunk

    def _grow_chunk(self, chunk: Chunk, wanted_end: int) -> int:
        old = chunk.buffer
        size = min(self.chunk_capacity, max(wanted_end, 2 * old.size))
        new = self.driver.create_buffer(size, _CHUNK_USAGE)
        self.driver.copy_buffer(old, 0, new, 0, old.size - old.size % 4)
        self.driver.destroy_buffer(old)
        chunk.buffer = new
        self.generation += 1
        return size

    def chunk_buffers(self) -> list[GpuBuffer]:
        """The current GpuBuffer of every chunk, in chunk order (valid until the next allocation)."""
        return [c.buffer for c in self.chunks]

    # ---- the device handle table ---------------------------------------------------------------
    @property
    def table_entries(self) -> int:
        """Entries in the device table: handles at or above it are invalid."""
        return self._table_entries

    def _mirror(self, alloc: Allocation) -> None:
        if alloc.handle >= self._table_entries:
            self._grow_table(alloc.handle + 1)
        entry = (self.chunk_of[alloc.handle], alloc.base, alloc.size, KIND_CODES[alloc.kind])
        self._write_entry(alloc.handle, entry)

    def _write_entry(self, handle: int, entry: tuple[int, int, int, int]) -> None:
        at = handle * TABLE_ENTRY_BYTES
        _ENTRY.pack_into(self._table_mirror, at, *entry)
        self.driver.write_buffer(self.device_table, at, memoryview(self._table_mirror)[at:at + TABLE_ENTRY_BYTES])

    def _grow_table(self, needed: int) -> None:
        entries = self._table_entries
        while entries < needed:
            entries *= 2
        self._table_mirror.extend(bytes((entries - self._table_entries) * TABLE_ENTRY_BYTES))
        self._table_entries = entries
        self.driver.destroy_buffer(self.device_table)
        self.device_table = self.driver.create_buffer(len(self._table_mirror), _CHUNK_USAGE)
        self.driver.write_buffer(self.device_table, 0, self._table_mirror)
        self.generation += 1

    # ---- allocations ----------------------------------------------------------------------------
    def allocate(self, kind: str, size: int) -> Allocation:
        """A new zero-filled buffer or pool of ``size`` bytes with a fresh handle.

        Raises AllocationFailed naming the size asked and the limit that refused it.
        """
        size = HandleTable.check_size(size, kind)
        if size > self.chunk_capacity:
            raise AllocationFailed(f"{kind} of {size} bytes asked; the webgpu backend holds at most "
                                   f"{self.chunk_capacity} bytes per allocation (one storage binding)")
        rounded = _round_up(max(size, 1), self.alignment)
        if self.memory_limit is not None and self.used + rounded > self.memory_limit:
            raise AllocationFailed(f"{kind} of {size} bytes asked; {self.memory_limit - self.used} bytes are left "
                                   f"of the backend's memory_limit of {self.memory_limit} bytes")
        chunk, base = self._place(size, kind)
        try:
            alloc = self.table.add(kind, size, base)
        except AllocationFailed:
            chunk.arena.free(base)
            raise
        self.chunk_of[alloc.handle] = chunk.index
        self._mirror(alloc)
        self.driver.clear_buffer(chunk.buffer, base, rounded)
        self.used += rounded
        return alloc

    def free_bytes(self) -> int:
        """The most bytes one more allocation may have now (a POOL_EXHAUSTED trap reports it): a chunk's
        capacity, or less where the memory_limit leaves less."""
        if self.memory_limit is None:
            return self.chunk_capacity
        return max(0, min(self.chunk_capacity, self.memory_limit - self.used))

    def _place(self, size: int, kind: str) -> tuple[Chunk, int]:
        failures = []
        for chunk in self.chunks:
            try:
                return chunk, chunk.arena.allocate(size, kind)
            except AllocationFailed as exc:
                failures.append(str(exc))
        if len(self.chunks) >= self.max_chunks:
            raise AllocationFailed(f"{kind} of {size} bytes asked; all {self.max_chunks} storage chunks of "
                                   f"{self.chunk_capacity} bytes are too full ({'; '.join(failures)})")
        chunk = self._open_chunk(size)
        return chunk, chunk.arena.allocate(size, kind)

    def free(self, handle: object, kind: str) -> Allocation:
        """Release a live allocation of ``kind``; its device entry is zeroed. Raises InvalidBuffer."""
        alloc = self.table.remove(handle, kind)
        chunk = self.chunks[self.chunk_of.pop(alloc.handle)]
        chunk.arena.free(alloc.base)
        self._write_entry(alloc.handle, (0, 0, 0, KIND_NONE))
        self.used -= _round_up(max(alloc.size, 1), self.alignment)
        return alloc

    def get(self, handle: object, kind: str | None = None) -> Allocation:
        """The live allocation of ``handle`` (of ``kind`` when given); raises InvalidBuffer."""
        return self.table.get(handle, kind)

    def lookup(self, handle: int) -> Allocation | None:
        """The live allocation of ``handle`` or None."""
        return self.table.lookup(handle)

    def location(self, alloc: Allocation) -> tuple[GpuBuffer, int]:
        """(the chunk buffer holding ``alloc``, its base offset in that buffer)."""
        return self.chunks[self.chunk_of[alloc.handle]].buffer, alloc.base

    # ---- copies ---------------------------------------------------------------------------------
    def write(self, alloc: Allocation, offset: int, data: Any, what: str) -> None:
        """Copy the bytes of ``data`` (a buffer-protocol object) into ``alloc`` at ``offset`` (one
        host copy into staging memory). Raises InvalidBuffer for a range outside the allocation."""
        view = source_bytes(data, what)
        self.table.check_range(alloc, offset, view.nbytes, what)
        buffer, base = self.location(alloc)
        self.driver.write_buffer(buffer, base + offset, view)

    def read(self, alloc: Allocation, offset: int, size: int, what: str) -> memoryview:
        """``size`` bytes of ``alloc`` at ``offset`` after all queued work (waits for the GPU; one copy
        out of staging memory). Raises InvalidBuffer for a range outside the allocation."""
        self.table.check_range(alloc, offset, size, what)
        buffer, base = self.location(alloc)
        return self.driver.read_buffer(buffer, base + offset, size)

    async def read_async(self, alloc: Allocation, offset: int, size: int, what: str) -> memoryview:
        """As ``read``, but awaits the GPU without blocking the event loop."""
        self.table.check_range(alloc, offset, size, what)
        buffer, base = self.location(alloc)
        return await self.driver.read_buffer_async(buffer, base + offset, size)

    def close(self) -> None:
        """Destroy every chunk and the device table."""
        for chunk in self.chunks:
            self.driver.destroy_buffer(chunk.buffer)
        self.chunks.clear()
        self.driver.destroy_buffer(self.device_table)


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step
