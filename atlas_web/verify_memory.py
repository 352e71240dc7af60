"""Launch-time checks of static addresses (``BufferOffset``, ``PoolOffset``, ``Class``, ``Shared``).

The verifier collects every static address once (:func:`static_accesses`);
:func:`verify_launch` then checks them against the live allocations and the
launch's shared memory, cheaply enough to run before every launch. The range of
an access is the operand's extent in the opcode table (``atlas_web.isa.extents``:
one value for LDG, ``count`` values for ParallelMap, ``m*k`` for a matrix). Checks
run in the order of the semantics: handle, bounds, alignment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .errors import ProgramError
from .isa.addresses import BOUNDARY_HANDLE, CLASS_STRIDE, Address
from .isa.extents import array_operands
from .isa.types import Type
from .launch import LaunchConfig
from .verify_operands import instruction_text

__all__ = [
    "StaticAccess", "static_accesses", "scan_addresses", "verify_launch", "STATIC_ADDRESS_SPACES", "ALLOCATION_KINDS",
]


@dataclass(frozen=True, slots=True)
class StaticAccess:
    """A static address of instruction ``index`` in operand ``path``: ``space`` ("buffer",
    "pool", "boundary" or "shared"), ``handle`` (None for shared memory), byte ``offset``,
    ``length`` in bytes and the ``type`` whose alignment it needs."""

    index: int
    path: str
    space: str
    handle: int | None
    offset: int
    length: int
    type: Type


#: static address mode -> (space, handle, byte offset) of an address
STATIC_ADDRESS_SPACES: dict[type, Callable[[object], tuple[str, int | None, int]]] = {
    Address.BufferOffset: lambda a: ("buffer", a.handle, a.offset),
    Address.PoolOffset: lambda a: ("pool", a.handle, a.offset),
    Address.Class: lambda a: ("boundary", BOUNDARY_HANDLE, a.class_id * CLASS_STRIDE + a.offset),
    Address.Shared: lambda a: ("shared", None, a.offset),
}

#: space -> the allocation kinds (memory.Allocation.kind) a handle in it may name
ALLOCATION_KINDS: dict[str, tuple[str, ...]] = {
    "buffer": ("buffer", "boundary"),
    "pool": ("pool",),
    "boundary": ("boundary",),
}


def static_accesses(program) -> tuple[StaticAccess, ...]:
    """Every static address of ``program``, in instruction and operand order."""
    return scan_addresses(program)[0]


def scan_addresses(program) -> tuple[tuple[StaticAccess, ...], bool]:
    """``(static accesses, whether any global address is register-based)`` of ``program``."""
    out = []
    pointers = False
    for index, instr in enumerate(program.instructions):
        if not instr.INFO.address_operands:
            continue
        for array in array_operands(instr):
            describe = STATIC_ADDRESS_SPACES.get(array.address.__class__)
            if array.elements is None:   # an extent read from memory (a CSR count): the step checks it
                continue
            if describe is None:
                pointers = pointers or array.space == "global"
                continue
            space, handle, offset = describe(array.address)
            out.append(StaticAccess(index, array.name, space, handle, offset, array.nbytes, array.ty))
    return tuple(out), pointers


def verify_launch(info, config: LaunchConfig, memory) -> None:
    """Check the static addresses of a verified program (``info``, a ProgramInfo) against the
    live allocations in ``memory`` (an ``atlas_web.memory.HandleTable``) and ``config``'s shared
    memory. Raises ProgramError naming the instruction and operand: a handle that names no live
    allocation of the right kind, a range outside its allocation, a misaligned offset."""
    program = info.program
    for acc in info.static_accesses:
        if acc.space == "shared":
            size, where = config.shared_memory, "the launch's shared memory"
        else:
            alloc = memory.lookup(acc.handle)
            if alloc is None or alloc.kind not in ALLOCATION_KINDS[acc.space]:
                what = "no live allocation" if alloc is None else f"a {alloc.kind}"
                raise _launch_error(program, acc, f"handle {acc.handle} names {what}, not a live {acc.space}")
            size, where = alloc.size, f"{alloc.kind} {alloc.handle}"
        if acc.offset + acc.length > size:
            raise _launch_error(program, acc, f"bytes {acc.offset}..{acc.offset + acc.length} lie outside {where} "
                                              f"of {size} bytes")
        alignment = acc.type.alignment()
        if acc.offset % alignment:
            raise _launch_error(program, acc, f"offset {acc.offset} is misaligned for {acc.type.suffix} "
                                              f"(needs a multiple of {alignment})")


def _launch_error(program, acc: StaticAccess, reason: str) -> ProgramError:
    instr = program.instructions[acc.index]
    return ProgramError(f"operand '{acc.path}': {reason}", index=acc.index, text=instruction_text(instr))
