"""Where each instruction reads and writes registers and predicates, and the operand type rules.

Derived from the opcode table: REG operands by their Access, PRED/OPT_PRED
operands, and the registers inside register-based addresses (paths such as
``"src.base"``, ``"dst.handle_reg"``). Registers and predicates share one
numbering of *locations*: register ``rN`` is ``N``, predicate ``pN`` is
``PREDICATE_BASE + N``. Nothing here copies or mutates an instruction.
"""

from __future__ import annotations

from typing import NamedTuple

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


class OperandAccess(NamedTuple):
    """One register or predicate an instruction reads or writes: its operand ``path``, its
    ``location``, its type ``rule`` (a TypeRule, a fixed Type, or None for predicates) and
    ``fixed``, the one type the rule names on this instruction (None for generic rules)."""

    path: str
    location: int
    rule: object
    fixed: Type | None


#: (address mode, ADDR rule) -> (attribute, type rule) of each register the address reads
ADDRESS_REGISTER_RULES: dict[tuple[type, str], tuple[tuple[str, TypeRule], ...]] = {
    (Address.RegisterIndirect, "global"): (("base", TypeRule.PTR),),
    (Address.RegisterIndirect, "shared"): (("base", TypeRule.INT),),
    (Address.RegisterIndirectComputed, "global"): (("handle_reg", TypeRule.INT32), ("offset_reg", TypeRule.INT)),
}

#: TypeRule -> the instruction type field it names
_FIELD_RULES = {TypeRule.TY: "ty", TypeRule.SRC_TY: "src_ty", TypeRule.DST_TY: "dst_ty"}
_REG, _PRED, _ADDR = 0, 1, 2
_KINDS = {OperandKind.REG: _REG, OperandKind.PRED: _PRED, OperandKind.OPT_PRED: _PRED, OperandKind.ADDR: _ADDR}
_PLANS: dict[type, tuple] = {}
_ADDRESS_PLANS: dict[tuple[type, str, str], tuple[tuple[str, str, TypeRule], ...]] = {}


def _plan(cls: type) -> tuple:
    """Per operand: (name, kind, rule, read?, written?, fixed spec: a Type, a type field name or None)."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = tuple((o.name, _KINDS[o.kind], o.rule, o.access is not Access.WRITE, o.access is not Access.READ,
                      o.rule if isinstance(o.rule, Type) else _FIELD_RULES.get(o.rule))
                     for o in cls.INFO.operands if o.kind in _KINDS)
        _PLANS[cls] = plan
    return plan


def _address_plan(mode: type, name: str, rule: str) -> tuple[tuple[str, str, TypeRule], ...]:
    key = (mode, name, rule)
    plan = _ADDRESS_PLANS.get(key)
    if plan is None:
        registers = ADDRESS_REGISTER_RULES.get((mode, rule), ())
        plan = tuple((f"{name}.{attr}", attr, reg_rule) for attr, reg_rule in registers)
        _ADDRESS_PLANS[key] = plan
    return plan


def operand_accesses(instr) -> tuple[list[OperandAccess], list[OperandAccess]]:
    """``(reads, writes)`` of ``instr`` in table order (a READ_WRITE operand is in both)."""
    reads: list[OperandAccess] = []
    writes: list[OperandAccess] = []
    for name, kind, rule, is_read, is_written, fixed in _plan(type(instr)):
        value = getattr(instr, name)
        if kind == _REG:
            if fixed.__class__ is str:
                fixed = getattr(instr, fixed)
            access = OperandAccess(name, value.index, rule, fixed)
            if is_read:
                reads.append(access)
            if is_written:
                writes.append(access)
        elif kind == _ADDR:
            for path, attr, reg_rule in _address_plan(value.__class__, name, rule):
                reads.append(OperandAccess(path, getattr(value, attr).index, reg_rule, None))
        elif value is not None:
            (reads if is_read else writes).append(OperandAccess(name, PREDICATE_BASE + value.index, None, None))
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


#: type -> the key shared by the types a use treats as one (integers of one width)
_COMPATIBILITY_KEY: dict[Type, object] = {t: ("integer", t.bits) if t.is_integer() else t for t in Type}


def compatible(a: Type, b: Type) -> bool:
    """Same type, or integers of the same width (the bits are reinterpreted at a use)."""
    return a is b or _COMPATIBILITY_KEY[a] == _COMPATIBILITY_KEY[b]


#: generic TypeRule -> (the types it accepts, description, type of a never-defined register)
_GENERIC_RULES: dict[TypeRule, tuple[frozenset[Type], str, Type]] = {
    TypeRule.INT: (frozenset(t for t in Type if t.is_integer() and t.bits <= 64), "an integer type of at most 64 bits",
                   Type.U32),
    TypeRule.INT32: (frozenset({Type.I32, Type.U32}), "i32 or u32", Type.U32),
    TypeRule.PTR: (frozenset({Type.I64, Type.U64}), "i64 or u64 (a pointer)", Type.U64),
}


def is_generic_rule(rule: object) -> bool:
    """True for ``int``, ``int32`` and ``ptr``: rules that accept several types."""
    return rule in _GENERIC_RULES


def rule_accepts(access: OperandAccess, ty: Type) -> bool:
    """Whether a register holding ``ty`` may feed the operand ``access``."""
    if access.fixed is not None:
        return compatible(access.fixed, ty)
    return ty in _GENERIC_RULES[access.rule][0]  # type: ignore[index]


def rule_text(access: OperandAccess) -> str:
    """What the operand's rule asks for, in words (``f32``, ``i32 or u32``)."""
    if access.fixed is not None:
        return access.fixed.suffix
    return _GENERIC_RULES[access.rule][1]  # type: ignore[index]


def read_type(access: OperandAccess, held: Type | None) -> Type:
    """The type the operand ``access`` reads its register as: the rule's type where it names
    one, else the register's type ``held`` (None: never defined, the rule's default)."""
    if access.fixed is not None:
        return access.fixed
    if held is None:
        return _GENERIC_RULES[access.rule][2]  # type: ignore[index]
    return held
