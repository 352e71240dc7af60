"""The WebAssembly backend of atlas-web.

``WasmBackend`` (registry name ``"wasm"``) compiles Atlas programs to WebAssembly modules with SIMD128
(``wasm_backend.lowering``) and runs them on a runner (wasmtime natively). ``wasm_backend.encoding``
writes and reads WebAssembly binaries in pure Python; ``wasm_backend.runner`` declares the
engine-neutral runner interface and ``wasm_backend.runners`` holds its implementations. Nothing here
imports wasmtime or NumPy at package import time: ``WasmBackend`` is imported on first use.
"""

from __future__ import annotations

__all__ = ["WasmBackend"]


def __getattr__(name: str):
    if name == "WasmBackend":
        from .backend import WasmBackend
        return WasmBackend
    raise AttributeError(f"module 'wasm_backend' has no attribute {name!r}")
