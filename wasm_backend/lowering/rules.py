"""The rule tables of the WebAssembly code generator, filled by decorators.

``WASM_LANE_RULES[name][ty]`` lowers one per-lane or control instruction (``ty`` None for instructions
without a type) and has the shape ``rule(ctx, instr) -> None``: it writes the instruction's code
through ``ctx`` (a ``LaneContext``). ``COOPERATIVE_RULES[name]`` is the ``CooperativeRule`` of one
cooperative instruction: the builder of its function and its own support (which types, and for an
instruction with an ``operation`` operand which operations on which types), so the support queries
(``cooperative_supported``, ``cooperative_operation_supported``, ``check_cooperative``) ask the rule and
know no instruction by name. A rule module registers with::

    @lane_rule("ADD", INTS)
    def lower_add_int(ctx, instr): ...

    @cooperative_rule("ParallelReduce", operations=reduce_operation_supported)
    def build_parallel_reduce(cc): ...

``lookup_lane_rule`` raises UnsupportedOperation(op, ty, "wasm") for a pair without a rule, which is
what makes a program that needs it fail at compile time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from atlas_web.errors import UnsupportedOperation
from atlas_web.isa.opcodes import STRUCTURAL_INSTRUCTIONS, ExecKind, OpcodeInfo
from atlas_web.isa.operations import OPERATION_ENUMS, OPERATION_INSTRUCTIONS
from atlas_web.isa.types import Type
from atlas_web.lowering.expansions import expansion_supported

__all__ = [
    "WASM_LANE_RULES", "COOPERATIVE_RULES", "CooperativeRule", "lane_rule", "cooperative_rule",
    "cooperative_supported", "cooperative_operation_supported", "check_cooperative", "op_supported",
    "lookup_lane_rule", "lane_supported", "LANE_CONDITIONS", "BACKEND_NAME",
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


@dataclass(frozen=True)
class CooperativeRule:
    """The wasm rule of one cooperative instruction: ``build(coop_ctx)`` writes its function; ``types`` are the
    types it compiles for (None: every type of the instruction's row, or untyped); ``operations(operation, ty)``
    says whether it compiles ``operation`` (a member of the enumeration the row's ``operation`` operand
    carries, ``OPERATION_ENUMS``) for ``ty`` (None for a row without an operation); ``why`` is the detail of the
    UnsupportedOperation raised for an operation it does not compile; ``scratch(instr) -> bytes``, when given,
    the per-launch scratch memory its function needs (``LaunchLayout.coop_scratch``: the area holds the
    largest need of the program)."""

    name: str
    build: Callable
    types: frozenset | None = None
    operations: Callable[[object, Type], bool] | None = None
    why: str = "no WebAssembly rule for this operation on this type"
    scratch: Callable | None = None

    def supports(self, info: OpcodeInfo, ty: Type | None) -> bool:
        """Whether it compiles ``info`` (its row) for ``ty`` (for some operation, where the row has one)."""
        if not info.types:
            return ty is None
        if ty not in info.types or (self.types is not None and ty not in self.types):
            return False
        return self.operations is None or any(self.operations(op, ty) for op in OPERATION_ENUMS[self.name])


#: cooperative instruction name -> its CooperativeRule
COOPERATIVE_RULES: dict[str, CooperativeRule] = {}


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


def cooperative_rule(name: str, types: Iterable[Type] | None = None, *,
                     operations: Callable[[object, Type], bool] | None = None, why: str | None = None,
                     scratch: Callable | None = None):
    """Register the decorated ``build(coop_ctx) -> None`` as the rule of cooperative instruction ``name`` (the one
    registration point of cooperative rules; the function is returned unchanged)::

        @cooperative_rule("GEMM", (Type.F32, Type.F64), scratch=gemm_scratch_bytes)
        def build_gemm(cc): ...

    ``types``: the types it compiles for (None: every type of the row). ``operations(operation, ty) -> bool``:
    for a row with an ``operation`` operand, whether it compiles that operation for ``ty`` (required there,
    refused elsewhere); ``why``: the detail of the UnsupportedOperation for an operation it refuses;
    ``scratch(instr) -> bytes``: the per-launch scratch memory its function needs, where it needs any.
    Raises ValueError when ``name`` already has a rule, or ``operations`` is given for a row without an
    operation (or missing for one with it).
    """
    has_operation = name in OPERATION_ENUMS
    if (operations is not None) != has_operation:
        raise ValueError(f"wasm cooperative rule for {name}: operations= is "
                         f"{'required' if has_operation else 'refused'} (the row has "
                         f"{'an' if has_operation else 'no'} operation operand)")

    def register(build: Callable) -> Callable:
        if name in COOPERATIVE_RULES:
            raise ValueError(f"wasm cooperative rule for {name} is registered twice")
        COOPERATIVE_RULES[name] = CooperativeRule(
            name, build, None if types is None else frozenset(types), operations,
            **({} if why is None else {"why": why}), scratch=scratch)
        return build
    return register


def cooperative_supported(info: OpcodeInfo, ty: Type | None) -> bool:
    """Whether a registered cooperative rule compiles ``info`` for ``ty`` (False when it has no rule)."""
    rule = COOPERATIVE_RULES.get(info.name)
    return rule is not None and rule.supports(info, ty)


def cooperative_operation_supported(operation: object, ty: Type) -> bool:
    """Whether the rule of the instruction that carries ``operation``'s enumeration compiles it for ``ty``."""
    rule = COOPERATIVE_RULES.get(OPERATION_INSTRUCTIONS.get(type(operation), ""))
    return rule is not None and rule.operations is not None and rule.operations(operation, ty)


def op_supported(info: OpcodeInfo, ty: Type | None) -> bool:
    """Whether the wasm code generator compiles ``info`` for ``ty`` (None: untyped): its lane rule, its
    cooperative rule (for some operation), or, for a cooperative row without a rule, its default expansion
    (``atlas_web.lowering.expansions``). The rule modules register when ``wasm_backend.lowering`` is imported."""
    if info.kind is ExecKind.COOPERATIVE:
        if info.name not in COOPERATIVE_RULES:
            return expansion_supported(info, ty, op_supported, cooperative_operation_supported)
        return cooperative_supported(info, ty)
    return (ty is None if not info.types else ty in info.types) and lane_supported(info.name, ty)


def check_cooperative(instr) -> None:
    """Raise UnsupportedOperation when no registered rule compiles cooperative ``instr`` (its type, its
    operation): "no cooperative rule", the rule's ``why`` for an operation, or the type it lacks."""
    info = instr.INFO
    rule = COOPERATIVE_RULES.get(info.name)
    if rule is None:
        raise UnsupportedOperation(info.name, instr.type, BACKEND_NAME, "no cooperative rule")
    ty = instr.type
    if rule.types is not None and ty not in rule.types:
        raise UnsupportedOperation(info.name, ty, BACKEND_NAME, "no WebAssembly rule for this type")
    if rule.operations is not None and not rule.operations(instr.operation, ty):
        raise UnsupportedOperation(f"{info.name}.{instr.operation.name}", ty, BACKEND_NAME, rule.why)


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
