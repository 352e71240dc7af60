"""Address modes and memory handles.

A register-held pointer is 64 bits: ``(handle << 32) | byte_offset``. Buffers
and pools share one handle space (handle 0 is never valid), so a pointer can
name either. ``BOUNDARY_HANDLE`` names the backend's boundary memory of
96 x 12288 bytes that ``Address.Class`` addresses.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from ..errors import ProgramError
from .registers import Register

__all__ = [
    "Address", "BufferHandle", "PoolHandle", "BOUNDARY_HANDLE", "BOUNDARY_BYTES",
    "CLASS_STRIDE", "make_pointer", "split_pointer", "MAX_HANDLE", "MAX_OFFSET",
]

MAX_HANDLE = (1 << 32) - 1
MAX_OFFSET = (1 << 32) - 1
#: bytes of one class's boundary region (48 pages x 256 bytes)
CLASS_STRIDE = 12288
#: total boundary memory: 96 classes x 12288 bytes
BOUNDARY_BYTES = 96 * CLASS_STRIDE
#: the fixed handle of the boundary memory in every backend
BOUNDARY_HANDLE = 1


class _Handle(int):
    """A handle: an int whose ``str`` and f-string form are its number (``f"[buf{h} + 0]"`` is text
    assembly) and whose ``repr`` names its kind."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int(self)})"

    __str__ = int.__repr__


class BufferHandle(_Handle):
    """The handle of a device buffer (an int, usable in addresses and pointers)."""

    __slots__ = ()


class PoolHandle(_Handle):
    """The handle of a pool (shares the handle space with buffers)."""

    __slots__ = ()


def make_pointer(handle: int, offset: int) -> int:
    """The 64-bit pointer ``(handle << 32) | offset``; raises ProgramError (a ValueError) when a
    part is not an integer in range (NumPy integers are accepted)."""
    try:
        parts = operator.index(handle), operator.index(offset)
    except TypeError:
        parts = None
    if parts is None or not (0 <= parts[0] <= MAX_HANDLE and 0 <= parts[1] <= MAX_OFFSET):
        raise ProgramError(f"pointer parts out of range: handle={handle!r}, offset={offset!r} "
                           f"(handle 0..{MAX_HANDLE}, offset 0..{MAX_OFFSET})")
    return (parts[0] << 32) | parts[1]


def split_pointer(pointer: int) -> tuple[int, int]:
    """``(handle, offset)`` of a 64-bit pointer (taken modulo 2**64)."""
    pointer &= (1 << 64) - 1
    return pointer >> 32, pointer & MAX_OFFSET


def _check_int(name: str, value: object, lo: int, hi: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ProgramError(f"{name} must be an int in {lo}..{hi}, got {value!r}")


def _check_reg(name: str, value: object) -> None:
    if not isinstance(value, Register):
        raise ProgramError(f"{name} must be a Register, got {value!r}")


class Address:
    """Namespace of the address modes (``Address.BufferOffset(handle=h, offset=0)``).

    Each mode's constructor raises ProgramError (a ValueError) naming the field it refuses.
    """

    @dataclass(frozen=True, slots=True)
    class BufferOffset:
        """A static byte offset into a buffer (or the boundary memory, handle 1) named by its handle."""

        handle: int
        offset: int = 0

        def __post_init__(self) -> None:
            _check_int("BufferOffset.handle", self.handle, 1, MAX_HANDLE)
            _check_int("BufferOffset.offset", self.offset, 0, MAX_OFFSET)

        def __str__(self) -> str:
            return f"[buf{int(self.handle)} + {self.offset}]"

    @dataclass(frozen=True, slots=True)
    class PoolOffset:
        """A static byte offset into a pool named by its handle."""

        handle: int
        offset: int = 0

        def __post_init__(self) -> None:
            _check_int("PoolOffset.handle", self.handle, 1, MAX_HANDLE)
            _check_int("PoolOffset.offset", self.offset, 0, MAX_OFFSET)

        def __str__(self) -> str:
            return f"[pool{int(self.handle)} + {self.offset}]"

    @dataclass(frozen=True, slots=True)
    class Shared:
        """A static byte offset into the block's shared memory."""

        offset: int = 0

        def __post_init__(self) -> None:
            _check_int("Shared.offset", self.offset, 0, MAX_OFFSET)

        def __str__(self) -> str:
            return f"[shared + {self.offset}]"

    @dataclass(frozen=True, slots=True)
    class Class:
        """Boundary memory of class ``class_id`` (0 … 95) at byte ``offset`` (< 12288)."""

        class_id: int
        offset: int = 0

        def __post_init__(self) -> None:
            _check_int("Class.class_id", self.class_id, 0, 95)
            _check_int("Class.offset", self.offset, 0, CLASS_STRIDE - 1)

        def __str__(self) -> str:
            return f"[class{self.class_id} + {self.offset}]"

    @dataclass(frozen=True, slots=True)
    class RegisterIndirect:
        """The pointer held in ``base`` plus a signed static byte ``offset``.

        For LDS/STS ``base`` holds a shared-memory byte offset instead of a pointer.
        """

        base: Register
        offset: int = 0

        def __post_init__(self) -> None:
            _check_reg("RegisterIndirect.base", self.base)
            _check_int("RegisterIndirect.offset", self.offset, -(1 << 31), (1 << 31) - 1)

        def __str__(self) -> str:
            sign = "-" if self.offset < 0 else "+"
            return f"[{self.base} {sign} {abs(self.offset)}]"

    @dataclass(frozen=True, slots=True)
    class RegisterIndirectComputed:
        """Handle in ``handle_reg`` (32-bit integer), byte offset in ``offset_reg`` (integer)."""

        handle_reg: Register
        offset_reg: Register

        def __post_init__(self) -> None:
            _check_reg("RegisterIndirectComputed.handle_reg", self.handle_reg)
            _check_reg("RegisterIndirectComputed.offset_reg", self.offset_reg)

        def __str__(self) -> str:
            return f"[{self.handle_reg} + {self.offset_reg}]"


#: every address mode class, in bytecode order (the index is the mode code)
ADDRESS_MODES: tuple[type, ...] = (
    Address.BufferOffset, Address.PoolOffset, Address.Shared, Address.Class,
    Address.RegisterIndirect, Address.RegisterIndirectComputed,
)
__all__.append("ADDRESS_MODES")
