"""Lane rules of the per-lane reductions ReduceAdd/Min/Max/Mul over ``count`` values at an address.

The whole range (``count`` values) is checked once (handle, bounds, alignment of the start), then
the values are folded in index order starting from the first one, each step rounded in the type
(F16/BF16: f32 then the format; integers wrap); ``count = 0`` gives the identity.
"""

from __future__ import annotations

import math

from atlas_web.isa.opcodes import SCALARS
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .lane_context import LaneContext
from .rules import lane_rule
from .rules_int import int_const, int_op
from .typemap import type_info

__all__ = ["REDUCTIONS", "fold_step", "identity_of"]

#: instruction -> reduction kind
REDUCTIONS = {"ReduceAdd": "add", "ReduceMin": "min", "ReduceMax": "max", "ReduceMul": "mul"}


def identity_of(kind: str, ty: Type) -> int | float:
    if ty.is_float():
        return {"add": 0.0, "mul": 1.0, "min": math.inf, "max": -math.inf}[kind]
    lo, hi = ty.int_range()
    return {"add": 0, "mul": 1, "min": hi, "max": lo}[kind]


def fold_step(ctx: LaneContext, ty: Type, kind: str, acc: int, value: int) -> None:
    """acc := acc (kind) value, rounded or wrapped in ``ty`` (narrow integers are kept normalised)."""
    e = ctx.e
    if ty.is_float():
        e.get(acc).get(value).op(f"{type_info(ty).prefix}.{kind}")
        if kind in ("add", "mul"):
            ctx.round_to(ty)
        e.set(acc)
        return
    if kind in ("add", "mul"):
        e.get(acc).get(value)
        int_op(ctx, ty, kind)
        ctx.normalize(ty)
        e.set(acc)
        return
    e.get(acc).get(value).get(acc).get(value)
    int_op(ctx, ty, ("lt_?" if kind == "min" else "gt_?"))
    e.op("select").set(acc)


def _reduction(kind: str):
    def rule(ctx: LaneContext, instr) -> None:
        e = ctx.e
        ty, count = instr.ty, instr.count
        size = ty.size_bytes()
        vt = type_info(ty).valtype
        acc, value = ctx.temp(vt), ctx.temp(vt)
        base = ctx.temp(ValType.I32)
        ctx.global_address("src_array", size * count, ty.alignment())
        e.set(base)
        if count == 0:
            ident = identity_of(kind, ty)
            if ty is Type.F64:
                e.f64(ident)
            elif ty.is_float():
                e.f32(ident)
            else:
                int_const(ctx, ty, ty.wrap(ident))
            ctx.write()
            return
        e.get(base)
        ctx.load_value(ty)
        e.set(acc)
        if count > 1:
            end = ctx.temp(ValType.I32)
            e.get(base).i32(size * count).op("i32.add").set(end)
            with e.block("done"):
                with e.loop("next"):
                    e.get(base).i32(size).op("i32.add").tee(base).get(end).op("i32.ge_u").br_if("done")
                    e.get(base)
                    ctx.load_value(ty)
                    e.set(value)
                    fold_step(ctx, ty, kind, acc, value)
                    e.br("next")
        e.get(acc)
        ctx.write()
    rule.__name__ = f"lower_reduce_{kind}"
    return rule


for _name, _kind in REDUCTIONS.items():
    lane_rule(_name, SCALARS)(_reduction(_kind))
