"""Static register types: the type of every definition and of every register read.

A definition's type is its operand's rule on the instruction (``ty``,
``dst_ty`` or a fixed type), except LOOP's count, written back with the type
it was read as. Entry definitions: a preset register has its preset type, a
special register ``u32``, any other register the untyped zero (compatible
with every type). A read must see one type among its reaching definitions;
integers of the same width and other signedness count as one (the bits are
reinterpreted), and the type must satisfy the operand's rule.

The *read type* of an operand (``use_types``) is the rule's type where it
names one (``ty``, ``src_ty``, a fixed type); for generic rules (``int``,
``int32``, ``ptr``) it is the register's type, the unsigned one where the
definitions differ only in signedness, and ``u32`` (``u64`` for ``ptr``)
where the register is never defined (it reads zero).
"""

from __future__ import annotations

from typing import Mapping

from .errors import ProgramError
from .isa.registers import FIRST_SPECIAL_REGISTER, Register
from .isa.types import Type, TypeClass
from .verify_dataflow import ReachingDefinitions
from .verify_operands import (
    NUM_LOCATIONS, PREDICATE_BASE, OperandAccess, compatible, instruction_text, is_generic_rule, read_type,
    rule_accepts, rule_text,
)

__all__ = ["TypeFacts", "infer_types"]

_UNSIGNED_OF = {t: u for t in Type for u in Type
                if t.family is TypeClass.SIGNED and u.family is TypeClass.UNSIGNED and t.bits == u.bits}


class TypeFacts:
    """The result of :func:`infer_types`: ``use_types[(i, path)]``, ``def_types[(i, path)]`` for
    registers, and ``type_of_definition[id]`` (None: untyped zero, or a predicate)."""

    __slots__ = ("use_types", "def_types", "type_of_definition")

    def __init__(self, use_types: dict, def_types: dict, type_of_definition: list) -> None:
        self.use_types = use_types
        self.def_types = def_types
        self.type_of_definition = type_of_definition


def _entry_type(location: int, presets: Mapping[Register, Type]) -> Type | None:
    if location >= PREDICATE_BASE:
        return None
    if location >= FIRST_SPECIAL_REGISTER:
        return Type.U32
    return presets.get(Register(location))


def _held(types: list[Type]) -> Type | None:
    """The one type of ``types`` (the unsigned one where they differ in signedness), or None when
    empty. Assumes they are pairwise compatible."""
    if not types:
        return None
    first = types[0]
    if any(t is not first for t in types):
        return _UNSIGNED_OF.get(first, first)
    return first


def _origin(ident: int, sites: list) -> str:
    index = sites[ident][0]
    if index >= 0:
        return f"defined at {index}"
    return "special register" if sites[ident][2] >= FIRST_SPECIAL_REGISTER else "preset"


def _describe(typed: list[tuple[Type, int]], sites: list) -> list[str]:
    """``["i32 (defined at 3, 9)", "f32 (preset)"]`` in order of first appearance."""
    by_type: dict[Type, list[int]] = {}
    for ty, ident in typed:
        by_type.setdefault(ty, []).append(ident)
    parts = []
    for ty, idents in by_type.items():
        origins = [_origin(d, sites) for d in idents]
        defined = [o.removeprefix("defined at ") for o in origins if o.startswith("defined at ")]
        words = [o for o in origins if not o.startswith("defined at ")]
        if defined:
            words.append("defined at " + ", ".join(defined))
        parts.append(f"{ty.suffix} ({', '.join(words)})")
    return parts


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def infer_types(program, rd: ReachingDefinitions, reads: list[list[OperandAccess]],
                writes: list[list[OperandAccess]], presets: Mapping[Register, Type]) -> TypeFacts:
    """Type every definition and register read. Raises ProgramError at the first read (in
    program order) that may see two types or whose type breaks the operand's rule."""
    instructions = program.instructions
    sites = rd.sites
    def_type: list[Type | None] = [_entry_type(loc, presets) for loc in range(NUM_LOCATIONS)]
    pending: list[tuple[int, int, OperandAccess]] = []  # written with the type they are read as
    for index, instr_writes in enumerate(writes):
        for acc, (_, ident) in zip(instr_writes, rd.def_ids[index]):
            if acc.location >= PREDICATE_BASE:
                def_type.append(None)
                continue
            def_type.append(read_type(acc.rule, instructions[index], None))
            if is_generic_rule(acc.rule):
                def_type[ident] = None
                pending.append((index, ident, acc))

    def typed_defs(index: int, path: str) -> list[tuple[Type, int]]:
        return [(def_type[d], d) for d in rd.use_ids.get((index, path), ())  # type: ignore[misc]
                if def_type[d] is not None]

    changed = True
    while changed:  # a read-written register takes the type it is read as, once that is known
        changed = False
        for index, ident, acc in pending:
            types = [t for t, _ in typed_defs(index, acc.path)]
            if not types or not all(compatible(types[0], t) for t in types):
                continue  # unknown yet, or a conflict reported below
            held = read_type(acc.rule, instructions[index], _held(types))
            if def_type[ident] is not held:
                def_type[ident] = held
                changed = True
    for index, ident, acc in pending:
        if def_type[ident] is None:
            def_type[ident] = read_type(acc.rule, instructions[index], None)

    use_types: dict[tuple[int, str], Type] = {}
    for index, instr_reads in enumerate(reads):
        instr = instructions[index]
        for acc in instr_reads:
            if acc.location >= PREDICATE_BASE:
                continue
            typed = typed_defs(index, acc.path)
            reg = f"r{acc.location}"
            if typed and not all(compatible(typed[0][0], t) for t, _ in typed):
                raise ProgramError(f"{reg} may hold {_join(_describe(typed, sites))}",
                                   index=index, text=instruction_text(instr))
            held = _held([t for t, _ in typed])
            if held is not None and not rule_accepts(acc.rule, held, instr):
                raise ProgramError(
                    f"operand '{acc.path}': {reg} holds {_join(_describe(typed, sites))}, "
                    f"but the operand needs {rule_text(acc.rule, instr)}", index=index, text=instruction_text(instr))
            use_types[(index, acc.path)] = read_type(acc.rule, instr, held)

    def_types: dict[tuple[int, str], Type] = {}
    for index, instr_writes in enumerate(writes):
        for acc, (_, ident) in zip(instr_writes, rd.def_ids[index]):
            if acc.location < PREDICATE_BASE:
                def_types[(index, acc.path)] = def_type[ident]  # type: ignore[assignment]
    return TypeFacts(use_types, def_types, def_type)
