"""Per-lane rules of the register instructions: the typed computations (through VALUE_RULES),
MOV, MOV_IMM, CVT, SETcc, SEL and MemFence.

A typed computation reads its register operands in opcode-table order, asks the value rule
of its type's family for the result and writes the destination. MOV of a float passes
through ``opaque_f32``, so a copy is never "the same value" to the compiler's algebra.
"""

from __future__ import annotations

from atlas_web.isa.enums import MemoryScope
from atlas_web.isa.effects import is_typed_computation
from atlas_web.isa.floats import float_to_bits
from atlas_web.isa.opcodes import OPCODE_TABLE, Access, OperandKind
from atlas_web.isa.types import Type

from .lane_context import LaneContext
from .rules import COMPARE_RULES, lane_rule, unsupported, value
from .rules_convert import convert
from .rules_wide import WIDE_RULES
from .types import TYPE_MAP, WgslType, f32_literal, u32_literal

__all__ = ["literal", "TYPED_COMPUTATIONS", "MEMORY_SCOPES"]

#: the instructions whose lane code is "read the operands, compute, write dst" (the table says which)
TYPED_COMPUTATIONS = tuple(row.name for row in OPCODE_TABLE if is_typed_computation(row))

_READS = {row.name: tuple(o.name for o in row.operands if o.kind is OperandKind.REG and o.access is Access.READ)
          for row in OPCODE_TABLE}


def literal(wt: WgslType, value: int | float) -> str:
    """The WGSL constant of an (already normalized) immediate of ``wt``."""
    if wt.family == "float":
        return f32_literal(float_to_bits(float(value), Type.F32))
    bits = int(value) & ((1 << wt.bits) - 1)
    words = [u32_literal(bits >> (32 * k)) for k in range(wt.words)]
    return words[0] if wt.family == "word" else f"{wt.wgsl}({', '.join(words)})"


def _wide(ctx: LaneContext, instr, ty) -> bool:
    """Run the extended-integer rule of ``instr`` when ``ty`` is extended; True when it did."""
    wt = TYPE_MAP.get(ty)
    if wt is None or wt.family != "wide":
        return False
    rule = WIDE_RULES.get(instr.INFO.name)
    if rule is None:
        raise unsupported(instr.INFO.name, ty)
    rule(ctx, wt, instr)
    return True


@lane_rule(*TYPED_COMPUTATIONS)
def _typed(ctx: LaneContext, instr) -> None:
    if _wide(ctx, instr, instr.ty):
        return
    args = tuple(ctx.read(name) for name in _READS[instr.INFO.name])
    ctx.write("dst", value(ctx, instr.INFO.name, instr.ty, args))


@lane_rule("MOV")
def _mov(ctx: LaneContext, instr) -> None:
    if _wide(ctx, instr, instr.ty):
        return
    source = ctx.read("src")
    if TYPE_MAP[instr.ty].family == "float":
        source = f"{ctx.helper('opaque_f32')}({source})"
    ctx.write("dst", source)


@lane_rule("MOV_IMM")
def _mov_imm(ctx: LaneContext, instr) -> None:
    if _wide(ctx, instr, instr.ty):
        return
    wt = TYPE_MAP[instr.ty]
    constant = literal(wt, instr.value)
    if wt.family == "float":
        constant = f"{ctx.helper('opaque_f32')}({constant})"
    ctx.write("dst", constant)


@lane_rule("CVT")
def _cvt(ctx: LaneContext, instr) -> None:
    if instr.src_ty not in TYPE_MAP:
        raise unsupported("CVT", instr.src_ty)
    if _wide(ctx, instr, instr.src_ty) or _wide(ctx, instr, instr.dst_ty):
        return
    ctx.write("dst", convert(ctx, TYPE_MAP[instr.src_ty], TYPE_MAP[instr.dst_ty], ctx.read("src")))


@lane_rule("SETcc")
def _setcc(ctx: LaneContext, instr) -> None:
    if _wide(ctx, instr, instr.ty):
        return
    wt = TYPE_MAP[instr.ty]
    lhs, rhs = ctx.read("lhs"), ctx.read("rhs")
    ctx.write("pred", COMPARE_RULES[wt.family](ctx, wt, instr.cond, lhs, rhs))


@lane_rule("SEL")
def _sel(ctx: LaneContext, instr) -> None:
    if _wide(ctx, instr, instr.ty):
        return
    ctx.write("dst", f"select({ctx.read('false_val')}, {ctx.read('true_val')}, {ctx.read('pred')})")


#: MemFence scope -> the WGSL it becomes. Lanes see each other's writes only across barriers and
#: stages (docs/semantics.md), where the generated code synchronizes anyway, so no scope needs
#: code; WGSL has no fence without a control barrier, and a barrier here could be non-uniform.
MEMORY_SCOPES: dict[MemoryScope, str] = {
    MemoryScope.Thread: "", MemoryScope.Block: "", MemoryScope.Device: "", MemoryScope.System: "",
}


@lane_rule("MemFence")
def _mem_fence(ctx: LaneContext, instr) -> None:
    code = MEMORY_SCOPES[instr.scope]
    ctx.emit(code or f"// memfence.{instr.scope.text}: ordered by the launch model, no code")
