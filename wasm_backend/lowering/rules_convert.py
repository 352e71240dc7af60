"""The lane rule of CVT, for every pair of types, dispatched by (source family, destination family).

* int -> int: the source normalised by its signedness, then extended or wrapped;
* int -> float: ``convert`` (correctly rounded) for F32/F64; F16/BF16 round once through an exact or
  sticky f64 and ``f64_to_f32_odd``;
* float -> int: ``trunc_sat`` (NaN -> 0, saturation), clamped for 8- and 16-bit destinations;
* float -> float: promote/demote; to F16/BF16 one rounding (from f64 through ``f64_to_f32_odd``);
* extended integers through the extended-integer library.
"""

from __future__ import annotations

from atlas_web.isa.opcodes import ALL
from atlas_web.isa.types import Type

from .lane_context import LaneContext
from .rules import lane_rule
from .typemap import limbs_of, type_info

__all__ = ["CONVERSIONS", "convert_native"]


def _family(ty: Type) -> str:
    if ty.is_float():
        return "float"
    return "extended" if ty.is_extended() else "int"


def _int_to_int(ctx: LaneContext, src: Type, dst: Type) -> None:
    ctx.normalize(src)
    if src.bits == 64 and dst.bits < 64:
        ctx.e.op("i32.wrap_i64")
    elif src.bits < 64 and dst.bits == 64:
        ctx.e.op("i64.extend_i32_s" if src.is_signed() else "i64.extend_i32_u")


def _round_from_f64(ctx: LaneContext, dst: Type) -> None:
    """An f64 on the stack (exact, or sticky) rounded once to the float type ``dst``."""
    if dst is Type.F64:
        return
    if dst is Type.F32:
        ctx.e.op("f32.demote_f64")
        return
    ctx.e.call(ctx.m.helper("f64_to_f32_odd"))
    ctx.round_to(dst)


def _int_to_float(ctx: LaneContext, src: Type, dst: Type) -> None:
    e = ctx.e
    ctx.normalize(src)
    sign = "s" if src.is_signed() else "u"
    width = "i64" if src.bits == 64 else "i32"
    if dst in (Type.F32, Type.F64):
        e.op(f"{type_info(dst).prefix}.convert_{width}_{sign}")
    elif src.bits < 64:
        e.op(f"f64.convert_i32_{sign}")  # exact
        _round_from_f64(ctx, dst)
    else:
        e.call(ctx.m.helper("i64_to_f64_sticky" if src.is_signed() else "u64_to_f64_sticky"))
        _round_from_f64(ctx, dst)


def _float_to_int(ctx: LaneContext, src: Type, dst: Type) -> None:
    e = ctx.e
    fprefix = type_info(src).prefix
    sign = "s" if dst.is_signed() else "u"
    if dst.bits == 64:
        e.op(f"i64.trunc_sat_{fprefix}_{sign}")
        return
    e.op(f"i32.trunc_sat_{fprefix}_{sign}")
    if dst.bits == 32:
        return
    lo, hi = dst.int_range()
    value = ctx.temp(type_info(dst).valtype)
    e.set(value)
    if dst.is_signed():
        e.i32(lo).get(value).get(value).i32(lo).op("i32.lt_s").op("select").set(value)
        e.i32(hi).get(value).get(value).i32(hi).op("i32.gt_s").op("select")
    else:
        e.i32(hi).get(value).get(value).i32(hi).op("i32.gt_u").op("select")


def _float_to_float(ctx: LaneContext, src: Type, dst: Type) -> None:
    if src is dst:
        return
    if src is Type.F64:
        _round_from_f64(ctx, dst)
    elif dst is Type.F64:
        ctx.e.op("f64.promote_f32")
    else:
        ctx.round_to(dst)  # an f32 (F16/BF16/F32 value) rounded once to the destination format


def convert_native(ctx: LaneContext, src: Type, dst: Type) -> None:
    """The native value of ``src`` on the stack converted to ``dst`` (both at most 64 bits)."""
    CONVERSIONS[_family(src), _family(dst)](ctx, src, dst)


CONVERSIONS = {
    ("int", "int"): _int_to_int, ("int", "float"): _int_to_float,
    ("float", "int"): _float_to_int, ("float", "float"): _float_to_float,
}


def _native_to_extended(ctx: LaneContext, instr) -> None:
    src, dst = instr.src_ty, instr.dst_ty
    e = ctx.e
    ctx.write_address()
    if src.is_float():
        ctx.read("src")
        if src is not Type.F64:
            e.op("f64.promote_f32")
        e.i32(limbs_of(dst)).i32(int(dst.is_signed())).call(ctx.m.helper("ext_from_f64"))
        return
    ctx.read("src")
    _int_to_int(ctx, src, Type.I64 if src.is_signed() else Type.U64)
    e.i32(int(src.is_signed())).i32(limbs_of(dst)).call(ctx.m.helper("ext_from_i64"))


def _extended_to_native(ctx: LaneContext, instr) -> None:
    src, dst = instr.src_ty, instr.dst_ty
    e = ctx.e
    if dst.is_float():
        ctx.read("src")
        ctx.e.i32(limbs_of(src)).i32(int(src.is_signed()))
        ctx.ext_temp(0)
        e.i32(0 if dst is Type.F64 else 1).call(ctx.m.helper("ext_to_f64"))
        _round_from_f64(ctx, dst)
    else:
        ctx.read("src")
        e.op("i64.load", 0)
        if dst.bits < 64:
            e.op("i32.wrap_i64")
    ctx.write()


def _extended_to_extended(ctx: LaneContext, instr) -> None:
    src, dst = instr.src_ty, instr.dst_ty
    ctx.write_address()
    ctx.read("src")
    ctx.e.i32(limbs_of(src)).i32(limbs_of(dst)).i32(int(src.is_signed())).call(ctx.m.helper("ext_resize"))


@lane_rule("CVT", ALL)
def lower_cvt(ctx: LaneContext, instr) -> None:
    src, dst = instr.src_ty, instr.dst_ty
    if dst.is_extended():
        if src.is_extended():
            _extended_to_extended(ctx, instr)
        else:
            _native_to_extended(ctx, instr)
        return
    if src.is_extended():
        _extended_to_native(ctx, instr)
        return
    ctx.read("src")
    convert_native(ctx, src, dst)
    ctx.write()
