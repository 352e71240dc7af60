"""Fused multiply-add rounded once (FMA, FMS), exact for every input.

F32 (and F16/BF16, which compute in f32 and then round to their format):
the product of two f32 values is exact in f64; the sum with c is formed in
f64 *rounded to odd* (TwoSum, then a one-ulp nudge when inexact), and
rounding that to f32 is the correctly rounded result (53 >= 24 + 2 bits).

F64: Boldo and Melquiond's emulation (IEEE TC 2008, "Emulation of FMA and
correctly rounded sums: proved algorithms using rounding to odd"):
``(uh, ul) = ExactMult(a, b)`` (Dekker), ``(th, tl) = TwoSum(c, uh)``,
``v = RO(tl + ul)``, ``result = RN(th + v)``, proved correct when nothing
underflows or overflows. Lanes outside a conservative exponent window are
computed exactly with ``fractions.Fraction`` instead (rare: huge or tiny
magnitudes). Zeros, infinities and NaN follow IEEE 754 fusedMultiplyAdd.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..isa.types import Type
from .numeric_double_double import two_product, two_sum
from .numeric_floats import finish
from .numeric_formats import in_chunks, to_compute

__all__ = ["fma", "fms", "fma_f64", "fma_f32", "fma_exact_scalar"]

_INF = np.float64(np.inf)


def _odd(s: np.ndarray, err: np.ndarray) -> np.ndarray:
    """s = RN(x) (finite, f64), err = x - s: the result of rounding x to odd instead.

    When x is inexact and s's last bit is even, the odd neighbour on x's side
    is one step away in the bit pattern: up in magnitude when err has s's
    sign, down otherwise (s is never 0 when err is not).
    """
    bits = s.view(np.uint64)
    nudge = (err != 0) & ((bits & np.uint64(1)) == 0)
    if not nudge.any():
        return s
    away = (err > 0) == (s > 0)
    step = np.where(away, np.uint64(1), np.uint64(0xFFFFFFFFFFFFFFFF))  # +1 or -1, modulo 2**64
    return np.where(nudge, bits + step, bits).view(np.float64)


_LOW29 = np.uint64((1 << 29) - 1)
_F32_MIDPOINT_BITS = np.uint64(1 << 28)
_F32_MIN_NORMAL = 2.0 ** -126


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """RN_f32(a*b + c) for f32 arrays, exactly (computed in cache-sized chunks)."""
    return in_chunks(_fma_f32, np.float32, a, b, c)


def _fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """RN_f32(a*b + c) for f32 arrays, exactly.

    s = RN_f64(a*b + c) rounds correctly to f32 unless s is itself an f32
    midpoint (an f32 midpoint strictly between x and s would be a nearer
    double) or an f32 subnormal; only those lanes are rounded to odd first.
    """
    with np.errstate(all="ignore"):
        # in place where possible: at a million lanes the fresh 8 MB temporaries cost more than the arithmetic
        product = np.array(a, dtype=np.float64)
        s = np.array(b, dtype=np.float64)
        c64 = np.asarray(c, dtype=np.float64)
        np.multiply(product, s, out=product)  # exact in f64
        np.add(product, c64, out=s)
        scratch = np.bitwise_and(s.view(np.uint64), _LOW29)
        suspicious = scratch == _F32_MIDPOINT_BITS
        magnitude = np.abs(s, out=scratch.view(np.float64))
        suspicious |= magnitude < _F32_MIN_NORMAL
        if suspicious.any():
            idx = np.flatnonzero(suspicious)
            s_few, err = two_sum(product[idx], c64[idx])
            s[idx] = _odd(s_few, np.where(np.isfinite(err), err, 0.0))  # inf/NaN need no nudge
        return s.astype(np.float32)


def fma_exact_scalar(a: float, b: float, c: float) -> float:
    """RN_f64(a*b + c) for Python floats, by exact rational arithmetic (IEEE zeros, infinities, NaN)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return a * b + c
    if not math.isfinite(c):
        return c
    if a == 0.0 or b == 0.0:
        return a * b + c  # an exact signed zero plus c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return 0.0
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


_WINDOW_HIGH = 2.0 ** 480
_WINDOW_LOW = 2.0 ** -900
_C_HIGH = 2.0 ** 1000


def fma_f64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """RN_f64(a*b + c) for f64 arrays, exactly (computed in cache-sized chunks)."""
    return in_chunks(_fma_f64, np.float64, *(np.asarray(x, dtype=np.float64) for x in (a, b, c)))


def _fma_f64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """RN_f64(a*b + c) for f64 arrays, exactly."""
    with np.errstate(all="ignore"):
        uh, ul = two_product(a, b)
        abs_c = np.abs(c)
        abs_uh = np.abs(uh)
        # Inside this window ExactMult neither overflows nor loses its error term, every intermediate is a
        # multiple of 2**-1006 (nothing subnormal) and nothing reaches 2**1022. NaN and inf fall outside.
        fast = ((np.abs(a) < _WINDOW_HIGH) & (np.abs(b) < _WINDOW_HIGH) & (abs_uh >= _WINDOW_LOW)
                & ((c == 0) | ((abs_c >= _WINDOW_LOW) & (abs_c < _C_HIGH))))
        th, tl = two_sum(c, uh)
        v, verr = two_sum(tl, ul)
        result = th + _odd(v, np.where(fast, verr, 0.0))
        if fast.all():
            return result
        finite_ab = np.isfinite(a) & np.isfinite(b)
        # an exact (zero, infinite or NaN) product plus c: the plain IEEE operations are exact
        plain = ((a == 0) | (b == 0) | ~finite_ab) & ~fast
        result = np.where(plain, a * b + c, result)
        infinite_c = finite_ab & ~np.isfinite(c) & ~plain  # a finite product (even one that overflows) plus ±inf/NaN
        result = np.where(infinite_c, c, result)
        slow = ~(fast | plain | infinite_c)
    if slow.any():
        idx = np.flatnonzero(slow)
        result[idx] = [fma_exact_scalar(x, y, z) for x, y, z in zip(a[idx].tolist(), b[idx].tolist(),
                                                                    c[idx].tolist())]
    return result


def fma(ty: Type, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """FMA: a*b + c rounded once (F16/BF16: once to f32, then to the format)."""
    if ty is Type.F64:
        return fma_f64(a, b, c)
    return finish(ty, fma_f32(to_compute(ty, a), to_compute(ty, b), to_compute(ty, c)))


def fms(ty: Type, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """FMS: a*b - c rounded once (negating c is exact)."""
    return fma(ty, a, b, np.negative(c))
