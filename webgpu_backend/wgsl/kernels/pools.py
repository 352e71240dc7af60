"""PoolAlloc and PoolFree: host steps, run between two submissions on the backend's memory.
Standard library only (the memory and driver are passed in)."""

from __future__ import annotations

import struct

from atlas_web.errors import AllocationFailed, TrapCode
from atlas_web.isa.addresses import MAX_OFFSET
from atlas_web.trap_report import TrapRecord, operand_position

from ...host_steps import register_value, step_trap as _trap
from . import Kernel, register

__all__ = ["PoolAllocKernel", "PoolFreeKernel"]


class _PoolStep(Kernel):
    host = True

    def supports(self, operation, ty) -> bool:
        return operation is None


class PoolAllocKernel(_PoolStep):
    instruction = "PoolAlloc"

    def run_host(self, step, lane0: dict, memory, driver, rt, uniforms_byte: int) -> None:
        """Allocate; write the new handle into the step's uniform result word of ``rt``.
        Raises AtlasTrap POOL_EXHAUSTED (no memory)."""
        try:
            alloc = memory.allocate("pool", step.instr.size)
        except AllocationFailed:
            raise _trap(step, TrapCode.POOL_EXHAUSTED, TrapRecord(value=step.instr.size), memory.free_bytes()) from None
        driver.write_buffer(rt, uniforms_byte + 4 * step.result[1], struct.pack("<I", alloc.handle))


class PoolFreeKernel(_PoolStep):
    instruction = "PoolFree"

    def run_host(self, step, lane0: dict, memory, driver, rt, uniforms_byte: int) -> None:
        """Free lane 0's pool handle. Raises AtlasTrap INVALID_HANDLE (not a pool)."""
        handle = register_value(lane0["handle"]) & MAX_OFFSET
        entry = memory.lookup(handle)
        if entry is None or entry.kind != "pool":
            raise _trap(step, TrapCode.INVALID_HANDLE, TrapRecord(operand_position(step.instr, "handle"), handle, extent=1))
        memory.free(handle, "pool")


register(PoolAllocKernel())
register(PoolFreeKernel())
