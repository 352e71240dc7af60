"""examples.inputs: every engine builds the same bits, in range, without a loop per element."""

from __future__ import annotations

import array
import random

import pytest

import examples
from examples import inputs

NATIVE_ENGINES = [name for name in inputs.ENGINES if name != "javascript"]  # javascript: tests/web


@pytest.mark.parametrize("engine", NATIVE_ENGINES)
def test_uniform_f32_is_the_same_on_every_engine_and_in_range(engine):
    got = inputs.uniform_f32(random.Random("t"), 5000, -100, 100, engine=engine)
    want = inputs.uniform_f32(random.Random("t"), 5000, -100, 100, engine="stdlib")
    assert got.typecode == "f" and bytes(got) == bytes(want)
    assert all(-100 <= v <= 100 for v in got) and min(got) < -99 and max(got) > 99
    # the documented formula, word by word
    words = inputs.random_words(random.Random("t"), 5000)
    assert [float(v) for v in got[:50]] == [float(array.array("f", [-100.0 + 200.0 * (w * 2.0 ** -32)])[0])
                                            for w in words[:50]]


@pytest.mark.parametrize("engine", NATIVE_ENGINES)
def test_randint_u32_covers_both_ends_and_is_the_same_on_every_engine(engine):
    got = inputs.randint_u32(random.Random("c"), 20000, 1, 10, engine=engine)
    assert bytes(got) == bytes(inputs.randint_u32(random.Random("c"), 20000, 1, 10, engine="stdlib"))
    assert set(got) == set(range(1, 11))
    words = inputs.random_words(random.Random("c"), 20)
    assert list(got[:20]) == [1 + (w * 10 >> 32) for w in words]


@pytest.mark.parametrize("engine", NATIVE_ENGINES)
def test_uniform_f64_is_the_double_uniform_f32_rounds(engine):
    doubles = inputs.uniform_f64(random.Random("d"), 3000, -1e300, 1e300, engine=engine)
    assert doubles.typecode == "d" and bytes(doubles) == bytes(
        inputs.uniform_f64(random.Random("d"), 3000, -1e300, 1e300, engine="stdlib"))
    assert all(-1e300 <= v <= 1e300 for v in doubles) and min(doubles) < -9e299
    words = inputs.random_words(random.Random("d"), 3000)
    assert list(doubles[:50]) == [-1e300 + 2e300 * (w * 2.0 ** -32) for w in words[:50]]
    small = inputs.uniform_f64(random.Random("t"), 500, -100, 100, engine=engine)
    assert bytes(array.array("f", small)) == bytes(inputs.uniform_f32(random.Random("t"), 500, -100, 100))


@pytest.mark.parametrize("engine", NATIVE_ENGINES)
@pytest.mark.parametrize("typecode, lo, hi", [("b", -128, -120), ("h", -5, 5), ("i", -3, 30), ("B", 250, 255),
                                              ("q", -(1 << 63), -(1 << 63) + 9), ("Q", (1 << 64) - 7, (1 << 64) - 1)])
def test_randint_stores_any_integer_type_with_a_negative_low_end(engine, typecode, lo, hi):
    got = inputs.randint(random.Random("s"), 4000, lo, hi, typecode, engine=engine)
    assert got.typecode == typecode
    assert bytes(got) == bytes(inputs.randint(random.Random("s"), 4000, lo, hi, typecode, engine="stdlib"))
    assert set(got) == set(range(lo, hi + 1))
    words = inputs.random_words(random.Random("s"), 20)
    assert list(got[:20]) == [lo + (w * (hi - lo + 1) >> 32) for w in words]


def test_randint_u32_refuses_what_it_cannot_draw_exactly():
    with pytest.raises(ValueError, match=r"-128 <= lo <= hi <= 127 \(typecode 'b'\)"):
        inputs.randint(random.Random(), 4, 0, 128, "b")
    with pytest.raises(KeyError, match="integer typecodes"):
        inputs.randint(random.Random(), 4, 0, 1, "f")
    with pytest.raises(ValueError, match="at most 2097152 values"):
        inputs.randint_u32(random.Random(), 4, 0, 1 << 22)
    with pytest.raises(ValueError, match="lo=-1"):
        inputs.randint_u32(random.Random(), 4, -1, 3)


def test_examples_inputs_keep_their_shape():
    relu, atlas = examples.build_all(300)[1], examples.build_all(300)[4]
    xs = relu.buffer("x").data
    assert xs.typecode == "f" and len(xs) == 300 and all(xs[i] == 0.0 for i in range(0, 300, 17))
    assert all(xs[i] != 0.0 for i in range(300) if i % 17)
    data = atlas.buffer("data").data
    assert list(data[:256]) == list(range(256)) and len(data) == 300
    assert examples.build_all(1)[4].buffer("data").data.tolist() == [0]
