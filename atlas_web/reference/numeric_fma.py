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
from .numeric_floats import finish
from .numeric_formats import to_compute

__all__ = ["fma", "fms", "fma_f64", "fma_f32", "fma_exact_scalar"]

_QUIET = {"all": "ignore"}
_SPLITTER = 134217729.0  # 2**27 + 1, Veltkamp's constant for binary64
_INF = np.float64(np.inf)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, err) with s = RN(a + b) and a + b = s + err exactly (no overflow)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = _SPLITTER * x
    hi = t - (t - x)
    return hi, x - hi


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, err) with p = RN(a*b) and a*b = p + err exactly (Dekker; needs no overflow or underflow)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _odd(s: np.ndarray, err: np.ndarray) -> np.ndarray:
    """s = RN(x), err = x - s: the result of rounding x to odd instead."""
    nudge = (err != 0) & np.isfinite(err) & ((s.view(np.uint64) & np.uint64(1)) == 0)
    if nudge.any():
        s = np.where(nudge, np.nextafter(s, np.where(err > 0, _INF, -_INF)), s)
    return s


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """RN_f32(a*b + c) for f32 arrays, exactly."""
    with np.errstate(**_QUIET):
        a64, b64, c64 = (np.asarray(x, dtype=np.float64) for x in (a, b, c))
        s, err = _two_sum(a64 * b64, c64)  # the product is exact in f64
        return _odd(s, err).astype(np.float32)


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


def fma_f64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """RN_f64(a*b + c) for f64 arrays, exactly."""
    a, b, c = (np.asarray(x, dtype=np.float64) for x in (a, b, c))
    with np.errstate(**_QUIET):
        _, ea = np.frexp(a)
        _, eb = np.frexp(b)
        _, ec = np.frexp(c)
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        nonzero = (a != 0) & (b != 0)
        # Inside this window ExactMult cannot overflow or lose its error term, every intermediate is a
        # multiple of 2**-1006 (so nothing is subnormal) and nothing reaches 2**1022.
        window = ((np.abs(ea) <= 480) & (np.abs(eb) <= 480) & (ea + eb >= -900)
                  & ((c == 0) | ((ec >= -900) & (ec <= 1000))))
        fast = finite & nonzero & window
        uh, ul = _two_product(np.where(fast, a, 1.0), np.where(fast, b, 1.0))
        th, tl = _two_sum(np.where(fast, c, 0.0), uh)
        v, verr = _two_sum(tl, ul)
        result = th + _odd(v, verr)
        finite_ab = np.isfinite(a) & np.isfinite(b)
        # an exact (zero, infinite or NaN) product plus c: the plain IEEE operations are exact
        plain = (finite & ~nonzero) | ~finite_ab
        result = np.where(plain, a * b + c, result)
        infinite_c = finite_ab & ~np.isfinite(c)  # a finite product (even one that overflows) plus ±inf/NaN
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
