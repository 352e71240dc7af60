"""atan2(y, x) with C99 (Annex F) semantics: an octant reduction to |u| <= tan(pi/8) and an odd minimax polynomial.

With ``a = |y|``, ``b = |x|``: near the diagonal (``min > tan(pi/8)*max``)
``atan2 = pi/4 + atan(u)``, ``u = (a - b)/(a + b)``; otherwise ``atan(min/max)``
measured from 0 (``a <= b``) or from pi/2 backwards (``a > b``). A negative
x (its sign bit, so -0 too) mirrors the angle: ``pi - angle``. So the
result is ``B + sigma*atan(u)`` with ``B`` one of 0, pi/4, pi/2, 3pi/4, pi
(each a double-f64) and ``sigma = ±1``; the sign of y is copied last.

``u`` is a double-f64: numerator and denominator come from two-sums and the
quotient gets one Dekker correction, so the only roundings that reach the
result are the polynomial's and the final sum's. Operands are scaled by
2**∓200 when the larger is above 2**960 or below 2**-900 (exact), an
infinite operand becomes 1 and a finite partner 0 (giving the multiples of
pi/4 exactly), and 0/0 reads as 0.

Special values: NaN in either operand -> NaN; atan2(±0, +0) = ±0,
atan2(±0, -0) = ±pi, atan2(±inf, ±inf) = ±pi/4 or ±3pi/4, and the rest
fall out of the general path.
"""

from __future__ import annotations

import math

from .coefficients import coefficients
from .exact import horner, two_product, two_sum
from .vec_builder import VecBuilder, Vec
from .registry import math_routine

__all__ = ["atan2_routine"]

_HEX = float.fromhex
_TAN_PI_8 = _HEX("0x1.a827999fcef32p-2")
_PI_4 = (_HEX("0x1.921fb54442d18p-1"), _HEX("0x1.1a62633145c07p-55"))
_PI_2 = (_HEX("0x1.921fb54442d18p+0"), _HEX("0x1.1a62633145c07p-54"))
_PI = (_HEX("0x1.921fb54442d18p+1"), _HEX("0x1.1a62633145c07p-53"))
_HUGE, _TINY = 2.0 ** 960, 2.0 ** -900     # Veltkamp splits stay finite below 2**996
_EXACT_PRODUCTS = 2.0 ** -960


@math_routine("atan2", "f64", arity=2, formula="atan2(y, x) (C atan2, y first)")
def atan2_routine(kb: VecBuilder, y: Vec, x: Vec) -> Vec:
    y, x = kb.let(y), kb.let(x)
    a0, b0 = kb.let(kb.abs(y)), kb.let(kb.abs(x))
    # an infinite operand becomes 1 and a finite partner 0: pi/4 multiples, 0, pi/2 and pi come out exactly
    a_inf, b_inf = kb.let(kb.eq(a0, math.inf)), kb.let(kb.eq(b0, math.inf))
    a0, b0 = (kb.let(kb.select(a_inf, kb.const(1.0), kb.andnot(a0, b_inf))),
              kb.let(kb.select(b_inf, kb.const(1.0), kb.andnot(b0, a_inf))))
    largest = kb.let(kb.pmax(a0, b0))
    scale = kb.select(kb.ge(largest, _HUGE), kb.const(2.0 ** -200),
                      kb.select(kb.lt(largest, _TINY), kb.const(2.0 ** 200), kb.const(1.0)))
    scale = kb.let(scale)
    a, b = kb.let(a0 * scale), kb.let(b0 * scale)
    y_above = kb.let(kb.gt(a, b))
    small, large = kb.let(kb.pmin(a, b)), kb.let(kb.pmax(a, b))
    diagonal = kb.let(kb.gt(small, _TAN_PI_8 * large))
    diff_hi, diff_lo = two_sum(kb, a, kb.let(-b))
    sum_hi, sum_lo = two_sum(kb, a, b)
    n_hi = kb.let(kb.select(diagonal, diff_hi, small))
    n_lo = kb.let(kb.and_(diagonal, diff_lo))
    d_hi = kb.select(diagonal, sum_hi, large)
    d_hi = kb.let(kb.select(kb.eq(d_hi, 0.0), kb.const(1.0), d_hi))
    d_lo = kb.let(kb.and_(diagonal, sum_lo))
    u = kb.let(n_hi / d_hi)
    p, p_err = two_product(kb, u, d_hi)
    u_lo = ((((n_hi - p) - p_err) + n_lo) - u * d_lo) / d_hi
    # below 2**-960 Dekker's products underflow; u alone is then the correctly rounded quotient
    u_lo = kb.let(kb.and_(kb.ge(kb.abs(n_hi), _EXACT_PRODUCTS), u_lo))
    z = kb.let(u * u)
    theta_lo = kb.let((u * z) * horner(kb, coefficients("ATAN_A", "f64"), z) + u_lo * (1.0 - z))
    # base angle and direction: 0 / pi/2 (backwards) / pi/4, mirrored to pi - angle for a negative x
    base_hi = kb.select(diagonal, kb.const(_PI_4[0]), kb.and_(y_above, kb.const(_PI_2[0])))
    base_lo = kb.select(diagonal, kb.const(_PI_4[1]), kb.and_(y_above, kb.const(_PI_2[1])))
    backwards = kb.let(kb.andnot(y_above, diagonal))
    mirrored = kb.let(kb.shr_s(x, 63))
    base_hi, base_lo = kb.let(base_hi), kb.let(base_lo)
    base_hi = kb.let(kb.select(mirrored, _PI[0] - base_hi, base_hi))     # exact: 3pi/4 = pi - pi/4 in f64
    base_lo = kb.let(kb.select(mirrored, _PI[1] - base_lo, base_lo))
    flip = kb.let(kb.and_(kb.xor(backwards, mirrored), kb.sign_bit))
    s, s_err = two_sum(kb, base_hi, kb.let(kb.flip_sign(u, flip)))
    angle = s + (s_err + (base_lo + kb.flip_sign(theta_lo, flip)))
    result = kb.copysign(angle, y)
    return kb.select(kb.or_(kb.is_nan(x), kb.is_nan(y)), kb.const(math.nan), result)

