"""DistributedBuffer: a buffer of a MultiDeviceExecutor, held on the host between launches.

Standard library only. A launch copies it to the devices (whole for Replicated, each device's shard for
Sharded or Tiled) and, when the launch finishes without a trap, copies what the devices hold back: a trapped launch
changes no DistributedBuffer.
"""

from __future__ import annotations

from ..backend import typed_bytes
from ..errors import ProgramError
from ..isa.types import Type
from .layouts import Replicated, Sharded, Tiled

__all__ = ["DistributedBuffer", "FIRST_LOGICAL_HANDLE"]

#: the executor numbers its buffers from here (handle 1 is every device's own boundary memory)
FIRST_LOGICAL_HANDLE = 1 << 20


class DistributedBuffer:
    """``count`` elements of ``ty`` laid out by ``layout``; programs name it by ``handle`` (an
    Address.BufferOffset handle the executor replaces with each device's own)."""

    def __init__(self, handle: int, ty: Type, data: bytes, layout: Replicated | Sharded | Tiled) -> None:
        if not isinstance(layout, (Replicated, Sharded, Tiled)):
            raise ProgramError("a distributed buffer's layout is Replicated(), Sharded(chunk) or Tiled(chunk), got "
                               f"{layout!r}")
        if len(data) % ty.size_bytes():
            raise ProgramError(f"{len(data)} bytes are not a whole number of {ty.name} elements")
        self.handle, self.ty, self.layout = handle, ty, layout
        self.data = bytearray(data)

    @property
    def count(self) -> int:
        """Elements in the whole buffer."""
        return len(self.data) // self.ty.size_bytes()

    def read(self) -> bytes:
        """The whole buffer's bytes (a copy)."""
        return bytes(self.data)

    def write(self, values) -> None:
        """Replace the contents with ``values`` (bytes, or typed values as ``Backend.copy_typed_to`` takes them) of
        the same size. Raises ProgramError for another size, InvalidBuffer for values not storable as ty."""
        data = bytes(values) if isinstance(values, (bytes, bytearray, memoryview)) else \
            bytes(typed_bytes(values, self.ty, "DistributedBuffer.write"))
        if len(data) != len(self.data):
            raise ProgramError(f"DistributedBuffer {self.handle}: {len(data)} bytes for a buffer of {len(self.data)}")
        self.data[:] = data

    def __repr__(self) -> str:
        return f"DistributedBuffer(handle={self.handle}, {self.ty.name} x {self.count}, {self.layout})"
