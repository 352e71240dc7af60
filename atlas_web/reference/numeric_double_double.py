"""Double-double arithmetic on f64 NumPy arrays: exact products and sums, exp, one final rounding.

A double-double is a pair ``(hi, lo)`` of f64 arrays whose sum is the value,
``|lo| <= ulp(hi)/2``. The reference's F64 SIGMOID, SWISH and GELU use these
to carry about 100 bits through the formula so that only the last rounding
matters (numeric_transcendentals). Everything is element-wise NumPy with no
per-element Python; the library's own ``exp`` is not used, so the results do
not depend on the platform's libm.

- ``two_sum`` / ``fast_two_sum`` / ``two_product``: the exact error of an f64
  sum or product (Knuth, Dekker; the split needs ``|a|, |b| < 2**995``).
- ``exp_scaled(t_hi, t_lo)``: ``exp(t) = 2**k * (e_hi + e_lo)`` with k an
  int64 array and ``e`` in about [0.99, 2.02) to a relative error below 2**-62, for
  ``|t| <= 1400``. ``t = m*ln2/64 + r`` (ln2/64 in three parts, the first
  two with 32 and 36 bits so their products with m are exact),
  ``2**(j/64)`` from a double-double
  table, ``exp(r) - 1`` a degree-6 Taylor polynomial for ``|r| <= ln2/128``.
- ``round_scaled(hi, lo, k)``: ``(hi + lo) * 2**k`` rounded once to f64 (to
  nearest, ties to even), subnormal results included; no overflow handling
  (callers keep the result finite).

The constants are computed at import with the standard library's ``decimal``
(40 significant digits) and split into f64 pairs. Nothing here raises; NaN
lanes give NaN (callers select special values themselves). Every function
returns new arrays and does not modify its arguments.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

import numpy as np

__all__ = ["two_sum", "fast_two_sum", "two_product", "split_constant", "exp_scaled", "round_scaled"]

_SPLITTER = 134217729.0          # 2**27 + 1 (Dekker's split of a 53-bit significand)
_EXP_TABLE_BITS = 6
_EXP_TABLE_SIZE = 1 << _EXP_TABLE_BITS
_SUBNORMAL_QUANTUM_EXP = -1074   # the spacing of f64 subnormals, 2**-1074


def split_constant(value: Decimal) -> tuple[float, float]:
    """``value`` as (nearest f64, nearest f64 to the rest): a double-double constant."""
    head = float(value)
    with localcontext() as ctx:
        ctx.prec = 60
        tail = float(value - Decimal(head))
    return head, tail


def _decimal_ln2() -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 40
        return Decimal(2).ln()


def _leading_bits(value: float, bits: int) -> float:
    mantissa, exponent = np.frexp(value)
    return float(np.ldexp(np.round(np.ldexp(mantissa, bits)), int(exponent) - bits))


def _ln2_over_table_in_three() -> tuple[float, float, float]:
    """ln2/64 as p1 + p2 + p3: p1 has 32 and p2 36 significant bits, so m*p1 and m*p2 are exact for |m| < 2**17."""
    with localcontext() as ctx:
        ctx.prec = 60
        value = _decimal_ln2() / _EXP_TABLE_SIZE
        p1 = _leading_bits(float(value), 32)
        p2 = _leading_bits(float(value - Decimal(p1)), 36)
        p3 = float(value - Decimal(p1) - Decimal(p2))
    return p1, p2, p3


def _power_table() -> tuple[np.ndarray, np.ndarray]:
    """2**(j/64) for j in 0..63 as double-double arrays."""
    heads, tails = [], []
    with localcontext() as ctx:
        ctx.prec = 40
        ln2 = _decimal_ln2()
        for j in range(_EXP_TABLE_SIZE):
            head, tail = split_constant((ln2 * j / _EXP_TABLE_SIZE).exp())
            heads.append(head)
            tails.append(tail)
    return np.array(heads, dtype=np.float64), np.array(tails, dtype=np.float64)


_LN2_PART1, _LN2_PART2, _LN2_PART3 = _ln2_over_table_in_three()
_INV_LN2_TABLE = float(_EXP_TABLE_SIZE / _decimal_ln2())
_POWER_HI, _POWER_LO = _power_table()
# exp(r) - 1 - r = r*r * (1/2 + r*(1/6 + r*(1/24 + r*(1/120 + r/720))))
_TAYLOR = (1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5)


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, e) with s = fl(a + b) and s + e = a + b exactly (Knuth; any order of magnitudes)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fast_two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, e) with s = fl(a + b) and s + e = a + b exactly, given |a| >= |b| or a == 0."""
    s = a + b
    return s, b - (s - a)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = _SPLITTER * a
    high = c - (c - a)
    return high, a - high


def two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (Dekker; no underflow in e, |a|, |b| < 2**995)."""
    p = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return p, err


def exp_scaled(t_hi: np.ndarray, t_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """exp(t_hi + t_lo) as (k, e_hi, e_lo): 2**k * (e_hi + e_lo), k int64, for |t| <= 1400 (finite)."""
    m = np.rint(t_hi * _INV_LN2_TABLE)
    # t - m*ln2/64 in two parts: t_hi - m*p1 is exact (Sterbenz; m*p1 exact), m*p2 exact, then the rest
    reduced = t_hi - m * _LN2_PART1
    r_hi, r_err = two_sum(reduced, -(m * _LN2_PART2))
    r_lo = (r_err + t_lo) - m * _LN2_PART3
    r_hi, r_lo = fast_two_sum(r_hi, r_lo)
    poly = np.full_like(r_hi, _TAYLOR[0])
    for coefficient in _TAYLOR[1:]:
        poly = coefficient + r_hi * poly
    # exp(r_hi + r_lo) - 1 = r_hi + (r_hi**2 * poly + r_lo * (1 + r_hi)), to 2**-64 absolute
    p_hi = r_hi
    p_lo = (r_hi * r_hi) * poly + (r_lo + r_lo * r_hi)
    index = m.astype(np.int64)
    j = index & (_EXP_TABLE_SIZE - 1)
    k = index >> _EXP_TABLE_BITS
    table_hi, table_lo = _POWER_HI[j], _POWER_LO[j]
    # 2**(j/64) * (1 + p): table_hi + table_hi*p_hi exactly, the smaller products added
    product, product_err = two_product(table_hi, p_hi)
    e_hi, e_err = two_sum(table_hi, product)
    e_lo = e_err + (product_err + (table_hi * p_lo + table_lo * (1.0 + (p_hi + p_lo))))
    e_hi, e_lo = fast_two_sum(e_hi, e_lo)
    return k, e_hi, e_lo


def round_scaled(hi: np.ndarray, lo: np.ndarray, k: np.ndarray) -> np.ndarray:
    """(hi + lo) * 2**k rounded once to f64 (ties to even), also where the result is subnormal.

    ``(hi, lo)`` must be a normalized double-double of normal magnitude; k an integer array.
    Normal results: hi + lo rounds once and the power of two is exact. Subnormal results are
    rounded to the multiple of 2**-1074 in the scaled space, where the scaled hi and lo are exact.
    """
    normal = np.ldexp(hi + lo, k)
    with np.errstate(over="ignore", invalid="ignore"):  # lanes with normal results may overflow here: unused
        scaled_hi = np.ldexp(hi, k - _SUBNORMAL_QUANTUM_EXP)
        scaled_lo = np.ldexp(lo, k - _SUBNORMAL_QUANTUM_EXP)
        n = np.rint(scaled_hi)
        below = scaled_hi - n               # exact: |scaled_hi| < 2**53 in the lanes that use it
    # |scaled_lo| <= ulp(scaled_hi)/2, so it only decides the lanes where scaled_hi is half-way
    n = n + ((below == 0.5) & (scaled_lo > 0)) - ((below == -0.5) & (scaled_lo < 0))
    subnormal = np.ldexp(n, _SUBNORMAL_QUANTUM_EXP)
    return np.where(np.abs(normal) < np.finfo(np.float64).tiny, subnormal, normal)
