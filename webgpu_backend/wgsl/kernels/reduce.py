"""ParallelReduce's kernel: partial results of up to MAX_GROUPS workgroups, then one workgroup
combines them and writes the register result (``rt[launch.result]``); F32 Sum and Product read
vec4s when the source is 16-byte aligned. Shaders: ``wgsl.cooperative``. Standard library only."""

from __future__ import annotations

from atlas_web.isa.enums import ReduceOperation
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES, OPERATION_ENUMS

from ..cooperative import ELEMENTS_PER_INVOCATION, MAX_GROUPS, WORKGROUP, KernelSpec, kernel_supported
from . import DeviceLimits, Dispatch, Kernel, KernelPlan, register
from .binding import ROLE_BINDINGS, binding_plan

__all__ = ["ReduceKernel"]

#: binding 6: the partial results of the first pass
_BINDINGS = {**ROLE_BINDINGS, 6: "partials"}


class ReduceKernel(Kernel):
    instruction = "ParallelReduce"
    launch_fields = ("dst", "src_a", "src_b", "count", "result", "groups")

    def operations(self, ty):
        return tuple(op for op in OPERATION_ENUMS[self.instruction] if ty in COOPERATIVE_OPERATION_TYPES[op])

    def operation_of(self, instr):
        return instr.operation

    def supports(self, operation, ty) -> bool:
        return operation is not None and kernel_supported(operation, ty)

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        ty, count, operation = instr.ty, instr.count, instr.operation
        offsets = {role: byte for role, (_, byte) in operands.items()}
        vector = (all(byte % 16 == 0 for byte in offsets.values()) and ty.name == "F32"
                  and operation in (ReduceOperation.Sum, ReduceOperation.Product))
        bound, _ = binding_plan(operands, count * ty.size_bytes(), device.bind_alignment)
        per_group = WORKGROUP * (4 * ELEMENTS_PER_INVOCATION if vector else 1)
        groups = max(1, min(MAX_GROUPS, -(-count // per_group)))
        fields = {"count": count, "groups": groups}
        if not bound:
            fields.update(dst=offsets.get("dst", 0), src_a=offsets.get("src_a", 0), src_b=offsets.get("src_b", 0))
        return KernelPlan((Dispatch(KernelSpec("reduce", operation, ty, vector, bound), _BINDINGS, (groups, 1, 1)),
                           Dispatch(KernelSpec("reduce_final", operation, ty), _BINDINGS, (1, 1, 1))), fields)

    def listing(self, instr):
        return [(kind, KernelSpec(kind, instr.operation, instr.ty)) for kind in ("reduce", "reduce_final")]


register(ReduceKernel())
