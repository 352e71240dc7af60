"""The parametrized emitter of straight-line lane rules (wasm_backend.lowering.recipes) and its tables."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from atlas_web.isa.opcodes import FLOATS, INTS
from atlas_web.isa.types import Type
from wasm_backend.lowering.emitter import Emitter
from wasm_backend.lowering.recipes import ROUND, Const, Read, recipe_rule, typed_const, typed_op
from wasm_backend.lowering.rules import WASM_LANE_RULES
from wasm_backend.lowering.rules_float import FLOAT_RECIPES
from wasm_backend.lowering.rules_int import INT_RECIPES

#: the local each operand path is read from in the fake lane
_LOCALS = {"src": 3, "lhs": 4, "rhs": 5, "a": 6, "b": 7, "c": 8}


class _Lane:
    """What a recipe rule uses of a LaneContext: a real Emitter, operand reads, rounding and the write."""

    def __init__(self) -> None:
        self.e = Emitter()
        self.events: list[tuple] = []

    def read(self, path: str) -> None:
        self.events.append(("read", path))
        self.e.get(_LOCALS[path])

    def round_to(self, ty: Type) -> None:
        self.events.append(("round", ty))

    def write(self) -> None:
        self.events.append(("write",))


def _run(name: str, ty: Type) -> _Lane:
    lane = _Lane()
    WASM_LANE_RULES[name][ty](lane, SimpleNamespace(ty=ty))
    return lane


def test_rsqrt_on_f16_pushes_one_in_f32_then_rounds_to_the_format():
    lane = _run("RSQRT", Type.F16)
    assert bytes(lane.e.code) == bytes(Emitter().f32(1.0).get(3).op("f32.sqrt").op("f32.div").code)
    assert lane.events == [("read", "src"), ("round", Type.F16), ("write",)]


def test_integer_recipes_use_the_types_wasm_width():
    lane = _run("NEG", Type.U64)
    assert bytes(lane.e.code) == bytes(Emitter().i64(0).get(3).op("i64.sub").code)
    lane = _run("MAD", Type.I8)
    assert bytes(lane.e.code) == bytes(Emitter().get(6).get(7).op("i32.mul").get(8).op("i32.add").code)
    assert ("round", Type.I8) not in lane.events and lane.events[-1] == ("write",)


def test_every_recipe_is_the_registered_rule_for_its_types():
    for table, types, family in ((FLOAT_RECIPES, FLOATS, "float"), (INT_RECIPES, INTS, "int")):
        for name in table:
            for ty in types:
                assert WASM_LANE_RULES[name][ty].__name__ == f"lower_{name.lower()}_{family}"


@pytest.mark.parametrize("ty, op", [(Type.I8, "i32.lt_s"), (Type.U8, "i32.lt_u"), (Type.U64, "i64.lt_u")])
def test_typed_op_resolves_signedness(ty, op):
    lane = _Lane()
    typed_op(lane, ty, "lt_?")
    assert bytes(lane.e.code) == bytes(Emitter().op(op).code)


@pytest.mark.parametrize("ty, build", [
    (Type.F64, lambda e: e.f64(-1.0)), (Type.BF16, lambda e: e.f32(-1.0)),
    (Type.I16, lambda e: e.i32(-1)), (Type.I64, lambda e: e.i64(-1)),
])
def test_typed_const_uses_the_types_value_type(ty, build):
    lane = _Lane()
    typed_const(lane, ty, -1.0 if ty in FLOATS else -1)
    assert bytes(lane.e.code) == bytes(build(Emitter()).code)


def test_a_step_of_unknown_kind_is_refused_when_the_rule_is_made():
    with pytest.raises(TypeError, match=r"recipe of ODD: 3 is not a step"):
        recipe_rule("ODD", (Read("src"), 3), "int")


def test_rules_describe_their_recipe():
    rule = recipe_rule("LERP", (Read("a"), Const(2), "sub", ROUND), "float")
    assert rule.__doc__ == "LERP on float types: read a, push 2, sub, round, written to dst."
