"""Lane rules of data movement: MOV, MOV_IMM, LDG, STG, LDS, STS, PoolLoad, PoolStore (every type).

Native values move through locals with the type's load/store (F16 through the binary16 helpers,
BF16 as the upper half of an f32); extended integers move limb arrays with ``memory.copy``.
Addresses are resolved and checked by the context (handle, bounds, alignment, in that order).
"""

from __future__ import annotations

from atlas_web.isa.opcodes import ALL
from atlas_web.isa.types import Type

from .lane_context import LaneContext
from .rules import lane_rule
from .typemap import type_info

__all__ = ["copy_bytes", "store_extended_constant"]


def copy_bytes(ctx: LaneContext, nbytes: int) -> None:
    """Destination and source addresses on the stack: copy ``nbytes``."""
    ctx.e.i32(nbytes).op("memory.copy", 0, 0)


def store_extended_constant(ctx: LaneContext, ty: Type, value: int) -> None:
    """The limb address on the stack (kept in a temp): store ``value`` wrapped to ``ty`` as limbs."""
    e = ctx.e
    base = ctx.temp(type_info(ty).valtype)
    e.set(base)
    bits = value & ((1 << ty.bits) - 1)
    for limb in range(ty.bits // 64):
        e.get(base).i64((bits >> (64 * limb)) & 0xFFFFFFFFFFFFFFFF).op("i64.store", 8 * limb)


@lane_rule("MOV", ALL)
def lower_mov(ctx: LaneContext, instr) -> None:
    if instr.ty.is_extended():
        ctx.write_address()
        ctx.read("src")
        copy_bytes(ctx, instr.ty.size_bytes())
        return
    ctx.read("src")
    ctx.write()


@lane_rule("MOV_IMM", ALL)
def lower_mov_imm(ctx: LaneContext, instr) -> None:
    ty = instr.ty
    if ty.is_extended():
        ctx.write_address()
        store_extended_constant(ctx, ty, instr.value)
        return
    if ty is Type.F64:
        ctx.e.f64(instr.value)
    elif ty.is_float():
        ctx.e.f32(instr.value)
    elif ty.bits == 64:
        ctx.e.i64(instr.value)
    else:
        ctx.e.i32(instr.value)
    ctx.write()


def _load(resolve):
    def rule(ctx: LaneContext, instr) -> None:
        ty = instr.ty
        if ty.is_extended():
            ctx.write_address()
            resolve(ctx, ty)
            copy_bytes(ctx, ty.size_bytes())
            return
        resolve(ctx, ty)
        ctx.load_value(ty)
        ctx.write()
    return rule


def _store(resolve):
    def rule(ctx: LaneContext, instr) -> None:
        ty = instr.ty
        if ty.is_extended():
            resolve(ctx, ty)
            ctx.read("src")
            copy_bytes(ctx, ty.size_bytes())
            return
        value = ctx.temp(type_info(ty).valtype)
        ctx.read("src")
        ctx.e.set(value)
        resolve(ctx, ty)
        ctx.store_value(ty, value)
    return rule


def _global(field: str):
    return lambda ctx, ty: ctx.global_address(field, ty.size_bytes(), ty.alignment())


def _shared(field: str):
    return lambda ctx, ty: ctx.shared_address(field, ty.size_bytes(), ty.alignment())


def _pool(ctx: LaneContext, ty: Type) -> None:
    ctx.pool_address(ty.size_bytes(), ty.alignment())


lane_rule("LDG", ALL)(_load(_global("src")))
lane_rule("STG", ALL)(_store(_global("dst")))
lane_rule("LDS", ALL)(_load(_shared("src")))
lane_rule("STS", ALL)(_store(_shared("dst")))
lane_rule("PoolLoad", ALL)(_load(_pool))
lane_rule("PoolStore", ALL)(_store(_pool))
