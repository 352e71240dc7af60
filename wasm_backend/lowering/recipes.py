"""The one parametrized emitter of the lane rules that are a straight stack program (a recipe).

The integer and float rule modules describe such instructions as data: a table from instruction
name to recipe, registered for a type set with ``register_recipes``. A recipe is a tuple of steps
run in order for the instruction's type ``ty`` (``instr.ty``); the value left on the stack is then
written to ``dst``. The steps:

- ``Read("lhs")`` pushes register operand ``lhs`` (its native value);
- ``Const(1.0)`` pushes a constant of ty's wasm value type (``i32``, ``i64``, ``f32`` or ``f64``);
- a str such as ``"add"`` applies the wasm operation of that name on ty's prefix (``f32.add``);
  a trailing ``_?`` becomes ``_s``/``_u`` by ty's signedness (``lt_?`` -> ``i32.lt_s``);
- ``ROUND`` rounds an f32 result to F16/BF16 (nothing on the other types).

``typed_op`` and ``typed_const`` are the two middle steps for rules written out by hand. A step of
any other kind raises TypeError when the table is registered (import time), not when a program is
compiled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .emitter import Emitter
from .lane_context import LaneContext
from .rules import lane_rule
from .typemap import type_info

__all__ = ["Read", "Const", "ROUND", "Recipe", "typed_op", "typed_const", "recipe_rule", "register_recipes"]


@dataclass(frozen=True, slots=True)
class Read:
    """Push register operand ``path`` (``"lhs"``, ``"src"``, ``"a"`` …)."""

    path: str

    def __str__(self) -> str:
        return f"read {self.path}"


@dataclass(frozen=True, slots=True)
class Const:
    """Push ``value`` in the instruction type's wasm value type."""

    value: int | float

    def __str__(self) -> str:
        return f"push {self.value}"


@dataclass(frozen=True, slots=True)
class _Round:
    """Round an f32 result to the instruction's F16/BF16 format."""

    def __str__(self) -> str:
        return "round"


#: the rounding step (a singleton)
ROUND = _Round()

#: one step: Read, Const, ROUND, or the name of a wasm operation on the instruction's type
Step = Read | Const | _Round | str
Recipe = tuple[Step, ...]

#: wasm value type -> the emitter method pushing a constant of it
_PUSH_CONST: dict[ValType, Callable[[Emitter, int | float], Emitter]] = {
    ValType.I32: Emitter.i32, ValType.I64: Emitter.i64, ValType.F32: Emitter.f32, ValType.F64: Emitter.f64,
}


def typed_op(ctx: LaneContext, ty: Type, name: str) -> None:
    """Emit ``<prefix>.name`` for ``ty`` (``i32``, ``i64``, ``f32``, ``f64``); a trailing ``_?`` becomes
    ``_s``/``_u`` by signedness."""
    if name.endswith("_?"):
        name = name[:-1] + ("s" if ty.is_signed() else "u")
    ctx.e.op(f"{type_info(ty).prefix}.{name}")


def typed_const(ctx: LaneContext, ty: Type, value: int | float) -> None:
    """Push ``value`` as a constant of ``ty``'s wasm value type (F16/BF16 live in f32)."""
    _PUSH_CONST[type_info(ty).valtype](ctx.e, value)


#: step kind -> how it is emitted for the instruction type
_EMIT_STEP: dict[type, Callable[[LaneContext, Type, Step], None]] = {
    Read: lambda ctx, ty, step: ctx.read(step.path),
    Const: lambda ctx, ty, step: typed_const(ctx, ty, step.value),
    _Round: lambda ctx, ty, step: ctx.round_to(ty),
    str: typed_op,
}


def recipe_rule(name: str, recipe: Recipe, family: str) -> Callable:
    """The lane rule running ``recipe`` and writing ``dst`` (named ``lower_<name>_<family>``).

    Raises TypeError for a step of an unknown kind.
    """
    steps = tuple((_emitter_of(name, step), step) for step in recipe)

    def rule(ctx: LaneContext, instr) -> None:
        ty = instr.ty
        for emit, step in steps:
            emit(ctx, ty, step)
        ctx.write()

    rule.__name__ = f"lower_{name.lower()}_{family}"
    rule.__doc__ = f"{name} on {family} types: " + ", ".join(map(str, recipe)) + ", written to dst."
    return rule


def register_recipes(recipes: Mapping[str, Recipe], types, family: str) -> None:
    """Register ``recipes`` (instruction name -> recipe) as the lane rules of ``types``.

    Raises ValueError (from ``lane_rule``) when a (name, type) pair already has a rule, TypeError for
    a step of an unknown kind.
    """
    for name, recipe in recipes.items():
        lane_rule(name, types)(recipe_rule(name, recipe, family))


def _emitter_of(name: str, step: object) -> Callable[[LaneContext, Type, Step], None]:
    try:
        return _EMIT_STEP[type(step)]
    except KeyError:
        raise TypeError(f"recipe of {name}: {step!r} is not a step (Read, Const, ROUND or a wasm operation name)") \
            from None

