"""The pure Atlas lane rules against atlas_web.atlas, for operands of every integer type up to 64 bits.

Operands are read as unsigned values of their own type, so a negative i8 class
id is a class >= 96.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from atlas_web import atlas
from atlas_web.errors import TrapCode
from atlas_web.isa import Type
from atlas_web.isa.opcodes import INTS, OPCODE_TABLE

from .test_numeric_oracle import array_of, run, trap_of

NAMES = ("ClsGet", "MIRROR", "UnityTest", "NbrCount", "NbrGet", "BoundMap")
COVERS = [(row.name, None) for row in OPCODE_TABLE if row.name in NAMES]
OPERAND_TYPES = [pytest.param(ty, id=ty.name) for ty in sorted(INTS, key=lambda t: t.code)]


def _names(*names):
    return [pytest.param(name, id=name) for name, _ in COVERS if name in names]


def _class_values(ty) -> list[int]:
    lo, hi = ty.int_range()
    values = list(range(0, min(hi, 300) + 1)) + [hi, lo, ty.wrap(-1), ty.wrap(-96), ty.wrap(1 << (ty.bits - 1))]
    return list(dict.fromkeys(v for v in values if lo <= v <= hi))


def _unsigned(ty, v: int) -> int:
    return v % (1 << ty.bits)


@pytest.mark.parametrize("ty", OPERAND_TYPES)
@pytest.mark.parametrize("name", _names("ClsGet"))
def test_cls_get(name, ty):
    values = _class_values(ty)
    out = run(name, None, {"src": array_of(ty, values)})
    assert out.value.dtype == np.uint8 and out.traps == ()
    assert out.value.tolist() == [atlas.classify(_unsigned(ty, v) & 0xFF) for v in values]


@pytest.mark.parametrize("ty", OPERAND_TYPES)
@pytest.mark.parametrize("name", _names("MIRROR", "NbrCount"))
def test_class_lookups(name, ty):
    values = _class_values(ty)
    out = run(name, None, {("src" if name == "MIRROR" else "class_id"): array_of(ty, values)})
    assert out.value.dtype == (np.uint8 if name == "MIRROR" else np.uint32)
    lookup = atlas.mirror if name == "MIRROR" else atlas.degree
    for lane, v in enumerate(values):
        c = _unsigned(ty, v)
        if c >= 96:
            assert trap_of(out, lane) is TrapCode.INVALID_CLASS, v
        else:
            assert trap_of(out, lane) is None and out.value[lane] == lookup(c), v


@pytest.mark.parametrize("ty", OPERAND_TYPES)
@pytest.mark.parametrize("name", _names("UnityTest"))
def test_unity_test(name, ty):
    values = _class_values(ty)
    out = run(name, None, {"src": array_of(ty, values)})
    assert out.value.dtype == np.bool_ and out.traps == ()
    assert out.value.tolist() == [_unsigned(ty, v) in (1, 4) for v in values]


@pytest.mark.parametrize("ty", OPERAND_TYPES)
@pytest.mark.parametrize("name", _names("NbrGet"))
def test_nbr_get(name, ty):
    classes = [c for c in _class_values(ty) if _unsigned(ty, c) < 100 or c < 0][::3] + [0, 1, 95]
    lo, hi = ty.int_range()
    indices = [i for i in (0, 1, 4, 5, 6, 7, 255, hi, lo, ty.wrap(-1)) if lo <= i <= hi]
    pairs = list(itertools.product(classes, indices))
    out = run(name, None, {"class_id": array_of(ty, [p[0] for p in pairs]),
                           "index": array_of(ty, [p[1] for p in pairs])})
    assert out.value.dtype == np.uint8
    for lane, (c, i) in enumerate(pairs):
        c, i = _unsigned(ty, c), _unsigned(ty, i)
        if c >= 96:
            assert trap_of(out, lane) is TrapCode.INVALID_CLASS
            continue
        nbrs = atlas.neighbours(c)
        assert trap_of(out, lane) is None
        assert out.value[lane] == (nbrs[i] if i < len(nbrs) else 255), (c, i)


@pytest.mark.parametrize("ty", OPERAND_TYPES)
@pytest.mark.parametrize("name", _names("BoundMap"))
def test_bound_map(name, ty):
    lo, hi = ty.int_range()
    cs = [v for v in (0, 1, 2, 95, 96, 200, hi, ty.wrap(-1)) if lo <= v <= hi]
    pages = [v for v in (0, 2, 47, 48, 100, hi, ty.wrap(-1)) if lo <= v <= hi]
    bytes_ = [v for v in (0, 3, 255, 256, hi, ty.wrap(-1)) if lo <= v <= hi]
    triples = list(itertools.product(cs, pages, bytes_))
    columns = [array_of(ty, list(col)) for col in zip(*triples)]
    out = run(name, None, dict(zip(("class_id", "page", "byte"), columns)))
    assert out.value.dtype == np.uint64
    for lane, (c, p, b) in enumerate(triples):
        c, p, b = (_unsigned(ty, v) for v in (c, p, b))
        if c >= 96:
            assert trap_of(out, lane) is TrapCode.INVALID_CLASS  # the class is checked first
        elif p >= 48 or b >= 256:
            assert trap_of(out, lane) is TrapCode.OUT_OF_BOUNDS
        else:
            assert trap_of(out, lane) is None and int(out.value[lane]) == atlas.bound_map(c, p, b)


def test_documented_vectors():
    u32 = Type.U32
    out = run("BoundMap", None, {"class_id": array_of(u32, [1, 2, 95]), "page": array_of(u32, [2, 0, 47]),
                                 "byte": array_of(u32, [3, 0, 255])})
    assert out.value.tolist() == [12803, 24576, 1179647]
    out = run("ClsGet", None, {"src": array_of(u32, [0, 1, 2, 16, 31, 32, 42, 48, 64, 96, 128, 200, 255, 256 + 42])})
    assert out.value.tolist() == [0, 48, 24, 3, 93, 1, 31, 4, 2, 0, 0, 8, 93, 31]
