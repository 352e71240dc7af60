"""ParallelMapBinary's kernel: ``dst[i] = operation(src_a[i], src_b[i])`` (see ``elementwise``), with
vec4 forms for Add, Sub, Mul on 32-bit types and Div on F32. Standard library only."""

from __future__ import annotations

from atlas_web.isa.enums import BinaryMapOperation

from . import register
from .elementwise import VECTOR_TYPES, ElementwiseKernel
from .shader import VECTOR_BINARY

__all__ = ["BinaryMapKernel"]


class BinaryMapKernel(ElementwiseKernel):
    instruction = "ParallelMapBinary"
    shader_kind = "binary"

    def vector(self, operation, ty) -> bool:
        return ty.name in VECTOR_TYPES and (
            operation in VECTOR_BINARY or (ty.name == "F32" and operation is BinaryMapOperation.Div))


register(BinaryMapKernel())
