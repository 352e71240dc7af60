"""Integer arithmetic and logic on native NumPy integers (I8 … U64): wrapping, truncating, vectorized.

Every function takes the instruction's type and the operand arrays (already
in the type's storage dtype) and returns a new array of that dtype; ``div``
and ``rem`` also return their trap masks. Nothing here loops in Python.
"""

from __future__ import annotations

import numpy as np

from ..errors import TrapCode
from ..isa.enums import Condition
from ..isa.types import Type
from .numeric_formats import storage_dtype, unsigned_view
from .numeric_outcome import Outcome, operand_values, trap_list

__all__ = ["BINARY", "UNARY", "TERNARY", "COMPARE", "div", "rem", "shl", "shr", "compare"]


def add(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.add(a, b, dtype=storage_dtype(ty))


def sub(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.subtract(a, b, dtype=storage_dtype(ty))


def mul(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.multiply(a, b, dtype=storage_dtype(ty))


def mad(ty: Type, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return add(ty, mul(ty, a, b), c)


def _division_operands(ty: Type, a: np.ndarray, b: np.ndarray):
    """The divisor with trapping lanes replaced by 1, and the two trap masks."""
    zero = b == 0
    if ty.is_signed():
        overflow = (a == np.iinfo(storage_dtype(ty)).min) & (b == -1)
    else:
        overflow = np.zeros(a.shape, dtype=bool)
    bad = zero | overflow
    safe = np.where(bad, np.ones_like(b), b) if bad.any() else b
    return safe, zero, overflow


def _traps(zero: np.ndarray, overflow: np.ndarray) -> tuple:
    return trap_list((TrapCode.DIVISION_BY_ZERO, zero), (TrapCode.INTEGER_OVERFLOW, overflow))


def _numbers(a: np.ndarray) -> dict:
    """The trap numbers of a division: the dividend (``lhs``)."""
    return {TrapCode.DIVISION_BY_ZERO: operand_values("lhs", a)}


def _truncated_quotient(ty: Type, a: np.ndarray, divisor: np.ndarray) -> np.ndarray:
    """a / divisor truncated toward zero (no zero divisor, no MIN / -1), in the type's dtype.

    Up to 32 bits the binary64 quotient truncates exactly: its rounding error
    (below 2**-22 / |divisor|) never reaches the next integer (at least
    1 / |divisor| away). Wider types divide the exact multiple ``a - fmod(a, b)``.
    """
    dtype = storage_dtype(ty)
    with np.errstate(all="ignore"):
        if ty.bits <= 32:
            return np.trunc(a.astype(np.float64) / divisor.astype(np.float64)).astype(dtype)
        exact_multiple = np.subtract(a, np.fmod(a, divisor), dtype=dtype)  # C remainder: sign of the dividend
        return np.floor_divide(exact_multiple, divisor).astype(dtype, copy=False)


def div(ty: Type, a: np.ndarray, b: np.ndarray) -> Outcome:
    """Quotient truncated toward zero; traps DIVISION_BY_ZERO, INTEGER_OVERFLOW (MIN / -1)."""
    safe, zero, overflow = _division_operands(ty, a, b)
    return Outcome(_truncated_quotient(ty, a, safe), _traps(zero, overflow), _numbers(a))


def rem(ty: Type, a: np.ndarray, b: np.ndarray) -> Outcome:
    """Truncated remainder (sign of the dividend); traps DIVISION_BY_ZERO, INTEGER_OVERFLOW (MIN rem -1)."""
    safe, zero, overflow = _division_operands(ty, a, b)
    with np.errstate(all="ignore"):
        r = np.fmod(a, safe).astype(storage_dtype(ty), copy=False)  # C remainder: sign of the dividend
    return Outcome(r, _traps(zero, overflow), _numbers(a))


def minimum(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.minimum(a, b)


def maximum(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(a, b)


def clamp(ty: Type, src: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(src, lo), hi)


def absolute(ty: Type, a: np.ndarray) -> np.ndarray:
    """|a|, wrapping (|MIN| = MIN); the identity on unsigned types."""
    if ty.is_unsigned():
        return a.copy()
    with np.errstate(all="ignore"):
        return np.abs(a)


def negate(ty: Type, a: np.ndarray) -> np.ndarray:
    """-a wrapping; on unsigned types 2**n - a (0 stays 0)."""
    with np.errstate(all="ignore"):
        return np.negative(a)


def sign(ty: Type, a: np.ndarray) -> np.ndarray:
    if ty.is_unsigned():
        return (a != 0).astype(storage_dtype(ty))
    return np.sign(a).astype(storage_dtype(ty), copy=False)


def bit_and(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.bitwise_and(a, b)


def bit_or(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.bitwise_or(a, b)


def bit_xor(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.bitwise_xor(a, b)


def bit_not(ty: Type, a: np.ndarray) -> np.ndarray:
    return np.invert(a)


def shift_amount(ty: Type, amount: np.ndarray) -> np.ndarray:
    """An integer shift amount (i32 or u32) read unsigned, modulo the width of ``ty``.

    The width is a power of two dividing 2**32, so masking the unsigned bits
    gives the amount modulo 2**32, modulo the width.
    """
    amount = np.ascontiguousarray(amount)
    return unsigned_view(amount) & (ty.bits - 1)


def shl(ty: Type, src: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """src << (amount mod bits), wrapping; computed on the unsigned bits."""
    bits = unsigned_view(np.ascontiguousarray(src))
    shifted = np.left_shift(bits, shift_amount(ty, amount).astype(bits.dtype))
    return shifted.view(storage_dtype(ty))


def shr(ty: Type, src: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """src >> (amount mod bits): arithmetic on signed types (NumPy's signed shift), logical on unsigned."""
    return np.right_shift(src, shift_amount(ty, amount).astype(src.dtype))


_ORDERED = {
    Condition.EQ: np.equal, Condition.NE: np.not_equal, Condition.LT: np.less, Condition.LE: np.less_equal,
    Condition.GT: np.greater, Condition.GE: np.greater_equal,
}
_UNSIGNED = {Condition.LTU: np.less, Condition.LEU: np.less_equal, Condition.GTU: np.greater,
             Condition.GEU: np.greater_equal}


def compare(ty: Type, cond: Condition, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """SETcc on integers: EQ … GE by the type's signedness, LTU … GEU on the unsigned bit patterns."""
    if cond in _ORDERED:
        return _ORDERED[cond](a, b)
    return _UNSIGNED[cond](unsigned_view(np.ascontiguousarray(a)), unsigned_view(np.ascontiguousarray(b)))


BINARY = {"ADD": add, "SUB": sub, "MUL": mul, "DIV": div, "REM": rem, "MIN": minimum, "MAX": maximum,
          "AND": bit_and, "OR": bit_or, "XOR": bit_xor, "SHL": shl, "SHR": shr}
UNARY = {"ABS": absolute, "NEG": negate, "SIGN": sign, "NOT": bit_not}
TERNARY = {"MAD": mad, "CLAMP": clamp}
COMPARE = compare
