"""The WebAssembly a WasmBackend runs for a program, as disassembled text (the demo's code view).

``wasm_listing`` compiles the program the way a launch does (verified
through the backend's cache, the same module options) and disassembles the
module with ``wasm_backend.encoding.disassemble``: a module the backend has
already loaded for that launch shape is shown without compiling again.
"""

from __future__ import annotations

from typing import Any

from atlas_web.errors import ProgramError
from atlas_web.launch import ExecutionParams, LaunchConfig
from atlas_web.program import Program

from .encoding import disassemble

__all__ = ["wasm_listing"]


def wasm_listing(backend: Any, program: Program, config: LaunchConfig) -> str:
    """The disassembly of the module ``backend`` (a WasmBackend) runs for ``program`` launched with ``config``.

    Raises ProgramError (not a Program, or it does not verify), ExecutionFailed (a malformed ``config``) or
    UnsupportedOperation (an instruction this backend cannot compile), as execute_program would; runs nothing.
    """
    if not isinstance(program, Program):
        raise ProgramError(f"generated_code needs a Program, got {type(program).__name__}")
    params = ExecutionParams(config)
    compiled = backend._pipeline.compile(program, {})
    loaded = backend._loaded.get((compiled.digest, compiled.preset_key, compiled.level, params.config))
    wasm = loaded.compiled.wasm if loaded is not None else backend._module(compiled, params.config).wasm
    return f";; WebAssembly module for program {compiled.digest[:16]} ({len(wasm)} bytes)\n" + disassemble(wasm)
