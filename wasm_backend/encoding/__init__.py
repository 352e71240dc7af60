"""A pure-Python WebAssembly binary encoder, decoder and disassembler (standard library only).

One instruction table (``opcodes.WASM_OPCODES``) drives the encoder, the
decoder, the code writer and the disassembler:

>>> from wasm_backend.encoding import ModuleBuilder, ValType, disassemble
>>> mb = ModuleBuilder()
>>> add = mb.add_function("add", [ValType.I32, ValType.I32], [ValType.I32], export=True)
>>> _ = add.code.local_get(0).local_get(1).i32_add()
>>> print(disassemble(mb.to_bytes()).split("\\n")[5])
    i32.add
"""

from __future__ import annotations

from .body_writer import BodyWriter
from .disasm import disassemble, function_listing
from .immediates import MemArg
from .instructions import Instruction, decode_instruction, encode_instruction, format_instruction
from .leb128 import decode_sleb128, decode_uleb128, encode_sleb128, encode_uleb128
from .module import FunctionBuilder, ModuleBuilder
from .opcodes import OPCODE_BY_CODE, OPCODE_BY_NAME, WASM_OPCODES, OpcodeRow
from .reader import decode_module
from .structure import Module
from .types import PAGE_SIZE, ExternKind, FuncType, Limits, ValType
from .writer import encode_module

__all__ = [
    "BodyWriter", "disassemble", "function_listing", "MemArg", "Instruction", "decode_instruction",
    "encode_instruction", "format_instruction", "decode_sleb128", "decode_uleb128", "encode_sleb128",
    "encode_uleb128", "FunctionBuilder", "ModuleBuilder", "OPCODE_BY_CODE", "OPCODE_BY_NAME", "WASM_OPCODES",
    "OpcodeRow", "decode_module", "Module", "PAGE_SIZE", "ExternKind", "FuncType", "Limits", "ValType",
    "encode_module",
]
