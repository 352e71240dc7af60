"""log, log2, log10: exponent split, the atanh series in s = f/(2+f), and ln2 / 1/ln2 in two parts.

``x = 2**e * m`` with ``m`` in [sqrt(1/2), sqrt(2)) (subnormals are first
scaled by 2**54, or 2**25 in f32), ``f = m - 1``, ``s = f/(2+f)``, and
``log(1+f) = 2s + s*z*R(z)`` with ``z = s*s``. Written as
``f - hfsq + s*(hfsq + z*R)`` (``hfsq = f*f/2``), the big terms are exact
and the rounding lands on small corrections. ``log = e*LN2_HI + (... +
e*LN2_LO)`` with ``e*LN2_HI`` exact.

log2 and log10 (f64) split ``f - hfsq`` into a 21-bit head whose products
with the 32-bit heads of 1/ln2, 1/ln10 are exact, and a tail that collects
every rounding error; the integer part ``e`` (times log10(2) in two parts) is
added with the error of that addition carried. Their f32 shapes run widened.

Special values: log(±0) = -inf, log(x<0) = NaN, log(+inf) = +inf, NaN -> NaN
(selected at the end, so the core only sees finite positive lanes' results).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .coefficients import coefficients
from .exact import horner
from .vec_builder import VecBuilder, Vec
from .registry import math_routine

__all__ = ["log_parts", "LogParts", "split_exponent", "log_specials"]

_HEX = float.fromhex


@dataclass(frozen=True)
class _LogConstants:
    smallest_normal: float
    subnormal_scale: float
    subnormal_scale_log2: float
    sqrt_half_bits: int
    magic: float           # 1.5 * 2**mantissa_bits: integer lanes -> float lanes
    magic_bits: int
    ln2_hi: float           # e * ln2_hi is exact
    ln2_lo: float


_CONSTANTS = {
    "f32": _LogConstants(2.0 ** -126, 2.0 ** 25, 25.0, 0x3F3504F3, _HEX("0x1.8p23"), 0x4B400000,
                         _HEX("0x1.62e4p-1"), _HEX("0x1.7f7d1cp-20")),
    "f64": _LogConstants(2.0 ** -1022, 2.0 ** 54, 54.0, 0x3FE6A09E667F3BCD, _HEX("0x1.8p52"), 0x4338000000000000,
                         _HEX("0x1.62e42fefa3800p-1"), _HEX("0x1.ef35793c76730p-45")),
}

_IVLN2_HI, _IVLN2_LO = _HEX("0x1.7154765200000p+0"), _HEX("0x1.705fc2eefa200p-33")
_IVLN10_HI, _IVLN10_LO = _HEX("0x1.bcb7b15200000p-2"), _HEX("0x1.b9438ca9aadd5p-36")
_LOG10_2_HI, _LOG10_2_LO = _HEX("0x1.34413509f7800p-2"), _HEX("0x1.fef311f12b358p-46")
_HEAD_MASK = 0xFFFFFFFF00000000     # keeps sign, exponent and the top 20 fraction bits of an f64


@dataclass(frozen=True)
class LogParts:
    """log(x) = e*ln2 + (f - hfsq + s*(hfsq + r)) for the finite positive lanes of x."""

    e: Vec
    f: Vec
    hfsq: Vec
    s: Vec
    r: Vec


def split_exponent(kb: VecBuilder, x: Vec) -> tuple[Vec, Vec]:
    """(e, f) with x = 2**e * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), e an integer-valued float (x finite > 0)."""
    c = _CONSTANTS[kb.fmt.name]
    bits_m = kb.fmt.mantissa_bits
    tiny = kb.let(kb.lt(x, c.smallest_normal))
    xs = kb.let(kb.select(tiny, x * c.subnormal_scale, x))
    e_int = kb.let(kb.shr_s(kb.isub(xs, kb.iconst(c.sqrt_half_bits)), bits_m))
    m = kb.isub(xs, kb.shl(e_int, bits_m))
    f = kb.let(m - 1.0)
    e_float = kb.iadd(e_int, kb.iconst(c.magic_bits)) - c.magic
    return kb.let(e_float - kb.and_(tiny, kb.const(c.subnormal_scale_log2))), f


def log_parts(kb: VecBuilder, x: Vec) -> LogParts:
    """The decomposition of ``x`` (see LogParts); lanes that are not finite and positive give garbage."""
    e, f = split_exponent(kb, x)
    s = kb.let(f / (f + 2.0))
    z = kb.let(s * s)
    r = kb.let(z * horner(kb, coefficients("LOG_R", kb.fmt.name), z))
    hfsq = kb.let(0.5 * f * f)
    return LogParts(e, f, hfsq, s, r)


def log_specials(kb: VecBuilder, x: Vec, result: Vec) -> Vec:
    """``result`` with C's values where x is 0 (-inf), +inf (+inf), negative or NaN (NaN)."""
    out = kb.select(kb.eq(x, math.inf), kb.const(math.inf), result)
    out = kb.select(kb.eq(x, 0.0), kb.const(-math.inf), out)
    return kb.select(kb.not_(kb.ge(x, 0.0)), kb.const(math.nan), out)


@math_routine("log", "f32", formula="ln(x)")
@math_routine("log", "f64", formula="ln(x)")
def log_routine(kb: VecBuilder, x: Vec) -> Vec:
    c = _CONSTANTS[kb.fmt.name]
    x = kb.let(x)
    p = log_parts(kb, x)
    tail = p.s * (p.hfsq + p.r) + p.e * c.ln2_lo
    result = p.e * c.ln2_hi + (p.f - (p.hfsq - tail))
    return log_specials(kb, x, kb.let(result))


def _head_and_tail(kb: VecBuilder, p: LogParts) -> tuple[Vec, Vec]:
    """log(1+f) = head + tail with head holding 21 significant bits (f64 only)."""
    head = kb.let(kb.and_(p.f - p.hfsq, kb.iconst(_HEAD_MASK)))
    tail = kb.let(((p.f - head) - p.hfsq) + p.s * (p.hfsq + p.r))
    return head, tail


@math_routine("log2", "f64", formula="log2(x)")
def log2_routine(kb: VecBuilder, x: Vec) -> Vec:
    x = kb.let(x)
    p = log_parts(kb, x)
    head, tail = _head_and_tail(kb, p)
    val_hi = kb.let(head * _IVLN2_HI)
    val_lo = (tail + head) * _IVLN2_LO + tail * _IVLN2_HI
    w = kb.let(p.e + val_hi)
    val_lo = val_lo + ((p.e - w) + val_hi)
    return log_specials(kb, x, kb.let(val_lo + w))


@math_routine("log10", "f64", formula="log10(x)")
def log10_routine(kb: VecBuilder, x: Vec) -> Vec:
    x = kb.let(x)
    p = log_parts(kb, x)
    head, tail = _head_and_tail(kb, p)
    val_hi = kb.let(head * _IVLN10_HI)
    int_part = kb.let(p.e * _LOG10_2_HI)
    val_lo = (tail + head) * _IVLN10_LO + tail * _IVLN10_HI + p.e * _LOG10_2_LO
    w = kb.let(int_part + val_hi)
    val_lo = val_lo + ((int_part - w) + val_hi)
    return log_specials(kb, x, kb.let(val_lo + w))
