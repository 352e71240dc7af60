"""Lane rules of SETcc and SEL on every type; predicates are i32 locals holding 0 or 1.

Integers: EQ … GE compare by the type's signedness, LTU … GEU as unsigned bit patterns (narrow
operands normalised first). Floats: EQ … GE are IEEE ordered comparisons (NE true with NaN), LTU …
GEU are unordered (the negation of the opposite ordered comparison). Extended integers compare
through ``ext_cmp_s``/``ext_cmp_u``.
"""

from __future__ import annotations

from atlas_web.isa.enums import Condition
from atlas_web.isa.opcodes import ALL
from atlas_web.isa.types import Type

from .lane_context import LaneContext
from .rules import lane_rule
from .rules_data import copy_bytes
from .typemap import limbs_of, type_info

__all__ = ["INT_CONDITIONS", "FLOAT_CONDITIONS", "compare_extended"]

#: condition -> (wasm relation without signedness suffix, whether it always compares unsigned)
INT_CONDITIONS = {
    Condition.EQ: ("eq", None), Condition.NE: ("ne", None), Condition.LT: ("lt", False),
    Condition.LE: ("le", False), Condition.GT: ("gt", False), Condition.GE: ("ge", False),
    Condition.LTU: ("lt", True), Condition.LEU: ("le", True), Condition.GTU: ("gt", True),
    Condition.GEU: ("ge", True),
}
#: condition -> (wasm float relation, negate the result)
FLOAT_CONDITIONS = {
    Condition.EQ: ("eq", False), Condition.NE: ("ne", False), Condition.LT: ("lt", False),
    Condition.LE: ("le", False), Condition.GT: ("gt", False), Condition.GE: ("ge", False),
    Condition.LTU: ("ge", True), Condition.LEU: ("gt", True), Condition.GTU: ("le", True),
    Condition.GEU: ("lt", True),
}


def _relation(ty: Type, cond: Condition) -> str:
    relation, unsigned = INT_CONDITIONS[cond]
    if unsigned is None:
        return relation
    return relation + ("_u" if unsigned or ty.is_unsigned() else "_s")


def _unsigned_compare(ty: Type, cond: Condition) -> bool:
    _, unsigned = INT_CONDITIONS[cond]
    return bool(unsigned) or ty.is_unsigned() or unsigned is None


def compare_extended(ctx: LaneContext, ty: Type, cond: Condition) -> None:
    """Two limb addresses on the stack -> the i32 truth of ``cond``."""
    signed = ty.is_signed() and not INT_CONDITIONS[cond][1]
    ctx.e.i32(limbs_of(ty)).call(ctx.m.helper("ext_cmp_s" if signed else "ext_cmp_u")).i32(0)
    relation = INT_CONDITIONS[cond][0]
    ctx.e.op(f"i32.{relation}" if relation in ("eq", "ne") else f"i32.{relation}_s")


@lane_rule("SETcc", ALL)
def lower_setcc(ctx: LaneContext, instr) -> None:
    ty, cond = instr.ty, instr.cond
    e = ctx.e
    if ty.is_extended():
        ctx.read("lhs")
        ctx.read("rhs")
        compare_extended(ctx, ty, cond)
    elif ty.is_float():
        relation, negate = FLOAT_CONDITIONS[cond]
        ctx.read("lhs")
        ctx.read("rhs")
        e.op(f"{type_info(ty).prefix}.{relation}")
        if negate:
            e.op("i32.eqz")
    else:
        unsigned = _unsigned_compare(ty, cond)
        for path in ("lhs", "rhs"):
            ctx.read(path)
            if unsigned:
                ctx.zero_extend(ty)
            else:
                ctx.normalize(ty)
        e.op(f"{type_info(ty).prefix}.{_relation(ty, cond)}")
    ctx.write_predicate("pred")


@lane_rule("SEL", ALL)
def lower_sel(ctx: LaneContext, instr) -> None:
    if instr.ty.is_extended():
        ctx.write_address()
        ctx.read("true_val")
        ctx.read("false_val")
        ctx.read_predicate("pred")
        ctx.e.op("select")
        copy_bytes(ctx, instr.ty.size_bytes())
        return
    ctx.read("true_val")
    ctx.read("false_val")
    ctx.read_predicate("pred")
    ctx.e.op("select")
    ctx.write()
