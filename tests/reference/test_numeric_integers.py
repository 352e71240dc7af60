"""Integer lane rules (I8 … U64 and I128 … U4096) against Python-int oracles, edge values included."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import numpy as np
import pytest

from atlas_web.errors import TrapCode
from atlas_web.isa import Type
from atlas_web.isa.enums import Condition
from atlas_web.isa.opcodes import EXTENDED, INTS, OPCODE_TABLE

from .test_numeric_oracle import array_of, int_values, run, trap_of


def _mask(ty: Type) -> int:
    return (1 << ty.bits) - 1


def _trunc_div(a: int, b: int) -> int:
    return int(Fraction(a, b))  # int() of a Fraction truncates toward zero


def _arith_shift_right(ty: Type, a: int, s: int) -> int:
    if ty.is_signed():
        return a // (1 << s)  # floor division by 2**s is the arithmetic shift
    return (a & _mask(ty)) >> s


BINARY_ORACLES = {
    "ADD": lambda ty, a, b: ty.wrap(a + b),
    "SUB": lambda ty, a, b: ty.wrap(a - b),
    "MUL": lambda ty, a, b: ty.wrap(a * b),
    "MIN": lambda ty, a, b: a if a <= b else b,
    "MAX": lambda ty, a, b: a if a >= b else b,
    "AND": lambda ty, a, b: ty.wrap((a & _mask(ty)) & (b & _mask(ty))),
    "OR": lambda ty, a, b: ty.wrap((a & _mask(ty)) | (b & _mask(ty))),
    "XOR": lambda ty, a, b: ty.wrap((a & _mask(ty)) ^ (b & _mask(ty))),
}
UNARY_ORACLES = {
    "ABS": lambda ty, a: ty.wrap(-a if a < 0 else a),
    "NEG": lambda ty, a: ty.wrap(0 - a),
    "SIGN": lambda ty, a: 1 if a > 0 else (-1 if a < 0 else 0),
    "NOT": lambda ty, a: ty.wrap(_mask(ty) - (a & _mask(ty))),
}
TERNARY_ORACLES = {
    "MAD": (("a", "b", "c"), lambda ty, a, b, c: ty.wrap(a * b + c)),
    "CLAMP": (("src", "min", "max"), lambda ty, x, lo, hi: min(max(x, lo), hi)),
}
SHIFT_ORACLES = {
    "SHL": lambda ty, a, s: ty.wrap((a & _mask(ty)) << (s % ty.bits)),
    "SHR": lambda ty, a, s: ty.wrap(_arith_shift_right(ty, a, s % ty.bits)),
}
TESTED = set(BINARY_ORACLES) | set(UNARY_ORACLES) | set(TERNARY_ORACLES) | set(SHIFT_ORACLES) | {
    "DIV", "REM", "SETcc"}

COVERS = [(row.name, ty) for row in OPCODE_TABLE if row.name in TESTED
          for ty in sorted(row.types & (INTS | EXTENDED), key=lambda t: t.code)]


def _covers(names) -> list:
    return [pytest.param(name, ty, id=f"{name}-{ty.name}") for name, ty in COVERS if name in names]


def _pairs(ty: Type) -> tuple[list[int], list[int]]:
    edges = int_values(ty, count=6, seed=2)
    pairs = list(itertools.product(edges, edges))
    values = int_values(ty, count=80, seed=3)
    rng = random.Random(ty.code)
    pairs += [(rng.choice(values), rng.choice(values)) for _ in range(200)]
    return [a for a, _ in pairs], [b for _, b in pairs]


def _as_list(values: np.ndarray) -> list[int]:
    return [int(v) for v in values.tolist()]


def _check_dtype(ty: Type, values: np.ndarray) -> None:
    if ty.is_extended():
        assert values.dtype == object and all(type(v) is int for v in values.tolist())
        lo, hi = ty.int_range()
        assert all(lo <= v <= hi for v in values.tolist())
    else:
        assert values.dtype == array_of(ty, [0]).dtype


@pytest.mark.parametrize("name, ty", _covers(BINARY_ORACLES))
def test_binary(name, ty):
    xs, ys = _pairs(ty)
    out = run(name, ty, {"lhs": array_of(ty, xs), "rhs": array_of(ty, ys)})
    assert out.traps == ()
    _check_dtype(ty, out.value)
    oracle = BINARY_ORACLES[name]
    assert _as_list(out.value) == [oracle(ty, a, b) for a, b in zip(xs, ys)]


@pytest.mark.parametrize("name, ty", _covers(UNARY_ORACLES))
def test_unary(name, ty):
    xs = int_values(ty, count=120, seed=4)
    out = run(name, ty, {"src": array_of(ty, xs)})
    _check_dtype(ty, out.value)
    oracle = UNARY_ORACLES[name]
    assert _as_list(out.value) == [oracle(ty, a) for a in xs]


def test_abs_neg_wrap_at_min():
    for ty in (Type.I8, Type.I64, Type.I256):
        lo = ty.int_range()[0]
        assert _as_list(run("ABS", ty, {"src": array_of(ty, [lo])}).value) == [lo]
        assert _as_list(run("NEG", ty, {"src": array_of(ty, [lo])}).value) == [lo]
    assert _as_list(run("NEG", Type.U8, {"src": array_of(Type.U8, [1, 0])}).value) == [255, 0]
    assert _as_list(run("ABS", Type.U128, {"src": array_of(Type.U128, [2 ** 128 - 1])}).value) == [2 ** 128 - 1]


@pytest.mark.parametrize("name, ty", _covers(TERNARY_ORACLES))
def test_ternary(name, ty):
    fields, oracle = TERNARY_ORACLES[name]
    values = int_values(ty, count=60, seed=5)
    rng = random.Random(7 + ty.code)
    triples = [tuple(rng.choice(values) for _ in range(3)) for _ in range(300)]
    if name == "CLAMP":
        triples += [(5, 10, 3), (ty.int_range()[0], 0, 1), (ty.int_range()[1], 0, 1)]  # min > max: max wins
    columns = list(zip(*triples))
    out = run(name, ty, {f: array_of(ty, list(c)) for f, c in zip(fields, columns)})
    _check_dtype(ty, out.value)
    assert _as_list(out.value) == [oracle(ty, *t) for t in triples]


@pytest.mark.parametrize("amount_ty", [Type.I32, Type.U32])
@pytest.mark.parametrize("name, ty", _covers(SHIFT_ORACLES))
def test_shift(name, ty, amount_ty):
    values = int_values(ty, count=20, seed=6)
    amounts = [0, 1, 2, ty.bits - 1, ty.bits, ty.bits + 1, 2 * ty.bits + 3, 31, 32, 33, 63, 64, 65, 127, 4095,
               4096, 4097]
    amounts += [amount_ty.wrap(a) for a in (-1, -2, -ty.bits, -(ty.bits + 1), 2 ** 31, 2 ** 32 - 1)]
    amounts = [amount_ty.wrap(a) for a in amounts]
    pairs = list(itertools.product(values, amounts))
    out = run(name, ty, {"src": array_of(ty, [p[0] for p in pairs]),
                         "amount": array_of(amount_ty, [p[1] for p in pairs])})
    _check_dtype(ty, out.value)
    oracle = SHIFT_ORACLES[name]
    # the amount is a 32-bit integer read unsigned
    assert _as_list(out.value) == [oracle(ty, a, s & 0xFFFFFFFF) for a, s in pairs]


@pytest.mark.parametrize("name, ty", _covers({"DIV", "REM"}))
def test_division(name, ty):
    xs, ys = _pairs(ty)
    lo = ty.int_range()[0]
    if ty.is_signed():
        xs += [lo, lo, -7, 7, -7, 7, lo + 1]
        ys += [-1, 1, 2, -2, -2, 0, -1]
    out = run(name, ty, {"lhs": array_of(ty, xs), "rhs": array_of(ty, ys)})
    _check_dtype(ty, out.value)
    got = _as_list(out.value)
    for lane, (a, b) in enumerate(zip(xs, ys)):
        if b == 0:
            assert trap_of(out, lane) is TrapCode.DIVISION_BY_ZERO, (a, b)
        elif ty.is_signed() and a == lo and b == -1:
            assert trap_of(out, lane) is TrapCode.INTEGER_OVERFLOW, (a, b)
        else:
            assert trap_of(out, lane) is None
            q = _trunc_div(a, b)
            assert got[lane] == (q if name == "DIV" else a - b * q), (a, b)


def test_division_signs():
    ty = Type.I32
    xs, ys = [7, -7, 7, -7], [2, 2, -2, -2]
    assert _as_list(run("DIV", ty, {"lhs": array_of(ty, xs), "rhs": array_of(ty, ys)}).value) == [3, -3, -3, 3]
    assert _as_list(run("REM", ty, {"lhs": array_of(ty, xs), "rhs": array_of(ty, ys)}).value) == [1, -1, 1, -1]
    out = run("DIV", Type.I8, {"lhs": array_of(Type.I8, [-128, 5]), "rhs": array_of(Type.I8, [-1, 0])})
    assert [trap_of(out, 0), trap_of(out, 1)] == [TrapCode.INTEGER_OVERFLOW, TrapCode.DIVISION_BY_ZERO]


def _relation(cond: Condition, ty: Type, a: int, b: int) -> bool:
    if cond in (Condition.LTU, Condition.LEU, Condition.GTU, Condition.GEU):
        a, b = a % (1 << ty.bits), b % (1 << ty.bits)
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
            "ltu": a < b, "leu": a <= b, "gtu": a > b, "geu": a >= b}[cond.text]


@pytest.mark.parametrize("name, ty", _covers({"SETcc"}))
def test_setcc(name, ty):
    xs, ys = _pairs(ty)
    for cond in Condition:
        out = run("SETcc", ty, {"lhs": array_of(ty, xs), "rhs": array_of(ty, ys)}, cond=cond)
        assert out.value.dtype == np.bool_
        assert out.value.tolist() == [_relation(cond, ty, a, b) for a, b in zip(xs, ys)], cond


def test_unsigned_conditions_read_bit_patterns():
    out = run("SETcc", Type.I8, {"lhs": array_of(Type.I8, [-1]), "rhs": array_of(Type.I8, [1])}, cond=Condition.GTU)
    assert out.value.tolist() == [True]
    out = run("SETcc", Type.I8, {"lhs": array_of(Type.I8, [-1]), "rhs": array_of(Type.I8, [1])}, cond=Condition.GT)
    assert out.value.tolist() == [False]


def test_huge_extended_values():
    ty = Type.U4096
    big = 2 ** 4096 - 1
    out = run("ADD", ty, {"lhs": array_of(ty, [big, big]), "rhs": array_of(ty, [1, big])})
    assert _as_list(out.value) == [0, big - 1]
    ty = Type.I4096
    lo, hi = ty.int_range()
    out = run("MUL", ty, {"lhs": array_of(ty, [hi, lo]), "rhs": array_of(ty, [hi, -1])})
    assert _as_list(out.value) == [1, lo]
