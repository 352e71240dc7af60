"""The op table of the math library: op name -> its routines, registered with ``@math_routine``.

A routine is ``routine(kb, *args) -> Vec``: given a VecBuilder of one lane
format and the argument Vecs, it returns the expression of the result
(writing whatever ``let`` statements it needs on the way). Every op has an
f64 routine; an op without an f32 routine computes its f32 shapes in f64 lanes
and rounds once at the end ("widened"), which keeps f32 results within one
rounding of the f64 result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from atlas_web.errors import UnsupportedOperation

from .vec_builder import VecBuilder, Vec

__all__ = ["MathOp", "MATH_OPS", "math_routine", "math_op", "ROUTINE_FORMATS"]

Routine = Callable[..., Vec]

#: the lane formats a routine can be written for
ROUTINE_FORMATS = ("f32", "f64")


@dataclass
class MathOp:
    """One op: ``arity`` v128 arguments, ``routines`` by lane format name, a one-line ``formula``."""

    name: str
    arity: int
    formula: str
    routines: dict[str, Routine] = field(default_factory=dict)

    def routine(self, fmt: str) -> Routine | None:
        """The routine written for lane format ``fmt``, or None (f32 then runs widened to f64)."""
        return self.routines.get(fmt)

    def widened(self, fmt: str) -> bool:
        """Whether ``fmt`` lanes are computed in f64 lanes (no routine of their own)."""
        return fmt not in self.routines


#: op name -> MathOp (filled by the routine modules through ``math_routine``)
MATH_OPS: dict[str, MathOp] = {}


def math_routine(op: str, fmt: str, *, arity: int = 1, formula: str = "") -> Callable[[Routine], Routine]:
    """Register the decorated function as ``op``'s routine for lane format ``fmt`` ("f32" or "f64").

    The first registration of an op fixes its arity and formula; raises ValueError for an unknown format,
    a second routine for the same op and format, or an arity that disagrees.
    """
    if fmt not in ROUTINE_FORMATS:
        raise ValueError(f"math routine {op}: format must be one of {ROUTINE_FORMATS}, got {fmt!r}")

    def register(routine: Routine) -> Routine:
        entry = MATH_OPS.setdefault(op, MathOp(op, arity, formula))
        if entry.arity != arity:
            raise ValueError(f"math routine {op}/{fmt}: arity {arity} disagrees with {entry.arity}")
        if fmt in entry.routines:
            raise ValueError(f"math routine {op}/{fmt} is registered twice")
        if formula and not entry.formula:
            entry.formula = formula
        entry.routines[fmt] = routine
        return routine
    return register


def math_op(name: object) -> MathOp:
    """The MathOp called ``name`` (case-insensitive, so Atlas names such as ``"EXP"`` work).

    Raises UnsupportedOperation naming the known ops.
    """
    key = name.lower() if isinstance(name, str) else name
    try:
        return MATH_OPS[key]  # type: ignore[index]
    except (KeyError, TypeError):
        known = ", ".join(sorted(MATH_OPS))
        raise UnsupportedOperation(str(name), "math library", "wasm", f"no such math op (known: {known})") from None


def run_routine(op: MathOp, kb: VecBuilder, args: list[Vec]) -> Vec:
    """Apply ``op``'s routine for ``kb``'s format to ``args``; raises UnsupportedOperation when it has none."""
    routine = op.routine(kb.fmt.name)
    if routine is None:
        raise UnsupportedOperation(op.name, kb.fmt.name, "wasm", "no routine for this lane format (it runs widened)")
    return routine(kb, *args)
