"""CVT between every pair of ISA types against Python ints and exact rational rounding.

int -> int wraps; int -> float and float -> float round once to nearest even
(values chosen on and around midpoints, where rounding twice would differ);
float -> int truncates and saturates, NaN giving 0.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest

from atlas_web.isa import Type
from atlas_web.isa.opcodes import OPCODE_TABLE

from .test_numeric_oracle import FORMATS, array_of, int_values, round_fraction, run, same_float, to_format, values_of

COVERS = [("CVT", ty) for row in OPCODE_TABLE if row.name == "CVT" for ty in sorted(row.types, key=lambda t: t.code)]
PAIRS = [pytest.param(src, dst, id=f"{src.name}-{dst.name}") for _, src in COVERS for _, dst in COVERS]


def expected(value, src: Type, dst: Type):
    if src.is_integer() and dst.is_integer():
        return dst.wrap(value)
    if src.is_integer():
        return round_fraction(Fraction(value), dst)
    if math.isnan(value):
        return math.nan if dst.is_float() else 0
    if dst.is_float():
        return value if math.isinf(value) else round_fraction(Fraction(value), dst, value)
    lo, hi = dst.int_range()
    if math.isinf(value):
        return hi if value > 0 else lo
    return min(max(math.trunc(value), lo), hi)


def midpoint_ints(ty: Type) -> list[int]:
    """Integers of ``ty`` on and beside the rounding midpoints of every float format."""
    lo, hi = ty.int_range()
    out = []
    for p, _, _ in FORMATS.values():
        spread = set(range(0, ty.bits - p, max(1, (ty.bits - p) // 6)))
        for k in sorted({0, 1, 11, 29, 40, 64 - p, ty.bits - p - 1} | spread):
            if not 0 <= k < ty.bits - p:
                continue
            for base in ((1 << p) + 1, (1 << p) + 3, (1 << (p + 1)) - 1):
                for delta in (-1, 0, 1):
                    for sign in (1, -1):
                        v = sign * ((base << k) + delta)
                        if lo <= v <= hi:
                            out.append(v)
    return out + [hi, lo, hi - 1]


def midpoint_floats(ty: Type) -> list[float]:
    """Floats of ``ty`` on and beside midpoints of narrower formats, and the saturation boundaries of integers."""
    candidates = []
    for p in (8, 11, 24):
        for extra in (0.0, 2.0 ** -40, -(2.0 ** -40), 2.0 ** -20, -(2.0 ** -20)):
            candidates += [1.0 + 2.0 ** -p + extra, 1.0 + 3 * 2.0 ** -p + extra, -(1.0 + 2.0 ** -p + extra)]
    for bits in (8, 16, 32, 64, 128, 1000):
        for edge in (2.0 ** (bits - 1), 2.0 ** bits):
            candidates += [edge, -edge, edge * (1 - 2.0 ** -53), edge * (1 + 2.0 ** -52), -edge - 1.0, edge - 0.5]
    candidates += [127.9, -128.9, 255.5, -0.9, 0.9, 65519.0, 65520.0, 3.4e38, 1e300, -1e300, 1e-300, 2.0 ** -149]
    out = []
    for c in candidates:
        v = to_format(c, ty)
        if v == c or math.isinf(v):
            out.append(v)
    return out


@functools.lru_cache(maxsize=None)
def source_values(ty: Type) -> list:
    if ty.is_integer():
        return values_of(ty, count=40, seed=31) + midpoint_ints(ty)
    return values_of(ty, count=200, seed=31) + midpoint_floats(ty)


@pytest.mark.parametrize("src, dst", PAIRS)
def test_cvt(src, dst):
    values = source_values(src)
    out = run("CVT", None, {"src": array_of(src, values)}, src_ty=src, dst_ty=dst)
    assert out.traps == ()
    got = out.value
    assert got.dtype == array_of(dst, [0]).dtype
    for value, result in zip(values, got.tolist()):
        want = expected(value, src, dst)
        if dst.is_float():
            assert same_float(result, want), (value, result, want)
        else:
            assert type(result) is int and result == want, (value, result, want)


def test_double_rounding_traps():
    # f64 -> bf16: through f32 this would tie and round to even (1.0); once, it rounds up
    v = 1.0 + 2.0 ** -8 + 2.0 ** -40
    out = run("CVT", None, {"src": array_of(Type.F64, [v])}, src_ty=Type.F64, dst_ty=Type.BF16)
    assert out.value.tolist() == [1.0 + 2.0 ** -7]
    out = run("CVT", None, {"src": array_of(Type.F64, [1.0 + 2.0 ** -11 + 2.0 ** -40])}, src_ty=Type.F64,
              dst_ty=Type.F16)
    assert out.value.tolist() == [1.0 + 2.0 ** -10]
    # u64 -> f32: 2**63 + 2**39 + 1 is just above a midpoint that an f64 step would round onto
    out = run("CVT", None, {"src": array_of(Type.U64, [2 ** 63 + 2 ** 39 + 1])}, src_ty=Type.U64, dst_ty=Type.F32)
    assert out.value.tolist() == [float(2 ** 63 + 2 ** 40)]
    big = (1 << 100) + (1 << 76) + 1  # I256 -> F32: just above the midpoint
    out = run("CVT", None, {"src": array_of(Type.I256, [big, -big, big - 1])}, src_ty=Type.I256, dst_ty=Type.F32)
    assert out.value.tolist() == [float(2 ** 100 + 2 ** 77), -float(2 ** 100 + 2 ** 77), 2.0 ** 100]


def test_saturation_and_nan():
    values = [math.nan, math.inf, -math.inf, 1e30, -1e30, -0.99, 2.0 ** 63, -(2.0 ** 63)]
    out = run("CVT", None, {"src": array_of(Type.F64, values)}, src_ty=Type.F64, dst_ty=Type.I64)
    lo, hi = Type.I64.int_range()
    assert out.value.tolist() == [0, hi, lo, hi, lo, 0, hi, lo]
    out = run("CVT", None, {"src": array_of(Type.F32, values)}, src_ty=Type.F32, dst_ty=Type.U4096)
    assert out.value.tolist() == [0, 2 ** 4096 - 1, 0, int(np.float32(1e30)), 0, 0, 2 ** 63, 0]


def test_extended_to_float_overflow():
    out = run("CVT", None, {"src": array_of(Type.U4096, [2 ** 4095, 2 ** 128 - 1])}, src_ty=Type.U4096,
              dst_ty=Type.F32)
    assert out.value.tolist() == [math.inf, math.inf]  # 2**128 - 1 rounds up past FLT_MAX
    out = run("CVT", None, {"src": array_of(Type.I128, [-(2 ** 127)])}, src_ty=Type.I128, dst_ty=Type.F64)
    assert out.value.tolist() == [-(2.0 ** 127)]


def test_int_widening_extends_by_source_signedness():
    out = run("CVT", None, {"src": array_of(Type.I8, [-1, 5])}, src_ty=Type.I8, dst_ty=Type.U4096)
    assert out.value.tolist() == [2 ** 4096 - 1, 5]
    out = run("CVT", None, {"src": array_of(Type.U8, [255])}, src_ty=Type.U8, dst_ty=Type.I64)
    assert out.value.tolist() == [255]
    assert int_values(Type.I8)  # the value sets are not empty
