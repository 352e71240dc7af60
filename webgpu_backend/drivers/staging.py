"""The pool of staging buffers reads go through, shared by the engines' drivers.

A read copies a range of a storage buffer into a MAP_READ staging buffer and maps
that; keeping idle staging buffers for the next read means a small read-back
allocates nothing. The pool is engine-neutral: the driver passes how to make and
destroy one of its engine's staging buffers.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["StagingPool", "MIN_STAGING_BYTES"]

#: smallest staging buffer; larger ones are rounded up to a power of two (capped at maxBufferSize)
MIN_STAGING_BYTES = 1 << 16


class StagingPool:
    """Idle staging buffers as ``(size, engine buffer)`` entries, smallest first.

    ``create(size)`` makes an engine staging buffer of ``size`` bytes (raising what the
    driver documents when it cannot); ``destroy(buffer)`` releases one.
    ``max_buffer_size`` is the device's maxBufferSize; ``max_pooled_bytes`` caps the idle
    memory kept (the largest idle buffers are destroyed first).
    """

    def __init__(self, create: Callable[[int], Any], destroy: Callable[[Any], None], *, max_buffer_size: int,
                 max_pooled_bytes: int) -> None:
        self._create = create
        self._destroy = destroy
        self._max_buffer_size = max_buffer_size
        self._max_pooled_bytes = max_pooled_bytes
        self._free: list[tuple[int, Any]] = []

    def take(self, size: int) -> tuple[int, Any]:
        """The smallest idle entry of at least ``size`` bytes, else a new one (``size`` rounded up to a
        power of two of at least MIN_STAGING_BYTES, or exactly ``size`` past maxBufferSize)."""
        fitting = [entry for entry in self._free if entry[0] >= size]
        if fitting:
            entry = min(fitting, key=lambda e: e[0])
            self._free.remove(entry)
            return entry
        padded = max(MIN_STAGING_BYTES, 1 << (size - 1).bit_length())
        if padded > self._max_buffer_size:
            padded = size
        return padded, self._create(padded)

    def give_back(self, entry: tuple[int, Any]) -> None:
        """Keep ``entry`` (unmapped) for a later read; destroy the largest idle ones over the cap."""
        self._free.append(entry)
        self._free.sort(key=lambda e: e[0])
        while sum(e[0] for e in self._free) > self._max_pooled_bytes:
            self._destroy(self._free.pop()[1])

    def clear(self) -> None:
        """Destroy every idle buffer."""
        for _, buffer in self._free:
            self._destroy(buffer)
        self._free.clear()
