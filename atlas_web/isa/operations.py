"""The cooperative operations (MapOperation, BinaryMapOperation, ReduceOperation) and what they mean, once.

Each operation is the element-wise application (or the fold, for a reduction) of one lane function:
``ELEMENT_FUNCTIONS[op]`` names it. Where a per-lane instruction of the opcode table has that meaning
(``MapOperation.Exp`` is ``EXP``, ``ReduceOperation.Sum`` folds with ``ADD``) the name is the
instruction's; the three operations no instruction computes keep their own name (``RELU``: max(x, 0)
with -0 giving +0; ``POW`` and ``ATAN2``, see docs/semantics.md). ``lane_instruction(op)`` gives the
instruction or None. ``COOPERATIVE_OPERATION_TYPES`` says which types each operation accepts, and
``OPERATION_ENUMS`` which enumeration each cooperative instruction of the table carries (derived from
its ``operation`` operand).
"""

from __future__ import annotations

from .enums import BinaryMapOperation, MapOperation, ReduceOperation
from .opcodes import FLOATS, OPCODE_TABLE, SCALARS, OperandKind
from .types import Type

__all__ = ["COOPERATIVE_OPERATION_TYPES", "ELEMENT_FUNCTIONS", "OPERATION_ENUMS", "OPERATION_INSTRUCTIONS",
           "COOPERATIVE_OPERATIONS", "lane_instruction", "operation_instruction"]

#: the types each cooperative operation accepts (floats always; integers where exact)
COOPERATIVE_OPERATION_TYPES: dict[object, frozenset[Type]] = {
    **{op: FLOATS for op in MapOperation},
    MapOperation.Abs: SCALARS, MapOperation.Neg: SCALARS, MapOperation.Relu: SCALARS,
    **{op: FLOATS for op in BinaryMapOperation},
    BinaryMapOperation.Add: SCALARS, BinaryMapOperation.Sub: SCALARS, BinaryMapOperation.Mul: SCALARS,
    BinaryMapOperation.Min: SCALARS, BinaryMapOperation.Max: SCALARS,
    **{op: SCALARS for op in ReduceOperation},
}

#: the operations whose lane function is no instruction of the table, by their own name
_OWN_NAMES = {MapOperation.Relu: "RELU", BinaryMapOperation.Pow: "POW", BinaryMapOperation.Atan2: "ATAN2"}
#: the reductions: the binary instruction each folds with
_FOLDS = {ReduceOperation.Sum: "ADD", ReduceOperation.Product: "MUL", ReduceOperation.Min: "MIN",
          ReduceOperation.Max: "MAX"}

#: operation -> the name of its lane function: the instruction of the same name and meaning (Map and
#: MapBinary: ``Exp`` -> ``EXP``), the instruction a reduction folds with, or the operation's own name
ELEMENT_FUNCTIONS: dict[object, str] = {
    **{op: _OWN_NAMES.get(op, op.name.upper()) for op in (*MapOperation, *BinaryMapOperation)},
    **_FOLDS,
}

_TABLE_NAMES = frozenset(info.name for info in OPCODE_TABLE)

#: cooperative instruction name -> the enumeration of its ``operation`` operand (from the table)
OPERATION_ENUMS: dict[str, type] = {
    info.name: op.rule for info in OPCODE_TABLE for op in info.operands
    if op.name == "operation" and op.kind is OperandKind.ENUM
}
#: enumeration -> the cooperative instruction that carries it
OPERATION_INSTRUCTIONS: dict[type, str] = {enum: name for name, enum in OPERATION_ENUMS.items()}
#: every cooperative operation, by enumeration in table order
COOPERATIVE_OPERATIONS: tuple = tuple(op for enum in OPERATION_ENUMS.values() for op in enum)


def lane_instruction(op) -> str | None:
    """The per-lane instruction (table name) whose meaning ``op`` applies element-wise or folds with, or None
    for RELU, POW and ATAN2."""
    name = ELEMENT_FUNCTIONS[op]
    return name if name in _TABLE_NAMES else None


def operation_instruction(op) -> str:
    """The cooperative instruction (table name) that carries ``op``; raises KeyError for a non-operation."""
    return OPERATION_INSTRUCTIONS[type(op)]


assert set(ELEMENT_FUNCTIONS) == set(COOPERATIVE_OPERATION_TYPES) == set(COOPERATIVE_OPERATIONS), \
    "every cooperative operation needs its lane function and its types"
assert all(name in _TABLE_NAMES for op, name in ELEMENT_FUNCTIONS.items() if op not in _OWN_NAMES), \
    "an operation's lane function must name an instruction of the table"
