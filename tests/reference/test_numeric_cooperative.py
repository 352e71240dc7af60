"""ParallelMap, ParallelMapBinary, ParallelReduce and the per-lane Reduce* folds, for every accepted type.

The element-wise oracles are the per-instruction oracles of the other numeric
test modules; reductions are checked against exact sums (Fractions),
index-order binary64 products and step-by-step folds computed here.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from atlas_web.errors import UnsupportedOperation
from atlas_web.isa import Type
from atlas_web.isa.enums import BinaryMapOperation, MapOperation, ReduceOperation
from atlas_web.isa.opcodes import OPCODE_TABLE
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES
from atlas_web.reference import numeric

from . import test_numeric_floats as floats
from . import test_numeric_integers as integers
from . import test_numeric_transcendentals as transcendentals
from .test_numeric_oracle import array_of, python_values, round_fraction, same_float, values_of

_LANE_REDUCE_ROWS = {"add": "ReduceAdd", "min": "ReduceMin", "max": "ReduceMax", "mul": "ReduceMul"}


def _accepted(op) -> list[Type]:
    return sorted(COOPERATIVE_OPERATION_TYPES[op], key=lambda t: t.code)


COVERS = (
    [(f"MAP:{op.name}", ty) for op in MapOperation for ty in _accepted(op)]
    + [(f"BINMAP:{op.name}", ty) for op in BinaryMapOperation for ty in _accepted(op)]
    + [(f"REDUCE:{op.name}", ty) for op in ReduceOperation for ty in _accepted(op)]
    + [(f"LANEREDUCE:{kind}", ty) for kind, name in _LANE_REDUCE_ROWS.items() for row in OPCODE_TABLE
       if row.name == name for ty in sorted(row.types, key=lambda t: t.code)]
)


def _covers(prefix: str) -> list:
    return [pytest.param(key.split(":")[1], ty, id=f"{key}-{ty.name}") for key, ty in COVERS if key.startswith(prefix)]


def _equal(ty: Type, got: list, want: list, inputs: list) -> None:
    for g, w, args in zip(got, want, inputs):
        if ty.is_float():
            assert same_float(g, w), (args, g, w)
        else:
            assert type(g) is int and g == w, (args, g, w)


# --- ParallelMap ------------------------------------------------------------------------------

_MAP_INSTRUCTION = {"Abs": "ABS", "Neg": "NEG", "Sqrt": "SQRT", "Exp": "EXP", "Log": "LOG", "Sin": "SIN",
                    "Cos": "COS", "Tan": "TAN", "Sigmoid": "SIGMOID", "Tanh": "TANH", "Gelu": "GELU",
                    "Swish": "SWISH"}


def _relu(ty: Type, x):
    if ty.is_float():
        return math.nan if math.isnan(x) else (x if x > 0 else 0.0)
    return x if x > 0 else 0


@pytest.mark.parametrize("op, ty", _covers("MAP:"))
def test_parallel_map(op, ty):
    xs = values_of(ty, count=150, seed=51)
    got = numeric.MAP_OPS[MapOperation[op]](ty, array_of(ty, xs))
    assert got.dtype == numeric.storage_dtype(ty) and got.shape == (len(xs),)
    values = python_values(got)
    if op == "Relu":
        _equal(ty, values, [_relu(ty, x) for x in xs], xs)
    elif ty.is_integer():
        oracle = integers.UNARY_ORACLES[_MAP_INSTRUCTION[op]]
        _equal(ty, values, [oracle(ty, x) for x in xs], xs)
    elif _MAP_INSTRUCTION[op] in ("ABS", "NEG"):
        _equal(ty, values, [floats.unary_oracle(_MAP_INSTRUCTION[op], ty, x) for x in xs], xs)
    else:
        for x, value in zip(xs, values):
            transcendentals.check(ty, x, value, _MAP_INSTRUCTION[op])


# --- ParallelMapBinary ------------------------------------------------------------------------


def _c_pow(x: float, y: float) -> float:
    odd_integer = math.isfinite(y) and y == math.floor(y) and int(y) % 2 == 1
    try:
        return math.pow(x, y)
    except ValueError:  # C: pole or domain error
        if x == 0:
            return math.copysign(math.inf, x) if odd_integer else math.inf
        return math.nan
    except OverflowError:
        return -math.inf if (x < 0 and odd_integer) else math.inf


def _c_atan2(y: float, x: float) -> float:
    return math.atan2(y, x)


def _within(ty: Type, want: float, got: float, ulps: int, args) -> None:
    if math.isnan(want) or math.isinf(want) or want == 0:
        assert same_float(got, transcendentals.chain(want, ty)), (args, got, want)
        return
    lo = transcendentals.chain(transcendentals._moved(want, -ulps), ty)
    hi = transcendentals.chain(transcendentals._moved(want, ulps), ty)
    assert lo <= got <= hi, (args, got, want)


@pytest.mark.parametrize("op, ty", _covers("BINMAP:"))
def test_parallel_map_binary(op, ty):
    if ty.is_integer():
        xs, ys = integers._pairs(ty)
    else:
        xs, ys = floats._pairs(ty)
    got = numeric.BINARY_MAP_OPS[BinaryMapOperation[op]](ty, array_of(ty, xs), array_of(ty, ys))
    assert got.dtype == numeric.storage_dtype(ty) and got.shape == (len(xs),)
    values = python_values(got)
    pairs = list(zip(xs, ys))
    if op in ("Pow", "Atan2"):
        fn = _c_pow if op == "Pow" else _c_atan2
        for (x, y), value in zip(pairs, values):
            _within(ty, fn(x, y), value, 2, (x, y))
    elif ty.is_integer():
        oracle = integers.BINARY_ORACLES[op.upper()]
        _equal(ty, values, [oracle(ty, x, y) for x, y in pairs], pairs)
    else:
        _equal(ty, values, [floats.binary_oracle(op.upper(), ty, x, y) for x, y in pairs], pairs)


def test_maps_reject_types_the_table_does_not_accept():
    with pytest.raises(UnsupportedOperation, match="Sqrt"):
        numeric.MAP_OPS[MapOperation.Sqrt](Type.I32, np.zeros(2, np.int32))
    with pytest.raises(UnsupportedOperation, match="Pow"):
        numeric.BINARY_MAP_OPS[BinaryMapOperation.Pow](Type.U8, np.zeros(2, np.uint8), np.zeros(2, np.uint8))
    with pytest.raises(UnsupportedOperation):
        numeric.parallel_reduce(ReduceOperation.Sum, Type.I128, np.zeros(2, dtype=object))


# --- ParallelReduce ---------------------------------------------------------------------------


def _identity(kind: str, ty: Type):
    if ty.is_float():
        return {"add": 0.0, "mul": 1.0, "min": math.inf, "max": -math.inf}[kind]
    lo, hi = ty.int_range()
    return {"add": 0, "mul": 1, "min": hi, "max": lo}[kind]


def _chain(x: float, ty: Type) -> float:
    return transcendentals.chain(x, ty)


def reduce_oracle(op: str, ty: Type, xs: list):
    if not xs:
        return _identity({"Sum": "add", "Product": "mul", "Min": "min", "Max": "max"}[op], ty)
    if op in ("Min", "Max"):
        pick = floats.ieee_min if op == "Min" else floats.ieee_max
        acc = xs[0]
        for x in xs[1:]:
            acc = pick(acc, x) if ty.is_float() else (min(acc, x) if op == "Min" else max(acc, x))
        return acc
    if ty.is_integer():
        total = sum(xs) if op == "Sum" else math.prod(xs)
        return ty.wrap(total)
    if op == "Product":
        acc = 1.0
        for x in xs:
            acc = acc * x  # Python floats multiply in binary64, in index order
        return _chain(acc, ty)
    if any(math.isnan(x) for x in xs) or (math.inf in xs and -math.inf in xs):
        return math.nan
    if any(math.isinf(x) for x in xs):
        return next(x for x in xs if math.isinf(x))
    exact = sum((Fraction(x) for x in xs), Fraction(0))
    all_negative_zero = all(x == 0 and math.copysign(1, x) < 0 for x in xs)
    return _chain(round_fraction(exact, Type.F64, -1.0 if all_negative_zero else 1.0), ty)


def _reduce_inputs(ty: Type) -> list[list]:
    base = values_of(ty, count=60, seed=61)
    finite = [x for x in base if not (ty.is_float() and not math.isfinite(x))]
    sets = [[], base[:1], finite, finite[::-1], base, [-0.0, -0.0] if ty.is_float() else [0, 0]]
    if ty.is_float():
        sets += [[-0.0, 0.0], [1.0, 2.0 ** -60, -1.0], [math.inf, 1.0], [math.nan, 1.0], [0.5] * 50]
        if ty is Type.F64:
            sets.append([1e308, 1e308, -1e308, 1.0])  # the binary64 partial sums overflow, the exact sum does not
    return sets


@pytest.mark.parametrize("op, ty", _covers("REDUCE:"))
def test_parallel_reduce(op, ty):
    for xs in _reduce_inputs(ty):
        got = numeric.parallel_reduce(ReduceOperation[op], ty, array_of(ty, xs))
        assert got.dtype == numeric.storage_dtype(ty) and got.shape == (1,)
        _equal(ty, python_values(got), [reduce_oracle(op, ty, xs)], [xs])


def test_parallel_sum_is_exact():
    xs = [1e308, 1e308, -1e308, 1.0, 2.0 ** -80]
    assert numeric.parallel_reduce(ReduceOperation.Sum, Type.F64, array_of(Type.F64, xs)).tolist() == [1e308 + 1.0]
    xs = [1.0, 2.0 ** -24, 2.0 ** -24]  # sequential f32 addition would lose both small terms
    assert numeric.parallel_reduce(ReduceOperation.Sum, Type.F32, array_of(Type.F32, xs)).tolist() == [
        1.0 + 2.0 ** -23]


# --- per-lane Reduce* -------------------------------------------------------------------------


def fold_oracle(kind: str, ty: Type, row: list):
    if not row:
        return _identity(kind, ty)
    acc = row[0]
    for x in row[1:]:
        if ty.is_integer():
            acc = ty.wrap({"add": acc + x, "mul": acc * x, "min": min(acc, x), "max": max(acc, x)}[kind])
        else:
            acc = floats.binary_oracle({"add": "ADD", "mul": "MUL", "min": "MIN", "max": "MAX"}[kind], ty, acc, x)
    return acc


@pytest.mark.parametrize("kind, ty", _covers("LANEREDUCE:"))
def test_lane_reduce(kind, ty):
    values = values_of(ty, count=120, seed=71)
    for n, count in ((6, 13), (3, 0), (4, 1), (1, 40)):
        rows = [[values[(i * 7 + j * 3) % len(values)] for j in range(count)] for i in range(n)]
        flat = [v for row in rows for v in row]
        matrix = array_of(ty, flat).reshape(n, count) if count else numeric.zeros(ty, 0).reshape(n, 0)
        got = numeric.lane_reduce(kind, ty, matrix)
        assert got.dtype == numeric.storage_dtype(ty) and got.shape == (n,)
        _equal(ty, python_values(got), [fold_oracle(kind, ty, row) for row in rows], rows)


def test_lane_reduce_rounds_every_step():
    ty = Type.F16
    row = array_of(ty, [2048.0, 1.0, 1.0, 1.0, 1.0]).reshape(1, 5)
    assert numeric.lane_reduce("add", ty, row).tolist() == [2048.0]  # each +1 rounds back to 2048 (ties to even)
    ty = Type.BF16
    row = array_of(ty, [256.0, 1.0, 1.0]).reshape(1, 3)
    assert numeric.lane_reduce("add", ty, row).tolist() == [256.0]
    assert numeric.lane_reduce("add", Type.F32, array_of(Type.F32, [-0.0]).reshape(1, 1)).tolist() == [-0.0]
    with pytest.raises(UnsupportedOperation):
        numeric.lane_reduce("sum", Type.F32, np.zeros((1, 1), np.float32))
