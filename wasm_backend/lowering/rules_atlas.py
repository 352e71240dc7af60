"""Lane rules of the Atlas instructions (shared/atlas-structures.md).

The classify, mirror, degree and neighbour tables are a data segment at ``layout.ATLAS_TABLES``
(written by every module that uses them). Class, index, page and byte operands are read as unsigned
values of their register's type, widened to i64, so a negative i32 class id is a huge class and
traps INVALID_CLASS. ResAccum adds (f32 widened exactly) into the 96 f64 sums at
``layout.RES_SUMS``; the lane's phase is a local (saved in the record across stops).
"""

from __future__ import annotations

from atlas_web import atlas
from atlas_web.errors import TrapCode
from atlas_web.isa.types import Type

from .. import layout
from ..encoding.types import ValType
from .lane_context import LaneContext
from .trap_numbers import i64
from .rules import lane_rule

__all__ = ["use_tables"]


def use_tables(ctx: LaneContext) -> None:
    """Make sure the module writes the Atlas tables."""
    ctx.m.data_at(layout.ATLAS_TABLES, layout.atlas_table_bytes())


def _class_operand(ctx: LaneContext, path: str) -> int:
    """i32 local := the class operand; traps INVALID_CLASS when it is 96 or more."""
    e = ctx.e
    value = ctx.temp(ValType.I64)
    ctx.read_unsigned64(path)
    e.tee(value).i64(atlas.NUM_CLASSES).op("i64.ge_u")
    ctx.trap_if(TrapCode.INVALID_CLASS, (ctx.operand(path), 0, i64(value)))
    local = ctx.temp(ValType.I32)
    e.get(value).op("i32.wrap_i64").set(local)
    return local


@lane_rule("ClsGet")
def lower_cls_get(ctx: LaneContext, instr) -> None:
    use_tables(ctx)
    ty = ctx.read("src")
    if ty.bits == 64:
        ctx.e.op("i32.wrap_i64")
    ctx.e.i32(0xFF).op("i32.and").op("i32.load8_u", layout.CLASSIFY_AT)
    ctx.write()


@lane_rule("MIRROR")
def lower_mirror(ctx: LaneContext, instr) -> None:
    use_tables(ctx)
    cls = _class_operand(ctx, "src")
    ctx.e.get(cls).op("i32.load8_u", layout.MIRROR_AT)
    ctx.write()


@lane_rule("UnityTest")
def lower_unity_test(ctx: LaneContext, instr) -> None:
    e = ctx.e
    value = ctx.temp(ValType.I64)
    ctx.read_unsigned64("src")
    e.tee(value)
    e.i64(atlas.UNITY_CLASSES[0]).op("i64.eq").get(value).i64(atlas.UNITY_CLASSES[1]).op("i64.eq").op("i32.or")
    ctx.write_predicate("pred")


@lane_rule("NbrCount")
def lower_nbr_count(ctx: LaneContext, instr) -> None:
    use_tables(ctx)
    cls = _class_operand(ctx, "class_id")
    ctx.e.get(cls).op("i32.load8_u", layout.DEGREE_AT)
    ctx.write()


@lane_rule("NbrGet")
def lower_nbr_get(ctx: LaneContext, instr) -> None:
    """neighbours(class)[index] (ascending), 255 past the degree (the table pads rows with 255)."""
    use_tables(ctx)
    e = ctx.e
    cls = _class_operand(ctx, "class_id")
    index = ctx.temp(ValType.I64)
    ctx.read_unsigned64("index")
    e.set(index)
    e.i32(atlas.NO_NEIGHBOUR)
    # the load runs before the select: an index past the degree reads the row's first byte, not
    # class*MAX_DEGREE + (index mod 2**32), which lay outside memory (found by tests/fuzz)
    e.get(cls).i32(atlas.MAX_DEGREE).op("i32.mul")
    e.i32(0).get(index).op("i32.wrap_i64").get(index).i64(atlas.MAX_DEGREE).op("i64.ge_u").op("select")
    e.op("i32.add")
    e.op("i32.load8_u", layout.NEIGHBOURS_AT)
    e.get(index).i64(atlas.MAX_DEGREE).op("i64.ge_u").op("select")
    ctx.write()


@lane_rule("BoundMap")
def lower_bound_map(ctx: LaneContext, instr) -> None:
    """class*12288 + page*256 + byte; INVALID_CLASS first, then OUT_OF_BOUNDS (page >= 48, byte >= 256)."""
    e = ctx.e
    cls = _class_operand(ctx, "class_id")
    page, byte = ctx.temp(ValType.I64), ctx.temp(ValType.I64)
    ctx.read_unsigned64("page")
    e.set(page)
    ctx.read_unsigned64("byte")
    e.set(byte)
    e.get(page).i64(atlas.PAGES).op("i64.ge_u").get(byte).i64(atlas.BYTES_PER_PAGE).op("i64.ge_u").op("i32.or")

    def pick(on_page, on_byte):
        """The page's number where the page is out of range, else the byte's."""
        def push(e) -> None:
            on_page(e)
            on_byte(e)
            e.get(page).i64(atlas.PAGES).op("i64.ge_u").op("select")
        return push

    def const(n: int):
        return lambda e: e.i64(n)

    ctx.trap_if(TrapCode.OUT_OF_BOUNDS, (
        pick(const(ctx.operand("page")), const(ctx.operand("byte"))), 0, pick(i64(page), i64(byte)), 0,
        pick(const(atlas.PAGES), const(atlas.BYTES_PER_PAGE))))
    e.get(cls).op("i64.extend_i32_u").i64(atlas.TOTAL_ELEMENTS).op("i64.mul")
    e.get(page).i64(atlas.BYTES_PER_PAGE).op("i64.mul").op("i64.add").get(byte).op("i64.add")
    ctx.write()


@lane_rule("ResAccum", (Type.F32, Type.F64))
def lower_res_accum(ctx: LaneContext, instr) -> None:
    e = ctx.e
    cls = _class_operand(ctx, "class_id")
    address = ctx.temp(ValType.I32)
    e.get(cls).i32(3).op("i32.shl").tee(address)
    e.get(address).op("f64.load", layout.RES_SUMS)
    ty = ctx.read("value")
    if ty is not Type.F64:
        e.op("f64.promote_f32")
    e.op("f64.add").op("f64.store", layout.RES_SUMS)


@lane_rule("PhaseGet")
def lower_phase_get(ctx: LaneContext, instr) -> None:
    ctx.e.get(ctx.phase)
    ctx.write()


@lane_rule("PhaseAdv")
def lower_phase_adv(ctx: LaneContext, instr) -> None:
    """phase = (phase + delta) mod 768, in i64 (delta is any u32)."""
    e = ctx.e
    e.get(ctx.phase).op("i64.extend_i32_u").i64(instr.delta).op("i64.add").i64(atlas.PHASE_MODULUS)
    e.op("i64.rem_u").op("i32.wrap_i64").set(ctx.phase)


@lane_rule("PhaseWrite")
def lower_phase_write(ctx: LaneContext, instr) -> None:
    ctx.read_unsigned64("src")
    ctx.e.i64(atlas.PHASE_MODULUS).op("i64.rem_u").op("i32.wrap_i64").set(ctx.phase)
