"""The elementwise operations of ``atlas_web.numpy``, one row each: how many inputs, which result types,
the per-lane instructions that compute one element, and the cooperative map operation (ParallelMap /
ParallelMapBinary) that computes a whole same-shape array where there is one.

A body is text assembly over registers: ``{d}`` the result, ``{a}``, ``{b}``, ``{c}`` the inputs (already
converted to the computing type), ``{t}`` the computing type's suffix, ``{z}``/``{o}`` scratch registers.
Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..isa.enums import BinaryMapOperation, MapOperation

__all__ = ["ElementwiseOp", "OPS"]

#: result kinds: "same" computes and returns the promoted type; "float" computes in a float type
#: (ints to the float NumPy picks); "bool" compares in the promoted type and returns a boolean array;
#: "select" is where(); "div" true division (ints computed in float64 as NumPy does)
RESULTS = ("same", "float", "bool", "select", "div")


@dataclass(frozen=True, slots=True)
class ElementwiseOp:
    """One elementwise operation: ``arity`` inputs, its result kind (see RESULTS), the per-lane body
    (None: only the cooperative map computes it), the cooperative operation (None: only per-lane), and
    whether it needs a float type (``floats_only``: an integer input is refused)."""

    name: str
    arity: int
    result: str
    body: str | None
    cooperative: MapOperation | BinaryMapOperation | None = None
    floats_only: bool = False


def _unary(name: str, mnemonic: str, operation: MapOperation, result: str = "float") -> ElementwiseOp:
    return ElementwiseOp(name, 1, result, f"{mnemonic}.{{t}} {{d}}, {{a}}", operation, result == "float")


def _binary(name: str, mnemonic: str, operation: BinaryMapOperation | None, result: str = "same") -> ElementwiseOp:
    return ElementwiseOp(name, 2, result, f"{mnemonic}.{{t}} {{d}}, {{a}}, {{b}}", operation)


def _compare(name: str, condition: str) -> ElementwiseOp:
    return ElementwiseOp(name, 2, "bool", f"set.{condition}.{{t}} p1, {{a}}, {{b}}\n"
                                          f"mov_imm.u8 {{z}}, 0\nmov_imm.u8 {{o}}, 1\nsel.u8 {{d}}, p1, {{o}}, {{z}}")


_ROWS = (
    _binary("add", "add", BinaryMapOperation.Add),
    _binary("subtract", "sub", BinaryMapOperation.Sub),
    _binary("multiply", "mul", BinaryMapOperation.Mul),
    _binary("divide", "div", BinaryMapOperation.Div, "div"),
    _binary("maximum", "max", BinaryMapOperation.Max),
    _binary("minimum", "min", BinaryMapOperation.Min),
    # no per-lane power instruction: broadcast operands are materialized and the cooperative map runs
    ElementwiseOp("power", 2, "same", None, BinaryMapOperation.Pow),
    _compare("equal", "eq"), _compare("not_equal", "ne"), _compare("less", "lt"),
    _compare("less_equal", "le"), _compare("greater", "gt"), _compare("greater_equal", "ge"),
    ElementwiseOp("where", 3, "select", "mov_imm.u8 {z}, 0\nset.ne.u8 p1, {a}, {z}\nsel.{t} {d}, p1, {b}, {c}"),
    _unary("negative", "neg", MapOperation.Neg, "same"),
    _unary("abs", "abs", MapOperation.Abs, "same"),
    _unary("exp", "exp", MapOperation.Exp), _unary("log", "log", MapOperation.Log),
    _unary("sqrt", "sqrt", MapOperation.Sqrt), _unary("sin", "sin", MapOperation.Sin),
    _unary("cos", "cos", MapOperation.Cos), _unary("tanh", "tanh", MapOperation.Tanh),
    _unary("sigmoid", "sigmoid", MapOperation.Sigmoid), _unary("gelu", "gelu", MapOperation.Gelu),
    _unary("silu", "swish", MapOperation.Swish),
    ElementwiseOp("relu", 1, "same", "mov_imm.{t} {z}, 0\nmax.{t} {d}, {a}, {z}", MapOperation.Relu),
    # astype and the copies of reshaping: the load converts, the body moves
    ElementwiseOp("copy", 1, "same", "mov.{t} {d}, {a}"),
)

#: name -> row
OPS: dict[str, ElementwiseOp] = {row.name: row for row in _ROWS}
