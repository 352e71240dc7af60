"""Element-wise maps and reductions: ParallelMap, ParallelMapBinary, ParallelReduce and the per-lane Reduce*.

The maps apply the same typed functions as the per-lane instructions.
``parallel_reduce`` sums floats exactly (math.fsum, the correctly rounded
binary64 sum) and rounds once to the type, multiplies in binary64 in index
order, wraps integers and takes exact minima/maxima. ``lane_reduce`` folds
each lane's row in index order from its first value, rounding each step in
the type. Every function returns a new array in the type's storage dtype;
types the opcode table does not accept raise UnsupportedOperation.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..errors import UnsupportedOperation
from ..isa.enums import BinaryMapOperation, MapOperation, ReduceOperation
from ..isa.opcodes import SCALARS
from ..isa.operations import COOPERATIVE_OPERATION_TYPES, ELEMENT_FUNCTIONS, lane_instruction
from ..isa.types import Type
from .numeric_floats import computed, fmax
from .numeric_formats import round_to, storage_dtype
from .numeric_lane_rules import typed_op
from .numeric_transcendentals import BINARY as TRANSCENDENTAL_BINARY

__all__ = ["MAP_OPS", "BINARY_MAP_OPS", "parallel_reduce", "lane_reduce", "fold_in_order"]


def _checked(operation, fn):
    accepted = COOPERATIVE_OPERATION_TYPES[operation]

    def rule(ty: Type, *arrays: np.ndarray) -> np.ndarray:
        if ty not in accepted:
            raise UnsupportedOperation(f"{operation.name}", ty, "cpu", "the operation does not accept this type")
        return fn(ty, *arrays)

    rule.__name__ = f"map_{operation.name.lower()}"
    return rule


def _instruction(name: str):
    return lambda ty, *arrays: typed_op(name, ty)(ty, *arrays)


_float_relu = computed(lambda x: fmax(x, np.zeros_like(x)))


def _relu(ty: Type, x: np.ndarray) -> np.ndarray:
    """max(x, 0): NaN propagates, -0 gives +0; integers: the larger of x and 0."""
    if ty.is_float():
        return _float_relu(ty, x)
    return np.maximum(x, np.zeros_like(x))


#: the lane functions of operations that no instruction computes (atlas_web.isa.operations)
_OWN_FUNCTIONS = {"RELU": _relu, "POW": TRANSCENDENTAL_BINARY["POW"], "ATAN2": TRANSCENDENTAL_BINARY["ATAN2"]}


def _element_function(op):
    """The lane function of ``op``: its own, or the rule of the instruction with its meaning."""
    name = ELEMENT_FUNCTIONS[op]
    return _OWN_FUNCTIONS[name] if lane_instruction(op) is None else _instruction(name)


#: ParallelMap: operation -> (ty, values) -> values
MAP_OPS = {op: _checked(op, _element_function(op)) for op in MapOperation}
#: ParallelMapBinary: operation -> (ty, a, b) -> values
BINARY_MAP_OPS = {op: _checked(op, _element_function(op)) for op in BinaryMapOperation}


def _identity(op_kind: str, ty: Type):
    if ty.is_float():
        return {"add": 0.0, "mul": 1.0, "min": math.inf, "max": -math.inf}[op_kind]
    lo, hi = ty.int_range()
    return {"add": 0, "mul": 1, "min": hi, "max": lo}[op_kind]


def _exact_extreme(kind: str, values: np.ndarray, axis: int | None) -> np.ndarray:
    """Float min/max along ``axis``: NaN if any NaN, -0 < +0."""
    with np.errstate(all="ignore"):
        result = np.min(values, axis=axis) if kind == "min" else np.max(values, axis=axis)
        zero = values == 0
        if kind == "min":
            negative_zero = np.any(zero & np.signbit(values), axis=axis)
            return np.where((result == 0) & negative_zero, np.negative(np.abs(result)), result)
        positive_zero = np.any(zero & ~np.signbit(values), axis=axis)
        return np.where((result == 0) & positive_zero, np.abs(result), result)


def _exact_sum(values: np.ndarray) -> float:
    """The sum of f64 values correctly rounded to f64; with infinities or NaN among them the contract's
    result (docs/semantics.md): NaN for a NaN or both infinities, else that infinity (a plain sum could
    overflow to the other infinity first and give NaN)."""
    if not np.isfinite(values).all():
        infinities = {math.copysign(math.inf, v) for v in values[np.isinf(values)].tolist()}
        return math.nan if np.isnan(values).any() or len(infinities) == 2 else infinities.pop()
    if not values.any():  # only zeros: IEEE gives -0 when every term is -0, in any order
        return -0.0 if np.signbit(values).all() else 0.0
    try:
        return math.fsum(values.tolist())
    except OverflowError:  # an intermediate overflowed: the exact sum decides
        exact = sum((Fraction(v) for v in values.tolist()), Fraction(0))
        try:
            return float(exact)
        except OverflowError:
            return math.inf if exact > 0 else -math.inf




def parallel_reduce(op: ReduceOperation, ty: Type, values: np.ndarray) -> np.ndarray:
    """ParallelReduce of ``values`` (of ``ty``) as a 1-element array of ``ty``.

    Floats: Sum exact then rounded once (f64 -> f32 -> format), Product in
    binary64 in index order with no partial over- or underflowing (``_scaled_product``) then rounded
    once, Min/Max exact (NaN
    propagates). Integers wrap. An empty input gives the identity. Raises
    UnsupportedOperation for a type ParallelReduce does not accept.
    """
    if ty not in COOPERATIVE_OPERATION_TYPES[op]:
        raise UnsupportedOperation(op.name, ty, "cpu", "ParallelReduce does not accept this type")
    kind = ELEMENT_FUNCTIONS[op].lower()  # the instruction it folds with: add, mul, min, max
    dtype = storage_dtype(ty)
    values = np.asarray(values)
    if len(values) == 0:
        return round_to(ty, np.array([_identity(kind, ty)])) if ty.is_float() else np.array(
            [_identity(kind, ty)], dtype=dtype)
    if not ty.is_float():
        with np.errstate(all="ignore"):
            reducer = {"add": np.add.reduce, "mul": np.multiply.reduce, "min": np.minimum.reduce,
                       "max": np.maximum.reduce}[kind]
            return np.array([reducer(values, dtype=dtype)], dtype=dtype)
    wide = values.astype(np.float64)
    if kind in ("min", "max"):
        return np.array([_exact_extreme(kind, values, None)], dtype=dtype)
    with np.errstate(all="ignore"):
        total = _exact_sum(wide) if kind == "add" else _scaled_product(wide)
    return round_to(ty, np.array([total], dtype=np.float64))


#: a float product multiplies mantissas in runs this long (0.5**1000 is still a normal binary64)
_PRODUCT_RUN = 1000


def _scaled_product(values: np.ndarray) -> float:
    """The product of ``values`` (binary64) in index order, with no partial over- or underflowing: the
    mantissas of frexp multiply in binary64 (each step rounded, as a plain product in the normal range
    would be: scaling by powers of two is exact) and the exponents add as integers; one ldexp at the end
    rounds (to a subnormal, zero or infinity where the product is). A NaN among the values, or a zero
    with an infinity, gives NaN; otherwise an infinity gives an infinity, a zero a zero, signed by the
    product of the signs."""
    if np.isnan(values).any():
        return math.nan
    zero, infinite = (values == 0).any(), np.isinf(values).any()
    negative = bool(np.signbit(values).sum() % 2)
    if zero and infinite:
        return math.nan
    if zero or infinite:
        return math.copysign(math.inf if infinite else 0.0, -1.0 if negative else 1.0)
    mantissas, exponents = np.frexp(values)
    m, e = 1.0, int(exponents.sum(dtype=np.int64))
    for start in range(0, len(mantissas), _PRODUCT_RUN):
        run = mantissas[start:start + _PRODUCT_RUN]
        m, shift = math.frexp(float(np.multiply.accumulate(np.concatenate(([m], run)))[-1]))  # in index order
        e += shift
    if e > 1024:  # m is in [0.5, 1): m * 2**1024 is still finite
        return math.copysign(math.inf, m)
    return math.ldexp(m, max(e, -1200))


def lane_reduce(kind: str, ty: Type, values: np.ndarray) -> np.ndarray:
    """Per-lane ReduceAdd/Min/Max/Mul: fold each row of ``values`` (n, count) in index order.

    Each step is rounded in the type (F16/BF16: computed in f32, rounded to
    the format); integers wrap; min/max follow MIN/MAX (NaN propagates, -0 <
    +0). ``count = 0`` gives the identity (0, +inf/MAX, -inf/MIN, 1). Raises
    UnsupportedOperation for a type outside the scalars or an unknown kind.
    """
    if ty not in SCALARS or kind not in ("add", "min", "max", "mul"):
        raise UnsupportedOperation(f"Reduce{kind.capitalize()}", ty, "cpu", "per-lane reductions take scalar types")
    dtype = storage_dtype(ty)
    values = np.asarray(values, dtype=dtype)
    n, count = values.shape
    if count == 0:
        return np.full(n, _identity(kind, ty), dtype=dtype)
    if kind in ("min", "max"):
        if ty.is_float():
            return _exact_extreme(kind, values, 1).astype(dtype)
        return (np.min if kind == "min" else np.max)(values, axis=1)
    ufunc = np.add if kind == "add" else np.multiply
    if ty is not Type.BF16:
        # accumulate is strictly sequential; F16 steps are computed in f32 and rounded, as NumPy's half does
        with np.errstate(all="ignore"):
            return ufunc.accumulate(values, axis=1, dtype=dtype)[:, -1].copy()
    return fold_in_order(typed_op("ADD" if kind == "add" else "MUL", ty), ty, values)


def fold_in_order(step, ty: Type, values: np.ndarray) -> np.ndarray:
    """Each row of ``values`` (n, count >= 1) folded in index order by ``step(ty, acc, column)``: the first
    column as it is (read, not computed), then one step per further column."""
    acc = values[:, 0].copy()
    for i in range(1, values.shape[1]):
        acc = step(ty, acc, values[:, i])
    return acc
