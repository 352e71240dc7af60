"""Lane rules of the integer instructions on the extended integers (I128 … U4096).

Registers are limb arrays in the lane record; each rule calls the extended-integer library
(``extended``) with the operand addresses and the limb count. DIV/REM trap DIVISION_BY_ZERO on a
zero divisor and INTEGER_OVERFLOW on ``MIN / -1`` (signed), then divide magnitudes with
``ext_divmod_u`` and fix the signs (quotient negative when the signs differ, remainder with the
dividend's sign). Temporaries are the record's extended temporaries 0-4.
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.isa.enums import Condition
from atlas_web.isa.opcodes import EXTENDED
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .lane_context import LaneContext
from .rules import lane_rule
from .rules_compare import compare_extended
from .rules_data import copy_bytes, store_extended_constant
from .typemap import limbs_of

__all__ = ["EXTENDED_BINARY"]

#: instruction -> helper computing d = a op b
EXTENDED_BINARY = {"ADD": "ext_add", "SUB": "ext_sub", "AND": "ext_and", "OR": "ext_or", "XOR": "ext_xor"}


def _binary(helper: str):
    def rule(ctx: LaneContext, instr) -> None:
        ctx.write_address()
        ctx.read("lhs")
        ctx.read("rhs")
        ctx.e.i32(limbs_of(instr.ty)).call(ctx.m.helper(helper))
    rule.__name__ = f"lower_{helper}"
    return rule


for _name, _helper in EXTENDED_BINARY.items():
    lane_rule(_name, EXTENDED)(_binary(_helper))


@lane_rule("MUL", EXTENDED)
def lower_mul_extended(ctx: LaneContext, instr) -> None:
    ctx.write_address()
    ctx.read("lhs")
    ctx.read("rhs")
    ctx.e.i32(limbs_of(instr.ty))
    ctx.ext_temp(4)
    ctx.e.call(ctx.m.helper("ext_mul"))


@lane_rule("MAD", EXTENDED)
def lower_mad_extended(ctx: LaneContext, instr) -> None:
    n = limbs_of(instr.ty)
    ctx.ext_temp(0)
    ctx.read("a")
    ctx.read("b")
    ctx.e.i32(n)
    ctx.ext_temp(4)
    ctx.e.call(ctx.m.helper("ext_mul"))
    ctx.write_address()
    ctx.ext_temp(0)
    ctx.read("c")
    ctx.e.i32(n).call(ctx.m.helper("ext_add"))


def _unary(helper: str):
    def rule(ctx: LaneContext, instr) -> None:
        ctx.write_address()
        ctx.read("src")
        ctx.e.i32(limbs_of(instr.ty)).call(ctx.m.helper(helper))
    return rule


lane_rule("NOT", EXTENDED)(_unary("ext_not"))
lane_rule("NEG", EXTENDED)(_unary("ext_neg"))


def _is_negative(ctx: LaneContext, path: str, ty: Type) -> None:
    """Push whether the signed extended operand ``path`` is negative (its top limb's sign)."""
    ctx.read(path)
    ctx.e.op("i64.load", ty.size_bytes() - 8).i64(0).op("i64.lt_s")


@lane_rule("ABS", EXTENDED)
def lower_abs_extended(ctx: LaneContext, instr) -> None:
    ty = instr.ty
    e = ctx.e
    if ty.is_unsigned():
        ctx.write_address()
        ctx.read("src")
        copy_bytes(ctx, ty.size_bytes())
        return
    _is_negative(ctx, "src", ty)
    with e.if_():
        ctx.write_address()
        ctx.read("src")
        e.i32(limbs_of(ty)).call(ctx.m.helper("ext_neg"))
        e.else_()
        ctx.write_address()
        ctx.read("src")
        copy_bytes(ctx, ty.size_bytes())


@lane_rule("SIGN", EXTENDED)
def lower_sign_extended(ctx: LaneContext, instr) -> None:
    """dst = -1, 0 or +1 (unsigned: 0 or 1)."""
    ty = instr.ty
    e = ctx.e
    ctx.read("src")
    e.i32(limbs_of(ty)).call(ctx.m.helper("ext_is_zero"))
    with e.if_():
        ctx.write_address()
        store_extended_constant(ctx, ty, 0)
        e.else_()
        if ty.is_signed():
            _is_negative(ctx, "src", ty)
            with e.if_():
                ctx.write_address()
                store_extended_constant(ctx, ty, -1)
                e.else_()
                ctx.write_address()
                store_extended_constant(ctx, ty, 1)
        else:
            ctx.write_address()
            store_extended_constant(ctx, ty, 1)


def _pick(ctx: LaneContext, ty: Type, first: str, second: str, cond: Condition) -> None:
    """dst = first if (first cond second) else second."""
    e = ctx.e
    ctx.write_address()
    ctx.read(first)
    ctx.read(second)
    ctx.read(first)
    ctx.read(second)
    compare_extended(ctx, ty, cond)
    e.op("select")
    copy_bytes(ctx, ty.size_bytes())


@lane_rule("MIN", EXTENDED)
def lower_min_extended(ctx: LaneContext, instr) -> None:
    _pick(ctx, instr.ty, "lhs", "rhs", Condition.LT)


@lane_rule("MAX", EXTENDED)
def lower_max_extended(ctx: LaneContext, instr) -> None:
    _pick(ctx, instr.ty, "lhs", "rhs", Condition.GT)


@lane_rule("CLAMP", EXTENDED)
def lower_clamp_extended(ctx: LaneContext, instr) -> None:
    """t = max(src, min) in temporary 0, then dst = min(t, max)."""
    ty = instr.ty
    e = ctx.e
    nbytes = ty.size_bytes()
    ctx.ext_temp(0)
    ctx.read("src")
    ctx.read("min")
    ctx.read("src")
    ctx.read("min")
    compare_extended(ctx, ty, Condition.GT)
    e.op("select")
    copy_bytes(ctx, nbytes)
    ctx.write_address()
    ctx.ext_temp(0)
    ctx.read("max")
    ctx.ext_temp(0)
    ctx.read("max")
    compare_extended(ctx, ty, Condition.LT)
    e.op("select")
    copy_bytes(ctx, nbytes)


def _shift(helper_signed: str, helper_unsigned: str):
    def rule(ctx: LaneContext, instr) -> None:
        ty = instr.ty
        ctx.write_address()
        ctx.read("src")
        ctx.read("amount")
        ctx.e.i32(limbs_of(ty)).call(ctx.m.helper(helper_signed if ty.is_signed() else helper_unsigned))
    return rule


lane_rule("SHL", EXTENDED)(_shift("ext_shl", "ext_shl"))
lane_rule("SHR", EXTENDED)(_shift("ext_shr_s", "ext_shr_u"))


def _division(take_quotient: bool):
    def rule(ctx: LaneContext, instr) -> None:
        ty = instr.ty
        e = ctx.e
        n = limbs_of(ty)
        nbytes = ty.size_bytes()
        ctx.read("rhs")
        e.i32(n).call(ctx.m.helper("ext_is_zero"))
        ctx.trap_if(TrapCode.DIVISION_BY_ZERO)
        signed = ty.is_signed()
        if signed:
            lo, _ = ty.int_range()
            ctx.ext_temp(0)
            store_extended_constant(ctx, ty, lo)
            ctx.ext_temp(1)
            store_extended_constant(ctx, ty, -1)
            ctx.read("lhs")
            ctx.ext_temp(0)
            compare_extended(ctx, ty, Condition.EQ)
            ctx.read("rhs")
            ctx.ext_temp(1)
            compare_extended(ctx, ty, Condition.EQ)
            e.op("i32.and")
            ctx.trap_if(TrapCode.INTEGER_OVERFLOW)
            for path, temp in (("lhs", 0), ("rhs", 1)):  # magnitudes in temporaries 0 and 1
                _is_negative(ctx, path, ty)
                with e.if_():
                    ctx.ext_temp(temp)
                    ctx.read(path)
                    e.i32(n).call(ctx.m.helper("ext_neg"))
                    e.else_()
                    ctx.ext_temp(temp)
                    ctx.read(path)
                    copy_bytes(ctx, nbytes)
            negative = ctx.temp(ValType.I32)
            if take_quotient:
                _is_negative(ctx, "lhs", ty)
                _is_negative(ctx, "rhs", ty)
                e.op("i32.ne")
            else:
                _is_negative(ctx, "lhs", ty)
            e.set(negative)
            ctx.ext_temp(2)
            ctx.ext_temp(3)
            ctx.ext_temp(0)
            ctx.ext_temp(1)
            e.i32(n).call(ctx.m.helper("ext_divmod_u"))
            result = 2 if take_quotient else 3
            e.get(negative)
            with e.if_():
                ctx.write_address()
                ctx.ext_temp(result)
                e.i32(n).call(ctx.m.helper("ext_neg"))
                e.else_()
                ctx.write_address()
                ctx.ext_temp(result)
                copy_bytes(ctx, nbytes)
            return
        ctx.ext_temp(2)
        ctx.ext_temp(3)
        ctx.read("lhs")
        ctx.read("rhs")
        e.i32(n).call(ctx.m.helper("ext_divmod_u"))
        ctx.write_address()
        ctx.ext_temp(2 if take_quotient else 3)
        copy_bytes(ctx, nbytes)
    return rule


lane_rule("DIV", EXTENDED)(_division(True))
lane_rule("REM", EXTENDED)(_division(False))
