"""The WebAssembly backend of atlas-web.

``wasm_backend.encoding`` writes and reads WebAssembly binaries in pure Python
(LEB128, one instruction table covering core wasm 2.0, SIMD128 and relaxed
SIMD, a module builder, a WAT-like disassembler). ``wasm_backend.runner``
declares the engine-neutral runner interface; ``wasm_backend.runners`` holds
its implementations (wasmtime natively). Nothing here imports wasmtime or
NumPy at package import time.
"""
