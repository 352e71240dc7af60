"""Where each instruction reads and writes registers and predicates, and the operand type rules.

Derived from the opcode table: REG operands by their Access, PRED/OPT_PRED
operands, and the registers inside register-based addresses (paths such as
``"src.base"``, ``"dst.handle_reg"``). Registers and predicates share one
numbering of *locations*: register ``rN`` is ``N``, predicate ``pN`` is
``PREDICATE_BASE + N``. Nothing here copies or mutates an instruction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .isa.addresses import Address
from .isa.opcodes import Access, OperandKind, TypeRule
from .isa.registers import NUM_PREDICATES, NUM_REGISTERS
from .isa.types import Type

__all__ = [
    "PREDICATE_BASE", "NUM_LOCATIONS", "OperandAccess", "operand_accesses", "instruction_text",
    "rule_accepts", "rule_text", "is_generic_rule", "read_type", "location_name", "compatible",
]

#: location of predicate ``pN`` is ``PREDICATE_BASE + N``
PREDICATE_BASE = NUM_REGISTERS
NUM_LOCATIONS = NUM_REGISTERS + NUM_PREDICATES


@dataclass(frozen=True, slots=True)
class OperandAccess:
    """One register or predicate an instruction reads or writes: its operand ``path``, its
    ``location`` and its type ``rule`` (a TypeRule, a fixed Type, or None for predicates)."""

    path: str
    location: int
    rule: object


#: (address mode, ADDR rule) -> (attribute, type rule) of each register the address reads
ADDRESS_REGISTER_RULES: dict[tuple[type, str], tuple[tuple[str, TypeRule], ...]] = {
    (Address.RegisterIndirect, "global"): (("base", TypeRule.PTR),),
    (Address.RegisterIndirect, "shared"): (("base", TypeRule.INT),),
    (Address.RegisterIndirectComputed, "global"): (("handle_reg", TypeRule.INT32), ("offset_reg", TypeRule.INT)),
}

_READS = (Access.READ, Access.READ_WRITE)
_WRITES = (Access.WRITE, Access.READ_WRITE)
_ACCESS_CACHE: dict[type, tuple] = {}


def _plan(cls: type) -> tuple:
    plan = _ACCESS_CACHE.get(cls)
    if plan is None:
        plan = tuple((o.name, o.kind, o.rule, o.access) for o in cls.INFO.operands
                     if o.kind in (OperandKind.REG, OperandKind.PRED, OperandKind.OPT_PRED, OperandKind.ADDR))
        _ACCESS_CACHE[cls] = plan
    return plan


def operand_accesses(instr) -> tuple[list[OperandAccess], list[OperandAccess]]:
    """``(reads, writes)`` of ``instr`` in table order (a READ_WRITE operand is in both)."""
    reads: list[OperandAccess] = []
    writes: list[OperandAccess] = []
    for name, kind, rule, access in _plan(type(instr)):
        value = getattr(instr, name)
        if kind is OperandKind.REG:
            if access in _READS:
                reads.append(OperandAccess(name, value.index, rule))
            if access in _WRITES:
                writes.append(OperandAccess(name, value.index, rule))
        elif kind is OperandKind.ADDR:
            for attr, reg_rule in ADDRESS_REGISTER_RULES.get((type(value), rule), ()):
                reads.append(OperandAccess(f"{name}.{attr}", getattr(value, attr).index, reg_rule))
        elif value is not None:  # PRED, OPT_PRED
            target = writes if access is Access.WRITE else reads
            target.append(OperandAccess(name, PREDICATE_BASE + value.index, None))
    return reads, writes


def location_name(location: int) -> str:
    """``r5`` or ``p2``."""
    if location >= PREDICATE_BASE:
        return f"p{location - PREDICATE_BASE}"
    return f"r{location}"


def instruction_text(instr) -> str:
    """The instruction's assembly text, or its repr where it cannot be formatted."""
    try:
        return str(instr)
    except Exception:  # the formatter is another module; never let it hide the real error
        return repr(instr)


def compatible(a: Type, b: Type) -> bool:
    """Same type, or integers of the same width (the bits are reinterpreted at a use)."""
    return a is b or (a.is_integer() and b.is_integer() and a.bits == b.bits)


#: TypeRule -> the instruction type field it names
_FIELD_RULES = {TypeRule.TY: "ty", TypeRule.SRC_TY: "src_ty", TypeRule.DST_TY: "dst_ty"}

#: generic TypeRule -> (accepts a type, description, type of a never-defined register)
_GENERIC_RULES: dict[TypeRule, tuple[Callable[[Type], bool], str, Type]] = {
    TypeRule.INT: (lambda t: t.is_integer() and t.bits <= 64, "an integer type of at most 64 bits", Type.U32),
    TypeRule.INT32: (lambda t: t in (Type.I32, Type.U32), "i32 or u32", Type.U32),
    TypeRule.PTR: (lambda t: t in (Type.I64, Type.U64), "i64 or u64 (a pointer)", Type.U64),
}


def _fixed_type(rule: object, instr) -> Type | None:
    if isinstance(rule, Type):
        return rule
    field = _FIELD_RULES.get(rule)  # type: ignore[arg-type]
    return getattr(instr, field) if field is not None else None


def is_generic_rule(rule: object) -> bool:
    """True for ``int``, ``int32`` and ``ptr``: rules that accept several types."""
    return rule in _GENERIC_RULES


def rule_accepts(rule: object, ty: Type, instr) -> bool:
    """Whether a register holding ``ty`` may feed an operand with ``rule`` of ``instr``."""
    fixed = _fixed_type(rule, instr)
    if fixed is not None:
        return compatible(fixed, ty)
    return _GENERIC_RULES[rule][0](ty)  # type: ignore[index]


def rule_text(rule: object, instr) -> str:
    """What the rule asks for, in words (``f32``, ``i32 or u32``)."""
    fixed = _fixed_type(rule, instr)
    if fixed is not None:
        return fixed.suffix
    return _GENERIC_RULES[rule][1]  # type: ignore[index]


def read_type(rule: object, instr, held: Type | None) -> Type:
    """The type an operand reads its register as: the rule's type where it names one, else the
    register's type ``held`` (None: never defined, the rule's default)."""
    fixed = _fixed_type(rule, instr)
    if fixed is not None:
        return fixed
    if held is None:
        return _GENERIC_RULES[rule][2]  # type: ignore[index]
    return held
