"""SIMD lane mode: LDG and STG (``simd_lanes`` has the values; the rules join ``SIMD_RULES`` on import).

An access whose address is Affine with a stride of the element size is contiguous: ``v128.load`` /
``v128.store`` at an address local advanced by 16 or 32 bytes per step (BF16: ``v128.load16x4_u``
widened to the upper halves of f32 lanes, and the upper halves narrowed and stored with
``v128.store64_lane``, 8 bytes per step). An LDG whose address is the same in every lane (Const or
Uniform) and that comes before every store of the program is read once, in the prologue (a Uniform
value; as in the reference, every lane reads before any lane stores). The checks of every lane's
access are made in the prologue, in the contract's order (handle, bounds, alignment): the handle
and the allocation cannot change during a launch without pools or stops, and a contiguous range
keeps the first lane's alignment. When one would trap, the function returns SIMD_FALLBACK before
anything ran, and the scalar lane code runs every lane (and traps exactly as the contract says).
Gathers (any other address) have no rule: their checks cannot be hoisted. Raises SimdUnsupported.
"""

from __future__ import annotations

from atlas_web.isa.addresses import Address
from atlas_web.isa.types import Type

from .. import layout
from ..encoding.types import ValType
from .emitter import Emitter
from .simd_lanes import (
    SIMD_FALLBACK, SIMD_LANES, SIMD_RULES, VECTOR_TYPES, Affine, Const, SimdBuilder, SimdUnsupported, Uniform, Vector,
    halves,
)
from .typemap import type_info

__all__: list[str] = []

I32, I64, V128 = ValType.I32, ValType.I64, ValType.V128


def _pointer_of(s: SimdBuilder, field: str):
    """(handle value, offset Affine/Const/Uniform, width of the offset) of a global address operand."""
    addr = getattr(s.instr, field)
    if isinstance(addr, Address.RegisterIndirect):
        ty, pointer = s.read(f"{field}.base")
        return "pointer", pointer, addr.offset
    if isinstance(addr, Address.RegisterIndirectComputed):
        hty, handle = s.read(f"{field}.handle_reg")
        oty, offset = s.read(f"{field}.offset_reg")
        if not isinstance(handle, (Const, Uniform)) or hty.bits != 32:
            raise SimdUnsupported("a handle that varies")
        return "computed", (handle, offset, oty), 0
    raise SimdUnsupported("static address")


def _start_of(value, size: int, uniform: bool):
    """The first lane's value of an address (or offset) operand: its base when it is the lane's element
    (Affine with a stride of ``size``), itself when ``uniform`` and it is Const or Uniform, else None."""
    if uniform:
        return value if isinstance(value, (Const, Uniform)) else None
    return value.base if isinstance(value, Affine) and value.stride == size else None


def _checked_address(s: SimdBuilder, field: str, ty: Type, uniform: bool = False) -> int:
    """An i32 address local for the step's first lane of a contiguous access, or for the one address of
    a ``uniform`` access; the prologue checks every lane's access (SIMD_FALLBACK where one would trap)."""
    kind, where, disp = _pointer_of(s, field)
    size, align = ty.size_bytes(), ty.alignment()
    span = 0 if uniform else (s.lanes - 1) * size  # from the first lane's byte offset to the last's
    p = s.pro
    handle, first, last = s.fb.add_local(I32), s.fb.add_local(I64), s.fb.add_local(I64)
    if kind == "pointer":
        start = _start_of(where, size, uniform)
        if start is None:
            raise SimdUnsupported("an address that is not the lane's element")
        base = s.fb.add_local(I64)
        s.scalar(start, Type.U64)
        p.tee(base).i64(32).op("i64.shr_u").op("i32.wrap_i64").set(handle)
        # the last lane's pointer must keep the handle (no carry out of the offset, no wrap)
        p.get(base).i64(span).op("i64.add").tee(last).i64(32).op("i64.shr_u").op("i32.wrap_i64")
        p.get(handle).op("i32.ne").get(last).get(base).op("i64.lt_u").op("i32.or")
        _fallback_if(p)
        p.get(base).i64(0xFFFFFFFF).op("i64.and").i64(disp).op("i64.add").set(first)
        p.get(last).i64(0xFFFFFFFF).op("i64.and").i64(disp).op("i64.add").set(last)
    else:
        handle_value, offset, oty = where
        start = _start_of(offset, size, uniform)
        if start is None:
            raise SimdUnsupported("an offset that is not the lane's element")
        s.scalar(handle_value, Type.U32)
        p.set(handle)
        s.scalar(start, oty)
        if oty.bits < 64:
            p.op("i64.extend_i32_u")
        p.tee(first).i64(span).op("i64.add").set(last)
        if oty.bits < 64:  # the offset register wraps at its width: the range must not
            p.get(last).i64(1 << oty.bits).op("i64.ge_u")
            _fallback_if(p)
    entry = s.fb.add_local(I32)
    p.get(handle).get(s.capacity).op("i32.ge_u")
    _fallback_if(p)
    p.get(s.table).get(handle).i32(layout.TABLE_ENTRY_SHIFT).op("i32.shl").op("i32.add").tee(entry)
    p.op("i32.load", layout.ENTRY_KIND).op("i32.eqz")
    _fallback_if(p)
    p.get(first).i64(0).op("i64.lt_s").get(first).i64(0xFFFFFFFF).op("i64.gt_u").op("i32.or")
    p.get(last).i64(size).op("i64.add").get(entry).op("i64.load32_u", layout.ENTRY_SIZE).op("i64.gt_u").op("i32.or")
    if align > 1:
        p.get(first).op("i32.wrap_i64").i32(align - 1).op("i32.and").op("i32.or")
    _fallback_if(p)
    address = s.fb.add_local(I32)
    p.get(entry).op("i32.load", layout.ENTRY_BASE).get(first).op("i32.wrap_i64").op("i32.add").set(address)
    if not uniform:
        s.addresses.append((address, SIMD_LANES * size))
    s.accesses.append((address, size, 1 if uniform else s.lanes, field == "dst"))
    return address


def _fallback_if(e: Emitter) -> None:
    with e.if_():
        e.i32(SIMD_FALLBACK).op("return")


def _simd_ldg(s: SimdBuilder, instr) -> None:
    ty = instr.ty
    if ty not in VECTOR_TYPES:
        raise SimdUnsupported(f"LDG {ty.name}")
    kind, where, _ = _pointer_of(s, "src")
    if isinstance(where if kind == "pointer" else where[1], (Const, Uniform)) and not s.stored:
        # the same address in every lane, read before any store: once, in the prologue
        address = _checked_address(s, "src", ty, uniform=True)
        local = s.uniform_local(ty)
        if ty is Type.BF16:  # the upper half of an f32
            s.pro.get(address).op("i32.load16_u", 0).i32(16).op("i32.shl").op("f32.reinterpret_i32").set(local)
        else:
            s.pro.get(address).op(type_info(ty).load, 0).set(local)
        s.write(Uniform(local))
        return
    address = _checked_address(s, "src", ty)
    out = tuple(s.fb.add_local(V128) for _ in range(halves(ty)))
    for h, half in enumerate(out):
        if ty is Type.BF16:
            s.body.get(address).op("v128.load16x4_u", 0).i32(16).op("i32x4.shl").set(half)
        else:
            s.body.get(address).op("v128.load", 16 * h).set(half)
    s.write(Vector(out))


def _simd_stg(s: SimdBuilder, instr) -> None:
    ty = instr.ty
    if ty not in VECTOR_TYPES:
        raise SimdUnsupported(f"STG {ty.name}")
    _, value = s.read("src")
    vectors = s.vector(value, ty)
    address = _checked_address(s, "dst", ty)
    for h, half in enumerate(vectors):
        if ty is Type.BF16:  # the upper halves of the f32 lanes, as four u16
            s.body.get(address).get(half).i32(16).op("i32x4.shr_u").get(half).i32(16).op("i32x4.shr_u")
            s.body.op("i16x8.narrow_i32x4_u").op("v128.store64_lane", 0, 0)
        else:
            s.body.get(address).get(half).op("v128.store", 16 * h)
    s.stored = True


SIMD_RULES.update({"LDG": _simd_ldg, "STG": _simd_stg})
