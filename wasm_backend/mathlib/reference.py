"""Correctly rounded references for the math library and ulp distances (tests, benchmarks; needs NumPy, mpmath).

``correctly_rounded(op, fmt, *inputs)`` gives, for every element, the exact
mathematical result rounded once to nearest-even in ``fmt`` (subnormals and
overflow included):

- finite inputs whose result is finite are evaluated in mpmath at 160 bits
  and rounded exactly from the binary value (``round_rational``); for f32
  a fast path evaluates NumPy's f64 function first and keeps its rounding to
  f32 unless the f64 value lies within 2**-40 (relative) of an f32 rounding
  boundary (far more than NumPy's f64 error), where mpmath decides;
- special inputs and results (NaN, infinities, signed zeros, domain errors)
  come from NumPy's f64 functions, which follow C99 Annex F, rounded to the
  format.

``ulp_distance(a, b, fmt)`` counts the representable values between two
results (0 for equal values and for two NaNs; +0 and -0 count as equal
here, signs of zeros are checked separately; a NaN against a number is
``NAN_DISTANCE``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

import mpmath
import numpy as np
from mpmath import mp

__all__ = ["correctly_rounded", "ulp_distance", "round_rational", "C_FUNCTIONS", "EXACT_FUNCTIONS",
           "NAN_DISTANCE"]

NAN_DISTANCE = 2 ** 62
_PRECISION = 160
_FAST_PATH_MARGIN = 2.0 ** -40
_GELU_C = "0.044715"          # the exact decimal; made an mpf at the working precision

_FORMAT_BITS = {"f32": (24, -126, 127), "f64": (53, -1022, 1023)}   # precision, emin, emax
_DTYPES = {"f32": np.float32, "f64": np.float64}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _gelu(x: np.ndarray) -> np.ndarray:
    z = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
    return x / (1.0 + np.exp(-2.0 * z))


#: op -> f64 NumPy function with C semantics (special values; the f32 fast path)
C_FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "tanh": np.tanh, "sigmoid": _sigmoid, "swish": lambda x: x * _sigmoid(x), "gelu": _gelu,
    "pow": np.power, "atan2": np.arctan2, "rcp": lambda x: 1.0 / x, "rsqrt": lambda x: 1.0 / np.sqrt(x),
}


def _mp_gelu(x):
    u = mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf(_GELU_C) * x ** 3)
    return x / (1 + mpmath.exp(-2 * u))


def _mp_pow(x, y):
    if x > 0:
        return mpmath.power(x, y)
    magnitude = mpmath.power(-x, y)        # x < 0 reaches here only with an integer y
    return -magnitude if int(y) % 2 else magnitude


#: op -> mpmath function of mpf arguments (finite inputs with a finite, real result)
EXACT_FUNCTIONS: dict[str, Callable[..., object]] = {
    "exp": mpmath.exp, "log": mpmath.log, "log2": lambda x: mpmath.log(x, 2), "log10": mpmath.log10,
    "sin": mpmath.sin, "cos": mpmath.cos, "tan": mpmath.tan, "tanh": mpmath.tanh,
    "sigmoid": lambda x: 1 / (1 + mpmath.exp(-x)), "swish": lambda x: x / (1 + mpmath.exp(-x)),
    "gelu": _mp_gelu, "pow": _mp_pow, "atan2": mpmath.atan2, "rcp": lambda x: 1 / x,
    "rsqrt": lambda x: 1 / mpmath.sqrt(x),
}


def round_rational(value: Fraction, fmt: str) -> float:
    """``value`` rounded to nearest-even in ``fmt`` (subnormals, overflow to inf), as a Python float."""
    precision, emin, emax = _FORMAT_BITS[fmt]
    if value == 0:
        return 0.0
    sign = -1.0 if value < 0 else 1.0
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    quantum_exp = max(exponent, emin) - (precision - 1)
    scaled = magnitude / Fraction(2) ** quantum_exp
    n = round(scaled)                  # Fraction rounds half to even
    if n >= 2 ** (emax + 1 - quantum_exp):
        return sign * math.inf
    return sign * math.ldexp(n, quantum_exp)


def _round_mpf(value, fmt: str) -> float:
    """An mpf rounded to ``fmt``; magnitudes far outside the format go straight to 0 or inf (no huge ints)."""
    sign, man, exp, bits = mpmath.mpf(value)._mpf_     # man_exp would drop the sign
    if not man:
        return 0.0
    top = exp + bits                                     # 2**(top-1) <= |value| < 2**top
    if top < -1200:
        return -0.0 if sign else 0.0
    if top > 1200:
        return -math.inf if sign else math.inf
    man = -man if sign else man
    return round_rational(Fraction(man) * Fraction(2) ** exp if exp >= 0 else Fraction(man, 2 ** -exp), fmt)


def _exact_one(op: str, fmt: str, args: tuple[float, ...]) -> float:
    with mp.workprec(_PRECISION):
        result = EXACT_FUNCTIONS[op](*(mpmath.mpf(a) for a in args))
        if isinstance(result, Fraction):
            return round_rational(result, fmt)
        return _round_mpf(result, fmt)


def _needs_exact(op: str, args: list[np.ndarray], c_result: np.ndarray) -> np.ndarray:
    """Where the C result is not a special value (it is finite and the inputs are finite)."""
    finite = np.isfinite(c_result)
    for a in args:
        finite &= np.isfinite(a)
    if op == "pow":
        finite &= args[0] != 0
    if op == "atan2":
        finite &= (args[0] != 0) & (args[1] != 0)
    if op in ("log", "log2", "log10", "rsqrt"):
        finite &= args[0] > 0
    if op == "rcp":
        finite &= args[0] != 0
    return finite


def _near_f32_boundary(y64: np.ndarray) -> np.ndarray:
    """Where an f64 value is within the fast-path margin of a point where f32 rounding changes."""
    y32 = y64.astype(np.float32)
    ulp = np.abs(np.spacing(y32)).astype(np.float64)      # the gap above |y32| (inf past the largest float)
    y32 = y32.astype(np.float64)
    distance = np.abs(y64 - y32)
    slack = _FAST_PATH_MARGIN * np.maximum(np.abs(y64), 2.0 ** -149)
    near_half = np.abs(distance - ulp / 2) <= slack
    near_quarter = np.abs(distance - ulp / 4) <= slack          # below a power of two the step halves
    return near_half | near_quarter | (np.abs(y64) >= 3.4e38)


def correctly_rounded(op: str, fmt: str, *inputs: np.ndarray) -> np.ndarray:
    """The correctly rounded ``op`` of ``inputs`` (arrays of the format) in ``fmt``; see the module docstring."""
    dtype = _DTYPES[fmt]
    args = [np.asarray(a, dtype=dtype).astype(np.float64).ravel() for a in inputs]
    with np.errstate(all="ignore"):
        c_result = C_FUNCTIONS[op](*args)
        out = c_result.astype(dtype)
        exact = _needs_exact(op, args, c_result)
        if fmt == "f32":
            exact &= _near_f32_boundary(c_result)
    for i in np.flatnonzero(exact):
        out[i] = _exact_one(op, fmt, tuple(float(a[i]) for a in args))
    return out


def _ordered(values: np.ndarray, fmt: str) -> np.ndarray:
    int_type = np.int32 if fmt == "f32" else np.int64
    bits = np.ascontiguousarray(values, dtype=_DTYPES[fmt]).view(int_type).astype(np.int64)
    magnitude = bits & np.int64((1 << (31 if fmt == "f32" else 63)) - 1)
    return np.where(bits < 0, -magnitude, magnitude)


def ulp_distance(a: np.ndarray, b: np.ndarray, fmt: str) -> np.ndarray:
    """Representable values between ``a`` and ``b`` elementwise (see the module docstring), as int64."""
    a = np.asarray(a, dtype=_DTYPES[fmt])
    b = np.asarray(b, dtype=_DTYPES[fmt])
    distance = np.abs(_ordered(a, fmt) - _ordered(b, fmt))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    distance = np.where(nan_a & nan_b, 0, distance)
    return np.where(nan_a ^ nan_b, NAN_DISTANCE, distance)
