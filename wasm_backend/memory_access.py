"""How the WasmBackend's host code reaches the bytes of its linear memory.

Natively the runner shares the memory (``WasmRunner.zero_copy_views``): ``ViewAccess``
works on one zero-copy NumPy view of the whole memory, taken again after every growth.
In the browser the memory is a ``WebAssembly.Memory`` outside Python's heap: ``CopyAccess``
goes through the runner's copies (``write_memory``, ``read_memory``, ``read_memory_into``)
and never imports NumPy. Both have the same methods; ``memory_access`` picks one.

Addresses are absolute byte offsets in the linear memory; callers check ranges against
their allocations first (the runner checks them against the memory again in CopyAccess).
Every method copies once, except ``move`` in CopyAccess (out and back in).
"""

from __future__ import annotations

import struct
from typing import Any

from atlas_web.errors import UnsupportedOperation

from .runner import WasmMemory, WasmRunner

__all__ = ["ViewAccess", "CopyAccess", "memory_access"]

#: the most zero bytes CopyAccess writes per runner call when filling
_FILL_CHUNK = 1 << 22


class ViewAccess:
    """Byte access through a zero-copy NumPy view of the whole memory (native runners)."""

    def __init__(self, runner: WasmRunner, memory: WasmMemory) -> None:
        self._runner = runner
        self._memory = memory
        self._view: Any = None

    def view(self) -> Any:
        """The uint8 NumPy view of the whole memory (valid until the memory grows)."""
        if self._view is None:
            self._view = self._runner.memory_view(self._memory)
        return self._view

    def refresh(self) -> None:
        """Forget the view: the memory has grown."""
        self._view = None

    def pack(self, fmt: str, offset: int, *values: Any) -> None:
        struct.pack_into(fmt, self.view(), offset, *values)

    def unpack(self, fmt: str, offset: int) -> tuple:
        return struct.unpack_from(fmt, self.view(), offset)

    def fill(self, start: int, nbytes: int) -> None:
        """Zero ``nbytes`` from ``start``."""
        self.view()[start:start + nbytes] = 0

    def move(self, destination: int, source: int, nbytes: int) -> None:
        view = self.view()
        view[destination:destination + nbytes] = view[source:source + nbytes]

    def write(self, start: int, data: memoryview) -> None:
        """Copy the flat bytes ``data`` to ``start``."""
        self.view()[start:start + data.nbytes] = data

    def read_into(self, start: int, target: memoryview) -> None:
        """Fill the flat writable bytes ``target`` from ``start``."""
        target[:] = self.view()[start:start + target.nbytes]

    def read(self, start: int, nbytes: int) -> bytes:
        return self.view()[start:start + nbytes].tobytes()


class CopyAccess:
    """Byte access through the runner's copies, for runners that cannot share their memory (the browser)."""

    def __init__(self, runner: WasmRunner, memory: WasmMemory) -> None:
        self._runner = runner
        self._memory = memory

    def view(self) -> Any:
        """Raises UnsupportedOperation: the memory cannot be viewed from Python without a copy."""
        raise UnsupportedOperation("buffer_view", "linear memory", self._runner.engine_name,
                                   "this engine's memory lies outside Python's heap; copy_from_buffer copies it")

    def refresh(self) -> None:
        """Nothing to forget: every access takes the memory as it is."""

    def pack(self, fmt: str, offset: int, *values: Any) -> None:
        self._runner.write_memory(self._memory, offset, struct.pack(fmt, *values))

    def unpack(self, fmt: str, offset: int) -> tuple:
        return struct.unpack(fmt, self._runner.read_memory(self._memory, offset, struct.calcsize(fmt)))

    def fill(self, start: int, nbytes: int) -> None:
        """Zero ``nbytes`` from ``start`` (in pieces of at most 4 MiB)."""
        zeros = bytes(min(nbytes, _FILL_CHUNK))
        for at in range(start, start + nbytes, _FILL_CHUNK):
            size = min(_FILL_CHUNK, start + nbytes - at)
            self._runner.write_memory(self._memory, at, zeros if size == len(zeros) else zeros[:size])

    def move(self, destination: int, source: int, nbytes: int) -> None:
        self._runner.write_memory(self._memory, destination, self._runner.read_memory(self._memory, source, nbytes))

    def write(self, start: int, data: memoryview) -> None:
        self._runner.write_memory(self._memory, start, data)

    def read_into(self, start: int, target: memoryview) -> None:
        self._runner.read_memory_into(self._memory, start, target)

    def read(self, start: int, nbytes: int) -> bytes:
        return self._runner.read_memory(self._memory, start, nbytes)


def memory_access(runner: WasmRunner, memory: WasmMemory) -> ViewAccess | CopyAccess:
    """ViewAccess where ``runner`` shares its memory with NumPy, else CopyAccess."""
    return (ViewAccess if runner.zero_copy_views else CopyAccess)(runner, memory)
