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
    PREDICATE_BASE, OperandAccess, compatible, instruction_text, read_type, rule_accepts, rule_text,
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


def _entry_type(location: int, presets: Mapping[int, Type]) -> Type | None:
    if location >= PREDICATE_BASE:
        return None
    if location >= FIRST_SPECIAL_REGISTER:
        return Type.U32
    return presets.get(location)


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


def _unify(ids: list[int], def_type: list[Type | None]) -> tuple[Type | None, bool]:
    """``(held type, consistent)`` of the typed definitions among ``ids``."""
    held = None
    mixed = False
    for d in ids:
        t = def_type[d]
        if t is None or t is held:
            continue
        if held is None:
            held = t
        elif compatible(held, t):
            mixed = True
        else:
            return held, False
    if mixed:
        held = _UNSIGNED_OF.get(held, held)  # type: ignore[arg-type]
    return held, True


def infer_types(program, rd: ReachingDefinitions, reads: list[list[OperandAccess]],
                writes: list[list[OperandAccess]], presets: Mapping[Register, Type]) -> TypeFacts:
    """Type every definition and register read. Raises ProgramError at the first read (in
    program order) that may see two types or whose type breaks the operand's rule."""
    instructions = program.instructions
    sites = rd.sites
    use_ids = rd.use_ids
    def_type: list[Type | None] = [None] * len(sites)
    preset_by_index = {reg.index: ty for reg, ty in presets.items()}
    for loc, ident in enumerate(rd.entry_ids):
        def_type[ident] = _entry_type(loc, preset_by_index)
    pending: list[tuple[int, OperandAccess, list[int]]] = []  # written with the type they are read as
    for index, instr_writes in enumerate(writes):
        for acc, ident in zip(instr_writes, rd.def_ids[index]):
            if acc.location >= PREDICATE_BASE:
                continue
            if acc.fixed is not None:
                def_type[ident] = acc.fixed
                continue
            row = use_ids[index]
            reaching = next((ids for r, ids in zip(reads[index], row) if r.path == acc.path), []) if row else []
            pending.append((ident, acc, reaching))
    changed = True
    while changed:  # a read-written register takes the type it is read as, once that is known
        changed = False
        for ident, acc, reaching in pending:
            held, consistent = _unify(reaching, def_type)
            if held is not None and consistent and def_type[ident] is not held:
                def_type[ident] = read_type(acc, held)
                changed = True
    for ident, acc, _ in pending:
        if def_type[ident] is None:
            def_type[ident] = read_type(acc, None)

    use_types: dict[tuple[int, str], Type] = {}
    for index, instr_reads in enumerate(reads):
        row = use_ids[index]
        for k, acc in enumerate(instr_reads):
            if acc.location >= PREDICATE_BASE:
                continue
            if row is None:
                held, consistent = None, True
            elif len(row[k]) == 1:
                held, consistent = def_type[row[k][0]], True
            else:
                held, consistent = _unify(row[k], def_type)
            if consistent and (held is None or held is acc.fixed):
                use_types[(index, acc.path)] = read_type(acc, held)
                continue
            if not consistent or not rule_accepts(acc, held):
                typed = [(def_type[d], d) for d in row[k] if def_type[d] is not None]  # type: ignore[index]
                described = _join(_describe(typed, sites))  # type: ignore[arg-type]
                reason = (f"r{acc.location} may hold {described}" if not consistent else
                          f"operand '{acc.path}': r{acc.location} holds {described}, "
                          f"but the operand needs {rule_text(acc)}")
                raise ProgramError(reason, index=index, text=instruction_text(instructions[index]))
            use_types[(index, acc.path)] = read_type(acc, held)

    def_types: dict[tuple[int, str], Type] = {}
    for index, instr_writes in enumerate(writes):
        for acc, ident in zip(instr_writes, rd.def_ids[index]):
            if acc.location < PREDICATE_BASE:
                def_types[(index, acc.path)] = def_type[ident]  # type: ignore[assignment]
    return TypeFacts(use_types, def_types, def_type)
