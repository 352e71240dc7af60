"""pow(x, y) with C99 (Annex F) semantics: exp(y * log|x|) with log|x| and the product as double-f64.

``|x| = 2**e * (1 + f)`` and ``log(1 + f) = 2s + 2s**3/3 + s*z*z*P(z)``
(``s = f/(2+f)`` computed as a double-f64 with one Dekker step, ``z = s*s``):
the two leading terms are double-f64, the rest is small enough for plain
f64, and ``e*ln2`` uses ln2 split so that ``e*LN2_HI`` is exact. The sum
``L`` carries about 2**-66 relative error. ``w = y*L`` is formed exactly
(Dekker) plus ``y*L_lo``, and ``exp(w_hi + w_lo)`` (``exp_core``) rounds
once; ``|w| <= 745`` keeps the amplified error of ``L`` under ~0.05 ulp.

C's special cases are selected afterwards, lowest priority first: a finite
negative x with a non-integer y gives NaN; x = ±0 or ±inf give 0 or inf
(by the sign of y, negative for x's sign bit and odd integer y); y = ±inf
gives 1 for |x| = 1, else +0 or +inf; NaN in either operand gives NaN;
y = ±0 or x = 1 give 1 whatever the other operand. The general path only
needs finite nonzero x and finite y: y is clamped to ±2**900 (which changes
no result) so that the exact product never overflows.
"""

from __future__ import annotations

import math
from fractions import Fraction

from .coefficients import coefficients
from .exact import fast_two_sum, horner, two_product, two_sum
from .vec_builder import VecBuilder, Vec
from .ops_exp import exp_core
from .ops_log import split_exponent
from .registry import math_routine

__all__ = ["log_double", "odd_integer_mask"]

_LN2_HI, _LN2_LO = float.fromhex("0x1.62e42fefa3800p-1"), float.fromhex("0x1.ef35793c76730p-45")
_TWO_THIRDS = (float(Fraction(2, 3)), float(Fraction(2, 3) - Fraction(float(Fraction(2, 3)))))
_Y_LIMIT = 2.0 ** 900


def log_double(kb: VecBuilder, a: Vec) -> tuple[Vec, Vec]:
    """log(a) as a normalized double-f64 (a finite and positive; other lanes give garbage)."""
    e, f = split_exponent(kb, a)
    d_hi, d_lo = fast_two_sum(kb, kb.const(2.0), f)
    s = kb.let(f / d_hi)
    p, p_err = two_product(kb, s, d_hi)
    s_lo = kb.let(((((f - p) - p_err) - s * d_lo)) / d_hi)
    z, z_err = two_product(kb, s, s)
    z_err = kb.let(z_err + 2.0 * s * s_lo)
    cube, cube_err = two_product(kb, z, s)
    cube_err = kb.let(cube_err + (z_err * s + z * s_lo))
    c_hi, c_lo = _TWO_THIRDS
    t2, t2_err = two_product(kb, kb.const(c_hi), cube)
    t2_err = kb.let(t2_err + (c_hi * cube_err + c_lo * cube))
    t3 = kb.let((s * z) * z * horner(kb, coefficients("LOG_P", "f64"), z))
    a1, b1 = two_sum(kb, kb.let(e * _LN2_HI), kb.let(2.0 * s))
    a2, b2 = two_sum(kb, a1, t2)
    low = kb.let((b1 + b2) + ((2.0 * s_lo + t2_err) + (t3 + e * _LN2_LO)))
    return fast_two_sum(kb, a2, low)


def odd_integer_mask(kb: VecBuilder, y: Vec) -> tuple[Vec, Vec]:
    """(integer, odd): lanes where y is an integer (±inf counts, as even), and where it is an odd one."""
    integer = kb.let(kb.eq(kb.trunc(y), y))
    half = kb.let(y * 0.5)
    return integer, kb.let(kb.and_(integer, kb.ne(kb.trunc(half), half)))


@math_routine("pow", "f64", arity=2, formula="x**y (C pow)")
def pow_routine(kb: VecBuilder, x: Vec, y: Vec) -> Vec:
    x, y = kb.let(x), kb.let(y)
    a = kb.let(kb.abs(x))
    yc = kb.let(kb.pmin(kb.pmax(y, -_Y_LIMIT), _Y_LIMIT))
    l_hi, l_lo = log_double(kb, a)
    w, w_err = two_product(kb, yc, l_hi)
    w, w_lo = fast_two_sum(kb, w, kb.let(w_err + yc * l_lo))
    magnitude = exp_core(kb, w, w_lo)
    integer, odd = odd_integer_mask(kb, y)
    negative = kb.let(kb.and_(odd, kb.sign_of(x)))
    result = kb.flip_sign(magnitude, negative)
    finite_x = kb.lt(a, math.inf)
    result = kb.select(kb.and_(kb.and_(kb.lt(x, 0.0), finite_x), kb.not_(integer)), kb.const(math.nan), result)
    zero_or_inf = kb.let(kb.or_(kb.eq(a, 0.0), kb.eq(a, math.inf)))
    edge = kb.select(kb.xor(kb.eq(a, 0.0), kb.lt(y, 0.0)), kb.const(0.0), kb.const(math.inf))
    result = kb.select(zero_or_inf, kb.flip_sign(edge, negative), result)
    infinite_y = kb.eq(kb.abs(y), math.inf)
    toward = kb.select(kb.ieq(kb.lt(a, 1.0), kb.lt(y, 0.0)), kb.const(math.inf), kb.const(0.0))
    result = kb.select(infinite_y, kb.select(kb.eq(a, 1.0), kb.const(1.0), toward), result)
    result = kb.select(kb.or_(kb.is_nan(x), kb.is_nan(y)), kb.const(math.nan), result)
    return kb.select(kb.or_(kb.eq(y, 0.0), kb.eq(x, 1.0)), kb.const(1.0), result)
