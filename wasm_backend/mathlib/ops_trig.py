"""sin, cos, tan (f64 routines; f32 runs widened): reduction by pi/2, then minimax polynomials on [-pi/4, pi/4].

Reduction (``reduce_half_pi``): ``k = nearest(x * 2/pi)`` and ``x - k*pi/2``
as a double-f64 ``r + r_lo`` with pi/2 in four pieces (33, 33, 33 and 53
bits; Cody-Waite): the products with the first three are exact while
``|k| < 2**20`` and the differences are summed without error (two-sum), so
``r + r_lo`` carries about 2**-100 absolute error even next to a multiple
of pi/2. Lanes with ``|x| >= LARGE_ARGUMENT`` (2**20) are reduced again by
``large_reduction`` (Payne-Hanek, exact) inside a branch taken only when a
lane needs it. The quadrant ``k mod 4`` is read from the low bits of the
"magic" sum ``x*2/pi + 1.5*2**52``.

On [-pi/4, pi/4]: ``sin(r + r_lo) = r + (r*z*S(z) + r_lo*(1 - z/2))`` and
``cos(r + r_lo) = w + (((1 - w) - z/2) + (z*z*C(z) - r*r_lo))`` with
``w = 1 - z/2`` (the rounding of ``w`` is recovered exactly). tan is the
quotient of the two (or minus the inverse in odd quadrants), divided as
double-f64 numbers with one Dekker correction step, so it too is rounded
about once.

Special values: ±0 -> ±0 for sin and tan (selected), ±inf and NaN -> NaN
(``inf - inf`` in the reduction).
"""

from __future__ import annotations

from dataclasses import dataclass

from .coefficients import coefficients
from .exact import fast_two_sum, horner, two_product, two_sum
from .vec_builder import VecBuilder, Vec
from .large_reduction import LARGE_ARGUMENT, reduce_large_lanes
from .registry import math_routine

__all__ = ["reduce_half_pi", "Reduced", "LARGE_ARGUMENT"]

_HEX = float.fromhex
_TWO_OVER_PI = _HEX("0x1.45f306dc9c883p-1")
_MAGIC = _HEX("0x1.8p52")
_PIO2 = (_HEX("0x1.921fb54400000p+0"), _HEX("0x1.0b4611a600000p-34"), _HEX("0x1.3198a2e000000p-69"),
         _HEX("0x1.b839a252049c1p-104"))


@dataclass(frozen=True)
class Reduced:
    """x = (quadrant + 4n)*pi/2 + r + r_lo; ``quadrant_bits`` holds the quadrant in its low two bits."""

    r: Vec
    r_lo: Vec
    quadrant_bits: Vec


def reduce_half_pi(kb: VecBuilder, x: Vec) -> Reduced:
    """Reduce the f64 lanes of ``x`` by pi/2 (see the module docstring)."""
    t = kb.let(x * _TWO_OVER_PI + _MAGIC)
    k = kb.let(t - _MAGIC)
    a = kb.let(x - k * _PIO2[0])
    h1, e1 = two_sum(kb, a, kb.let(-(k * _PIO2[1])))
    h2, e2 = two_sum(kb, h1, kb.let(-(k * _PIO2[2])))
    tail = kb.let((e1 + e2) - k * _PIO2[3])
    r, r_lo = fast_two_sum(kb, h2, tail)
    reduced = Reduced(r, r_lo, t)
    return reduce_large_lanes(kb, x, reduced)


def _sin_cos(kb: VecBuilder, red: Reduced) -> tuple[Vec, Vec, Vec, Vec]:
    """(sin_head, sin_tail, cos_head, cos_tail): sin(r + r_lo) = sin_head + sin_tail, likewise cos."""
    r, r_lo = red.r, red.r_lo
    z = kb.let(r * r)
    sin_tail = kb.let((r * z) * horner(kb, coefficients("SIN_S", "f64"), z) + r_lo * (1.0 - 0.5 * z))
    hz = kb.let(0.5 * z)
    w = kb.let(1.0 - hz)
    cos_tail = kb.let(((1.0 - w) - hz) + ((z * z) * horner(kb, coefficients("COS_C", "f64"), z) - r * r_lo))
    return r, sin_tail, w, cos_tail


def _bit_as_mask(kb: VecBuilder, bits: Vec, bit: int) -> Vec:
    """All ones in lanes where bit ``bit`` of ``bits`` is set."""
    return kb.shr_s(kb.shl(bits, 63 - bit), 63)


def _bit_as_sign(kb: VecBuilder, bits: Vec, bit: int) -> Vec:
    """Bit ``bit`` of ``bits`` moved to the sign position (other bits clear)."""
    return kb.and_(kb.shl(bits, 63 - bit), kb.sign_bit)


@math_routine("sin", "f64", formula="sin(x)")
def sin_routine(kb: VecBuilder, x: Vec) -> Vec:
    x = kb.let(x)
    red = reduce_half_pi(kb, x)
    s_head, s_tail, c_head, c_tail = _sin_cos(kb, red)
    odd = kb.let(_bit_as_mask(kb, red.quadrant_bits, 0))
    value = kb.select(odd, c_head + c_tail, s_head + s_tail)
    result = kb.flip_sign(value, _bit_as_sign(kb, red.quadrant_bits, 1))
    return kb.select(kb.eq(x, 0.0), x, result)


@math_routine("cos", "f64", formula="cos(x)")
def cos_routine(kb: VecBuilder, x: Vec) -> Vec:
    red = reduce_half_pi(kb, x)
    s_head, s_tail, c_head, c_tail = _sin_cos(kb, red)
    shifted = kb.let(kb.iadd(red.quadrant_bits, kb.iconst(1)))
    odd = kb.let(_bit_as_mask(kb, red.quadrant_bits, 0))
    value = kb.select(odd, s_head + s_tail, c_head + c_tail)
    return kb.flip_sign(value, _bit_as_sign(kb, shifted, 1))


@math_routine("tan", "f64", formula="tan(x)")
def tan_routine(kb: VecBuilder, x: Vec) -> Vec:
    x = kb.let(x)
    red = reduce_half_pi(kb, x)
    s_head, s_tail, c_head, c_tail = _sin_cos(kb, red)
    odd = kb.let(_bit_as_mask(kb, red.quadrant_bits, 0))
    n_hi, n_lo = fast_two_sum(kb, kb.let(kb.select(odd, c_head, s_head)), kb.let(kb.select(odd, c_tail, s_tail)))
    d_hi, d_lo = fast_two_sum(kb, kb.let(kb.select(odd, s_head, c_head)), kb.let(kb.select(odd, s_tail, c_tail)))
    q = kb.let(n_hi / d_hi)
    p, p_err = two_product(kb, q, d_hi)
    remainder = (((n_hi - p) - p_err) + n_lo) - q * d_lo
    value = q + remainder / d_hi
    result = kb.flip_sign(value, kb.and_(odd, kb.sign_bit))
    return kb.select(kb.eq(x, 0.0), x, result)
