"""What the host does for cooperative steps: resolve their array operands.

``kernel_operands`` turns each array operand of a kernel step (the table's array_operands) into
(the chunk buffer that holds it, its byte offset in that buffer). Static addresses were checked
when the launch started; register-based ones take lane 0's register values (read back from lane
state) and are checked here in the reference's order, per operand: handle, range (the operand's
extent), alignment of the start; a failure is AtlasTrap with lane -1. Host steps (PoolAlloc, PoolFree) are
kernels of their own: ``wgsl.kernels.pools``.
"""

from __future__ import annotations

from atlas_web.errors import AtlasTrap, TrapCode
from atlas_web.trap_report import TrapRecord, operand_position, trap
from atlas_web.isa.addresses import BOUNDARY_HANDLE, CLASS_STRIDE, MAX_OFFSET, Address
from atlas_web.isa.extents import array_operands
from atlas_web.isa.opcodes import Access

__all__ = ["kernel_operands", "binding_roles", "register_value", "step_trap"]

#: the kernels' bindings of the arrays read, in operand order
_SOURCE_ROLES = tuple(f"src_{letter}" for letter in "abcdefgh")


def binding_roles(arrays) -> tuple[str, ...]:
    """The kernels' binding role of each ArrayOperand in ``arrays`` (operand order): the written array is
    "dst", the read ones "src_a", "src_b" in order."""
    sources = iter(_SOURCE_ROLES)
    return tuple("dst" if a.access is not Access.READ else next(sources) for a in arrays)


def register_value(words: tuple[int, ...]) -> int:
    """The integer a register's u32 words (lowest first) hold."""
    return sum(w << (32 * k) for k, w in enumerate(words))


def step_trap(step, code: TrapCode, record: TrapRecord, free: int | None = None) -> AtlasTrap:
    """The AtlasTrap of cooperative ``step`` (lane -1: the host's check) with its ``record``."""
    return trap(code, step.index, -1, step.instr, record, free=free)


def _register_address(step, name: str, address, lane0: dict) -> tuple[int, int | None, int]:
    """(handle, offset, the offset modulo 2**64 for a trap record) of a register-based address from lane
    0's values (offset None: outside 32 bits)."""
    if isinstance(address, Address.RegisterIndirect):
        pointer = register_value(lane0[f"{name}.base"]) & ((1 << 64) - 1)
        offset = (pointer & MAX_OFFSET) + address.offset
        return pointer >> 32, offset if 0 <= offset <= MAX_OFFSET else None, offset
    handle = register_value(lane0[f"{name}.handle_reg"]) & MAX_OFFSET
    offset = register_value(lane0[f"{name}.offset_reg"])
    return handle, offset if offset <= MAX_OFFSET else None, offset


_STATIC = {
    Address.BufferOffset: lambda a: (a.handle, a.offset),
    Address.PoolOffset: lambda a: (a.handle, a.offset),
    Address.Class: lambda a: (BOUNDARY_HANDLE, a.class_id * CLASS_STRIDE + a.offset),
}


def kernel_operands(memory, step, lane0: dict | None) -> dict[str, tuple[object, int]]:
    """role -> (chunk buffer, byte offset in it) of every array operand of a kernel step.

    ``lane0`` holds lane 0's register words (path -> words) when some address is register-based.
    Raises AtlasTrap (lane -1) for a register-based operand that fails a check. An array whose extent is read at
    launch (SparseGEMM's ``a_values``, ``a_indices``: ``array.elements`` None) is checked after the others, as
    the reference does, for its handle and alignment only: its range is the kernel's to check on the device,
    from ``f"{role}:alloc"`` = (handle, byte offset in the allocation, the allocation's bytes) added for it.
    """
    arrays = array_operands(step.instr)
    out = {}
    pairs = sorted(zip(arrays, binding_roles(arrays)), key=lambda pair: pair[0].elements is None)
    for array, role in pairs:
        name, address = array.name, array.address
        static = _STATIC.get(type(address))
        if static is not None:
            handle, offset = static(address)
            alloc = memory.get(handle)
        else:
            handle, offset, wide = _register_address(step, name, address, lane0)
            alloc = memory.lookup(handle)
            operand = operand_position(step.instr, name)
            if alloc is None:
                raise step_trap(step, TrapCode.INVALID_HANDLE, TrapRecord(operand, handle))
            if offset is None or (array.nbytes is not None and offset + array.nbytes > alloc.size):
                # (an offset past 32 bits with an extent read at launch: outside whatever the count; extent 0)
                raise step_trap(step, TrapCode.OUT_OF_BOUNDS,
                                TrapRecord(operand, handle, wide, array.nbytes or 0, alloc.size))
            if offset % array.ty.alignment():
                raise step_trap(step, TrapCode.MISALIGNED, TrapRecord(operand, handle, wide, array.ty.alignment()))
        buffer, base = memory.location(alloc)
        out[role] = (buffer, base + offset)
        if array.elements is None:
            out[f"{role}:alloc"] = (handle, offset, alloc.size)
    return out
