"""Evaluating an instruction on known operands, bit-exactly as docs/semantics.md defines it, or refusing.

``evaluate(name, ty, operands)`` returns the value instruction ``name`` of type ``ty`` computes from
``operands`` (operand name -> Python int already wrapped to its read type, or Python float of its type),
or None where the result cannot be proved to be the bits every backend computes:

* integers (every width, the extended ones included): ADD SUB MUL MAD NEG ABS MIN MAX CLAMP SIGN AND OR XOR
  NOT SHL SHR wrap at the width; DIV and REM truncate toward zero, and are folded only where they cannot
  trap (the divisor is not zero, not MIN / -1);
* F32 and F64: ADD SUB MUL DIV SQRT MAD NEG ABS. Python floats are binary64 with round to nearest even, so
  an F64 result is exact as computed; an F32 result is computed in binary64 and rounded to binary32, which
  is the correctly rounded binary32 result for + - * / and sqrt (binary64 has more than 2*24+2 significand
  bits, so the double rounding is innocuous). MAD rounds the product, then the sum. Refused: any operand or
  result that is NaN (backends differ in NaN bits) or subnormal (a GPU may flush it), a division by zero, the
  square root of a negative number; F16/BF16 (computed in f32 and rounded again) are not folded;
* CVT ``conversion(src_ty, dst_ty, value)``: int -> int wraps; int -> float only when the value is exact in
  the destination; float -> float widening (F32 -> F64) and F64 -> F32 rounding of normal values.

Standard library only.
"""

from __future__ import annotations

import math
from typing import Callable

from ..isa.floats import round_float
from ..isa.types import Type

__all__ = ["evaluate", "conversion", "FOLDED_FLOAT_TYPES", "representable"]

#: the float types folded (F16 and BF16 compute in f32 and round again: left alone)
FOLDED_FLOAT_TYPES = frozenset({Type.F32, Type.F64})

#: the smallest normal magnitude of each folded float type
_MIN_NORMAL = {Type.F32: 2.0 ** -126, Type.F64: 2.0 ** -1022}


def representable(value: float, ty: Type) -> bool:
    """Whether a float result may be folded: not NaN and not subnormal in ``ty`` (zero and inf are fine)."""
    if math.isnan(value):
        return False
    return value == 0.0 or math.isinf(value) or abs(value) >= _MIN_NORMAL[ty]


def _shift_amount(amount: int, ty: Type) -> int:
    return (amount & 0xFFFFFFFF) % ty.bits  # the amount is read unsigned, modulo the width


def _int_div(a: int, b: int, ty: Type) -> int | None:
    if b == 0 or (ty.is_signed() and b == -1 and a == ty.int_range()[0]):
        return None  # DIVISION_BY_ZERO / INTEGER_OVERFLOW: the instruction stays and traps
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_rem(a: int, b: int, ty: Type) -> int | None:
    q = _int_div(a, b, ty)
    return None if q is None else a - q * b


def _sign(a: int) -> int:
    return (a > 0) - (a < 0)


#: integer rules: name -> f(operands, ty) -> unwrapped result or None (refused)
_INTEGER: dict[str, Callable[[dict, Type], int | None]] = {
    "ADD": lambda o, t: o["lhs"] + o["rhs"],
    "SUB": lambda o, t: o["lhs"] - o["rhs"],
    "MUL": lambda o, t: o["lhs"] * o["rhs"],
    "MAD": lambda o, t: o["a"] * o["b"] + o["c"],
    "DIV": lambda o, t: _int_div(o["lhs"], o["rhs"], t),
    "REM": lambda o, t: _int_rem(o["lhs"], o["rhs"], t),
    "MIN": lambda o, t: min(o["lhs"], o["rhs"]),
    "MAX": lambda o, t: max(o["lhs"], o["rhs"]),
    "CLAMP": lambda o, t: min(max(o["src"], o["min"]), o["max"]),
    "ABS": lambda o, t: abs(o["src"]),
    "NEG": lambda o, t: -o["src"],
    "SIGN": lambda o, t: _sign(o["src"]),
    "AND": lambda o, t: o["lhs"] & o["rhs"],
    "OR": lambda o, t: o["lhs"] | o["rhs"],
    "XOR": lambda o, t: o["lhs"] ^ o["rhs"],
    "NOT": lambda o, t: ~o["src"],
    "SHL": lambda o, t: o["src"] << _shift_amount(o["amount"], t),
    "SHR": lambda o, t: o["src"] >> _shift_amount(o["amount"], t),  # arithmetic on signed, logical on unsigned
}


def _float_div(a: float, b: float) -> float | None:
    return None if b == 0.0 else a / b


def _float_sqrt(a: float) -> float | None:
    return None if a < 0.0 or math.isinf(a) else math.sqrt(a)


#: float rules: name -> f(operands, round) -> result (rounded with ``round`` where the ISA rounds) or None
_FLOAT: dict[str, Callable[[dict, Callable[[float], float]], float | None]] = {
    "ADD": lambda o, r: r(o["lhs"] + o["rhs"]),
    "SUB": lambda o, r: r(o["lhs"] - o["rhs"]),
    "MUL": lambda o, r: r(o["lhs"] * o["rhs"]),
    "DIV": lambda o, r: _maybe(r, _float_div(o["lhs"], o["rhs"])),
    "SQRT": lambda o, r: _maybe(r, _float_sqrt(o["src"])),
    "MAD": lambda o, r: r(r(o["a"] * o["b"]) + o["c"]),
    "NEG": lambda o, r: -o["src"],
    "ABS": lambda o, r: abs(o["src"]),
}


def _maybe(r: Callable[[float], float], value: float | None) -> float | None:
    return None if value is None else r(value)


def evaluate(name: str, ty: Type, operands: dict) -> int | float | None:
    """The value of instruction ``name`` of type ``ty`` on ``operands``, or None (see the module docstring).
    Python's float operations may overflow only to inf here (binary64 holds every product and sum of two
    binary32 values); an OverflowError or a refused operand gives None."""
    if ty.is_integer():
        rule = _INTEGER.get(name)
        if rule is None:
            return None
        result = rule(operands, ty)
        return None if result is None else ty.wrap(result)
    rule = _FLOAT.get(name)
    if rule is None or ty not in FOLDED_FLOAT_TYPES:
        return None
    if not all(representable(v, ty) for v in operands.values()):
        return None
    try:
        result = rule(operands, lambda x: round_float(x, ty))
    except (OverflowError, ValueError):
        return None
    if result is None or not representable(result, ty):
        return None
    return result


def conversion(src_ty: Type, dst_ty: Type, value: int | float) -> int | float | None:
    """CVT of ``value`` (of ``src_ty``) to ``dst_ty`` where it is provably what every backend gives, else
    None (see the module docstring)."""
    if src_ty.is_integer() and dst_ty.is_integer():
        return dst_ty.wrap(value)  # type: ignore[arg-type]  # sign- or zero-extended: the value is already
    if src_ty.is_integer():
        if dst_ty not in FOLDED_FLOAT_TYPES or abs(value) > 2 ** 53:
            return None
        as_float = float(value)
        exact = round_float(as_float, dst_ty)
        return exact if exact == value and representable(exact, dst_ty) else None
    if src_ty not in FOLDED_FLOAT_TYPES or not representable(value, src_ty):  # type: ignore[arg-type]
        return None
    if dst_ty.is_float():
        if dst_ty not in FOLDED_FLOAT_TYPES:
            return None
        result = round_float(value, dst_ty)  # type: ignore[arg-type]
        return result if representable(result, dst_ty) else None
    if math.isinf(value):  # type: ignore[arg-type]
        return None
    lo, hi = dst_ty.int_range()
    return min(max(math.trunc(value), lo), hi)  # type: ignore[arg-type]
