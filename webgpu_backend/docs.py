"""The WebGPU backend's entry in docs/backends.md (collected by ``wasm_backend.docs``, the generator).

Support comes from the WGSL generator's rule tables (``wgsl.support``), accuracy from the measured
table ``wgsl.accuracy`` (benchmarks/wgsl_accuracy.py). Imports no engine: documenting needs no device.
"""

from __future__ import annotations

from atlas_web.isa.enums import BinaryMapOperation, MapOperation
from atlas_web.isa.opcodes import COOPERATIVE_OPERATION_TYPES, OpcodeInfo
from atlas_web.isa.types import Type

from .wgsl import kernel_supported
from .wgsl.accuracy import DEVICE, MEASURED, TOLERANCE_ULP
from .wgsl.cooperative import BINARY_INSTRUCTIONS, MAP_INSTRUCTIONS
from .wgsl.support import supports_instruction

__all__ = ["backend_documentation", "NOTES"]

NOTES = (
    "Compiled to WGSL compute shaders (one per stage of the lowering plan, one kernel per cooperative "
    "step) and run by wgpu-py natively (Vulkan; Mesa lavapipe without a GPU) or `navigator.gpu` in the "
    "browser, from the same generator.",
    "F64: WGSL has no 64-bit float, so every F64 instruction raises `UnsupportedOperation` (no software "
    "emulation); `init_backend(AUTO, program=...)` skips webgpu for such programs and picks the next backend "
    "that supports every (instruction, type) of the program.",
    "F16 computes in f32 and rounds with `f16()` where the device has shader-f16, else with "
    "`pack2x16float`; BF16 rounds to nearest even on the bits. 8/16-bit integers live in u32 words, 64-bit ones "
    "in `vec2<u32>`, the extended integers in a per-lane register file in memory (limb loops).",
    "Transcendentals: the WGSL builtins were measured on " + DEVICE + " and replaced by our own f32 "
    "implementations wherever they are worse than 4 ulp (all of them there); GELU and POW carry their "
    "argument in double-f32. F16/BF16 results are the f32 function rounded once (bound: 1 ulp). The table "
    "below is the measured f32 error; `ulp_tolerance` adds one ulp of margin.",
    "FMA/FMS are computed exactly in integer arithmetic (WGSL's `fma` may round twice); MIN/MAX test NaN on "
    "the bits; products and constants that must not be fused or folded pass through a run-time XOR with zero.",
    "ParallelReduce accumulates floats in f32 in a tree (within the contract's `count * eps`); float sums "
    "keep magnitudes of 2**64 and more scaled by 2**-64 in an accumulator of their own, so no partial of "
    "finite values overflows (an infinity or NaN in the result comes from the values); integer "
    "reductions wrap exactly. A source array that overlaps the destination at another offset is copied "
    "first, so ParallelMap/ParallelMapBinary read every value as it was before the instruction.",
    "On Mesa's llvmpipe a lane may take at most 60000 backward jumps per dispatch (the engine ends longer "
    "loops silently); past that a launch raises `ExecutionFailed` instead of giving wrong results.",
)

_OPERATION_NAMES = {**MAP_INSTRUCTIONS, **BINARY_INSTRUCTIONS}
_FORMATS = {Type.F16: "f16", Type.BF16: "bf16", Type.F32: "f32"}


def _supports(info: OpcodeInfo, ty: Type | None) -> bool:
    if info.types and ty not in info.types:
        return False
    if not info.types and ty is not None:
        return False
    return supports_instruction(info, ty)


def _supports_operation(operation: object, ty: Type) -> bool:
    return ty in COOPERATIVE_OPERATION_TYPES[operation] and kernel_supported(operation, ty)


def _ulps() -> dict[tuple[str, str], float]:
    out = {}
    for ty, fmt in _FORMATS.items():
        for op, row in MEASURED.items():
            value = row["ours"] if fmt == "f32" else TOLERANCE_ULP[op][fmt]
            if op not in ("POW", "ATAN2"):
                out[(op, ty.name)] = float(value)
        for instruction, enum in (("ParallelMap", MapOperation), ("ParallelMapBinary", BinaryMapOperation)):
            for operation in enum:
                name = _OPERATION_NAMES[operation]
                if name in MEASURED and ty in COOPERATIVE_OPERATION_TYPES[operation]:
                    value = MEASURED[name]["ours"] if fmt == "f32" else TOLERANCE_ULP[name][fmt]
                    out[(f"{instruction}.{operation.name}", ty.name)] = float(value)
    return out


def backend_documentation():
    """The webgpu backend's ``BackendDocumentation`` (support from its rule tables, measured ulps, notes)."""
    from wasm_backend.docs import BackendDocumentation
    return BackendDocumentation("webgpu", "g", _supports, _supports_operation, _ulps(), NOTES)
