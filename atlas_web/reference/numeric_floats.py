"""Float arithmetic (F16, BF16, F32, F64), vectorized, with the contract's rounding.

F16 and BF16 compute in f32 and round to their format after the
instruction; F32 and F64 compute in their own precision (NumPy's IEEE
operations, correctly rounded). Every function takes the instruction's type
and the operand arrays in the storage dtype and returns a new array in the
storage dtype. Floating-point exceptions are silent (IEEE default results).
"""

from __future__ import annotations

import numpy as np

from ..isa.enums import Condition
from ..isa.types import Type
from .numeric_formats import round_f32_to_bf16, to_compute

__all__ = ["BINARY", "UNARY", "TERNARY", "compare", "finish", "fmin", "fmax", "computed", "mad", "lerp"]


def finish(ty: Type, result: np.ndarray) -> np.ndarray:
    """A result computed in ``ty``'s compute dtype rounded to ``ty``'s storage (F16, BF16 rounded; else as is)."""
    if ty is Type.F16:
        with np.errstate(over="ignore"):
            return result.astype(np.float16)
    if ty is Type.BF16:
        return round_f32_to_bf16(result)
    return result


def computed(fn):
    """Wrap ``fn(*compute_arrays)`` into ``(ty, *arrays)``: widen F16, compute quietly, round to ``ty``."""
    def rule(ty: Type, *arrays: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return finish(ty, fn(*(to_compute(ty, a) for a in arrays)))
    rule.__name__ = getattr(fn, "__name__", "rule")
    rule.__doc__ = fn.__doc__
    return rule


def fmin(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Minimum with NaN propagating and -0 < +0."""
    r = np.minimum(a, b)
    zeros = (a == 0) & (b == 0)
    if zeros.any():
        r = np.where(zeros, np.where(np.signbit(a), a, b), r)
    return r


def fmax(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Maximum with NaN propagating and -0 < +0."""
    r = np.maximum(a, b)
    zeros = (a == 0) & (b == 0)
    if zeros.any():
        r = np.where(zeros, np.where(np.signbit(a), b, a), r)
    return r


def _clamp(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """min(max(x, lo), hi) with MIN/MAX's NaN and signed-zero rules."""
    return fmin(fmax(x, lo), hi)


def mad(a: np.ndarray, b: np.ndarray, c: np.ndarray, add=np.add, multiply=np.multiply) -> np.ndarray:
    """a*b rounded, then + c rounded (in the compute dtype); ``add``/``multiply``: the steps (the flush mode's
    read and write subnormals as zeros, numeric_flush)."""
    return add(multiply(a, b), c)


def lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray, add=np.add, multiply=np.multiply,
         subtract=np.subtract) -> np.ndarray:
    """a + t*(b - a), each of the three steps rounded (the steps as for ``mad``)."""
    return add(a, multiply(t, subtract(b, a)))


def _sign(x: np.ndarray) -> np.ndarray:
    """-1, +1, or x itself for ±0 and NaN (np.sign gives ±1, 0 or NaN; copysign restores -0)."""
    return np.copysign(np.sign(x), x)


def _rcp(x: np.ndarray) -> np.ndarray:
    return np.divide(np.ones_like(x), x)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    """1 / sqrt(x), the square root correctly rounded first."""
    return np.divide(np.ones_like(x), np.sqrt(x))


BINARY = {
    "ADD": computed(np.add), "SUB": computed(np.subtract), "MUL": computed(np.multiply),
    "DIV": computed(np.divide), "REM": computed(np.fmod), "MIN": computed(fmin), "MAX": computed(fmax),
}
UNARY = {
    "ABS": computed(np.abs), "NEG": computed(np.negative), "SIGN": computed(_sign),
    "RCP": computed(_rcp), "RSQRT": computed(_rsqrt),
    "FLOOR": computed(np.floor), "CEIL": computed(np.ceil), "ROUND": computed(np.rint), "TRUNC": computed(np.trunc),
}
TERNARY = {"MAD": computed(mad), "CLAMP": computed(_clamp), "LERP": computed(lerp)}


def _unordered(relation):
    def test(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.isnan(a) | np.isnan(b) | relation(a, b)
    return test


_CONDITIONS = {
    Condition.EQ: np.equal, Condition.NE: np.not_equal, Condition.LT: np.less, Condition.LE: np.less_equal,
    Condition.GT: np.greater, Condition.GE: np.greater_equal,
    Condition.LTU: _unordered(np.less), Condition.LEU: _unordered(np.less_equal),
    Condition.GTU: _unordered(np.greater), Condition.GEU: _unordered(np.greater_equal),
}


def compare(ty: Type, cond: Condition, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """SETcc on floats: EQ … GE ordered (NaN false, NE true), LTU … GEU unordered (NaN true)."""
    return _CONDITIONS[cond](a, b)
