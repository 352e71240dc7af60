"""Text assembly of Atlas programs: the public entry points.

Formatting lives in ``atlas_web.asm_format`` and parsing in
``atlas_web.asm_parse``; both derive the syntax from the opcode table.
``parse_program(format_program(p)) == p`` for every Program, and the
formatted text is canonical. Parsing raises only ProgramError.
"""

from __future__ import annotations

from .asm_format import format_immediate, format_instruction, format_mnemonic, format_program
from .asm_parse import parse_float_literal, parse_instruction, parse_int_literal, parse_program

__all__ = [
    "format_instruction", "format_program", "parse_instruction", "parse_program",
    "format_immediate", "format_mnemonic", "parse_int_literal", "parse_float_literal",
]
