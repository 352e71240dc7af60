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


def test_randint_u32_refuses_what_it_cannot_draw_exactly():
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
