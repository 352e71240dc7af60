"""Transcendental functions: computed in binary64 with NumPy and rounded once to the type.

F16 and BF16 results are rounded f64 -> f32 -> format (``round_to``). NumPy's
binary64 functions are within a few ulp of the correctly rounded value (its
vectorized ``tanh`` up to 3 ulp of glibc's). Pow is C ``pow``, Atan2 C
``atan2(a, b)``.

SIGMOID, SWISH and GELU (the formulas of docs/semantics.md) are evaluated in
double-double arithmetic (numeric_double_double) and rounded once, so their
f64 value is within 1 ulp of the correctly rounded value of the formula
everywhere, subnormal results included; the other types round that value.
``sigmoid(t) = 1/(1 + exp(-t))`` for ``t >= 0`` and ``exp(t)/(1 + exp(t))``
below, with ``exp(-|t|) = 2**k * e`` kept unrounded and the power of two of
negative ``t`` applied with the final rounding (``round_scaled``).
``SWISH(x) = x*sigmoid(x)`` and the tanh form of GELU, ``0.5*x*(1 + tanh(z))``
with ``z = sqrt(2/pi)*(x + 0.044715*x**3)``, as ``x*sigmoid(2z)`` (since ``1 +
tanh(z) = 2/(1 + exp(-2z))``); the product with x is exact before the last
rounding, and for GELU ``2z`` is a double-double (both constants in two
parts, the real numbers sqrt(2/pi) and 0.044715), because exp amplifies an
error in its argument by the argument's size. Beyond the points where the
result is x itself (x > 40) or rounds to 0 (SWISH below -800, GELU below
-40) the result is selected: x, or ``x*0``, so -inf gives NaN (``-inf * 0``,
``-inf / inf``) as the formulas do; ±0 keeps its sign; NaN stays NaN.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from ..isa.types import Type
from .numeric_double_double import exp_scaled, fast_two_sum, round_scaled, split_constant, two_product, two_sum
from .numeric_formats import round_to

__all__ = ["UNARY", "BINARY", "in_binary64", "sigmoid", "swish", "gelu"]

_SQRT_2_OVER_PI = Decimal("0.797884560802865355879892119868763736951717262")   # sqrt(2/pi) to 45 digits
_GELU_SCALE_HI, _GELU_SCALE_LO = split_constant(_SQRT_2_OVER_PI)
_GELU_CUBIC_HI, _GELU_CUBIC_LO = split_constant(Decimal("0.044715"))
_LOGISTIC_SATURATION = 1200.0   # exp(-1200) < 2**-1731: beyond it no f64 result changes
_DENOMINATOR_MIN_EXP = -200     # 1 + 2**k*e is 1 to far beyond double-double precision below this
_PASS_THROUGH = 40.0            # x*sigmoid(x) and gelu(x) round to x above this
_SWISH_ZERO = -800.0            # x*sigmoid(x) rounds to -0 below this
_GELU_ZERO = -40.0              # gelu(x) rounds to -0 below this
_TINY_FACTOR_LIMIT = 2.0 ** -500  # x below this is scaled up before the exact product (no underflow)
_TINY_FACTOR_EXP = 600
_SUBNORMAL_QUANTUM_EXP = -1074
_SUBNORMAL_QUANTUM = 2.0 ** _SUBNORMAL_QUANTUM_EXP
_HALF_TIE_LIMIT = 2.0 ** -1021    # below: x/2 is subnormal
_BLOCK = 16384                  # elements per block: about twice as fast as whole 1M-lane arrays


def _blockwise(fn):
    """Apply an element-wise f64 function over blocks of _BLOCK elements (its temporaries stay in cache)."""
    def apply(x: np.ndarray) -> np.ndarray:
        flat = np.ravel(x)
        out = np.empty_like(flat)
        for start in range(0, flat.size, _BLOCK):
            out[start:start + _BLOCK] = fn(flat[start:start + _BLOCK])
        return out.reshape(np.shape(x))
    apply.__name__ = fn.__name__
    apply.__doc__ = fn.__doc__
    return apply


def _logistic(t_hi: np.ndarray, t_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sigmoid(t_hi + t_lo) as (q, q_lo, k): 2**k * (q + q_lo), k int64 (0 for t >= 0); t finite."""
    negative = t_hi < 0
    magnitude = np.abs(t_hi)
    saturated = magnitude >= _LOGISTIC_SATURATION
    arg_hi = -np.minimum(magnitude, _LOGISTIC_SATURATION)
    arg_lo = np.where(saturated, 0.0, np.where(negative, t_lo, -t_lo))
    k, e_hi, e_lo = exp_scaled(arg_hi, arg_lo)           # exp(-|t|) = 2**k * (e_hi + e_lo), k <= 0
    scale = np.ldexp(1.0, np.maximum(k, _DENOMINATOR_MIN_EXP))
    d_hi, d_err = two_sum(np.ones_like(e_hi), scale * e_hi)
    d_hi, d_lo = fast_two_sum(d_hi, d_err + scale * e_lo)
    n_hi = np.where(negative, e_hi, 1.0)
    n_lo = np.where(negative, e_lo, 0.0)
    q = n_hi / d_hi
    p, p_err = two_product(q, d_hi)
    q_lo = ((((n_hi - p) - p_err) + n_lo) - q * d_lo) / d_hi
    q, q_lo = fast_two_sum(q, q_lo)
    return q, q_lo, np.where(negative, k, 0)


def _times(x: np.ndarray, q: np.ndarray, q_lo: np.ndarray, k: np.ndarray) -> np.ndarray:
    """x * 2**k * (q + q_lo) rounded once, with the sign of x (also for ±0); |x| <= 800, (q, k) from _logistic(c*x)."""
    tiny = np.abs(x) < _TINY_FACTOR_LIMIT
    factor = np.where(tiny, np.ldexp(x, _TINY_FACTOR_EXP), x)
    k = k - np.where(tiny, _TINY_FACTOR_EXP, 0)
    p, p_err = two_product(factor, q)
    p, p_lo = fast_two_sum(p, p_err + factor * q_lo)
    value = round_scaled(p, p_lo, k)
    # |x| < 2**-1021: x*sigmoid(c*x) = x/2 + (c/4)*x**2 with c > 0, beyond the double-double's reach; x/2
    # is a tie on the subnormal grid when x is an odd multiple of 2**-1074, and the positive rest breaks it
    # upward: (x + 2**-1074)/2, exact
    small = np.where(np.abs(x) < _HALF_TIE_LIMIT, x, 0.0)
    half_tie = np.fmod(np.ldexp(small, -_SUBNORMAL_QUANTUM_EXP), 2.0) != 0
    value = np.where(half_tie, np.ldexp(small + _SUBNORMAL_QUANTUM, -1), value)
    return np.copysign(np.abs(value), x)


def _select_outside(x: np.ndarray, value: np.ndarray, zero_below: float) -> np.ndarray:
    """value, or x above the pass-through point, x*0 below ``zero_below`` (NaN for -inf), NaN for NaN."""
    value = np.where(x > _PASS_THROUGH, x, value)
    return np.where((x < zero_below) | np.isnan(x), x * 0.0, value)


@_blockwise
def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) in f64, within 1 ulp of the correctly rounded value (double-double)."""
    finite = np.clip(np.nan_to_num(x, nan=0.0), -_LOGISTIC_SATURATION, _LOGISTIC_SATURATION)
    q, q_lo, k = _logistic(finite, np.zeros_like(finite))
    return np.where(np.isnan(x), x, round_scaled(q, q_lo, k))


@_blockwise
def swish(x: np.ndarray) -> np.ndarray:
    """x * sigmoid(x) in f64, within 1 ulp of the correctly rounded value (double-double)."""
    clipped = np.clip(np.nan_to_num(x, nan=0.0), _SWISH_ZERO, _PASS_THROUGH)
    value = _times(clipped, *_logistic(clipped, np.zeros_like(clipped)))
    return _select_outside(x, value, _SWISH_ZERO)


def _gelu_argument(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2*sqrt(2/pi)*(x + 0.044715*x**3) as a double-double (|x| <= 40; no cancellation: x and x**3 agree in sign)."""
    square, square_err = two_product(x, x)
    cube, cube_err = two_product(square, x)
    cube_err = cube_err + square_err * x
    term, term_err = two_product(np.full_like(x, _GELU_CUBIC_HI), cube)
    term_err = term_err + (_GELU_CUBIC_HI * cube_err + _GELU_CUBIC_LO * cube)
    inner, inner_err = two_sum(x, term)
    inner, inner_err = fast_two_sum(inner, inner_err + term_err)
    u, u_err = two_product(np.full_like(x, _GELU_SCALE_HI), inner)
    u, u_err = fast_two_sum(u, u_err + (_GELU_SCALE_HI * inner_err + _GELU_SCALE_LO * inner))
    return 2.0 * u, 2.0 * u_err


@_blockwise
def gelu(x: np.ndarray) -> np.ndarray:
    """The tanh form of GELU in f64 as x*sigmoid(2z), within 1 ulp of the correctly rounded value."""
    clipped = np.clip(np.nan_to_num(x, nan=0.0), _GELU_ZERO, _PASS_THROUGH)
    value = _times(clipped, *_logistic(*_gelu_argument(clipped)))
    return _select_outside(x, value, _GELU_ZERO)


def in_binary64(fn):
    """Wrap an f64 function into ``(ty, *arrays)``: widen exactly to f64, compute quietly, round once to ``ty``."""
    def rule(ty: Type, *arrays: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return round_to(ty, fn(*(np.asarray(a, dtype=np.float64) for a in arrays)))
    rule.__name__ = getattr(fn, "__name__", "rule")
    rule.__doc__ = fn.__doc__
    return rule


UNARY = {
    "EXP": in_binary64(np.exp), "LOG": in_binary64(np.log), "LOG2": in_binary64(np.log2),
    "LOG10": in_binary64(np.log10), "SQRT": in_binary64(np.sqrt), "SIN": in_binary64(np.sin),
    "COS": in_binary64(np.cos), "TAN": in_binary64(np.tan), "TANH": in_binary64(np.tanh),
    "SIGMOID": in_binary64(sigmoid), "GELU": in_binary64(gelu), "SWISH": in_binary64(swish),
}
BINARY = {"POW": in_binary64(np.power), "ATAN2": in_binary64(np.arctan2)}
