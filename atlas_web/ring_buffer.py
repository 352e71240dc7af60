"""RingBuffer: a fixed-capacity circular byte buffer for streaming data through constant memory.

The ring buffer keeps the newest ``capacity`` bytes written to it: ``write`` appends
and, once full, overwrites the oldest bytes; ``read`` addresses bytes relative
to the oldest one still held. Its storage is one ``bytearray`` allocated at
construction, so memory stays constant however much streams through. (Host
side only; the ISA's pools are device memory, ``Backend.allocate_pool``. Named ``Pool`` until
issue 9; ``atlas_web.Pool`` still names this class.)
"""

from __future__ import annotations

from typing import Any

from .errors import AllocationFailed, InvalidBuffer

__all__ = ["RingBuffer"]


def _byte_view(data: Any) -> memoryview:
    try:
        view = memoryview(data)
    except TypeError:
        raise InvalidBuffer(f"RingBuffer.write takes a bytes-like object, got {type(data).__name__}") from None
    if not view.c_contiguous:
        raise InvalidBuffer("RingBuffer.write takes a contiguous buffer")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


class RingBuffer:
    """A circular buffer of ``capacity`` bytes.

    Raises AllocationFailed for a capacity that is not a positive int.
    """

    __slots__ = ("_storage", "_start", "_length", "_total_written")

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise AllocationFailed(f"RingBuffer capacity must be a positive int, got {capacity!r}")
        # a memoryview: its slice assignment copies straight in (bytearray's makes a temporary copy)
        self._storage = memoryview(bytearray(capacity))
        self._start = 0          # index in _storage of the oldest byte held
        self._length = 0         # bytes held
        self._total_written = 0  # bytes ever written

    @property
    def capacity(self) -> int:
        """The most bytes the pool holds."""
        return len(self._storage)

    @property
    def total_written(self) -> int:
        """Bytes written since construction (or the last ``clear``), including those overwritten."""
        return self._total_written

    def __len__(self) -> int:
        """Bytes currently held (at most ``capacity``)."""
        return self._length

    def write(self, data: Any) -> int:
        """Append the bytes of ``data`` (any contiguous buffer-protocol object); returns how many.

        When the pool is full the oldest bytes are overwritten; of data longer
        than the capacity only its last ``capacity`` bytes are kept. Copies the
        kept bytes once. Raises InvalidBuffer for an object that is not bytes-like.
        """
        view = _byte_view(data)
        count = len(view)
        capacity = len(self._storage)
        self._total_written += count
        if count >= capacity:
            self._storage[:] = view[count - capacity:]
            self._start, self._length = 0, capacity
            return count
        end = (self._start + self._length) % capacity
        first = min(count, capacity - end)
        self._storage[end:end + first] = view[:first]
        self._storage[:count - first] = view[first:]
        overflow = self._length + count - capacity
        if overflow > 0:
            self._start = (self._start + overflow) % capacity
            self._length = capacity
        else:
            self._length += count
        return count

    def read(self, offset: int = 0, length: int | None = None) -> bytes:
        """``length`` bytes (default: the rest) starting ``offset`` bytes after the oldest byte held.

        Returns a new ``bytes`` (one copy). Raises InvalidBuffer when the range
        is not inside the bytes held.
        """
        if length is None and isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0:
            if offset > self._length:
                raise InvalidBuffer(f"RingBuffer.read: offset {offset} is outside the {self._length} bytes held "
                                    f"(capacity {self.capacity})")
            length = self._length - offset
        for name, value in (("offset", offset), ("length", length)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidBuffer(f"RingBuffer.read: {name} must be a non-negative int, got {value!r}")
        assert length is not None
        if offset + length > self._length:
            raise InvalidBuffer(f"RingBuffer.read: bytes {offset}..{offset + length} are outside the "
                                f"{self._length} bytes held (capacity {self.capacity})")
        capacity = len(self._storage)
        begin = (self._start + offset) % capacity
        first = min(length, capacity - begin)
        return b"".join((self._storage[begin:begin + first], self._storage[:length - first]))

    def clear(self) -> None:
        """Forget every byte held (the storage is kept)."""
        self._start = self._length = self._total_written = 0

    def __bytes__(self) -> bytes:
        return self.read()

    def __repr__(self) -> str:
        return f"<RingBuffer {self._length}/{self.capacity} bytes held, {self._total_written} written>"
