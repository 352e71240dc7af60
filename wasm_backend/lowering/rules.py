"""The rule tables of the WebAssembly code generator, filled by decorators.

``WASM_LANE_RULES[name][ty]`` lowers one per-lane or control instruction (``ty`` None for instructions
without a type) and has the shape ``rule(ctx, instr) -> None``: it writes the instruction's code
through ``ctx`` (a ``LaneContext``). ``COOPERATIVE_RULES[name]`` builds the function of one
cooperative instruction; which operations and types it accepts is ``COOPERATIVE_SUPPORT``
(operation enum member -> types). A rule module registers with::

    @lane_rule("ADD", INTS)
    def lower_add_int(ctx, instr): ...

``lookup_lane_rule`` raises UnsupportedOperation(op, ty, "wasm") for a pair without a rule, which is
what makes a program that needs it fail at compile time.
"""

from __future__ import annotations

from typing import Callable, Iterable

from atlas_web.errors import UnsupportedOperation
from atlas_web.isa.opcodes import STRUCTURAL_INSTRUCTIONS
from atlas_web.isa.types import Type

__all__ = [
    "WASM_LANE_RULES", "COOPERATIVE_RULES", "COOPERATIVE_SUPPORT", "COOPERATIVE_SCRATCH", "lane_rule",
    "cooperative_rule",
    "support_operation", "lookup_lane_rule", "lane_supported", "LANE_CONDITIONS", "BACKEND_NAME",
    "BRANCH_TESTS", "STRUCTURAL", "branch_test", "structural",
]

BACKEND_NAME = "wasm"

#: instruction name -> type (None: untyped) -> rule(ctx, instr)
WASM_LANE_RULES: dict[str, dict[Type | None, Callable]] = {}
#: instruction name -> available(ty): whether its registered rules can compile now (the math-library seam)
LANE_CONDITIONS: dict[str, Callable[[Type | None], bool]] = {}
#: control instruction name -> test(ctx, instr): push the i32 truth "it jumps" (BRA with a predicate, LOOP)
BRANCH_TESTS: dict[str, Callable] = {}
#: how each instruction lowered by the structure of the lane graph itself (the table's
#: STRUCTURAL_INSTRUCTIONS: branches, calls inlined, suspends) is lowered
STRUCTURAL: dict[str, str] = {}
#: cooperative instruction name -> builder(coop_ctx)
COOPERATIVE_RULES: dict[str, Callable] = {}
#: cooperative instruction name -> bytes(instr): scratch memory its function needs in the per-launch area
#: (``LaunchLayout.coop_scratch``; the area holds the largest need of the program)
COOPERATIVE_SCRATCH: dict[str, Callable] = {}
#: cooperative operation (enum member, or the instruction name for PoolAlloc/PoolFree) -> types it compiles for
COOPERATIVE_SUPPORT: dict[object, set[Type | None]] = {}


def lane_rule(name: str, types: Iterable[Type] | None = None, *,
              available: Callable[[Type | None], bool] | None = None):
    """Register the decorated function as the rule of ``name`` for each of ``types`` (None: untyped).

    ``available(ty)``, when given, says whether the rule can compile right now (rules that need a
    math-library function). Raises ValueError when a (name, type) pair already has a rule (tables
    are merged, never overwritten by accident).
    """
    keys = [None] if types is None else list(types)
    if available is not None:
        LANE_CONDITIONS[name] = available

    def register(rule: Callable) -> Callable:
        table = WASM_LANE_RULES.setdefault(name, {})
        for key in keys:
            if key in table:
                raise ValueError(f"wasm lane rule for {name} on {getattr(key, 'name', key)} is registered twice")
            table[key] = rule
        return rule

    return register


def branch_test(name: str):
    """Register the decorated ``test(ctx, instr)`` as the branch test of control instruction ``name``."""
    def register(test: Callable) -> Callable:
        if name in BRANCH_TESTS:
            raise ValueError(f"wasm branch test for {name} is registered twice")
        BRANCH_TESTS[name] = test
        return test
    return register


def structural(name: str, how: str) -> None:
    """Say how structural instruction ``name`` is lowered by the lane graph (``how``); raises ValueError for an
    instruction the opcode table does not call structural."""
    if name not in STRUCTURAL_INSTRUCTIONS:
        raise ValueError(f"{name} is not a structural instruction of the opcode table")
    STRUCTURAL[name] = how


def cooperative_rule(name: str, *, scratch: Callable | None = None):
    """Register the decorated function as the builder of cooperative instruction ``name``; ``scratch(instr) ->
    bytes``, when given, is the per-launch scratch memory its function needs (``COOPERATIVE_SCRATCH``)."""
    def register(builder: Callable) -> Callable:
        if name in COOPERATIVE_RULES:
            raise ValueError(f"wasm cooperative rule for {name} is registered twice")
        COOPERATIVE_RULES[name] = builder
        if scratch is not None:
            COOPERATIVE_SCRATCH[name] = scratch
        return builder
    return register


def support_operation(operation: object, types: Iterable[Type | None]) -> None:
    """Declare that the cooperative ``operation`` compiles for ``types``."""
    COOPERATIVE_SUPPORT.setdefault(operation, set()).update(types)


def lane_supported(name: str, ty: Type | None) -> bool:
    """Whether instruction ``name`` compiles for ``ty`` now."""
    if name in STRUCTURAL_INSTRUCTIONS:
        return ty is None and name in STRUCTURAL
    if ty not in WASM_LANE_RULES.get(name, {}):
        return False
    condition = LANE_CONDITIONS.get(name)
    return condition is None or condition(ty)


def lookup_lane_rule(name: str, ty: Type | None) -> Callable:
    """The rule of ``name`` on ``ty``; raises UnsupportedOperation when there is none."""
    if not lane_supported(name, ty):
        detail = ("needs a function of the math library (wasm_backend.mathlib), which is not registered"
                  if name in LANE_CONDITIONS else "no WebAssembly lowering rule")
        raise UnsupportedOperation(name, ty if ty is not None else "(untyped)", BACKEND_NAME, detail)
    return WASM_LANE_RULES[name][ty]
