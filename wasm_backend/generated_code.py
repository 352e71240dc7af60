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
from .lowering import compile_program

__all__ = ["wasm_listing"]


def wasm_listing(backend: Any, program: Program, config: LaunchConfig) -> str:
    """The disassembly of the module ``backend`` (a WasmBackend) runs for ``program`` launched with ``config``.

    Raises ProgramError (not a Program, or it does not verify), ExecutionFailed (a malformed ``config``) or
    UnsupportedOperation (an instruction this backend cannot compile), as execute_program would; runs nothing.
    """
    if not isinstance(program, Program):
        raise ProgramError(f"generated_code needs a Program, got {type(program).__name__}")
    params = ExecutionParams(config)
    digest = program.digest()
    loaded = backend._loaded.get((digest, (), params.config))
    if loaded is not None:
        wasm = loaded.compiled.wasm
    else:
        info = backend._verified(program, params, digest, ())
        runner = backend._runner
        wasm = compile_program(program, info, params.config, name=f"atlas_{digest[:16]}",
                               shared_memory=runner.shared_memory, parallel=runner.threads > 1).wasm
    return f";; WebAssembly module for program {digest[:16]} ({len(wasm)} bytes)\n" + disassemble(wasm)
