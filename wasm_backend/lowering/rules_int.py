"""Lane rules of the integer instructions on the native integer types (I8 … U64).

Narrow integers carry dirty upper bits (see ``typemap``): the wrapping operations write them as
they come; comparisons, division, right shifts, MIN/MAX/CLAMP/ABS/SIGN normalise their operands
first. Division by zero traps DIVISION_BY_ZERO and ``MIN / -1`` (and ``MIN rem -1``) INTEGER_OVERFLOW
on signed types, before the wasm division (which would trap on its own terms).
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.isa.opcodes import INTS
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .lane_context import LaneContext
from .recipes import Const, Read, Recipe, register_recipes, typed_const as int_const, typed_op as int_op
from .rules import lane_rule
from .trap_numbers import i64, signed, u32
from .typemap import type_info

__all__ = ["WRAPPING_BINARY", "INT_RECIPES", "int_const", "int_op"]

#: instruction -> wasm operation whose result, cut to the width, is the wrapped result
WRAPPING_BINARY = {"ADD": "add", "SUB": "sub", "MUL": "mul", "AND": "and", "OR": "or", "XOR": "xor"}

#: instruction -> its stack program (see ``recipes``): the wrapping operations, which write the dirty
#: upper bits of narrow integers as they come
INT_RECIPES: dict[str, Recipe] = {
    **{name: (Read("lhs"), Read("rhs"), op) for name, op in WRAPPING_BINARY.items()},
    "MAD": (Read("a"), Read("b"), "mul", Read("c"), "add"),
    "NEG": (Const(0), Read("src"), "sub"),
    "NOT": (Read("src"), Const(-1), "xor"),
}

register_recipes(INT_RECIPES, INTS, "int")


def _valtype(ty: Type) -> ValType:
    return type_info(ty).valtype


def _read_normalized(ctx: LaneContext, path: str) -> Type:
    ty = ctx.read(path)
    ctx.normalize(ty)
    return ty


def _division(op: str):
    def rule(ctx: LaneContext, instr) -> None:
        e = ctx.e
        ty = instr.ty
        vt = _valtype(ty)
        a, b = ctx.temp(vt), ctx.temp(vt)
        _read_normalized(ctx, "lhs")
        e.set(a)
        _read_normalized(ctx, "rhs")
        e.tee(b)
        int_op(ctx, ty, "eqz")
        dividend = i64(a) if vt is ValType.I64 else (signed(a) if ty.is_signed() else u32(a))
        ctx.trap_if(TrapCode.DIVISION_BY_ZERO, (ctx.operand("lhs"), 0, dividend))
        if ty.is_signed():
            lo, _ = ty.int_range()
            e.get(a)
            int_const(ctx, ty, lo)
            int_op(ctx, ty, "eq")
            e.get(b)
            int_const(ctx, ty, -1)
            int_op(ctx, ty, "eq")
            e.op("i32.and")
            ctx.trap_if(TrapCode.INTEGER_OVERFLOW)
        e.get(a).get(b)
        int_op(ctx, ty, op + "_?")
        ctx.write()
    rule.__name__ = f"lower_{op}_int"
    return rule


lane_rule("DIV", INTS)(_division("div"))
lane_rule("REM", INTS)(_division("rem"))


def _select_by(ctx: LaneContext, ty: Type, relation: str, a: int, b: int) -> None:
    """Push a if ``a relation b`` else b (signed or unsigned by ty)."""
    e = ctx.e
    e.get(a).get(b).get(a).get(b)
    int_op(ctx, ty, relation + "_?")
    e.op("select")


def _extreme(relation: str):
    def rule(ctx: LaneContext, instr) -> None:
        ty = instr.ty
        a, b = ctx.temp(_valtype(ty)), ctx.temp(_valtype(ty))
        _read_normalized(ctx, "lhs")
        ctx.e.set(a)
        _read_normalized(ctx, "rhs")
        ctx.e.set(b)
        _select_by(ctx, ty, relation, a, b)
        ctx.write()
    return rule


lane_rule("MIN", INTS)(_extreme("lt"))
lane_rule("MAX", INTS)(_extreme("gt"))


@lane_rule("CLAMP", INTS)
def lower_clamp_int(ctx: LaneContext, instr) -> None:
    """min(max(src, min), max) with the type's order."""
    ty = instr.ty
    vt = _valtype(ty)
    x, lo, hi = ctx.temp(vt), ctx.temp(vt), ctx.temp(vt)
    for path, local in (("src", x), ("min", lo), ("max", hi)):
        _read_normalized(ctx, path)
        ctx.e.set(local)
    _select_by(ctx, ty, "gt", x, lo)
    ctx.e.set(x)
    _select_by(ctx, ty, "lt", x, hi)
    ctx.write()


@lane_rule("ABS", INTS)
def lower_abs_int(ctx: LaneContext, instr) -> None:
    """|x| wrapping (|MIN| = MIN): (x ^ s) - s with s the sign mask; the identity on unsigned types."""
    ty = instr.ty
    if ty.is_unsigned():
        ctx.read("src")
        ctx.write()
        return
    e = ctx.e
    x, s = ctx.temp(_valtype(ty)), ctx.temp(_valtype(ty))
    _read_normalized(ctx, "src")
    e.tee(x)
    int_const(ctx, ty, 63 if ty.bits == 64 else 31)
    int_op(ctx, ty, "shr_s")
    e.set(s)
    e.get(x).get(s)
    int_op(ctx, ty, "xor")
    e.get(s)
    int_op(ctx, ty, "sub")
    ctx.write()


@lane_rule("SIGN", INTS)
def lower_sign_int(ctx: LaneContext, instr) -> None:
    """-1, 0 or +1 (unsigned: 0 or 1)."""
    e = ctx.e
    ty = instr.ty
    x = ctx.temp(_valtype(ty))
    _read_normalized(ctx, "src")
    e.set(x)
    if ty.is_signed():
        e.get(x)
        int_const(ctx, ty, 0)
        int_op(ctx, ty, "gt_s")
        e.get(x)
        int_const(ctx, ty, 0)
        int_op(ctx, ty, "lt_s")
        e.op("i32.sub")
    else:
        e.get(x)
        int_op(ctx, ty, "eqz")
        e.op("i32.eqz")
    if ty.bits == 64:
        e.op("i64.extend_i32_s")
    ctx.write()


def _amount(ctx: LaneContext, ty: Type) -> None:
    """Push the shift amount (a 32-bit register read unsigned) modulo the width, in ty's wasm type."""
    ctx.read("amount")
    if ty.bits < 32:
        ctx.e.i32(ty.bits - 1).op("i32.and")
    elif ty.bits == 64:
        ctx.e.op("i64.extend_i32_u")


@lane_rule("SHL", INTS)
def lower_shl_int(ctx: LaneContext, instr) -> None:
    ty = ctx.read("src")
    _amount(ctx, ty)
    int_op(ctx, ty, "shl")
    ctx.write()


@lane_rule("SHR", INTS)
def lower_shr_int(ctx: LaneContext, instr) -> None:
    """Arithmetic on signed, logical on unsigned types (operand normalised first)."""
    _read_normalized(ctx, "src")
    _amount(ctx, instr.ty)
    int_op(ctx, instr.ty, "shr_?")
    ctx.write()
