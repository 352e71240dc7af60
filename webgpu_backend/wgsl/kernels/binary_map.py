"""ParallelMapBinary's kernel: ``dst[i] = operation(src_a[i], src_b[i])`` (see ``elementwise``), with
vec4 forms for Add, Sub, Mul on 32-bit types (Div is the correctly rounded scalar helper, element by
element). Standard library only."""

from __future__ import annotations

from . import register
from .elementwise import VECTOR_TYPES, ElementwiseKernel
from .shader import VECTOR_BINARY

__all__ = ["BinaryMapKernel"]


class BinaryMapKernel(ElementwiseKernel):
    instruction = "ParallelMapBinary"
    shader_kind = "binary"

    def vector(self, operation, ty) -> bool:
        return ty.name in VECTOR_TYPES and operation in VECTOR_BINARY


register(BinaryMapKernel())
