"""Lane rules of the transcendental instructions, through the math-library seam (``math_seam``).

Each rule is registered for every float type but is available only while the math library provides
its function for the type's compute type: F16/BF16 call the F32 function and round the result to
their format; F32/F64 call theirs. Without the library they are unsupported.
"""

from __future__ import annotations

from atlas_web.isa.opcodes import FLOATS
from atlas_web.isa.types import Type

from .lane_context import LaneContext
from .math_seam import LANE_MATH_OPS, math_function_for
from .rules import lane_rule

__all__: list[str] = []


def _math_rule(name: str):
    def rule(ctx: LaneContext, instr) -> None:
        function = math_function_for(name, instr.ty)
        ty = ctx.read("src")
        function.scalar(ctx.m, ctx.e, Type.F64 if ty is Type.F64 else Type.F32)
        ctx.round_to(ty)
        ctx.write()
    rule.__name__ = f"lower_{name.lower()}"
    return rule


for _name in LANE_MATH_OPS:
    lane_rule(_name, FLOATS, available=lambda ty, _op=_name: math_function_for(_op, ty) is not None)(_math_rule(_name))
