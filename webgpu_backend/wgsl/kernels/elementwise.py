"""The element-wise kernels' shared plan: ParallelMap and ParallelMapBinary (``map.py``,
``binary_map.py``) over ``count`` elements of ``ty`` with a cooperative ``operation``.

One invocation per element (or per destination word for 8- and 16-bit types); with every array
16-byte aligned and a vec4 form of the operation, whole vec4s first and then the scalar tail
kernel (one workgroup) for the count % 4 left. Shaders: ``wgsl.cooperative``. Standard library only.
"""

from __future__ import annotations

from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES, OPERATION_ENUMS

from ..cooperative import WORKGROUP, KernelSpec, kernel_supported
from . import DeviceLimits, Dispatch, Kernel, KernelPlan
from .binding import ROLE_BINDINGS, binding_plan

__all__ = ["ElementwiseKernel", "VECTOR_TYPES"]

#: element types with vec4 views (32-bit words)
VECTOR_TYPES = ("F32", "U32", "I32")


class ElementwiseKernel(Kernel):
    """A cooperative instruction with ``dst``, its sources, ``count``, ``ty`` and ``operation``;
    ``shader_kind``: the KernelSpec kind of its shaders."""

    launch_fields = ("dst", "src_a", "src_b", "count")
    snapshot_sources = True
    shader_kind = ""

    def operations(self, ty):
        return tuple(op for op in OPERATION_ENUMS[self.instruction] if ty in COOPERATIVE_OPERATION_TYPES[op])

    def operation_of(self, instr):
        return instr.operation

    def supports(self, operation, ty) -> bool:
        return operation is not None and kernel_supported(operation, ty)

    def vector(self, operation, ty) -> bool:
        """Whether a vec4 form of ``operation`` on ``ty`` exists (every array 16-byte aligned)."""
        return False

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        ty, count, operation, kind = instr.ty, instr.count, instr.operation, self.shader_kind
        size = ty.size_bytes()
        offsets = {role: byte for role, (_, byte) in operands.items()}
        vector = all(byte % 16 == 0 for byte in offsets.values()) and self.vector(operation, ty)
        bound, sources = binding_plan(operands, count * size, device.bind_alignment)
        fields = {"count": count}
        if not bound:
            fields.update(dst=offsets.get("dst", 0), src_a=offsets.get("src_a", 0), src_b=offsets.get("src_b", 0))
        if vector:
            # whole vec4s, then the tail kernel (the count % 4 elements left; it marks the step)
            dispatches = [Dispatch(KernelSpec(kind, operation, ty, False, bound, tail=True, sources=sources),
                                   ROLE_BINDINGS, (1, 1, 1))]
            if count >= 4:
                groups = -(-(count // 4) // WORKGROUP)
                dispatches.insert(0, Dispatch(KernelSpec(kind, operation, ty, True, bound, sources=sources),
                                              ROLE_BINDINGS, device.split(groups)))
            return KernelPlan(tuple(dispatches), fields)
        invocations = count if size >= 4 else -(-((offsets["dst"] & 3) + count * size) // 4)
        groups = max(1, -(-invocations // WORKGROUP))
        spec = KernelSpec(kind, operation, ty, False, bound, sources=sources)
        return KernelPlan((Dispatch(spec, ROLE_BINDINGS, device.split(groups)),), fields)

    def listing(self, instr):
        return [(self.shader_kind, KernelSpec(self.shader_kind, instr.operation, instr.ty))]
