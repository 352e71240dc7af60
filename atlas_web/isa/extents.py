"""Operand extents: how many elements of which type an address operand covers.

An ADDR operand of the opcode table declares its ``extent``, an expression over
the instruction's own shape operands (UINT fields): ``"1"`` for a per-lane load,
``"count"`` for ParallelMap's arrays, ``"m*k"`` or ``"batch*m*n"`` for a matrix
kernel. Its ``element`` names the element type (a TypeRule naming a type field,
or a fixed Type) and its ``memory`` the access to those elements. From these,
:func:`array_operands` gives every array an instruction touches, in operand
order: the ONE description the verifier's launch-time bounds, the reference's
cooperative array checks, the WebGPU host roles and the expansion tier read.

An expression is integers, the names of the row's shape (UINT) and flag (FLAG,
read as 0 or 1) operands (in a ``requires`` condition also the FLOAT immediates, compared as floats: a NaN
fails every comparison), ``+``, ``-``, ``*``, ``%`` (``a % 0`` is 0), ``//`` (floor; ``a // 0`` is 0),
parentheses, ``x if c else y``, comparisons, ``and``/``or``/``not`` and the functions of ``FUNCTIONS``: ``max``,
``min``, ``conv_out(size, padding, dilation, kernel, stride)`` (a convolution's output length, as PyTorch's),
``power_of_two(n)`` (1 when n is 1, 2, 4, ..., else 0), and the extent of a row-major matrix with a leading dimension,
``matrix(rows, cols, ld)``, or of ``count`` of them ``stride`` elements apart,
``matrices(count, stride, rows, cols, ld)`` (ld 0 and stride 0 mean packed),
TensorContract's ``size(shape)``, ``output_size(shape_a, shape_b, pairs)`` and checks of its DIMS operands
(tuples: atlas_web.isa.contraction), and an element of another array operand of the row, ``a_ptr[m]`` (a CSR
matrix's value count): such an extent is known only at launch, where the
step reads it (:func:`array_operands` with a ``load``); the verifier's static
bounds leave it out.
Anything else raises ProgramError when the row is made (never at run time).
The same language states a row's ``requires`` conditions (checked by the
verifier, :func:`unmet_requirements`).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Callable, NamedTuple

from ..errors import ProgramError
from . import contraction
from .types import Type

__all__ = ["ArrayOperand", "array_operands", "extent_elements", "compile_extent", "element_type", "FUNCTIONS",
           "CompiledExtent", "Load", "reads_at_launch",
           "matrix_extent", "matrices_extent", "conv_out", "power_of_two", "Requirement", "unmet_requirements"]


def matrix_extent(rows: int, cols: int, ld: int) -> int:
    """The elements a row-major ``rows`` x ``cols`` matrix with leading dimension ``ld`` (0: packed, ``cols``)
    covers from its first element: ``(rows - 1) * ld + cols``, 0 when either dimension is 0. An ``ld`` below
    ``cols`` counts as ``cols`` (the verifier refuses such an instruction through the row's ``requires``)."""
    if rows == 0 or cols == 0:
        return 0
    return (rows - 1) * max(ld, cols) + cols


def matrices_extent(count: int, stride: int, rows: int, cols: int, ld: int) -> int:
    """The elements ``count`` such matrices cover when each starts ``stride`` elements after the previous
    (0: packed, ``rows * ld`` apart): ``(count - 1) * stride`` + one matrix; 0 when any is empty."""
    one = matrix_extent(rows, cols, ld)
    if count == 0 or one == 0:
        return 0
    return (count - 1) * (stride or rows * max(ld, cols)) + one


def conv_out(size: int, padding: int, dilation: int, kernel: int, stride: int) -> int:
    """The output length of a convolution along one axis, as PyTorch's: ``(size + 2*padding - dilation*(kernel
    - 1) - 1) // stride + 1``; 0 when the dilated kernel is longer than the padded input, or stride is 0 (the
    row's ``requires`` refuses both)."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if span < 0 or stride == 0:
        return 0
    return span // stride + 1


def power_of_two(n: int) -> int:
    """1 when ``n`` is a power of two (1, 2, 4, ...), else 0."""
    return int(n > 0 and n & (n - 1) == 0)


#: function name -> (its number of arguments, the function): what an extent expression may call
FUNCTIONS: dict[str, tuple[int, Callable[..., int]]] = {
    "max": (2, max), "min": (2, min), "matrix": (3, matrix_extent), "matrices": (5, matrices_extent),
    "conv_out": (5, conv_out), "power_of_two": (1, power_of_two),
    "size": (1, contraction.size), "output_size": (3, contraction.output_size),
    "axes_in_rank": (3, contraction.axes_in_rank), "axes_once": (1, contraction.axes_once),
    "paired_sizes_equal": (3, contraction.paired_sizes_equal),
}

#: ``a % 0`` and ``a // 0`` are 0 (a condition guards them: ``groups > 0 and channels % groups == 0``); never
#: ZeroDivisionError
_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Mod: lambda a, b: a % b if b else 0, ast.FloorDiv: lambda a, b: a // b if b else 0}
_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
            ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}


#: reads element ``index`` of array operand ``name`` of the instruction at launch: (name, index) -> int
Load = Callable[[str, int], int]


class CompiledExtent(NamedTuple):
    """An extent expression ready to evaluate: ``evaluate(instr, load=None) -> int``, the field names it reads
    and the array operands it reads an element of (``a_ptr[m]``: known only at launch, through ``load``)."""

    evaluate: Callable[..., int]
    names: frozenset[str]
    loads: frozenset[str]


class _NeedsLaunch(Exception):
    """An extent read from memory was evaluated without a ``load``."""


def _field(instr, name: str):
    """A field an expression names: an int (a flag as 0 or 1), a float immediate or a DIMS operand's tuple as
    it is."""
    value = getattr(instr, name)
    return value if isinstance(value, (tuple, float)) else int(value)


def _no_load(name: str, index: int) -> int:
    raise _NeedsLaunch(name)


@functools.lru_cache(maxsize=None)
def compile_extent(expression: str) -> CompiledExtent:
    """The CompiledExtent of an extent expression (or a condition: its value is then 0 or 1).

    Raises ProgramError for an expression outside the language of the module docstring.
    """
    try:
        tree = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        raise ProgramError(f"extent {expression!r} is not an expression") from None
    names: set[str] = set()
    loads: set[str] = set()

    def build(node: ast.AST) -> Callable[[object, Load], int]:
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0:
            value = node.value
            return lambda instr, load: value
        if isinstance(node, ast.Name):
            name = node.id
            names.add(name)
            return lambda instr, load: _field(instr, name)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            array, index = node.value.id, build(node.slice)
            loads.add(array)
            return lambda instr, load: load(array, index(instr, load))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            op, left, right = _BINARY[type(node.op)], build(node.left), build(node.right)
            return lambda instr, load: op(left(instr, load), right(instr, load))
        if isinstance(node, ast.IfExp):
            test, body, orelse = build(node.test), build(node.body), build(node.orelse)
            return lambda instr, load: body(instr, load) if test(instr, load) else orelse(instr, load)
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            terms = [build(node.left)] + [build(c) for c in node.comparators]
            ops = [_COMPARE[type(op)] for op in node.ops]
            return lambda instr, load: int(all(op(a(instr, load), b(instr, load))
                                               for op, a, b in zip(ops, terms, terms[1:])))
        if isinstance(node, ast.BoolOp):
            parts = [build(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return lambda instr, load: int(all(p(instr, load) for p in parts))
            return lambda instr, load: int(any(p(instr, load) for p in parts))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            operand = build(node.operand)
            return lambda instr, load: int(not operand(instr, load))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS
                and not node.keywords and len(node.args) == FUNCTIONS[node.func.id][0]):
            function, args = FUNCTIONS[node.func.id][1], [build(a) for a in node.args]
            return lambda instr, load: function(*(a(instr, load) for a in args))
        raise ProgramError(f"extent {expression!r}: only integers, field names, + - * % //, comparisons, and/or/not, "
                           f"'x if c else y', an array operand's element 'array[index]' and the calls "
                           f"{', '.join(f'{n}/{a}' for n, (a, _) in FUNCTIONS.items())} are allowed")

    tree_function = build(tree)

    def evaluate(instr, load: Load | None = None) -> int:
        return tree_function(instr, load or _no_load)

    return CompiledExtent(evaluate, frozenset(names), frozenset(loads))


@dataclass(frozen=True, slots=True)
class Requirement:
    """A condition a row's instructions must meet, over their shape and flag fields (the extent language):
    the verifier refuses an instruction where ``condition`` is false with ProgramError naming ``operand``
    and saying ``why``."""

    operand: str
    condition: str
    why: str


def unmet_requirements(instr) -> list[str]:
    """The reasons, one per failed ``requires`` condition of ``instr``'s row, each naming its operand and the
    values of the fields the condition reads (empty when all hold)."""
    out = []
    for req in instr.INFO.requires:
        evaluate, names, _ = compile_extent(req.condition)
        if not evaluate(instr):
            values = ", ".join(f"{n}={_field(instr, n)}" for n in sorted(names))
            out.append(f"operand {req.operand!r}: {req.why} (needs {req.condition}; {values})")
    return out


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
    #: None: the extent reads another array's element, known only at launch
    elements: int | None
    access: object
    space: str

    @property
    def nbytes(self) -> int | None:
        """The bytes the array covers: ``elements`` × the size of ``ty`` (None: known only at launch)."""
        return None if self.elements is None else self.elements * self.ty.size_bytes()


def extent_elements(instr, operand_name: str, load: Load | None = None) -> int | None:
    """How many elements operand ``operand_name`` of ``instr`` covers (its extent, evaluated); None when the
    extent reads an array's element (``a_ptr[m]``) and no ``load`` is given (known only at launch).

    Raises KeyError when the instruction has no such operand, ProgramError when it is not an address
    or its extent is negative."""
    operand = instr.INFO.operand(operand_name)
    if operand.extent is None:
        raise ProgramError(f"{instr.INFO.name}: operand {operand_name!r} is not an address operand")
    try:
        elements = compile_extent(operand.extent).evaluate(instr, load)
    except _NeedsLaunch:
        return None
    if elements < 0:
        raise ProgramError(f"{instr.INFO.name}: operand {operand_name!r}: extent {operand.extent} = {elements} "
                           "is negative")
    return elements


def reads_at_launch(operand) -> bool:
    """Whether an address operand's extent reads another array's element (known only at launch)."""
    return bool(compile_extent(operand.extent).loads)


def array_operands(instr, load: Load | None = None) -> tuple[ArrayOperand, ...]:
    """Every address operand of ``instr`` as an ArrayOperand, in operand order; ``elements`` is None for an
    extent known only at launch when no ``load`` is given.

    Raises ProgramError when an extent evaluates negative (an extent with ``-``)."""
    return tuple(ArrayOperand(op.name, getattr(instr, op.name), element_type(instr, op.element),
                              extent_elements(instr, op.name, load), op.memory, op.rule)
                 for op in instr.INFO.address_operands)
