"""Rows the opcode table does not have, made with the table's own constructors, and ``rows_added`` that makes
the program forms and the verifier see them as rows of the table (as adding them to opcodes.py would) for the
duration of a ``with`` block: how tests show that a new row needs no other change."""

from __future__ import annotations

import contextlib
from typing import Iterator

from atlas_web import asm_parse
from atlas_web.isa import instructions
from atlas_web.isa.opcodes import FLOATS, Access, ExecKind, OpcodeInfo, Operand, OperandKind, TypeRule
from atlas_web.isa.types import Type

__all__ = ["gemm_row", "address", "shape", "MADE_ROWS", "rows_added"]


def address(name: str, memory: Access, extent: str) -> Operand:
    """A global address operand covering ``extent`` elements of the instruction's type."""
    return Operand(name, OperandKind.ADDR, "global", memory=memory, extent=extent, element=TypeRule.TY)


def shape(name: str) -> Operand:
    """A shape operand (a 32-bit unsigned immediate)."""
    return Operand(name, OperandKind.UINT, 32)


def gemm_row(**overrides) -> OpcodeInfo:
    """c[m*n] = alpha * a[m*k] @ b[k*n] + beta * c: a cooperative row with shapes and float immediates (alpha
    stored as f32, beta as f64)."""
    fields = dict(name="MadeGEMM", opcode=0xF0, mnemonic="madegemm",
                  operands=(address("c", Access.READ_WRITE, "m*n"), address("a", Access.READ, "m*k"),
                            address("b", Access.READ, "k*n"), shape("m"), shape("n"), shape("k"),
                            Operand("alpha", OperandKind.FLOAT, Type.F32), Operand("beta", OperandKind.FLOAT, Type.F64)),
                  type_fields=("ty",), types=FLOATS, kind=ExecKind.COOPERATIVE, category="cooperative",
                  summary="c = alpha * a @ b + beta * c", default_type=Type.F32)
    fields.update(overrides)
    return OpcodeInfo(**fields)


#: the made rows the program-form tests run beside the table's
MADE_ROWS: tuple[OpcodeInfo, ...] = (gemm_row(),)


@contextlib.contextmanager
def rows_added(*infos: OpcodeInfo) -> Iterator[dict[str, type]]:
    """Within the block, ``infos`` are rows of the table for the instruction classes, the text, bytecode and JSON
    forms and the verifier; yields their classes by name."""
    classes = {info.name: instructions.make_instruction_class(info) for info in infos}
    saved = (dict(instructions.INSTRUCTION_CLASSES), dict(instructions._BY_OPCODE), dict(asm_parse._BY_MNEMONIC))
    for info in infos:
        instructions.INSTRUCTION_CLASSES[info.name] = classes[info.name]
        instructions._BY_OPCODE[info.opcode] = classes[info.name]
        asm_parse._BY_MNEMONIC[info.mnemonic] = info
    try:
        yield classes
    finally:
        for registry, before in zip((instructions.INSTRUCTION_CLASSES, instructions._BY_OPCODE,
                                     asm_parse._BY_MNEMONIC), saved):
            registry.clear()
            registry.update(before)
