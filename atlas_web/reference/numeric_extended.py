"""Extended-integer arithmetic and logic (I128 … U4096) on object arrays of Python ints.

Values are the canonical wrapped value of their type (signed types hold
negative ints). Every function takes the type and the operand arrays and
returns a new object array; ``div`` and ``rem`` also return trap masks. These
loop in Python per lane: the extended integers are the exception to the
vectorized rule.
"""

from __future__ import annotations

import operator

import numpy as np

from ..errors import TrapCode
from ..isa.enums import Condition
from ..isa.types import Type
from .numeric_formats import object_array, unsigned_view
from .numeric_outcome import Outcome, trap_list

__all__ = ["BINARY", "UNARY", "TERNARY", "compare", "wrapper", "truncated_divmod"]


def wrapper(ty: Type):
    """A function wrapping a Python int to ``ty`` (two's complement)."""
    bits = ty.bits
    mask = (1 << bits) - 1
    if ty.is_signed():
        half = 1 << (bits - 1)
        return lambda v: ((v + half) & mask) - half
    return lambda v: v & mask


def _lanes(fn, *arrays: np.ndarray) -> np.ndarray:
    lists = [a.tolist() for a in arrays]
    return object_array(map(fn, *lists), len(lists[0]))


def truncated_divmod(a: int, b: int) -> tuple[int, int]:
    """Quotient truncated toward zero and the remainder with the sign of ``a`` (``b`` non-zero)."""
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    return q, a - q * b


def add(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w = wrapper(ty)
    return _lanes(lambda x, y: w(x + y), a, b)


def sub(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w = wrapper(ty)
    return _lanes(lambda x, y: w(x - y), a, b)


def mul(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w = wrapper(ty)
    return _lanes(lambda x, y: w(x * y), a, b)


def mad(ty: Type, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    w = wrapper(ty)
    return _lanes(lambda x, y, z: w(x * y + z), a, b, c)


def _division(ty: Type, a: np.ndarray, b: np.ndarray, pick: int) -> Outcome:
    lo = -(1 << (ty.bits - 1)) if ty.is_signed() else None
    zero = np.fromiter((y == 0 for y in b.tolist()), dtype=bool, count=len(b))
    overflow = np.fromiter(((x == lo and y == -1) for x, y in zip(a.tolist(), b.tolist())), dtype=bool,
                           count=len(a))
    w = wrapper(ty)

    def one(x: int, y: int) -> int:
        if y == 0 or (x == lo and y == -1):
            return 0
        return w(truncated_divmod(x, y)[pick])

    return Outcome(_lanes(one, a, b), trap_list((TrapCode.DIVISION_BY_ZERO, zero),
                                                (TrapCode.INTEGER_OVERFLOW, overflow)))


def div(ty: Type, a: np.ndarray, b: np.ndarray) -> Outcome:
    """Quotient truncated toward zero; traps DIVISION_BY_ZERO, INTEGER_OVERFLOW (MIN / -1)."""
    return _division(ty, a, b, 0)


def rem(ty: Type, a: np.ndarray, b: np.ndarray) -> Outcome:
    """Remainder with the sign of the dividend; traps as ``div``."""
    return _division(ty, a, b, 1)


def minimum(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _lanes(min, a, b)


def maximum(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _lanes(max, a, b)


def clamp(ty: Type, src: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return _lanes(lambda x, low, high: min(max(x, low), high), src, lo, hi)


def absolute(ty: Type, a: np.ndarray) -> np.ndarray:
    w = wrapper(ty)
    return _lanes(lambda x: w(abs(x)), a)


def negate(ty: Type, a: np.ndarray) -> np.ndarray:
    w = wrapper(ty)
    return _lanes(lambda x: w(-x), a)


def sign(ty: Type, a: np.ndarray) -> np.ndarray:
    return _lanes(lambda x: (x > 0) - (x < 0), a)


def bit_and(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _lanes(operator.and_, a, b)  # two's complement semantics of Python ints keep the canonical form


def bit_or(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _lanes(operator.or_, a, b)


def bit_xor(ty: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _lanes(operator.xor, a, b)


def bit_not(ty: Type, a: np.ndarray) -> np.ndarray:
    w = wrapper(ty)
    return _lanes(lambda x: w(~x), a)


def _amounts(ty: Type, amount: np.ndarray) -> np.ndarray:
    """A 32-bit shift amount read unsigned, modulo the width (a power of two dividing 2**32)."""
    return unsigned_view(np.ascontiguousarray(amount)) & (ty.bits - 1)


def shl(ty: Type, src: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """src << (amount mod bits), wrapped; the amount is a 32-bit integer read unsigned."""
    w = wrapper(ty)
    return _lanes(lambda x, s: w(x << s), src, _amounts(ty, amount))


def shr(ty: Type, src: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """src >> (amount mod bits): arithmetic for signed values (negative ints), logical for unsigned."""
    return _lanes(operator.rshift, src, _amounts(ty, amount))


_RELATIONS = {
    Condition.EQ: operator.eq, Condition.NE: operator.ne, Condition.LT: operator.lt, Condition.LE: operator.le,
    Condition.GT: operator.gt, Condition.GE: operator.ge,
    Condition.LTU: operator.lt, Condition.LEU: operator.le, Condition.GTU: operator.gt, Condition.GEU: operator.ge,
}
_UNSIGNED_CONDITIONS = frozenset({Condition.LTU, Condition.LEU, Condition.GTU, Condition.GEU})


def compare(ty: Type, cond: Condition, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """SETcc on extended integers: EQ … GE by value, LTU … GEU on the unsigned bit patterns."""
    relation = _RELATIONS[cond]
    xs, ys = a.tolist(), b.tolist()
    if cond in _UNSIGNED_CONDITIONS:
        mask = (1 << ty.bits) - 1
        xs = [x & mask for x in xs]
        ys = [y & mask for y in ys]
    return np.fromiter(map(relation, xs, ys), dtype=bool, count=len(xs))


BINARY = {"ADD": add, "SUB": sub, "MUL": mul, "DIV": div, "REM": rem, "MIN": minimum, "MAX": maximum,
          "AND": bit_and, "OR": bit_or, "XOR": bit_xor, "SHL": shl, "SHR": shr}
UNARY = {"ABS": absolute, "NEG": negate, "SIGN": sign, "NOT": bit_not}
TERNARY = {"MAD": mad, "CLAMP": clamp}
