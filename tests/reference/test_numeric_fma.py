"""MAD (rounded twice) and FMA/FMS (rounded once) on every float type, against exact rationals.

Besides special values and random bit patterns, the inputs include products
built so that a*b + c lands exactly on, or within a hair of, a rounding
midpoint: where a fused result differs from a doubly rounded one.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from atlas_web.isa import Type
from atlas_web.isa.opcodes import FLOATS, OPCODE_TABLE

from .test_numeric_floats import compute_type, finish, ieee_binary
from .test_numeric_oracle import array_of, float_values, random_floats, round_fraction, run, same_float, to_format

COVERS = [(row.name, ty) for row in OPCODE_TABLE if row.name in ("MAD", "FMA", "FMS")
          for ty in sorted(row.types & FLOATS, key=lambda t: t.code)]


def fused(ty: Type, a: float, b: float, c: float) -> float:
    """a*b + c rounded once to ``ty`` (IEEE fusedMultiplyAdd)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        with np.errstate(all="ignore"):
            return float(np.float64(a) * np.float64(b) + np.float64(c))
    if not math.isfinite(c):
        return c
    product = Fraction(a) * Fraction(b)
    if product == 0:
        zero_sign = math.copysign(1.0, a) * math.copysign(1.0, b)
        if c == 0:
            both_negative = zero_sign < 0 and math.copysign(1.0, c) < 0
            return -0.0 if both_negative else 0.0
        return c
    return round_fraction(product + Fraction(c), ty, 1.0)


def oracle(name: str, ty: Type, a: float, b: float, c: float) -> float:
    ct = compute_type(ty)
    if name == "MAD":
        return finish(ty, ieee_binary("ADD", ct, ieee_binary("MUL", ct, a, b), c))
    if name == "FMS":
        c = -c
    return finish(ty, fused(ct, a, b, c))


def near_midpoints(ty: Type, count: int, seed: int) -> list[tuple[float, float, float]]:
    """Triples whose exact a*b + c is on or next to a midpoint of ``ty``'s compute type."""
    ct = compute_type(ty)
    rng = np.random.default_rng(seed)
    p = {Type.F32: 24, Type.F64: 53}[ct]
    bits = {Type.F16: 11, Type.BF16: 8}.get(ty, p)
    triples = []
    while len(triples) < count:
        a = to_format(float(rng.integers(2 ** (bits - 1), 2 ** bits)) * 2.0 ** int(rng.integers(-bits - 4, 4)), ty)
        b = to_format(float(rng.integers(2 ** (bits - 1), 2 ** bits)) * 2.0 ** int(rng.integers(-bits - 4, 4)), ty)
        if rng.random() < 0.5:
            a = -a
        product = Fraction(a) * Fraction(b)
        nearest = round_fraction(product, ct)
        half_ulp = Fraction(math.ulp(nearest)) / 2 if ct is Type.F64 else \
            Fraction(2) ** (math.frexp(abs(nearest))[1] - 1 - p)
        target = Fraction(nearest) + half_ulp * int(rng.choice([-3, -1, 1, 3]))
        c = to_format(float(target - product), ty)
        if math.isfinite(c):
            nudge = int(rng.integers(-1, 2))
            c = float(np.nextafter(c, math.inf * nudge)) if nudge else c
            triples.append((a, b, to_format(c, ty)))
    return triples


def _triples(ty: Type) -> list[tuple[float, float, float]]:
    specials = float_values(ty, count=0)[:14]
    triples = list(itertools.product(specials, specials, specials))
    triples += list(zip(random_floats(ty, 400, 21), random_floats(ty, 400, 22), random_floats(ty, 400, 23)))
    triples += near_midpoints(ty, 400, 24)
    return triples


@pytest.mark.parametrize("name, ty", [pytest.param(n, t, id=f"{n}-{t.name}") for n, t in COVERS])
def test_multiply_add(name, ty):
    triples = _triples(ty)
    columns = [array_of(ty, list(c)) for c in zip(*triples)]
    out = run(name, ty, dict(zip(("a", "b", "c"), columns)))
    assert out.traps == () and out.value.dtype == columns[0].dtype
    for got, args in zip(out.value.tolist(), triples):
        want = oracle(name, ty, *args)
        assert same_float(got, want), (name, ty, args, got, want)


def test_fused_differs_from_double_rounding():
    a = 1.0 + 2.0 ** -30
    ty = Type.F64
    args = {"a": array_of(ty, [a]), "b": array_of(ty, [a]), "c": array_of(ty, [-(1.0 + 2.0 ** -29)])}
    assert run("FMA", ty, args).value.tolist() == [2.0 ** -60]
    assert run("MAD", ty, args).value.tolist() == [0.0]


def test_fma_f64_extreme_exponents_and_specials():
    ty = Type.F64
    big, tiny = 2.0 ** 1000, 2.0 ** -1000
    cases = [(big, big, -math.inf), (big, 4.0, -big), (tiny, tiny, 2.0 ** -1074), (tiny, -tiny, 0.0),
             (0.0, -5.0, -0.0), (math.inf, 0.0, 1.0), (2.0 ** 600, 2.0 ** 500, -(2.0 ** 1023)),
             (1.0 + 2.0 ** -52, 2.0 ** -1022, -(2.0 ** -1022))]
    columns = [array_of(ty, list(c)) for c in zip(*cases)]
    got = run("FMA", ty, dict(zip(("a", "b", "c"), columns))).value.tolist()
    for value, args in zip(got, cases):
        assert same_float(value, fused(ty, *args)), (args, value)
    assert got[0] == -math.inf and got[1] == 3 * big and got[3] == -(2.0 ** -2000) * 0 and math.isnan(got[5])
