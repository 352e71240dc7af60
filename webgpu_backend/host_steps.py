"""What the host does for cooperative steps: resolve their array operands, and run the pool steps.

``kernel_operands`` turns each array operand of a kernel step (the table's array_operands) into
(the chunk buffer that holds it, its byte offset in that buffer). Static addresses were checked
when the launch started; register-based ones take lane 0's register values (read back from lane
state) and are checked here in the reference's order, per operand: handle, range (the operand's
extent), alignment of the start; a failure is AtlasTrap with lane -1. PoolAlloc and PoolFree allocate
and free on the host between two submissions (POOL_EXHAUSTED / INVALID_HANDLE traps).
"""

from __future__ import annotations

import struct

from atlas_web.errors import AllocationFailed, AtlasTrap, TrapCode
from atlas_web.trap_report import TrapRecord, operand_position, trap
from atlas_web.isa.addresses import BOUNDARY_HANDLE, CLASS_STRIDE, MAX_OFFSET, Address
from atlas_web.isa.extents import array_operands
from atlas_web.isa.opcodes import Access

__all__ = ["kernel_operands", "HostSteps", "binding_roles"]

#: the kernels' bindings of the arrays read, in operand order
_SOURCE_ROLES = ("src_a", "src_b")


def binding_roles(arrays) -> tuple[str, ...]:
    """The kernels' binding role of each ArrayOperand in ``arrays`` (operand order): the written array is
    "dst", the read ones "src_a", "src_b" in order."""
    sources = iter(_SOURCE_ROLES)
    return tuple("dst" if a.access is not Access.READ else next(sources) for a in arrays)


def _value(words: tuple[int, ...]) -> int:
    return sum(w << (32 * k) for k, w in enumerate(words))


def _trap(step, code: TrapCode, record: TrapRecord, free: int | None = None) -> AtlasTrap:
    return trap(code, step.index, -1, step.instr, record, free=free)


def _register_address(step, name: str, address, lane0: dict) -> tuple[int, int | None, int]:
    """(handle, offset, the offset modulo 2**64 for a trap record) of a register-based address from lane
    0's values (offset None: outside 32 bits)."""
    if isinstance(address, Address.RegisterIndirect):
        pointer = _value(lane0[f"{name}.base"]) & ((1 << 64) - 1)
        offset = (pointer & MAX_OFFSET) + address.offset
        return pointer >> 32, offset if 0 <= offset <= MAX_OFFSET else None, offset
    handle = _value(lane0[f"{name}.handle_reg"]) & MAX_OFFSET
    offset = _value(lane0[f"{name}.offset_reg"])
    return handle, offset if offset <= MAX_OFFSET else None, offset


_STATIC = {
    Address.BufferOffset: lambda a: (a.handle, a.offset),
    Address.PoolOffset: lambda a: (a.handle, a.offset),
    Address.Class: lambda a: (BOUNDARY_HANDLE, a.class_id * CLASS_STRIDE + a.offset),
}


def kernel_operands(memory, step, lane0: dict | None) -> dict[str, tuple[object, int]]:
    """role -> (chunk buffer, byte offset in it) of every array operand of a kernel step.

    ``lane0`` holds lane 0's register words (path -> words) when some address is register-based.
    Raises AtlasTrap (lane -1) for a register-based operand that fails a check.
    """
    arrays = array_operands(step.instr)
    out = {}
    for array, role in zip(arrays, binding_roles(arrays)):
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
                raise _trap(step, TrapCode.INVALID_HANDLE, TrapRecord(operand, handle))
            if offset is None or offset + array.nbytes > alloc.size:
                raise _trap(step, TrapCode.OUT_OF_BOUNDS, TrapRecord(operand, handle, wide, array.nbytes, alloc.size))
            if offset % array.ty.alignment():
                raise _trap(step, TrapCode.MISALIGNED, TrapRecord(operand, handle, wide, array.ty.alignment()))
        buffer, base = memory.location(alloc)
        out[role] = (buffer, base + offset)
    return out


class HostSteps:
    """PoolAlloc and PoolFree on the backend's memory."""

    def __init__(self, memory) -> None:
        self.memory = memory

    def pool_step(self, step, lane0: dict, rt, uniforms_byte: int, driver) -> None:
        """Run a pool step; PoolAlloc writes the new handle into its uniform result word of ``rt``.

        Raises AtlasTrap: POOL_EXHAUSTED (no memory), INVALID_HANDLE (PoolFree of a non-pool).
        """
        if step.kind == "pool_alloc":
            try:
                alloc = self.memory.allocate("pool", step.instr.size)
            except AllocationFailed:
                raise _trap(step, TrapCode.POOL_EXHAUSTED, TrapRecord(value=step.instr.size),
                            self.memory.free_bytes()) from None
            driver.write_buffer(rt, uniforms_byte + 4 * step.result[1], struct.pack("<I", alloc.handle))
            return
        handle = _value(lane0["handle"]) & MAX_OFFSET
        entry = self.memory.lookup(handle)
        if entry is None or entry.kind != "pool":
            raise _trap(step, TrapCode.INVALID_HANDLE,
                        TrapRecord(operand_position(step.instr, "handle"), handle, extent=1))
        self.memory.free(handle, "pool")
