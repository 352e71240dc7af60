"""The Atlas ISA as data: types, registers, addresses, enums, the opcode table and the instructions."""

from __future__ import annotations

from . import instructions as _instructions
from .addresses import (
    ADDRESS_MODES, BOUNDARY_BYTES, BOUNDARY_HANDLE, CLASS_STRIDE, Address, BufferHandle, PoolHandle,
    make_pointer, split_pointer,
)
from .enums import BinaryMapOperation, Condition, MapOperation, MemoryScope, ReduceOperation
from .extents import ArrayOperand, array_operands, extent_elements
from .instructions import INSTRUCTION_CLASSES, Instruction, by_name, by_opcode, info_of
from .opcodes import (
    ALL, EXTENDED, FLOATS, INTS, OPCODE_TABLE, SCALARS, Access, ExecKind, OpcodeInfo, Operand, OperandKind, TypeRule,
)
from .operations import COOPERATIVE_OPERATION_TYPES
from .registers import (
    FIRST_SPECIAL_REGISTER, NUM_PREDICATES, NUM_REGISTERS, Label, Predicate, Register, SpecialRegister,
)
from .types import ALL_TYPES, FLOAT_TYPES, INTEGER_TYPES_UP_TO_64, Type, TypeClass

# every instruction class by its seed name: ``from atlas_web.isa import ADD, ParallelMapBinary``
globals().update(INSTRUCTION_CLASSES)

__all__ = [
    "Type", "TypeClass", "ALL_TYPES", "FLOAT_TYPES", "INTEGER_TYPES_UP_TO_64",
    "Register", "Predicate", "Label", "SpecialRegister", "NUM_REGISTERS", "NUM_PREDICATES",
    "FIRST_SPECIAL_REGISTER", "Address", "ADDRESS_MODES", "BufferHandle", "PoolHandle", "BOUNDARY_HANDLE",
    "BOUNDARY_BYTES", "CLASS_STRIDE", "make_pointer", "split_pointer",
    "Condition", "MemoryScope", "MapOperation", "BinaryMapOperation", "ReduceOperation",
    "Instruction", "INSTRUCTION_CLASSES", "by_name", "by_opcode", "info_of",
    "OPCODE_TABLE", "OpcodeInfo", "Operand", "OperandKind", "Access", "ExecKind", "TypeRule",
    "ALL", "SCALARS", "FLOATS", "INTS", "EXTENDED", "COOPERATIVE_OPERATION_TYPES",
    "ArrayOperand", "array_operands", "extent_elements",
    *INSTRUCTION_CLASSES,
]
del _instructions
