"""The WebAssembly code generator: Atlas programs to wasm modules (SIMD128).

``compile_program(program, info, config)`` writes one module per program and launch shape (see
``program_module``) from the shared front-end's lowering plan (``atlas_web.lowering.plan_program``):
one function per segment (``segment_function``), one per cooperative instruction (``coop_*``), and,
for straight-line programs whose instructions all have SIMD rules, a four-lanes-per-step function
(``simd_lanes``). The rules live in tables keyed by instruction name and type (``rules``), filled by
decorators in the ``rules_*`` modules (per-lane instructions) and ``coop_*`` modules (cooperative
instructions); ``math_seam`` is where the vectorized math library plugs in (``mathlib_adapter``
connects ``wasm_backend.mathlib``).
"""

from __future__ import annotations

from .math_seam import MATH_FUNCTIONS, MathFunction, math_function_for, register_math_function
from .program_module import CompiledProgram, check_supported, compile_program
from .rules import (
    COOPERATIVE_RULES, WASM_LANE_RULES, cooperative_operation_supported, cooperative_supported, lane_supported,
    op_supported,
)

__all__ = [
    "CompiledProgram", "compile_program", "check_supported", "lane_supported", "cooperative_supported",
    "cooperative_operation_supported", "op_supported", "WASM_LANE_RULES", "COOPERATIVE_RULES", "MathFunction", "MATH_FUNCTIONS",
    "register_math_function", "math_function_for",
]
