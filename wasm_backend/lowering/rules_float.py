"""Lane rules of the float instructions (F16, BF16, F32, F64).

F16 and BF16 values live in f32 locals and compute in f32; each instruction whose f32 result may
not be representable rounds it to the format (``ctx.round_to``), as the contract says. WebAssembly's
``min``/``max`` already propagate NaN and order -0 < +0; ``nearest`` rounds half to even. REM is
C ``fmod`` (the exact ``fmod64`` helper; exact for f32 operands too), FMA/FMS round once through
the ``fma32``/``fma64`` helpers. SQRT is the correctly rounded ``sqrt`` instruction (rounding an f32
square root to F16/BF16 equals rounding the exact root: 24 >= 2*11+2 and 2*8+2).
"""

from __future__ import annotations

from atlas_web.isa.opcodes import FLOATS
from atlas_web.isa.types import Type

from .lane_context import LaneContext
from .recipes import ROUND, Const, Read, Recipe, register_recipes, typed_const as float_const, typed_op as float_op
from .rules import lane_rule
from .typemap import type_info

__all__ = ["float_op", "float_const", "INEXACT_BINARY", "EXACT_UNARY", "FLOAT_RECIPES"]

#: binary instructions computed by one wasm operation and rounded to the format
INEXACT_BINARY = {"ADD": "add", "SUB": "sub", "MUL": "mul", "DIV": "div"}
#: binary instructions whose result is one of the operands (no rounding)
EXACT_BINARY = {"MIN": "min", "MAX": "max"}
#: unary instructions whose result is representable in the operand's format
EXACT_UNARY = {"ABS": "abs", "NEG": "neg", "FLOOR": "floor", "CEIL": "ceil", "ROUND": "nearest", "TRUNC": "trunc"}

_LHS, _RHS, _SRC, _A, _B, _C = Read("lhs"), Read("rhs"), Read("src"), Read("a"), Read("b"), Read("c")

#: instruction -> its stack program (see ``recipes``); ROUND where the f32 result of an F16/BF16
#: operation may not be representable in the format
FLOAT_RECIPES: dict[str, Recipe] = {
    **{name: (_LHS, _RHS, op, ROUND) for name, op in INEXACT_BINARY.items()},
    **{name: (_LHS, _RHS, op) for name, op in EXACT_BINARY.items()},
    **{name: (_SRC, op) for name, op in EXACT_UNARY.items()},
    "SQRT": (_SRC, "sqrt", ROUND),
    "RCP": (Const(1.0), _SRC, "div", ROUND),
    # 1 / sqrt(x): the correctly rounded root, then one division
    "RSQRT": (Const(1.0), _SRC, "sqrt", "div", ROUND),
    # a*b rounded, + c rounded (in f32 for F16/BF16), then rounded to the format
    "MAD": (_A, _B, "mul", _C, "add", ROUND),
    "CLAMP": (_SRC, Read("min"), "max", Read("max"), "min"),
    # a + t*(b - a), each step rounded in the compute type, then to the format
    "LERP": (_A, Read("t"), Read("b"), _A, "sub", "mul", "add", ROUND),
}

register_recipes(FLOAT_RECIPES, FLOATS, "float")


@lane_rule("REM", FLOATS)
def lower_rem_float(ctx: LaneContext, instr) -> None:
    """C fmod, exactly (computed in f64; the result is representable in the operands' format)."""
    e = ctx.e
    ty = instr.ty
    ctx.read("lhs")
    if ty is not Type.F64:
        e.op("f64.promote_f32")
    ctx.read("rhs")
    if ty is not Type.F64:
        e.op("f64.promote_f32")
    e.call(ctx.m.helper("fmod64"))
    if ty is not Type.F64:
        e.op("f32.demote_f64")
    ctx.write()


@lane_rule("SIGN", FLOATS)
def lower_sign_float(ctx: LaneContext, instr) -> None:
    """+1 or -1 by the sign; ±0 and NaN stay."""
    e = ctx.e
    ty = instr.ty
    x = ctx.temp(type_info(ty).valtype)
    ctx.read("src")
    e.set(x)
    float_const(ctx, ty, 1.0)
    float_const(ctx, ty, -1.0)
    e.get(x)
    float_const(ctx, ty, 0.0)
    float_op(ctx, ty, "gt")
    e.op("select")
    e.get(x)
    e.get(x)
    float_const(ctx, ty, 0.0)
    float_op(ctx, ty, "ne")
    e.get(x).get(x)
    float_op(ctx, ty, "eq")
    e.op("i32.and")  # x != 0 and not NaN: take the ±1
    e.op("select")
    ctx.write()


def _fused(negate: bool):
    def rule(ctx: LaneContext, instr) -> None:
        ty = ctx.read("a")
        ctx.read("b")
        ctx.read("c")
        if negate:
            float_op(ctx, ty, "neg")
        ctx.e.call(ctx.m.helper("fma64" if ty is Type.F64 else "fma32"))
        ctx.round_to(ty)
        ctx.write()
    rule.__name__ = "lower_fms" if negate else "lower_fma"
    return rule


lane_rule("FMA", FLOATS)(_fused(False))
lane_rule("FMS", FLOATS)(_fused(True))
