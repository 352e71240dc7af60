"""The WGSL code generator of the WebGPU backend: engine-neutral, standard library only.

The same generator serves wgpu-py natively and ``navigator.gpu`` in the browser. Its parts:

- ``types``: THE type map (Atlas type -> how a register and memory hold it);
- ``library`` and ``lib_*``: WGSL helper functions, emitted only when used;
- ``rules`` and ``rules_*``: rule tables keyed by instruction name (and type family),
  registered by decorators; a missing rule is UnsupportedOperation at compile time;
- ``segments`` and ``stage_shader``: one compute shader per stage of the lowering plan;
- ``kernels``: the registry of cooperative instructions' kernels (support, bindings, shaders,
  dispatch plan), one module per kernel, and ``kernels.shader``, what their WGSL shares;
- ``accuracy``: the measured ulp error of every transcendental (benchmarks/wgsl_accuracy.py).

Importing this package registers every rule.
"""

from __future__ import annotations

from . import (  # noqa: F401  (registration by import)
    lib_double, lib_float, lib_int64, lib_math, lib_rounding, lib_wide, rules_atlas, rules_convert, rules_dword, rules_float,
    rules_lane, rules_math, rules_memory, rules_word, kernels,
)
from .kernels.shader import KernelSpec, kernel_layout, kernel_source, kernel_supported
from .emitter import CodeWriter, ShaderFeatures
from .rules import COMPARE_RULES, WGSL_LANE_RULES, VALUE_RULES, unsupported, value
from .stage_shader import FIRST_CHUNK_BINDING, StageShader, build_stage_shader
from .types import TYPE_MAP, WgslType, is_supported_type

__all__ = [
    "KernelSpec", "kernel_layout", "kernel_source", "kernel_supported", "CodeWriter", "ShaderFeatures",
    "COMPARE_RULES", "WGSL_LANE_RULES", "VALUE_RULES", "unsupported", "value", "FIRST_CHUNK_BINDING", "StageShader",
    "build_stage_shader", "TYPE_MAP", "WgslType", "is_supported_type",
]
