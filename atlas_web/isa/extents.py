"""Operand extents: how many elements of which type an address operand covers.

An ADDR operand of the opcode table declares its ``extent``, an expression over
the instruction's own shape operands (UINT fields): ``"1"`` for a per-lane load,
``"count"`` for ParallelMap's arrays, ``"m*k"`` or ``"batch*m*n"`` for a matrix
kernel. Its ``element`` names the element type (a TypeRule naming a type field,
or a fixed Type) and its ``memory`` the access to those elements. From these,
:func:`array_operands` gives every array an instruction touches, in operand
order: the ONE description the verifier's launch-time bounds, the reference's
cooperative array checks, the WebGPU host roles and the expansion tier read.

An expression is integers, shape-operand names, ``+``, ``-``, ``*`` and
parentheses; anything else raises ProgramError when the row is made (never at
run time).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Callable

from ..errors import ProgramError
from .types import Type

__all__ = ["ArrayOperand", "array_operands", "extent_elements", "compile_extent", "element_type"]

_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}


@functools.lru_cache(maxsize=None)
def compile_extent(expression: str) -> tuple[Callable[[object], int], frozenset[str]]:
    """``(evaluate(instr) -> int, the field names it reads)`` of an extent expression.

    Raises ProgramError for an expression that is not integers, names, ``+ - *`` and parentheses.
    """
    try:
        tree = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        raise ProgramError(f"extent {expression!r} is not an expression") from None
    names: set[str] = set()

    def build(node: ast.AST) -> Callable[[object], int]:
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0:
            value = node.value
            return lambda instr: value
        if isinstance(node, ast.Name):
            name = node.id
            names.add(name)
            return lambda instr: getattr(instr, name)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            op, left, right = _BINARY[type(node.op)], build(node.left), build(node.right)
            return lambda instr: op(left(instr), right(instr))
        raise ProgramError(f"extent {expression!r}: only integers, field names, +, - and * are allowed")

    return build(tree), frozenset(names)


def element_type(instr, rule: object) -> Type:
    """The element type ``rule`` (a fixed Type or a TypeRule naming a type field) names for ``instr``."""
    if isinstance(rule, Type):
        return rule
    return getattr(instr, rule.value)


@dataclass(frozen=True, slots=True)
class ArrayOperand:
    """An array an instruction touches: operand ``name`` at ``address`` (an Address.* value) in memory
    ``space`` ("global" or "shared"), ``elements`` values of type ``ty``, read and/or written (``access``)."""

    name: str
    address: object
    ty: Type
    elements: int
    access: object
    space: str

    @property
    def nbytes(self) -> int:
        """The bytes the array covers: ``elements`` × the size of ``ty``."""
        return self.elements * self.ty.size_bytes()


def extent_elements(instr, operand_name: str) -> int:
    """How many elements operand ``operand_name`` of ``instr`` covers (its extent, evaluated).

    Raises KeyError when the instruction has no such operand, ProgramError when it is not an address
    or its extent is negative."""
    operand = instr.INFO.operand(operand_name)
    if operand.extent is None:
        raise ProgramError(f"{instr.INFO.name}: operand {operand_name!r} is not an address operand")
    elements = compile_extent(operand.extent)[0](instr)
    if elements < 0:
        raise ProgramError(f"{instr.INFO.name}: operand {operand_name!r}: extent {operand.extent} = {elements} "
                           "is negative")
    return elements


def array_operands(instr) -> tuple[ArrayOperand, ...]:
    """Every address operand of ``instr`` as an ArrayOperand, in operand order.

    Raises ProgramError when an extent evaluates negative (an extent with ``-``)."""
    return tuple(ArrayOperand(op.name, getattr(instr, op.name), element_type(instr, op.element),
                              extent_elements(instr, op.name), op.memory, op.rule)
                 for op in instr.INFO.address_operands)
