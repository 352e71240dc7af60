"""PoolAlloc and PoolFree: cooperative steps that call the host (``env.pool_alloc``, ``env.pool_free``).

PoolAlloc asks the host for a zeroed pool of ``size`` bytes; a zero handle (the backend cannot
allocate) traps POOL_EXHAUSTED. PoolFree frees the pool named by lane 0's handle register; the host
answers 1 for a handle that names no live pool, which traps INVALID_HANDLE. After either call the
device table may have moved, so its globals are reloaded from the header.
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.isa.types import Type
from atlas_web.trap_report import NO_OPERAND

from ..encoding.types import ValType
from .coop_context import COOP_OK, CoopContext
from .rules import cooperative_rule
from .trap_numbers import u32

__all__: list[str] = []


@cooperative_rule("PoolAlloc")
def build_pool_alloc(cc: CoopContext) -> None:
    e = cc.e
    handle = cc.local(ValType.I32)
    e.i32(cc.instr.size).call(cc.m.host("pool_alloc")).tee(handle).op("i32.eqz")
    cc.trap_if(TrapCode.POOL_EXHAUSTED, (NO_OPERAND, 0, cc.instr.size))
    cc.refresh_table()
    e.get(handle)
    cc.store_result(Type.U32)
    e.i32(COOP_OK)


@cooperative_rule("PoolFree")
def build_pool_free(cc: CoopContext) -> None:
    e = cc.e
    handle = cc.local(ValType.I32)
    ty = cc.read_lane0("handle")
    if ty.bits < 32:
        e.i32((1 << ty.bits) - 1).op("i32.and")
    e.tee(handle).call(cc.m.host("pool_free"))
    cc.trap_if(TrapCode.INVALID_HANDLE, (cc.operand("handle"), u32(handle), 0, 1))
    cc.refresh_table()
    e.i32(COOP_OK)
