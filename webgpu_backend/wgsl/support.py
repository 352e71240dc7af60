"""What the WGSL generator supports, derived from its rule tables (never listed by hand).

An instruction is supported for a type when its kind has a home (control flow and BarSync are
structural; cooperative instructions have a registered kernel (``kernels``) or a default
expansion; per-lane instructions have a
lane rule) and, for typed computations, the type's family has a value rule. F64 has no WGSL type,
so nothing is supported on it.
"""

from __future__ import annotations

from atlas_web.isa.opcodes import STRUCTURAL_INSTRUCTIONS, ExecKind, OpcodeInfo
from atlas_web.isa.operations import operation_instruction
from atlas_web.isa.types import Type
from atlas_web.lowering.expansions import expansion_supported

from .kernels import KERNELS
from .rules import WGSL_LANE_RULES, VALUE_RULES, unsupported
from .rules_lane import TYPED_COMPUTATIONS
from .rules_wide import WIDE_RULES
from .types import TYPE_MAP

__all__ = ["supports_instruction", "operation_supported", "has_kernel", "check_program", "STRUCTURAL"]

#: instructions that become control flow or the stage structure rather than a rule
STRUCTURAL = STRUCTURAL_INSTRUCTIONS


def supports_instruction(info: OpcodeInfo, ty: Type | None) -> bool:
    """Whether instruction ``info`` compiles for ``ty`` (None for an untyped row)."""
    if ty is not None and ty not in TYPE_MAP:
        return False
    name = info.name
    if name in STRUCTURAL:
        return True
    kernel = KERNELS.get(name)
    if kernel is not None:
        return any(kernel.supports(op, ty) for op in kernel.operations(ty))
    if info.kind is ExecKind.COOPERATIVE:   # no kernel here: its default expansion, where it has one
        return expansion_supported(info, ty, supports_instruction, operation_supported)
    if name not in WGSL_LANE_RULES:
        return False
    if ty is not None and TYPE_MAP[ty].family == "wide" and name in WGSL_LANE_RULES:
        return name in WIDE_RULES or name not in TYPED_COMPUTATIONS
    if name in TYPED_COMPUTATIONS:
        return (name, TYPE_MAP[ty].family) in VALUE_RULES
    return True


def operation_supported(operation: object, ty: Type) -> bool:
    """Whether the cooperative ``operation`` (a MapOperation, BinaryMapOperation or ReduceOperation member)
    has a kernel for ``ty``."""
    kernel = KERNELS.get(operation_instruction(operation))
    return ty in TYPE_MAP and kernel is not None and operation in kernel.operations(ty) and kernel.supports(operation, ty)


def has_kernel(info: OpcodeInfo) -> bool:
    """Whether a registered kernel (or host step) runs cooperative ``info`` (else its default expansion runs)."""
    return info.name in KERNELS


def check_program(program) -> None:
    """Raise UnsupportedOperation for the first instruction of ``program`` that cannot compile."""
    for instr in program.instructions:
        info = instr.INFO
        for field in info.type_fields:
            ty = getattr(instr, field)
            if ty not in TYPE_MAP:
                raise unsupported(info.name, ty)
        kernel = KERNELS.get(info.name)
        if kernel is not None:
            kernel.check(instr)
        elif not supports_instruction(info, instr.type):
            raise unsupported(info.name, instr.type)
