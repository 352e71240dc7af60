"""Runtime helpers carried in a module when its code needs them: the trap routine, float format rounding,
exact fmod and exact FMA.

* ``trap(code, index, lane)`` records a lane's trap in the header when no trap is recorded yet or
  ``lane`` is lower than the recorded one (lanes of a stage may trap in any order across segments);
* ``round_f16`` / ``round_bf16`` round an f32 to the nearest value of the format (ties to even;
  overflow to infinity; NaN stays NaN, BF16 NaN quieted as the reference does); ``f16_from_bits`` /
  ``f16_to_bits`` decode and encode binary16 bit patterns;
* ``f64_to_f32_odd`` rounds an f64 to f32 *to odd* (an exact intermediate for a later rounding to
  F16/BF16, so a conversion rounds once), ``i64_to_f64_sticky`` / ``u64_to_f64_sticky`` fold the
  low bits of large 64-bit integers into a sticky bit before converting, as the reference does;
* ``fmod64`` is C ``fmod`` exactly (shift-and-subtract on the significands), also used for f32;
* ``fma32`` rounds ``a*b + c`` once for f32 operands (exact product and sum in f64, rounded to odd,
  then to f32); ``fma64`` is Boldo and Melquiond's emulation (exact Dekker product, TwoSum, rounding
  to odd) inside the exponent window where it is proved correct, and ``a*b + c`` outside it.
"""

from __future__ import annotations

from .. import layout
from ..encoding.types import ValType
from .module_context import ModuleContext, runtime_helper

__all__ = ["F32_TWO_POW_112", "F32_TWO_POW_24"]

I32, I64, F32, F64 = ValType.I32, ValType.I64, ValType.F32, ValType.F64
F32_TWO_POW_112 = 2.0 ** 112
F32_TWO_POW_24 = 2.0 ** 24
_NAN = float("nan")


@runtime_helper("trap")
def _trap(m: ModuleContext) -> None:
    fb, e = m.define("trap", (I32, I32, I32))
    code, index, lane = 0, 1, 2
    e.i32(0).op("i32.load", layout.HEADER_TRAP_CODE).op("i32.eqz")
    e.i32(0).op("i32.load", layout.HEADER_TRAP_LANE).get(lane).op("i32.gt_s").op("i32.or")
    with e.if_():
        e.i32(0).get(code).op("i32.store", layout.HEADER_TRAP_CODE)
        e.i32(0).get(index).op("i32.store", layout.HEADER_TRAP_INDEX)
        e.i32(0).get(lane).op("i32.store", layout.HEADER_TRAP_LANE)


@runtime_helper("round_f16")
def _round_f16(m: ModuleContext) -> None:
    fb, e = m.define("round_f16", (F32,), (F32,))
    a = fb.add_local(F32)
    bits = fb.add_local(I32)
    e.get(0).op("f32.abs").tee(a).get(a).op("f32.ne")
    with e.if_():
        e.get(0).op("return")
    e.get(a).f32(65520.0).op("f32.ge")
    with e.if_():
        e.f32(float("inf")).get(0).op("f32.copysign").op("return")
    e.get(a).f32(2.0 ** -14).op("f32.lt")
    with e.if_(blocktype=F32):
        e.get(a).f32(0.5).op("f32.add").f32(0.5).op("f32.sub")
        e.else_()
        e.get(a).op("i32.reinterpret_f32").tee(bits)
        e.i32(0xFFF).op("i32.add").get(bits).i32(13).op("i32.shr_u").i32(1).op("i32.and").op("i32.add")
        e.i32(~0x1FFF).op("i32.and").op("f32.reinterpret_i32")
    e.get(0).op("f32.copysign")


@runtime_helper("round_bf16")
def _round_bf16(m: ModuleContext) -> None:
    fb, e = m.define("round_bf16", (F32,), (F32,))
    bits = fb.add_local(I32)
    e.get(0).op("i32.reinterpret_f32").tee(bits).i32(0x7FFFFFFF).op("i32.and").i32(0x7F800000).op("i32.gt_u")
    with e.if_(blocktype=I32):
        e.get(bits).i32(0xFFFF0000).op("i32.and").i32(0x00400000).op("i32.or")
        e.else_()
        e.get(bits).i32(0x7FFF).op("i32.add").get(bits).i32(16).op("i32.shr_u").i32(1).op("i32.and")
        e.op("i32.add").i32(0xFFFF0000).op("i32.and")
    e.op("f32.reinterpret_i32")


@runtime_helper("f16_from_bits")
def _f16_from_bits(m: ModuleContext) -> None:
    fb, e = m.define("f16_from_bits", (I32,), (F32,))
    sign = fb.add_local(I32)
    e.get(0).i32(0x8000).op("i32.and").i32(16).op("i32.shl").set(sign)
    e.get(0).i32(10).op("i32.shr_u").i32(0x1F).op("i32.and").i32(0x1F).op("i32.eq")
    with e.if_(blocktype=I32):
        e.get(sign).i32(0x7F800000).op("i32.or").get(0).i32(0x3FF).op("i32.and").i32(13).op("i32.shl").op("i32.or")
        e.else_()
        e.get(0).i32(0x7FFF).op("i32.and").i32(13).op("i32.shl").op("f32.reinterpret_i32")
        e.f32(F32_TWO_POW_112).op("f32.mul").op("i32.reinterpret_f32").get(sign).op("i32.or")
    e.op("f32.reinterpret_i32")


@runtime_helper("f16_to_bits")
def _f16_to_bits(m: ModuleContext) -> None:
    fb, e = m.define("f16_to_bits", (F32,), (I32,))
    bits, sign, mag = fb.add_local(I32), fb.add_local(I32), fb.add_local(I32)
    e.get(0).op("i32.reinterpret_f32").tee(bits).i32(16).op("i32.shr_u").i32(0x8000).op("i32.and").set(sign)
    e.get(bits).i32(0x7FFFFFFF).op("i32.and").set(mag)
    e.get(mag).i32(0x7F800000).op("i32.gt_u")
    with e.if_():
        e.get(sign).i32(0x7E00).op("i32.or").op("return")
    e.get(mag).i32(0x47800000).op("i32.ge_u")
    with e.if_():
        e.get(sign).i32(0x7C00).op("i32.or").op("return")
    e.get(mag).i32(0x38800000).op("i32.lt_u")
    with e.if_(blocktype=I32):
        e.get(0).op("f32.abs").f32(F32_TWO_POW_24).op("f32.mul").op("i32.trunc_f32_u")
        e.else_()
        e.get(mag).i32(13).op("i32.shr_u").i32(112 << 10).op("i32.sub")
    e.get(sign).op("i32.or")


@runtime_helper("f64_to_f32_odd")
def _f64_to_f32_odd(m: ModuleContext) -> None:
    fb, e = m.define("f64_to_f32_odd", (F64,), (F32,))
    r, back = fb.add_local(F32), fb.add_local(F64)
    e.get(0).op("f32.demote_f64").set(r)
    e.get(0).get(0).op("f64.ne")
    with e.if_():
        e.get(r).op("return")
    e.get(r).op("f32.abs").f32(float("inf")).op("f32.eq").get(0).op("f64.abs").f64(float("inf")).op("f64.ne")
    e.op("i32.and")
    with e.if_():  # a finite value beyond the f32 range: the largest finite f32 (odd) keeps overflow decidable
        e.i32(0x7F7FFFFF).op("f32.reinterpret_i32").get(0).op("f32.demote_f64").op("f32.copysign").op("return")
    e.get(r).op("f64.promote_f32").tee(back).get(0).op("f64.ne")
    e.get(r).op("i32.reinterpret_f32").i32(1).op("i32.and").op("i32.eqz").op("i32.and")
    with e.if_():
        e.get(r).op("i32.reinterpret_f32")
        e.i32(1).i32(-1).get(0).op("f64.abs").get(back).op("f64.abs").op("f64.gt").op("select")
        e.op("i32.add").op("f32.reinterpret_i32").set(r)
    e.get(r)


def _sticky_convert(m: ModuleContext, name: str, signed: bool) -> None:
    fb, e = m.define(name, (I64,), (F64,))
    mag = fb.add_local(I64)
    if signed:
        e.i64(0).get(0).op("i64.sub").get(0).get(0).i64(0).op("i64.lt_s").op("select").set(mag)
    else:
        e.get(0).set(mag)
    e.get(mag).i64(1 << 53).op("i64.ge_u")
    with e.if_():
        e.get(mag).i64(~0x7FF).op("i64.and")
        e.i64(0x800).i64(0).get(mag).i64(0x7FF).op("i64.and").i64(0).op("i64.ne").op("select").op("i64.or").set(mag)
    e.get(mag).op("f64.convert_i64_u")
    if signed:
        e.op("f64.neg").get(mag).op("f64.convert_i64_u").get(0).i64(0).op("i64.lt_s").op("select")


@runtime_helper("i64_to_f64_sticky")
def _i64_sticky(m: ModuleContext) -> None:
    _sticky_convert(m, "i64_to_f64_sticky", True)


@runtime_helper("u64_to_f64_sticky")
def _u64_sticky(m: ModuleContext) -> None:
    _sticky_convert(m, "u64_to_f64_sticky", False)


_MANTISSA = (1 << 52) - 1


@runtime_helper("fmod64")
def _fmod64(m: ModuleContext) -> None:
    fb, e = m.define("fmod64", (F64, F64), (F64,))
    x, y = 0, 1
    mx, my, ex, ey, d, shift = (fb.add_local(I64) for _ in range(6))
    e.get(y).f64(0.0).op("f64.eq").get(x).get(x).op("f64.ne").op("i32.or").get(y).get(y).op("f64.ne").op("i32.or")
    e.get(x).op("f64.abs").f64(float("inf")).op("f64.eq").op("i32.or")
    with e.if_():
        e.f64(_NAN).op("return")
    e.get(x).op("f64.abs").get(y).op("f64.abs").op("f64.lt")
    with e.if_():
        e.get(x).op("return")
    e.get(x).op("f64.abs").get(y).op("f64.abs").op("f64.eq")
    with e.if_():
        e.f64(0.0).get(x).op("f64.copysign").op("return")
    for value, mant, exp in ((x, mx, ex), (y, my, ey)):
        e.get(value).op("i64.reinterpret_f64").i64(52).op("i64.shr_u").i64(0x7FF).op("i64.and").set(exp)
        e.get(value).op("i64.reinterpret_f64").i64(_MANTISSA).op("i64.and").set(mant)
        # subnormal: normalise (the subtraction of the clz shift keeps the value's exponent exact)
        e.get(exp).op("i64.eqz")
        with e.if_():
            e.get(mant).op("i64.clz").i64(11).op("i64.sub").set(shift)
            e.get(mant).get(shift).op("i64.shl").set(mant)
            e.i64(1).get(shift).op("i64.sub").set(exp)
            e.else_()
            e.get(mant).i64(1 << 52).op("i64.or").set(mant)
    with e.block("done"):
        with e.loop("step"):
            e.get(ex).get(ey).op("i64.le_s").br_if("done")
            e.get(mx).get(my).op("i64.sub").tee(d).i64(0).op("i64.ge_s")
            with e.if_():
                e.get(d).op("i64.eqz")
                with e.if_():
                    e.f64(0.0).get(x).op("f64.copysign").op("return")
                e.get(d).set(mx)
            e.get(mx).i64(1).op("i64.shl").set(mx)
            e.get(ex).i64(1).op("i64.sub").set(ex)
            e.br("step")
    e.get(mx).get(my).op("i64.sub").tee(d).i64(0).op("i64.ge_s")
    with e.if_():
        e.get(d).op("i64.eqz")
        with e.if_():
            e.f64(0.0).get(x).op("f64.copysign").op("return")
        e.get(d).set(mx)
    e.get(mx).op("i64.clz").i64(11).op("i64.sub").set(shift)
    e.get(mx).get(shift).op("i64.shl").set(mx)
    e.get(ex).get(shift).op("i64.sub").set(ex)
    e.get(ex).i64(1).op("i64.ge_s")
    with e.if_(blocktype=I64):
        e.get(ex).i64(52).op("i64.shl").get(mx).i64(_MANTISSA).op("i64.and").op("i64.or")
        e.else_()
        e.get(mx).i64(1).get(ex).op("i64.sub").op("i64.shr_u")
    e.op("f64.reinterpret_i64").get(x).op("f64.copysign")


def _odd_nudge(e, s: int, err: int) -> None:
    """s (f64 local) := s rounded to odd given the exact error err of s = RN(x) (s nonzero when err is)."""
    e.get(err).f64(0.0).op("f64.ne").get(err).get(err).op("f64.sub").f64(0.0).op("f64.eq").op("i32.and")
    e.get(s).op("i64.reinterpret_f64").i64(1).op("i64.and").op("i64.eqz").op("i32.and")
    with e.if_():
        # toward err: away from zero when err has the sign of s, else toward zero
        e.get(s).op("i64.reinterpret_f64")
        e.i64(1).i64(-1).get(err).f64(0.0).op("f64.gt").get(s).f64(0.0).op("f64.gt").op("i32.eq").op("select")
        e.op("i64.add").op("f64.reinterpret_i64").set(s)


def _two_sum(e, a: int, b: int, s: int, err: int, bb: int) -> None:
    e.get(a).get(b).op("f64.add").set(s)
    e.get(s).get(a).op("f64.sub").set(bb)
    e.get(a).get(s).get(bb).op("f64.sub").op("f64.sub").get(b).get(bb).op("f64.sub").op("f64.add").set(err)


@runtime_helper("fma32")
def _fma32(m: ModuleContext) -> None:
    fb, e = m.define("fma32", (F32, F32, F32), (F32,))
    p, c, s, err, bb = (fb.add_local(F64) for _ in range(5))
    e.get(0).op("f64.promote_f32").get(1).op("f64.promote_f32").op("f64.mul").set(p)
    e.get(2).op("f64.promote_f32").set(c)
    _two_sum(e, p, c, s, err, bb)
    _odd_nudge(e, s, err)
    e.get(s).op("f32.demote_f64")


_SPLITTER = 134217729.0


@runtime_helper("fma64")
def _fma64(m: ModuleContext) -> None:
    fb, e = m.define("fma64", (F64, F64, F64), (F64,))
    a, b, c = 0, 1, 2
    p, ul, th, tl, v, verr, bb, t, ah, al, bh, bl = (fb.add_local(F64) for _ in range(12))
    ea, eb, ec = (fb.add_local(I32) for _ in range(3))
    # plain IEEE when a factor is not finite or zero (the product is then exact); a finite product
    # (even one that overflows) plus an infinite or NaN c is c
    for value in (a, b):
        e.get(value).get(value).op("f64.sub").f64(0.0).op("f64.ne")
    e.op("i32.or")
    with e.if_():
        e.get(a).get(b).op("f64.mul").get(c).op("f64.add").op("return")
    e.get(c).get(c).op("f64.sub").f64(0.0).op("f64.ne")
    with e.if_():
        e.get(c).op("return")
    e.get(a).f64(0.0).op("f64.eq").get(b).f64(0.0).op("f64.eq").op("i32.or")
    with e.if_():
        e.get(a).get(b).op("f64.mul").get(c).op("f64.add").op("return")
    for value, exp in ((a, ea), (b, eb), (c, ec)):
        e.get(value).op("i64.reinterpret_f64").i64(52).op("i64.shr_u").op("i32.wrap_i64").i32(0x7FF).op("i32.and")
        e.i32(1022).op("i32.sub").set(exp)
    # outside the proved window: two roundings (within the documented tolerance)
    e.get(ea).i32(480).op("i32.gt_s").get(ea).i32(-480).op("i32.lt_s").op("i32.or")
    e.get(eb).i32(480).op("i32.gt_s").op("i32.or").get(eb).i32(-480).op("i32.lt_s").op("i32.or")
    e.get(ea).get(eb).op("i32.add").i32(-900).op("i32.lt_s").op("i32.or")
    e.get(c).f64(0.0).op("f64.ne").get(ec).i32(-900).op("i32.lt_s").get(ec).i32(1000).op("i32.gt_s").op("i32.or")
    e.op("i32.and").op("i32.or")
    with e.if_():
        e.get(a).get(b).op("f64.mul").get(c).op("f64.add").op("return")
    for value, hi, lo in ((a, ah, al), (b, bh, bl)):
        e.f64(_SPLITTER).get(value).op("f64.mul").set(t)
        e.get(t).get(t).get(value).op("f64.sub").op("f64.sub").set(hi)
        e.get(value).get(hi).op("f64.sub").set(lo)
    e.get(a).get(b).op("f64.mul").set(p)
    e.get(ah).get(bh).op("f64.mul").get(p).op("f64.sub").get(ah).get(bl).op("f64.mul").op("f64.add")
    e.get(al).get(bh).op("f64.mul").op("f64.add").get(al).get(bl).op("f64.mul").op("f64.add").set(ul)
    _two_sum(e, c, p, th, tl, bb)
    _two_sum(e, tl, ul, v, verr, bb)
    _odd_nudge(e, v, verr)
    e.get(th).get(v).op("f64.add")
