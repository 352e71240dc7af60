"""A pure-Python WebAssembly binary encoder, decoder and disassembler.

One instruction table (``opcodes.OPCODE_TABLE``) drives the encoder, the
decoder, the code writer and the disassembler. Standard library only.
"""
