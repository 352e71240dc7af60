"""Runtime helpers carried in a module when its code needs them: the trap routine, float format rounding,
exact fmod and exact FMA.

* ``trap(code, index, lane, operand, handle, value, extent, limit)`` records a lane's trap and its
  numbers (atlas_web.trap_report.TrapRecord, i64 each) in the header when no trap is recorded yet or
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
  to odd) inside the exponent window where it is proved correct, and outside it ``fma64_scaled`` runs
  the same core on operands scaled by exact powers of two (``pow2_64``, ``scale64``), rounding once
  also where the result overflows or is subnormal.
"""

from __future__ import annotations

from atlas_web.trap_report import RECORD_NUMBERS

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
    fb, e = m.define("trap", (I32, I32, I32) + (I64,) * RECORD_NUMBERS)
    code, index, lane = 0, 1, 2
    e.i32(0).op("i32.load", layout.HEADER_TRAP_CODE).op("i32.eqz")
    e.i32(0).op("i32.load", layout.HEADER_TRAP_LANE).get(lane).op("i32.gt_s").op("i32.or")
    with e.if_():
        e.i32(0).get(code).op("i32.store", layout.HEADER_TRAP_CODE)
        e.i32(0).get(index).op("i32.store", layout.HEADER_TRAP_INDEX)
        e.i32(0).get(lane).op("i32.store", layout.HEADER_TRAP_LANE)
        for k in range(RECORD_NUMBERS):
            e.i32(0).get(3 + k).op("i64.store", layout.HEADER_TRAP_NUMBERS + 8 * k)


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

    def subtract_divisor() -> None:
        """mx -= my where mx >= my; an exact zero returns a zero of x's sign."""
        e.get(mx).get(my).op("i64.sub").tee(d).i64(0).op("i64.ge_s")
        with e.if_():
            e.get(d).op("i64.eqz")
            with e.if_():
                e.f64(0.0).get(x).op("f64.copysign").op("return")
            e.get(d).set(mx)

    with e.block("done"):
        with e.loop("step"):
            e.get(ex).get(ey).op("i64.le_s").br_if("done")
            subtract_divisor()
            e.get(mx).i64(1).op("i64.shl").set(mx)
            e.get(ex).i64(1).op("i64.sub").set(ex)
            e.br("step")
    subtract_divisor()
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
#: the sticky stand-in for an addend far below the product's last bit (scaled path): nonzero, of c's sign,
#: and inside the window where the emulation is proved
_STICKY = 2.0 ** -890


class _Fma64Locals:
    """The locals of fma64's exact core (the proved exponent window)."""

    def __init__(self, fb) -> None:
        self.p, self.ul, self.th, self.tl, self.v, self.verr, self.bb, self.t, self.ah, self.al, self.bh, self.bl = (
            fb.add_local(F64) for _ in range(12))


def _fma64_window(e, a: int, b: int, c: int, w: _Fma64Locals) -> None:
    """w.th + w.v = a*b + c rounded to nearest (one rounding) when a, b and c lie in the proved window:
    w.th = RN(c + RN(a*b)), w.v = the rest rounded to odd (Boldo and Melquiond)."""
    for value, hi, lo in ((a, w.ah, w.al), (b, w.bh, w.bl)):
        e.f64(_SPLITTER).get(value).op("f64.mul").set(w.t)
        e.get(w.t).get(w.t).get(value).op("f64.sub").op("f64.sub").set(hi)
        e.get(value).get(hi).op("f64.sub").set(lo)
    e.get(a).get(b).op("f64.mul").set(w.p)
    e.get(w.ah).get(w.bh).op("f64.mul").get(w.p).op("f64.sub").get(w.ah).get(w.bl).op("f64.mul").op("f64.add")
    e.get(w.al).get(w.bh).op("f64.mul").op("f64.add").get(w.al).get(w.bl).op("f64.mul").op("f64.add").set(w.ul)
    _two_sum(e, c, w.p, w.th, w.tl, w.bb)
    _two_sum(e, w.tl, w.ul, w.v, w.verr, w.bb)
    _odd_nudge(e, w.v, w.verr)


def _exponent(e, value: int, exp: int) -> None:
    """exp (i32) := the biased exponent field of the f64 ``value`` minus 1022 (|value| < 2**exp for normals)."""
    e.get(value).op("i64.reinterpret_f64").i64(52).op("i64.shr_u").op("i32.wrap_i64").i32(0x7FF).op("i32.and")
    e.i32(1022).op("i32.sub").set(exp)


@runtime_helper("pow2_64")
def _pow2_64(m: ModuleContext) -> None:
    """pow2_64(n) = 2**n as an f64 for n in [-1074, 1023] (subnormal below -1022)."""
    fb, e = m.define("pow2_64", (I32,), (F64,))
    n = 0
    e.get(n).i32(-1022).op("i32.ge_s")
    with e.if_(blocktype=F64):
        e.get(n).i32(1023).op("i32.add").op("i64.extend_i32_u").i64(52).op("i64.shl").op("f64.reinterpret_i64")
        e.else_()
        e.i64(1).get(n).i32(1074).op("i32.add").op("i64.extend_i32_u").op("i64.shl").op("f64.reinterpret_i64")


@runtime_helper("scale64")
def _scale64(m: ModuleContext) -> None:
    """scale64(x, k) = x * 2**k rounded once, for k in [-3000, 3000]: up to two steps by 2**±1000 first
    (exact, or already infinite or zero where the result is), then one multiplication that rounds (to a
    subnormal, zero or infinity where it must)."""
    fb, e = m.define("scale64", (F64, I32), (F64,))
    x, k = 0, 1
    for _ in range(2):
        e.get(k).i32(1000).op("i32.gt_s")
        with e.if_():
            e.get(x).f64(2.0 ** 1000).op("f64.mul").set(x)
            e.get(k).i32(1000).op("i32.sub").set(k)
        e.get(k).i32(-1000).op("i32.lt_s")
        with e.if_():
            e.get(x).f64(2.0 ** -1000).op("f64.mul").set(x)
            e.get(k).i32(1000).op("i32.add").set(k)
    e.get(x).get(k).call(m.helper("pow2_64")).op("f64.mul")


@runtime_helper("fma64_scaled")
def _fma64_scaled(m: ModuleContext) -> None:
    """a*b + c rounded once for finite nonzero a, b and finite c outside the proved window: a and b are
    scaled by exact powers of two to exponent 0 and c with them (an addend far below the product's last
    bit becomes a sticky stand-in of its sign; one far above it is the result), the window's core runs,
    and the sum is scaled back: rounded to nearest where the result is normal, rounded to odd and then
    once more by the final scaling where it is subnormal (53 bits of odd rounding before a rounding to at
    most 52 bits is exact)."""
    fb, e = m.define("fma64_scaled", (F64, F64, F64), (F64,))
    a, b, c = 0, 1, 2
    w = _Fma64Locals(fb)
    ea, eb, ec, k, d = (fb.add_local(I32) for _ in range(5))
    s, err, bb, y = (fb.add_local(F64) for _ in range(4))
    pow2, scale = m.helper("pow2_64"), m.helper("scale64")
    _exponent(e, a, ea)
    _exponent(e, b, eb)
    _exponent(e, c, ec)
    e.get(ea).get(eb).op("i32.add").set(k)
    e.get(a).i32(0).get(ea).op("i32.sub").call(pow2).op("f64.mul").set(a)
    e.get(b).i32(0).get(eb).op("i32.sub").call(pow2).op("f64.mul").set(b)
    e.get(c).f64(0.0).op("f64.ne")
    with e.if_():
        e.get(ec).get(k).op("i32.sub").tee(d).i32(1000).op("i32.gt_s")
        with e.if_():  # the product lies more than 900 binades below c's last bit: c is the rounded sum
            e.get(c).op("return")
        e.get(d).i32(-900).op("i32.lt_s")
        with e.if_(blocktype=F64):
            e.f64(_STICKY).get(c).op("f64.copysign")
            e.else_()
            e.get(c).i32(0).get(k).op("i32.sub").call(scale)
        e.set(c)
    _fma64_window(e, a, b, c, w)
    e.get(w.th).get(w.v).op("f64.add").get(k).call(scale).tee(y)
    # at the smallest normal too: a sum just below it may round up to it twice (53 bits, then the grid)
    e.op("f64.abs").f64(2.0 ** -1022).op("f64.le")
    with e.if_():
        _round_to_subnormal_grid(e, m, w, k, s, err, bb, y)
    e.get(y)


def _round_to_subnormal_grid(e, m: ModuleContext, w: _Fma64Locals, k: int, q: int, qe: int, t: int, y: int) -> None:
    """y := the exact sum x = th + tl + ul of the window (scaled by 2**-k) rounded once to f64's subnormal
    grid g = 2**(-1074-k): |q| = |RN(th + RN(tl + ul))| rounded to a multiple of g with the magic constant
    2**52 g (ties to even), moved one step of g away from an exact midpoint when the rest of x (the exact
    error of q, else that of RN(tl + ul)) lies beyond it."""
    pow2, scale = m.helper("pow2_64"), m.helper("scale64")
    rest, rq, half = w.bb, w.t, w.p  # free again once the window's core is done
    e.get(w.tl).get(w.ul).op("f64.add").set(w.v)  # RN(tl + ul), before rounding to odd
    _two_sum(e, w.th, w.v, q, qe, t)
    e.get(qe).f64(0.0).op("f64.ne")
    with e.if_(blocktype=F64):
        e.get(qe)
        e.else_()
        e.get(w.verr)
    e.set(rest)
    e.get(q).f64(0.0).op("f64.lt")
    with e.if_():
        e.get(rest).op("f64.neg").set(rest)  # the rest, measured along |q|
    e.i32(-1022).get(k).op("i32.sub").call(pow2).tee(half)
    e.get(q).op("f64.abs").op("f64.add").get(half).op("f64.sub").set(t)
    e.get(q).op("f64.abs").get(t).op("f64.sub").set(rq)
    e.i32(-1075).get(k).op("i32.sub").call(pow2).set(half)
    e.get(rq).op("f64.abs").get(half).op("f64.eq")
    e.get(rest).get(rq).op("f64.mul").f64(0.0).op("f64.gt").op("i32.and")
    with e.if_():
        e.get(t).get(rq).get(rq).op("f64.add").op("f64.add").set(t)
    # the sign: q's; where q is zero the rest's (+0 for an exact zero: -0 + 0 is +0)
    e.get(t).get(rest).f64(0.0).op("f64.add").get(q).get(q).f64(0.0).op("f64.eq").op("select").op("f64.copysign")
    e.get(k).call(scale).set(y)


@runtime_helper("fma64")
def _fma64(m: ModuleContext) -> None:
    fb, e = m.define("fma64", (F64, F64, F64), (F64,))
    a, b, c = 0, 1, 2
    w = _Fma64Locals(fb)
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
        _exponent(e, value, exp)
    # outside the proved window: the exact scaled path (rare: huge or tiny operands)
    e.get(ea).i32(480).op("i32.gt_s").get(ea).i32(-480).op("i32.lt_s").op("i32.or")
    e.get(eb).i32(480).op("i32.gt_s").op("i32.or").get(eb).i32(-480).op("i32.lt_s").op("i32.or")
    e.get(ea).get(eb).op("i32.add").i32(-900).op("i32.lt_s").op("i32.or")
    e.get(c).f64(0.0).op("f64.ne").get(ec).i32(-900).op("i32.lt_s").get(ec).i32(1000).op("i32.gt_s").op("i32.or")
    e.op("i32.and").op("i32.or")
    with e.if_():
        e.get(a).get(b).get(c).call(m.helper("fma64_scaled")).op("return")
    _fma64_window(e, a, b, c, w)
    e.get(w.th).get(w.v).op("f64.add")
