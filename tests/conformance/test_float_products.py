"""ParallelReduce Product of floats at the edges of the range, on every backend (the reference included),
against the contract in docs/semantics.md: a NaN among the values, or a zero with an infinity, gives NaN;
otherwise an infinity gives an infinity and a zero a zero (signed by the product of the signs); otherwise
the result is the rounding of a number within ``count * eps`` of the exact product, however the partial
products over- or underflow (issue 16: webgpu gave NaN for ``[1e30, 1e30, 1e-30, 1e-30]``); and the per-lane
ReduceMul (index order, each step rounded) on the same values against the reference's bits."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from atlas_web import UnsupportedOperation
from atlas_web.isa import ParallelReduce, ReduceMul, ReduceOperation, Type

from .harness import FLUSHED_TYPES, flushes_subnormals
from .test_float_sums import BACKENDS, FORMATS, INF, NAN, reduce_on
from .values import decode, encode

#: type -> its smallest normal (products whose exact value lies below it are compared loosely: devices may
#: flush subnormal results, docs/backends.md)
TINY = {Type.F16: 2.0 ** -14, Type.BF16: 2.0 ** -126, Type.F32: 2.0 ** -126, Type.F64: 2.0 ** -1022}


def _values(ty: Type) -> dict[str, list[float]]:
    big, _ = FORMATS[ty]
    root = 2.0 ** (math.frexp(big)[1] // 2 + 1)  # root * root overflows
    return {
        "issue-16-four": [root, root, 1 / root, 1 / root],
        "up-then-down": [root] * 6 + [1 / root] * 6 + [3.0],
        "down-then-up": [1 / root] * 9 + [root] * 9 + [-0.5],
        "interleaved-301": [root if k % 2 else 1 / root for k in range(300)] + [1.25],
        "beyond-the-range": [root] * 3,
        "below-the-range": [1 / root] * 5,
        "zero-among-large": [root, root, 0.0, -root],
        "negative-zero": [-2.0, 0.0, 3.0],
        "zero-and-infinity": [root, 0.0, INF],
        "infinity-among-small": [1 / root, 1 / root, -INF, 2.0],
        "nan": [1.0, NAN, root],
    }


def _check(ty: Type, values: list[float], got: float) -> None:
    big, eps = FORMATS[ty]
    if any(math.isnan(v) for v in values) or (0.0 in values and any(math.isinf(v) for v in values)):
        assert math.isnan(got), f"want NaN, got {got!r}"
        return
    negative = sum(math.copysign(1, v) < 0 for v in values) % 2 == 1
    if any(math.isinf(v) for v in values) or 0.0 in values:
        want = (INF if any(math.isinf(v) for v in values) else 0.0) * (-1 if negative else 1)
        assert got == want and math.copysign(1, got) == math.copysign(1, want), f"want {want!r}, got {got!r}"
        return
    assert not math.isnan(got), "a product of finite nonzero values gave NaN"
    exact = math.prod((Fraction(v) for v in values), start=Fraction(1))
    bound = len(values) * Fraction(eps) * abs(exact)
    if math.isinf(got):
        assert abs(exact) + bound > big and (got > 0) == (exact > 0), f"{got!r} for an exact product of {exact}"
        return
    if abs(exact) < TINY[ty] * 2:
        assert abs(Fraction(got)) <= TINY[ty] * 2 and (got == 0 or (got > 0) == (exact > 0)), got
        return
    assert abs(Fraction(got) - exact) <= bound + Fraction(math.ulp(got)), f"{got!r} vs exact {float(exact)!r}"


def _product_on(backend, ty: Type, values: list[float], *, per_lane: bool = False) -> float:
    """The ParallelReduce Product of ``values`` (per_lane: one lane's ReduceMul) on ``backend``."""
    return reduce_on(backend, ty, values, lambda fields: ReduceMul(**fields) if per_lane else
                     ParallelReduce(**fields, operation=ReduceOperation.Product))


CASES = [(ty, name) for ty in FORMATS for name in _values(ty)]


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize(("ty", "name"), CASES, ids=[f"{ty.suffix}-{name}" for ty, name in CASES])
def test_float_products_at_the_edges_follow_the_contract(backend_name, ty, name):
    backend = BACKENDS[backend_name]
    values = _values(ty)[name]
    if not backend.supports(ParallelReduce, ty):
        with pytest.raises(UnsupportedOperation):
            _product_on(backend, ty, values)
        return
    _check(ty, values, _product_on(backend, ty, values))


@pytest.mark.parametrize("backend_name", sorted(set(BACKENDS) - {"cpu"}))
@pytest.mark.parametrize(("ty", "name"), CASES, ids=[f"{ty.suffix}-{name}" for ty, name in CASES])
def test_per_lane_reduce_mul_at_the_edges_gives_the_references_bits(backend_name, ty, name):
    """ReduceMul folds in index order rounding each step (docs/semantics.md, Reductions), so unlike the
    ParallelReduce product its partials may overflow and meet a zero (NaN): every backend gives the
    reference's bits, NaN for NaN (issue 16 saw a BF16 ReduceMul product NaN on webgpu, -0.0 on cpu)."""
    backend, values = BACKENDS[backend_name], _values(ty)[name]
    if not backend.supports(ReduceMul, ty):
        with pytest.raises(UnsupportedOperation):
            _product_on(backend, ty, values, per_lane=True)
        return
    got, want = (_product_on(b, ty, values, per_lane=True) for b in (backend, BACKENDS["cpu"]))
    if flushes_subnormals(backend) and ty in FLUSHED_TYPES and not _same(ty, got, want):
        want = fold_flushing(ty, values)   # the device read and wrote each subnormal as a zero of its sign
    assert _same(ty, got, want), (got, want)


def _same(ty: Type, got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or encode(ty, [got]) == encode(ty, [want])


def fold_flushing(ty: Type, values: list[float]) -> float:
    """ReduceMul's fold in index order, each step rounded to ``ty``, every subnormal operand and partial a zero
    of its sign (docs/semantics.md, Numbers: a device that flushes subnormals)."""
    def flush(x: float) -> float:
        return math.copysign(0.0, x) if x != 0 and abs(x) < TINY[ty] else x

    def rounded(x: float) -> float:
        return decode(ty, encode(ty, [x]))[0]

    product = 1.0
    for value in values:
        with np.errstate(all="ignore"):
            product = flush(rounded(float(np.float32(product) * np.float32(flush(rounded(value))))))
    return product


def test_the_issue_16_values_give_the_references_product():
    """[1e30, 1e30, 1e-30, 1e-30, 3e-39, 1e38, 2.0, 0.5] (f32): 1.0 over 4, 0.30000007 over 8 on the reference;
    every backend within the contract (a device that flushes 3e-39, a subnormal, gives 0 over 8)."""
    values = [1e30, 1e30, 1e-30, 1e-30, 3e-39, 1e38, 2.0, 0.5]
    for name, backend in BACKENDS.items():
        assert _product_on(backend, Type.F32, values[:4]) == pytest.approx(1.0, rel=4 * 2.0 ** -23), name
        eight = _product_on(backend, Type.F32, values)
        assert eight == pytest.approx(0.30000007, rel=8 * 2.0 ** -23) or eight == 0.0, (name, eight)
