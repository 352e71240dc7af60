"""The WGSL a WebGpuBackend runs for a program (the demo's code view).

``wgsl_listing`` compiles the program as a launch does (the backend's
program cache) and lists each stage shader's WGSL for the launch shape, then
the kernel of each cooperative step in its scalar form (a launch may pick
the vec4 variant of the same kernel when the arrays are 16-byte aligned).
"""

from __future__ import annotations

from typing import Any

from atlas_web.errors import ProgramError
from atlas_web.launch import ExecutionParams, LaunchConfig
from atlas_web.program import Program

__all__ = ["wgsl_listing"]


def wgsl_listing(backend: Any, program: Program, config: LaunchConfig) -> str:
    """The WGSL sources ``backend`` (a WebGpuBackend) runs for ``program`` launched with ``config``.

    Raises ProgramError (not a Program, or it does not verify), ExecutionFailed (a malformed ``config``) or
    UnsupportedOperation (an instruction WGSL cannot run here), as execute_program would; runs nothing.
    """
    if not isinstance(program, Program):
        raise ProgramError(f"generated_code needs a Program, got {type(program).__name__}")
    params = ExecutionParams(config)
    compiled = backend._compile(backend._pipeline.compile(program, {}), params.config)
    features = backend.features
    shaders = compiled.stage_shaders(params.config, features, max(1, len(backend._memory.chunks)))
    parts = []
    for shader in shaders:
        if shader.stage in compiled.passes_to or shader.stage in compiled.empty_stages:
            continue
        parts.append(f"// ---- stage {shader.stage}: lanes of program {compiled.digest[:16]}\n{shader.source}")
    for index, step in sorted(compiled.steps.items()):
        for label, spec in step.kernel.listing(step.instr):
            parts.append(f"// ---- cooperative step {index} ({step.instr.INFO.name}.{step.instr.ty.name.lower()}): "
                         f"{label} kernel\n{spec.source(features)}")
    return "\n".join(parts) if parts else f"// program {compiled.digest[:16]} needs no shader"
