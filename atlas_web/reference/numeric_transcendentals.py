"""Transcendental functions: computed in binary64 with NumPy and rounded once to the type.

F16 and BF16 results are rounded f64 -> f32 -> format (``round_to``). NumPy's
binary64 functions are within a few ulp of the correctly rounded value (its
vectorized ``tanh`` up to 3 ulp of glibc's). The functions defined by a
formula are evaluated in a form that is mathematically the same and avoids
cancellation: ``SIGMOID(x) = 1/(1 + exp(-x))``, ``SWISH(x) = x*SIGMOID(x)``, and
the tanh form of GELU, ``0.5*x*(1 + tanh(z))`` with ``z = sqrt(2/pi)*(x +
0.044715*x**3)``, as ``x / (1 + exp(-2z))`` (since ``1 + tanh(z) =
2/(1 + exp(-2z))``): literal evaluation loses every digit for large negative
x. At -inf, SWISH and GELU are NaN (``-inf * 0``, ``-inf / inf``), as the
formulas give. Pow is C ``pow``, Atan2 C ``atan2(a, b)``.
"""

from __future__ import annotations

import math

import numpy as np

from ..isa.types import Type
from .numeric_formats import round_to

__all__ = ["UNARY", "BINARY", "in_binary64", "sigmoid", "swish", "gelu"]

_GELU_SCALE = math.sqrt(2.0 / math.pi)


def _logistic_times(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """x / (1 + exp(-t)) in f64 without overflow: for t < 0 as x*exp(t) / (1 + exp(t)).

    The plain form overflows exp(-t) to inf for t below about -709 and so returns 0 where the
    true value is still a (subnormal) number.
    """
    e = np.exp(-np.abs(t))
    return np.where(t >= 0, x / (1.0 + e), (x * e) / (1.0 + e))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) in f64 (evaluated without overflow for negative x)."""
    return _logistic_times(np.ones_like(x), x)


def swish(x: np.ndarray) -> np.ndarray:
    """x * sigmoid(x) in f64."""
    return x * sigmoid(x)


def gelu(x: np.ndarray) -> np.ndarray:
    """The tanh form of GELU in f64, as x / (1 + exp(-2z))."""
    z = _GELU_SCALE * (x + 0.044715 * (x * x * x))
    return _logistic_times(x, 2.0 * z)


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
