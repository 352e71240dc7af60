"""DeviceMemory: the WasmBackend's one linear memory, its arena, and the handle table mirrored into it.

The host keeps the authoritative ``HandleTable`` (atlas_web.memory); every change is mirrored into
the device handle table in linear memory (see ``layout``), which generated code reads. Buffers and
pools are ranges of the arena (``ArenaAllocator``, 16-byte aligned, first fit with coalescing); the
memory grows on demand in 64 KiB pages up to ``limit`` bytes. It is a shared memory where the runner
has them (``WasmRunner.shared_memory``: natively), so worker threads can run map kernels on it.

Copies: ``write``/``read_into``/``read`` copy once between host buffers and linear memory, through
``access`` (memory_access: a NumPy view natively, the runner's copies in the browser, where the memory
lies outside Python's heap); ``view`` is a zero-copy NumPy array into linear memory, valid until the
memory grows (any allocation may grow it), and exists only where the runner shares its memory.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from typing import Any

from atlas_web.errors import AllocationFailed
from atlas_web.isa.addresses import BOUNDARY_BYTES, BOUNDARY_HANDLE
from atlas_web.memory import MAX_ALLOCATION, Allocation, ArenaAllocator, HandleTable

from . import layout
from .encoding.types import MAX_PAGES, PAGE_SIZE
from .memory_access import memory_access
from .runner import WasmMemory, WasmRunner

__all__ = ["DeviceMemory", "MAX_MEMORY_BYTES"]

#: the most bytes a 32-bit linear memory can hold
MAX_MEMORY_BYTES = MAX_PAGES * PAGE_SIZE

_ENTRY = struct.Struct("<III")
_MADV_HUGEPAGE = 14


class DeviceMemory:
    """Linear memory, arena and handle table of one backend.

    ``limit``: the most bytes the linear memory may grow to (a multiple of 64 KiB, at most 4 GiB).
    Raises AllocationFailed when the first pages cannot be had.
    """

    def __init__(self, runner: WasmRunner, limit: int) -> None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise AllocationFailed(f"memory_limit must be a non-negative int of bytes, got {limit!r}")
        limit_pages = min(limit // PAGE_SIZE, MAX_PAGES)
        first = layout.ARENA_START + BOUNDARY_BYTES + layout.INITIAL_TABLE_CAPACITY * layout.TABLE_ENTRY_BYTES
        first_pages = -(-first // PAGE_SIZE)
        if limit_pages < first_pages:
            raise AllocationFailed(f"memory_limit of {limit} bytes asked; the backend needs at least "
                                   f"{first_pages * PAGE_SIZE} bytes (runtime header and boundary memory)")
        self.runner = runner
        # shared where the runner can share (its threads run map kernels on it); a shared memory is reserved
        # up to its maximum and never moves, so views taken before a growth stay valid
        self.memory: WasmMemory = runner.create_memory(first_pages, limit_pages, shared=runner.shared_memory)
        #: byte access to the memory (pack, unpack, fill, move, write, read_into, read)
        self.access = memory_access(runner, self.memory)
        self.limit = limit_pages * PAGE_SIZE
        self.generation = 0  # increases at every growth (views taken before are stale)
        self._advise_huge_pages()
        self.arena = ArenaAllocator(layout.ARENA_START, first_pages * PAGE_SIZE, limit=self.limit, grow=self._grow)
        self.table = HandleTable()
        self.table_capacity = layout.INITIAL_TABLE_CAPACITY
        self.table_base = self.arena.allocate(self.table_capacity * layout.TABLE_ENTRY_BYTES, "device handle table")
        self.access.fill(self.table_base, self.table_capacity * layout.TABLE_ENTRY_BYTES)
        self._write_table_header()
        boundary = self.table.get(BOUNDARY_HANDLE)
        boundary.base = self.arena.allocate(BOUNDARY_BYTES, "boundary memory")
        self._mirror(boundary)
        #: the largest buffer or pool: the arena's room beside the runtime areas (less while others live)
        self.max_allocation = min(MAX_ALLOCATION, self.arena.free_bytes)
        #: bytes of buffers and pools (the boundary memory and runtime areas not counted)
        self.used = 0

    # ---- raw memory ---------------------------------------------------------------------------------
    def bytes(self):
        """A zero-copy uint8 NumPy view of the whole linear memory (valid until it grows); raises
        UnsupportedOperation where the runner cannot share its memory (the browser)."""
        return self.access.view()

    def _advise_huge_pages(self) -> None:
        """Ask Linux for transparent huge pages on the memory's reservation (best effort: streaming loops
        over large buffers run 15-25 % faster with fewer TLB misses; elsewhere nothing happens)."""
        if not sys.platform.startswith("linux"):
            return
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            address = self.bytes().ctypes.data
            libc.madvise(ctypes.c_void_p(address - address % 4096), ctypes.c_size_t(self.limit), _MADV_HUGEPAGE)
        except (OSError, AttributeError, ValueError):
            pass

    def _grow(self, wanted_end: int) -> int:
        current = self.runner.memory_size(self.memory)
        if wanted_end <= current:
            return current
        pages = -(-(wanted_end - current) // PAGE_SIZE)
        # grow by at least an eighth of the memory, so a sequence of allocations grows it few times
        pages = max(pages, min(current // PAGE_SIZE // 8, self.limit // PAGE_SIZE - current // PAGE_SIZE))
        self.runner.grow_memory(self.memory, pages)
        self.access.refresh()
        self.generation += 1
        self._advise_huge_pages()
        return self.runner.memory_size(self.memory)

    @property
    def size(self) -> int:
        """Current size of the linear memory in bytes."""
        return self.runner.memory_size(self.memory)

    # ---- the device handle table -------------------------------------------------------------------
    def _write_table_header(self) -> None:
        self.access.pack("<II", layout.HEADER_TABLE_BASE, self.table_base, self.table_capacity)

    def _mirror(self, alloc: Allocation) -> None:
        if alloc.handle >= self.table_capacity:
            self._grow_table(alloc.handle + 1)
        entry = self.table_base + alloc.handle * layout.TABLE_ENTRY_BYTES
        self.access.pack(_ENTRY.format, entry, alloc.base, min(alloc.size, 0xFFFFFFFF), layout.KIND_CODES[alloc.kind])

    def _clear(self, handle: int) -> None:
        entry = self.table_base + handle * layout.TABLE_ENTRY_BYTES
        self.access.pack(_ENTRY.format, entry, 0, 0, layout.KIND_NONE)

    def _grow_table(self, needed: int) -> None:
        capacity = self.table_capacity
        while capacity < needed:
            capacity *= 2
        nbytes = capacity * layout.TABLE_ENTRY_BYTES
        base = self.arena.allocate(nbytes, "device handle table")
        old_bytes = self.table_capacity * layout.TABLE_ENTRY_BYTES
        self.access.move(base, self.table_base, old_bytes)
        self.access.fill(base + old_bytes, nbytes - old_bytes)
        self.arena.free(self.table_base)
        self.table_base, self.table_capacity = base, capacity
        self._write_table_header()

    # ---- allocations --------------------------------------------------------------------------------
    def allocate(self, kind: str, size: int) -> Allocation:
        """A new zero-filled buffer or pool of ``size`` bytes with a fresh handle; raises AllocationFailed."""
        size = HandleTable.check_size(size, kind)
        if size > self.limit:
            raise AllocationFailed(f"{kind} of {size} bytes asked; the backend's memory_limit is {self.limit} bytes")
        base = self.arena.allocate(size, kind)
        try:
            alloc = self.table.add(kind, size, base)
            self._mirror(alloc)
        except AllocationFailed:
            self.arena.free(base)
            raise
        self.access.fill(base, size)
        self.used += size
        return alloc

    def free_bytes(self) -> int:
        """The most bytes one more allocation may have now (a POOL_EXHAUSTED trap reports it)."""
        return min(MAX_ALLOCATION, self.arena.free_bytes)

    def free(self, handle: object, kind: str) -> Allocation:
        """Release a live allocation of ``kind``; its device entry is zeroed. Raises InvalidBuffer."""
        alloc = self.table.remove(handle, kind)
        self._clear(alloc.handle)
        self.arena.free(alloc.base)
        self.used -= alloc.size
        return alloc

    def get(self, handle: object, kind: str | None = None) -> Allocation:
        """The live allocation of ``handle``; raises InvalidBuffer."""
        return self.table.get(handle, kind)

    def scratch(self, size: int, what: str) -> int:
        """Arena bytes for runtime use (no handle); raises AllocationFailed. Free with ``release``."""
        return self.arena.allocate(size, what)

    def release(self, base: int) -> None:
        """Free runtime bytes taken with ``scratch``."""
        self.arena.free(base)

    # ---- copies -------------------------------------------------------------------------------------
    def write(self, alloc: Allocation, offset: int, source, what: str) -> None:
        """Copy the bytes of ``source`` (a flat byte memoryview) into ``alloc`` at ``offset`` (one copy)."""
        self.table.check_range(alloc, offset, source.nbytes, what)
        self.access.write(alloc.base + offset, source)

    def read_into(self, alloc: Allocation, offset: int, target, what: str) -> None:
        """Copy bytes of ``alloc`` at ``offset`` into ``target`` (a writable flat byte memoryview; one copy)."""
        self.table.check_range(alloc, offset, target.nbytes, what)
        self.access.read_into(alloc.base + offset, target)

    def read(self, alloc: Allocation, offset: int, nbytes: int | None, what: str) -> bytes:
        """A new ``bytes`` of ``nbytes`` (None: the rest) of ``alloc`` at ``offset`` (one copy). Raises
        InvalidBuffer."""
        self.table.check_range(alloc, offset, 0, what)
        nbytes = alloc.size - offset if nbytes is None else nbytes
        self.table.check_range(alloc, offset, nbytes, what)
        return self.access.read(alloc.base + offset, nbytes)

    def view(self, alloc: Allocation, offset: int = 0, nbytes: int | None = None) -> Any:
        """A zero-copy uint8 view of ``alloc`` (valid until the memory grows); raises InvalidBuffer."""
        if nbytes is None:
            nbytes = alloc.size - offset if isinstance(offset, int) else 0
        self.table.check_range(alloc, offset, nbytes, "view")
        start = alloc.base + offset
        return self.bytes()[start:start + nbytes]
