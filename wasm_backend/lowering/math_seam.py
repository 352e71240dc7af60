"""The seam the vectorized math library (``wasm_backend.mathlib``) plugs into.

The code generator never computes a transcendental itself: the per-lane instructions EXP LOG LOG2
LOG10 SIN COS TAN TANH SIGMOID GELU SWISH, the ParallelMap operations Exp Log Sin Cos Tan Sigmoid
Tanh Gelu Swish and the ParallelMapBinary operations Pow and Atan2 look their function up in
``MATH_FUNCTIONS`` (by the lower-case names in ``MATH_FUNCTION_OF``). Until a library registers a
function there, every instruction and operation that needs it is unsupported (UnsupportedOperation
at compile time; ``supports`` says False).

A library registers one ``MathFunction`` per function with ``register_math_function``:

* ``types``: the compute types it implements (F32 and/or F64); F16 and BF16 are computed by the F32
  function and rounded to their format by the code generator;
* ``scalar(mctx, e, ty)``: its ``arity`` arguments (f32 or f64) are on the stack; leave the result;
* ``vector(mctx, e, ty)``: the same on v128 values (f32x4 or f64x2);
* ``inline(mctx, fb, ty, arg_locals)`` (optional): the vector function written into function ``fb``
  itself (no call; for hot loops), returning False when it cannot;
* ``ulp``: the documented largest error in ulps per type (published in docs/backends.md).

``mctx`` is the ModuleContext (``mctx.helper(name)`` adds a shared function; a library may
register its own helpers with ``module_context.runtime_helper``), ``e`` the Emitter to write to.
SQRT / Sqrt are not here: the ``sqrt`` instruction is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from atlas_web.isa.enums import BinaryMapOperation, MapOperation
from atlas_web.isa.types import Type

__all__ = ["MathFunction", "MATH_FUNCTIONS", "MATH_FUNCTION_OF", "register_math_function", "math_function_for",
           "LANE_MATH_OPS"]


@dataclass(frozen=True)
class MathFunction:
    """One function of the math library (see the module docstring)."""

    name: str
    arity: int
    types: frozenset[Type]
    scalar: Callable
    vector: Callable
    ulp: Mapping[Type, float] = field(default_factory=dict)
    #: optional ``inline(mctx, fb, ty, arg_locals) -> bool``: write the vector function straight into the
    #: function ``fb`` (arguments in v128 locals, result on the stack); False when it cannot
    inline: Callable | None = None


#: function name -> the registered implementation
MATH_FUNCTIONS: dict[str, MathFunction] = {}

#: lane instruction name -> function name
LANE_MATH_OPS: dict[str, str] = {name: name.lower() for name in (
    "EXP", "LOG", "LOG2", "LOG10", "SIN", "COS", "TAN", "TANH", "SIGMOID", "GELU", "SWISH")}

#: instruction name or cooperative operation -> the function it needs
MATH_FUNCTION_OF: dict[object, str] = {
    **LANE_MATH_OPS,
    **{op: op.name.lower() for op in (MapOperation.Exp, MapOperation.Log, MapOperation.Sin, MapOperation.Cos,
                                      MapOperation.Tan, MapOperation.Sigmoid, MapOperation.Tanh, MapOperation.Gelu,
                                      MapOperation.Swish)},
    BinaryMapOperation.Pow: "pow", BinaryMapOperation.Atan2: "atan2",
}


def register_math_function(function: MathFunction, *, replace: bool = False) -> None:
    """Make ``function`` available to the code generator; raises ValueError when the name is taken."""
    if function.name in MATH_FUNCTIONS and not replace:
        raise ValueError(f"math function {function.name!r} is already registered")
    if not function.types <= {Type.F32, Type.F64}:
        raise ValueError(f"math function {function.name!r}: types must be F32 and/or F64")
    MATH_FUNCTIONS[function.name] = function


def _compute_type(ty: Type) -> Type:
    return Type.F64 if ty is Type.F64 else Type.F32


def math_function_for(op: object, ty: Type) -> MathFunction | None:
    """The function computing ``op`` (instruction name or operation) on ``ty``, or None when none is registered."""
    name = MATH_FUNCTION_OF.get(op)
    function = MATH_FUNCTIONS.get(name) if name is not None else None
    if function is None or not ty.is_float() or _compute_type(ty) not in function.types:
        return None
    return function
