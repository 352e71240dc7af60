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
Addresses computed in the step (``simd_step``: Scalar, the same in the step's lanes, read once and
kept as a Scalar; Strided by the element size, contiguous) are checked in the step, which stops at its
first lane where one would trap (``simd_control``). Gathers (any other address) have no rule: their
checks cannot be hoisted. Raises SimdUnsupported.
"""

from __future__ import annotations

from atlas_web.isa.addresses import Address
from atlas_web.isa.types import Type

from .. import layout
from ..encoding.types import ValType
from .emitter import Emitter
from .simd_lanes import (
    SIMD_FALLBACK, SIMD_LANES, SIMD_RULES, VECTOR_TYPES, Affine, Const, Scalar, SimdBuilder, SimdUnsupported, Strided,
    Uniform, Vector, halves,
)
from .typemap import type_info

__all__ = ["hoist_check"]

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
    a ``uniform`` access; the prologue checks every lane's access (SIMD_FALLBACK where one would trap).
    Addresses computed in the step (Scalar: the same in its lanes, Strided: contiguous) are checked in the
    step instead, which stops at the step's first lane where one would trap (``_step_address``)."""
    kind, where, disp = _pointer_of(s, field)
    if isinstance(where if kind == "pointer" else where[1], (Scalar, Strided)):
        return _step_address(s, field, ty, kind, where, disp)
    size = ty.size_bytes()
    start = _start_of(where if kind == "pointer" else where[1], size, uniform)
    if start is None:
        raise SimdUnsupported("an address that is not the lane's element")
    span = 0 if uniform else (s.lanes - 1) * size  # from the first lane's byte offset to the last's
    address = _checks(s, s.pro, kind, where, start, disp, ty, span, _fallback_if)
    if not uniform:
        s.addresses.append((address, SIMD_LANES * size))
    s.accesses.append((address, size, 1 if uniform else s.lanes, field == "dst"))
    return address


def _step_address(s: SimdBuilder, field: str, ty: Type, kind: str, where, disp: int) -> int:
    """The address local of an access whose address is computed in the step, checked there: the same
    address in the four lanes (Scalar) or the lanes' elements (Strided with the element size as stride).
    The check stops the SIMD function at the step's first lane (the scalar lane code runs from there and
    traps as the contract says), so it must come before any store of the step."""
    value = where if kind == "pointer" else where[1]
    size = ty.size_bytes()
    if isinstance(value, Strided) and value.stride != size:
        raise SimdUnsupported("an address that is not the lane's element")
    hoisted = s.hoisted.get(s.index)
    if hoisted is not None:  # checked for every iteration before the loop (simd_control): no check here
        address = s.fb.add_local(I32)
        s.body.get(hoisted).get(value.local).op("i32.wrap_i64").op("i32.add").set(address)
        return address
    if s.stored:
        raise SimdUnsupported("an access checked in the step after a store of the step")
    s.body_checks = True
    span = 0 if isinstance(value, Scalar) else (SIMD_LANES - 1) * size
    return _checks(s, s.body, kind, where, Scalar(value.local), disp, ty, span, s.stop_if)


def hoist_check(s: SimdBuilder, instr, pointer, advance: int, iterations_less_one: int) -> int:
    """Check in the step, before a loop, every access the LDG ``instr`` makes in the loop: its address is
    ``pointer`` (Scalar or Strided by the element size, the value at the first iteration) plus ``advance``
    (a nonnegative constant, a multiple of the alignment) per iteration, for 1 + the i64 local
    ``iterations_less_one`` iterations. Returns an i32 local ``delta``: the address of an iteration is
    ``delta + wrap(pointer)``. Stops the step where one would trap (then nothing of it ran)."""
    ty = instr.ty
    if s.stored:
        raise SimdUnsupported("an access checked in the step after a store of the step")
    s.body_checks = True
    size = ty.size_bytes()
    span = s.fb.add_local(I64)
    lanes = 0 if isinstance(pointer, Scalar) else (SIMD_LANES - 1) * size
    s.body.get(iterations_less_one).i64(advance).op("i64.mul").i64(lanes).op("i64.add").set(span)
    address = _checks(s, s.body, "pointer", pointer, Scalar(pointer.local), instr.src.offset, ty, Scalar(span),
                      s.stop_if)
    delta = s.fb.add_local(I32)
    s.body.get(address).get(pointer.local).op("i32.wrap_i64").op("i32.sub").set(delta)
    return delta


def _push(s: SimdBuilder, e: Emitter, value, ty: Type) -> None:
    if isinstance(value, Const):
        (e.i64 if ty.bits == 64 else e.i32)(value.value)
    else:
        e.get(value.local)


def _checks(s: SimdBuilder, p: Emitter, kind: str, where, start, disp: int, ty: Type, span, fail) -> int:
    """Write into ``p`` the contract's checks (handle, bounds, alignment) of the bytes from the access at
    ``start`` (the first lane's pointer or offset) to ``span`` bytes further (an int, or an i64 local of
    the step), ``fail(p)`` where one fails; returns the local holding the first lane's linear-memory address."""
    def add_span() -> None:
        if isinstance(span, int):
            p.i64(span)
        else:
            p.get(span.local)
        p.op("i64.add")

    size, align = ty.size_bytes(), ty.alignment()
    handle, first, last = s.fb.add_local(I32), s.fb.add_local(I64), s.fb.add_local(I64)
    if kind == "pointer":
        base = s.fb.add_local(I64)
        _push(s, p, start, Type.U64)
        p.tee(base).i64(32).op("i64.shr_u").op("i32.wrap_i64").set(handle)
        # the last lane's pointer must keep the handle (no carry out of the offset, no wrap)
        p.get(base)
        add_span()
        p.tee(last).i64(32).op("i64.shr_u").op("i32.wrap_i64")
        p.get(handle).op("i32.ne").get(last).get(base).op("i64.lt_u").op("i32.or")
        fail(p)
        p.get(base).i64(0xFFFFFFFF).op("i64.and").i64(disp).op("i64.add").set(first)
        p.get(last).i64(0xFFFFFFFF).op("i64.and").i64(disp).op("i64.add").set(last)
    else:
        handle_value, _offset, oty = where
        _push(s, p, handle_value, Type.U32)
        p.set(handle)
        _push(s, p, start, oty)
        if oty.bits < 64:
            p.op("i64.extend_i32_u")
        p.tee(first)
        add_span()
        p.set(last)
        if oty.bits < 64:  # the offset register wraps at its width: the range must not
            p.get(last).i64(1 << oty.bits).op("i64.ge_u")
            fail(p)
    entry = s.fb.add_local(I32)
    p.get(handle).get(s.capacity).op("i32.ge_u")
    fail(p)
    p.get(s.table).get(handle).i32(layout.TABLE_ENTRY_SHIFT).op("i32.shl").op("i32.add").tee(entry)
    p.op("i32.load", layout.ENTRY_KIND).op("i32.eqz")
    fail(p)
    p.get(first).i64(0).op("i64.lt_s").get(first).i64(0xFFFFFFFF).op("i64.gt_u").op("i32.or")
    p.get(last).i64(size).op("i64.add").get(entry).op("i64.load32_u", layout.ENTRY_SIZE).op("i64.gt_u").op("i32.or")
    if align > 1:
        p.get(first).op("i32.wrap_i64").i32(align - 1).op("i32.and").op("i32.or")
    fail(p)
    address = s.fb.add_local(I32)
    p.get(entry).op("i32.load", layout.ENTRY_BASE).get(first).op("i32.wrap_i64").op("i32.add").set(address)
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
    if isinstance(where if kind == "pointer" else where[1], Scalar):
        # the same address in the four lanes of the step: one load per step
        address = _checked_address(s, "src", ty)
        local = s.uniform_local(ty)
        if ty is Type.BF16:
            s.body.get(address).op("i32.load16_u", 0).i32(16).op("i32.shl").op("f32.reinterpret_i32").set(local)
        else:
            s.body.get(address).op(type_info(ty).load, 0).set(local)
        s.write(Scalar(local))
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
    kind, where, _ = _pointer_of(s, "dst")
    if isinstance(where if kind == "pointer" else where[1], Scalar):
        raise SimdUnsupported("lanes of a step storing to one address")
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
