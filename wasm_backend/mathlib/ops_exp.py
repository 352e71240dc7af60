"""exp: Cody-Waite reduction by ln2, a minimax polynomial, and a two-step power-of-two scale.

``x = k*ln2 + r`` with ``k = nearest(x/ln2)`` and ``|r| <= ln2/2``; ln2 is
split into a high part with trailing zeros (so ``k*LN2_HI`` is exact for
every ``k`` the clamped range gives) and a low part; the rounding error of
``r`` is carried as ``r_lo``. ``exp(r) = 1 + (r + (r*r*Q(r) + r_lo))``. A
caller with an argument in two parts (pow, gelu) passes the small part
``x_lo``, which enters as ``exp(x)*x_lo``.
The result is ``p * 2**k1 * 2**k2`` with ``k1 = k >> 1``, ``k2 = k - k1``:
both factors are normal numbers, so overflow gives inf and results in the
subnormal range are rounded once, correctly. ``k`` comes out of the
"magic number" addition ``t = x/ln2 + 1.5*2**p``, whose low mantissa bits
hold ``k`` as an integer (WebAssembly has no f64x2 -> i64x2 conversion).

Special values: NaN propagates through the arithmetic; x is clamped first
(+inf -> inf, -inf -> +0).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .coefficients import coefficients
from .exact import horner
from .vec_builder import VecBuilder, Vec
from .registry import math_routine

__all__ = ["exp_core", "exp_parts", "ExpParts", "power_of_two", "scale_by_power_of_two", "EXP_CONSTANTS"]


@dataclass(frozen=True)
class _ExpConstants:
    low_clamp: float      # below: exp is +0 and so is x*exp for any x of the format (swish, gelu)
    high_clamp: float     # above: the result is +inf
    log2e: float
    ln2_hi: float         # ln2 rounded to few enough bits that k*ln2_hi is exact
    ln2_lo: float         # ln2 - ln2_hi
    magic: float          # 1.5 * 2**mantissa_bits
    magic_bits: int


def _bits(value: float, fmt: str) -> int:
    pack, unpack = ("<f", "<i") if fmt == "f32" else ("<d", "<q")
    return struct.unpack(unpack, struct.pack(pack, value))[0]


EXP_CONSTANTS = {
    "f32": _ExpConstants(-120.0, 89.0, float.fromhex("0x1.715476p+0"), float.fromhex("0x1.62e4p-1"),
                         float.fromhex("0x1.7f7d1cp-20"), float.fromhex("0x1.8p23"),
                         _bits(float.fromhex("0x1.8p23"), "f32")),
    "f64": _ExpConstants(-800.0, 800.0, float.fromhex("0x1.71547652b82fep+0"), float.fromhex("0x1.62e42ffp-1"),
                         float.fromhex("-0x1.718432a1b0e26p-35"), float.fromhex("0x1.8p52"),
                         _bits(float.fromhex("0x1.8p52"), "f64")),
}


def scale_by_power_of_two(kb: VecBuilder, p: Vec, k: Vec) -> Vec:
    """``p * 2**k`` for the integer lanes ``k`` (|k| below twice the exponent range), rounded once."""
    fmt = kb.fmt
    k1 = kb.let(kb.shr_s(k, 1))
    k2 = kb.isub(k, k1)
    s1 = kb.shl(kb.iadd(k1, kb.iconst(fmt.exponent_bias)), fmt.mantissa_bits)
    s2 = kb.shl(kb.iadd(k2, kb.iconst(fmt.exponent_bias)), fmt.mantissa_bits)
    return (p * s1) * s2


@dataclass(frozen=True)
class ExpParts:
    """exp(x) = 2**k * (1 + r + tail): ``k`` integer lanes, |r| <= ln2/2, |tail| < r*r (unrounded sum)."""

    k: Vec
    r: Vec
    tail: Vec


def exp_parts(kb: VecBuilder, x: Vec, x_lo: Vec | None = None) -> ExpParts:
    """The parts of exp(x + x_lo) (``x_lo`` a small correction, or None) for x clamped to the format's range."""
    c = EXP_CONSTANTS[kb.fmt.name]
    if x_lo is not None:
        x = kb.let(x)
    xc = kb.let(kb.pmin(kb.pmax(x, c.low_clamp), c.high_clamp))
    t = kb.let(xc * c.log2e + c.magic)
    kf = kb.let(t - c.magic)
    r_hi = kb.let(xc - kf * c.ln2_hi)
    k_lo = kb.let(kf * c.ln2_lo)
    r = kb.let(r_hi - k_lo)
    r_lo = (r_hi - r) - k_lo
    q = horner(kb, coefficients("EXP_Q", kb.fmt.name), r)
    tail = kb.let((r * r) * q + r_lo)
    if x_lo is not None:     # exp(x + x_lo) = exp(x) * (1 + x_lo) to far below an ulp, x_lo being tiny
        x_lo = kb.select(kb.eq(xc, x), x_lo, kb.const(0.0))     # a clamped x has no meaningful x_lo
        tail = kb.let(tail + x_lo * ((1.0 + r) + tail))
    return ExpParts(kb.let(kb.isub(t, kb.iconst(c.magic_bits))), r, tail)


def power_of_two(kb: VecBuilder, k: Vec) -> Vec:
    """2**k for integer lanes k in the normal exponent range."""
    return kb.shl(kb.iadd(k, kb.iconst(kb.fmt.exponent_bias)), kb.fmt.mantissa_bits)


def exp_core(kb: VecBuilder, x: Vec, x_lo: Vec | None = None) -> Vec:
    """exp(x + x_lo), rounded once (see the module docstring)."""
    parts = exp_parts(kb, x, x_lo)
    p = 1.0 + (parts.r + parts.tail)
    return scale_by_power_of_two(kb, kb.let(p), parts.k)


@math_routine("exp", "f64", formula="e**x")
def exp_routine(kb: VecBuilder, x: Vec) -> Vec:
    return exp_core(kb, x)


@math_routine("exp", "f32", formula="e**x")
def exp_f32_routine(kb: VecBuilder, x: Vec) -> Vec:
    """The f32 routine, tuned for throughput: no r_lo (its share stays far below an f32 ulp), the whole
    polynomial by Horner, reduction and polynomial in ``madd`` steps. When every lane has
    |x| <= FAST_LIMIT_F32 (no overflow, no subnormal result, no NaN) the power of two is added to the
    exponent field directly; otherwise the clamped, two-step path runs."""
    c = EXP_CONSTANTS["f32"]
    x = kb.let(x)
    result = kb.variable()
    # the bits of |x| compared as integers: all lanes at most FAST_LIMIT_F32 (NaN's bits are above)
    kb.emit(kb.igt_s(kb.and_(x, kb.iconst(0x7FFF_FFFF)), kb.iconst(_bits(FAST_LIMIT_F32, "f32"))))
    kb.w.v128_any_true().i32_eqz()
    with kb.w.if_():
        r, t = _reduce_f32(kb, x)
        p = horner(kb, (1.0, 1.0) + coefficients("EXP_Q", "f32"), r)
        # t's bits are magic_bits + k and magic_bits << 23 wraps to 0, so t << 23 is k in the exponent field
        kb.assign(result, kb.iadd(p, kb.shl(t, kb.fmt.mantissa_bits)))
        kb.w.else_()
        xc = kb.let(kb.pmin(kb.pmax(x, c.low_clamp), c.high_clamp))
        r, t = _reduce_f32(kb, xc)
        p = horner(kb, (1.0, 1.0) + coefficients("EXP_Q", "f32"), r)
        kb.assign(result, scale_by_power_of_two(kb, kb.let(p), kb.let(kb.isub(t, kb.iconst(c.magic_bits)))))
    return result


#: |x| up to which every f32 exp result is a normal number and k fits the exponent field directly
FAST_LIMIT_F32 = 86.5


def _reduce_f32(kb: VecBuilder, x: Vec) -> tuple[Vec, Vec]:
    """(r, t): x = k*ln2 + r with t = x/ln2 + magic (k in t's low bits)."""
    c = EXP_CONSTANTS["f32"]
    t = kb.let(kb.madd(x, c.log2e, c.magic))
    kf = kb.let(t - c.magic)
    return kb.let(kb.madd(kf, -c.ln2_lo, kb.madd(kf, -c.ln2_hi, x))), t
