"""tanh, sigmoid, swish, gelu: one routine for f32 and f64 lanes (double-f32 / double-f64 arithmetic).

All four divide by ``1 + E`` with ``E = exp(-a) = 2**k * (1 + r + tail)``
kept unrounded (``exp_parts``), numerator and denominator as double-f64
numbers, and one Dekker correction of the quotient, so each result is
rounded about once:

- ``tanh(a) = (1 - E)/(1 + E)`` with ``E = exp(-2a)`` for ``a = |x| >= 0.625``;
  below, the odd minimax polynomial ``a + a*z*T(z)``; the sign of x is copied
  last (so tanh(-0) = -0, tanh(±inf) = ±1).
- ``sigmoid(v) = 1/(1 + E)`` for ``v >= 0`` and ``E*1/(1 + E) =
  2**k * (1 + r + tail)/(1 + E)`` for ``v < 0``: the power of two is applied
  after the division, so results deep in the subnormal range are rounded
  from the quotient (``logistic``).
- ``swish(x) = x * sigmoid(x)`` and the tanh form of ``gelu(x) = x *
  sigmoid(2u)``, ``u = sqrt(2/pi)*(x + 0.044715*x**3)``: the product with x
  is exact (Dekker) before the single rounding; for gelu, ``2u`` is computed
  as a double-f64 (both constants in two parts), because exp amplifies an
  error in its argument by the argument's size (|2u| reaches 745).

Beyond the point where the result is x itself (x > 40) or rounds to -0
(swish below -800 in f64 and -120 in f32, gelu below -40), the result is
selected directly: x, or ``x * 0`` (which is NaN for -inf, as the defining
formulas give). In f32 lanes the same routines run in double-f32 arithmetic
(about 48 bits), which is ample for f32 results.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .coefficients import coefficients
from .exact import fast_two_sum, horner, two_product, two_sum
from .vec_builder import VecBuilder, Vec
from .ops_exp import exp_parts, power_of_two, scale_by_power_of_two
from .registry import math_routine

__all__ = ["logistic", "Logistic"]

_TANH_POLY_LIMIT = 0.625
_TANH_SATURATION = 40.0      # tanh(40) rounds to 1 in f64 (and f32)
_PASS_THROUGH = 40.0         # x * sigmoid(x) and gelu(x) round to x above this
_SWISH_ZERO = {"f32": -120.0, "f64": -800.0}    # below: x * sigmoid(x) rounds to -0
_DENOMINATOR_MIN_EXPONENT = -100
_GELU_SCALE = Fraction("0.797884560802865355879892119868763736951717262")   # sqrt(2/pi) to 45 digits
_GELU_CUBIC = Fraction("0.044715")                                          # exact, as the formula writes it


def _split(kb: VecBuilder, value: Fraction) -> tuple[float, float]:
    """``value`` as head + tail in the builder's format (head the nearest float, tail the nearest to the rest)."""
    head = kb.fmt.round(float(value))
    return head, kb.fmt.round(float(value - Fraction(head)))


@dataclass(frozen=True)
class Logistic:
    """sigmoid(v) = (q + q_lo) * (2**k where ``negative``, else 1)."""

    q: Vec
    q_lo: Vec
    k: Vec
    negative: Vec


def _divide(kb: VecBuilder, n_hi: Vec, n_lo: Vec, d_hi: Vec, d_lo: Vec) -> tuple[Vec, Vec]:
    """(q, q_lo) ~ (n_hi + n_lo)/(d_hi + d_lo) to about twice the working precision (one Dekker step)."""
    q = kb.let(n_hi / d_hi)
    p, p_err = two_product(kb, q, d_hi)
    remainder = (((n_hi - p) - p_err) + n_lo) - q * d_lo
    return q, kb.let(remainder / d_hi)


def _one_plus(kb: VecBuilder, scale: Vec, r: Vec, tail: Vec, sign: float) -> tuple[Vec, Vec]:
    """1 + sign*scale*(1 + r + tail) as a normalized double-float (scale a power of two at most 1, so the
    products are exact; 1 + scale itself is not exact in f32 for small scales, hence the first two-sum)."""
    one, one_err = fast_two_sum(kb, kb.const(1.0), kb.let(sign * scale))
    head, err = two_sum(kb, one, kb.let(sign * (scale * r)))
    return fast_two_sum(kb, head, kb.let((one_err + err) + sign * (scale * tail)))


def logistic(kb: VecBuilder, v: Vec, v_lo: Vec | None = None) -> Logistic:
    """sigmoid(v + v_lo) in parts (see Logistic); NaN lanes stay NaN."""
    negative = kb.let(kb.lt(v, 0.0))
    a = kb.let(kb.abs(v))
    a_lo = None if v_lo is None else kb.let(kb.select(negative, v_lo, -v_lo))
    parts = exp_parts(kb, -a, a_lo)
    floor_k = kb.iconst(_DENOMINATOR_MIN_EXPONENT)
    k_den = kb.select(kb.igt_s(parts.k, floor_k), parts.k, floor_k)
    scale = kb.let(power_of_two(kb, k_den))
    d_hi, d_lo = _one_plus(kb, scale, parts.r, parts.tail, 1.0)
    e_hi, e_lo = fast_two_sum(kb, kb.const(1.0), parts.r)
    e_hi, e_lo = fast_two_sum(kb, e_hi, kb.let(e_lo + parts.tail))
    n_hi = kb.let(kb.select(negative, e_hi, kb.const(1.0)))
    n_lo = kb.let(kb.select(negative, e_lo, kb.const(0.0)))
    q, q_lo = _divide(kb, n_hi, n_lo, d_hi, d_lo)
    return Logistic(q, q_lo, parts.k, negative)


def _finish(kb: VecBuilder, value: Vec, lg: Logistic) -> Vec:
    """Apply the power of two of the negative lanes (one rounding, also into subnormals)."""
    value = kb.let(value)
    return kb.select(lg.negative, scale_by_power_of_two(kb, value, lg.k), value)


def _times(kb: VecBuilder, x: Vec, lg: Logistic) -> Vec:
    """x * (q + q_lo) rounded once (x and q far from overflow)."""
    p, p_err = two_product(kb, x, lg.q)
    return p + (p_err + x * lg.q_lo)


@math_routine("sigmoid", "f32", formula="1 / (1 + e**-x)")
@math_routine("sigmoid", "f64", formula="1 / (1 + e**-x)")
def sigmoid_routine(kb: VecBuilder, x: Vec) -> Vec:
    lg = logistic(kb, x)
    return _finish(kb, lg.q + lg.q_lo, lg)


@math_routine("swish", "f32", formula="x * sigmoid(x)")
@math_routine("swish", "f64", formula="x * sigmoid(x)")
def swish_routine(kb: VecBuilder, x: Vec) -> Vec:
    x = kb.let(x)
    zero_below = _SWISH_ZERO[kb.fmt.name]
    xc = kb.let(kb.pmin(kb.pmax(x, zero_below), _PASS_THROUGH))
    lg = logistic(kb, xc)
    result = _finish(kb, _times(kb, xc, lg), lg)
    result = kb.select(kb.gt(x, _PASS_THROUGH), x, result)
    result = kb.select(kb.eq(x, 0.0), x, result)          # ±0 -> ±0 (the exact product's sum loses -0)
    return kb.select(kb.lt(x, zero_below), x * 0.0, result)


@math_routine("gelu", "f32", formula="0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x**3)))")
@math_routine("gelu", "f64", formula="0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x**3)))")
def gelu_routine(kb: VecBuilder, x: Vec) -> Vec:
    x = kb.let(x)
    xc = kb.let(kb.pmin(kb.pmax(x, -_PASS_THROUGH), _PASS_THROUGH))
    sq, sq_err = two_product(kb, xc, xc)
    cube, cube_err = two_product(kb, sq, xc)
    cube_err = kb.let(cube_err + sq_err * xc)
    c_hi, c_lo = _split(kb, _GELU_CUBIC)
    term, term_err = two_product(kb, kb.const(c_hi), cube)
    term_err = kb.let(term_err + (c_hi * cube_err + c_lo * cube))
    inner, inner_err = two_sum(kb, xc, term)
    inner_err = kb.let(inner_err + term_err)
    s_hi, s_lo = _split(kb, _GELU_SCALE)
    u, u_err = two_product(kb, kb.const(s_hi), inner)
    u_err = u_err + (s_hi * inner_err + s_lo * inner)
    lg = logistic(kb, kb.let(2.0 * u), kb.let(2.0 * u_err))
    result = _finish(kb, _times(kb, xc, lg), lg)
    result = kb.select(kb.gt(x, _PASS_THROUGH), x, result)
    result = kb.select(kb.eq(x, 0.0), x, result)          # ±0 -> ±0 (the exact product's sum loses -0)
    return kb.select(kb.lt(x, -_PASS_THROUGH), x * 0.0, result)


@math_routine("tanh", "f32", formula="tanh(x)")
@math_routine("tanh", "f64", formula="tanh(x)")
def tanh_routine(kb: VecBuilder, x: Vec) -> Vec:
    x = kb.let(x)
    a = kb.let(kb.pmin(kb.abs(x), _TANH_SATURATION))
    z = kb.let(a * a)
    small = a + (a * z) * horner(kb, coefficients("TANH_T", kb.fmt.name), z)
    parts = exp_parts(kb, -2.0 * a)
    scale = kb.let(power_of_two(kb, parts.k))
    n_hi, n_lo = _one_plus(kb, scale, parts.r, parts.tail, -1.0)
    d_hi, d_lo = _one_plus(kb, scale, parts.r, parts.tail, 1.0)
    q, q_lo = _divide(kb, n_hi, n_lo, d_hi, d_lo)
    magnitude = kb.select(kb.lt(a, _TANH_POLY_LIMIT), small, q + q_lo)
    return kb.copysign(kb.abs(magnitude), x)

