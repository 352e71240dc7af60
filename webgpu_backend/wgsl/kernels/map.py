"""ParallelMap's kernel: ``dst[i] = operation(src[i])`` (see ``elementwise``). Standard library only."""

from __future__ import annotations

from . import register
from .elementwise import ElementwiseKernel

__all__ = ["MapKernel"]


class MapKernel(ElementwiseKernel):
    instruction = "ParallelMap"
    shader_kind = "map"


register(MapKernel())
