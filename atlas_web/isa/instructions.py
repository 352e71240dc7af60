"""The instruction classes, generated from the opcode table.

Each instruction is a frozen, slotted dataclass named as in the seed (``ADD``,
``ParallelMapBinary``) whose fields are the table's operands followed by its
type fields, so ``ADD(dst=r1, lhs=r2, rhs=r3, ty=Type.F32)``. Construction
checks every operand and raises ProgramError naming the instruction and the
operand; it never stores a malformed instruction.
"""

from __future__ import annotations

import dataclasses
import math
import struct
from typing import Callable

from ..errors import ProgramError
from .addresses import ADDRESS_MODES, Address
from .dims import MAX_DIMS, normalize_dims
from .floats import CANONICAL_NAN, round_float
from .opcodes import OPCODE_TABLE, OpcodeInfo, Operand, OperandKind, float_storage
from .operations import COOPERATIVE_OPERATION_TYPES
from .registers import Label, Predicate, Register, is_label_name
from .types import Type

__all__ = ["Instruction", "INSTRUCTION_CLASSES", "info_of", "by_opcode", "by_name", "ADDRESS_MODES_BY_RULE",
           "make_instruction_class", "normalize_immediate"]

#: the address modes an ADDR operand accepts, by its rule ("global" or "shared")
ADDRESS_MODES_BY_RULE: dict[str, tuple[type, ...]] = {
    "global": (Address.BufferOffset, Address.PoolOffset, Address.Class, Address.RegisterIndirect,
               Address.RegisterIndirectComputed),
    "shared": (Address.Shared, Address.RegisterIndirect),
}


class Instruction:
    """Base of every instruction class; ``INFO`` is its opcode-table row."""

    __slots__ = ()
    INFO: OpcodeInfo

    @property
    def info(self) -> OpcodeInfo:
        """The instruction's opcode-table row."""
        return self.INFO

    @property
    def type(self) -> Type | None:
        """The instruction's ``ty`` (CVT: its ``dst_ty``), or None when it has none."""
        if "ty" in self.INFO.type_fields:
            return self.ty  # type: ignore[attr-defined]
        if self.INFO.type_fields:
            return self.dst_ty  # type: ignore[attr-defined]
        return None

    def operands(self) -> dict[str, object]:
        """Field name -> value, in table order (operands, then type fields)."""
        return {name: getattr(self, name) for name in self.INFO.fields}

    def __str__(self) -> str:
        from ..asm import format_instruction
        return format_instruction(self)


def _fail(info: OpcodeInfo, reason: str) -> ProgramError:
    return ProgramError(f"{info.name}: {reason}")


def _is_uint(value: object, bits: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < (1 << bits)


def normalize_immediate(info: OpcodeInfo, value: object, ty: Type, name: str = "value") -> int | float:
    """``value`` as instruction ``info`` keeps an immediate of ``ty`` (operand ``name``): an int wrapped to the
    type's width (signed or unsigned range accepted), a float rounded to the type (an int beyond its range
    an infinity, NaN canonical). Raises ProgramError naming the instruction and operand (a bool, a non-number,
    an int that does not fit)."""
    if ty.is_float():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _fail(info, f"operand {name!r} must be an int or float for {ty.name}, got {value!r}")
        try:
            result = round_float(float(value), ty)
        except OverflowError:  # an int beyond the float range (copysign would convert it too)
            result = math.inf if value > 0 else -math.inf
        return CANONICAL_NAN if math.isnan(result) else result
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(info, f"operand {name!r} must be an int for {ty.name}, got {value!r}")
    lo = -(1 << (ty.bits - 1))
    hi = (1 << ty.bits) - 1
    if not lo <= value <= hi:
        raise _fail(info, f"operand {name!r} {value} does not fit in {ty.bits} bits ({ty.name})")
    return ty.wrap(value)


def _instance_check(cls: type) -> Callable[[OpcodeInfo, Operand, object], object]:
    """The check of an operand that must be a ``cls`` (Register, Predicate)."""
    def check(info: OpcodeInfo, op: Operand, value: object) -> object:
        if not isinstance(value, cls):
            raise _fail(info, f"operand {op.name!r} must be a {cls.__name__}, got {value!r}")
        return value
    return check


def _check_optional_predicate(info: OpcodeInfo, op: Operand, value: object) -> object:
    if value is not None and not isinstance(value, Predicate):
        raise _fail(info, f"operand {op.name!r} must be a Predicate or None, got {value!r}")
    return value


def _check_flag(info: OpcodeInfo, op: Operand, value: object) -> object:
    if not isinstance(value, bool):
        raise _fail(info, f"operand {op.name!r} must be a bool, got {value!r}")
    return value


def _check_label(info: OpcodeInfo, op: Operand, value: object) -> object:
    if isinstance(value, Label):
        return value
    if not isinstance(value, str):
        raise _fail(info, f"operand {op.name!r} must be a Label or a label name, got {value!r}")
    if not is_label_name(value):
        raise _fail(info, f"operand {op.name!r}: invalid label name {value!r}")
    return Label(value)


def _check_address(info: OpcodeInfo, op: Operand, value: object) -> object:
    modes = ADDRESS_MODES_BY_RULE[op.rule]  # type: ignore[index]
    if not isinstance(value, modes):
        names = ", ".join("Address." + m.__name__ for m in modes)
        raise _fail(info, f"operand {op.name!r} must be one of {names}, got {value!r}")
    return value


def _check_uint(info: OpcodeInfo, op: Operand, value: object) -> object:
    bits: int = op.rule  # type: ignore[assignment]
    if not _is_uint(value, bits):
        raise _fail(info, f"operand {op.name!r} must be an int in 0..{(1 << bits) - 1}, got {value!r}")
    return value


def _check_enum(info: OpcodeInfo, op: Operand, value: object) -> object:
    enum_class: type = op.rule  # type: ignore[assignment]
    if not isinstance(value, enum_class):
        raise _fail(info, f"operand {op.name!r} must be a {enum_class.__name__}, got {value!r}")
    return value


def _check_dims(info: OpcodeInfo, op: Operand, value: object) -> object:
    stored = normalize_dims(value, op.rule)  # type: ignore[arg-type]
    if stored is None:
        what = "ints" if op.rule == 1 else "(int, int) pairs"
        raise _fail(info, f"operand {op.name!r} must be a sequence of at most {MAX_DIMS} {what} in 0..2**32-1, "
                          f"got {value!r}")
    return value if stored == value else stored


#: OperandKind -> (info, operand, value) -> the value to store, or ProgramError naming the operand. IMM and FLOAT
#: are rounded to their type separately (after the type fields are checked; a FLOAT to its storage type, NaN made
#: canonical).
_OPERAND_CHECKS: dict[OperandKind, Callable[[OpcodeInfo, Operand, object], object]] = {
    OperandKind.REG: _instance_check(Register),
    OperandKind.PRED: _instance_check(Predicate),
    OperandKind.OPT_PRED: _check_optional_predicate,
    OperandKind.FLAG: _check_flag,
    OperandKind.LABEL: _check_label,
    OperandKind.ADDR: _check_address,
    OperandKind.UINT: _check_uint,
    OperandKind.ENUM: _check_enum,
    OperandKind.DIMS: _check_dims,
}
assert set(_OPERAND_CHECKS) | {OperandKind.IMM, OperandKind.FLOAT} == set(OperandKind), \
    "every OperandKind needs a check"


def _make_post_init(info: OpcodeInfo):
    operands = info.operands
    type_fields = info.type_fields

    def __post_init__(self) -> None:
        for tf in type_fields:
            ty = getattr(self, tf)
            if not isinstance(ty, Type):
                raise _fail(info, f"field {tf!r} must be a Type, got {ty!r}")
            if ty not in info.types:
                raise _fail(info, f"type {ty.name} is not accepted (accepted: {_type_list(info)})")
        for op in operands:
            value = getattr(self, op.name)
            stored: object
            if op.kind is OperandKind.IMM:
                stored = normalize_immediate(info, value, self.ty, op.name)
            elif op.kind is OperandKind.FLOAT:
                stored = normalize_immediate(info, value, float_storage(op, self.type), op.name)
            else:
                stored = _OPERAND_CHECKS[op.kind](info, op, value)
            if stored is not value:
                object.__setattr__(self, op.name, stored)
        if info.name == "BRA" and self.negate and self.pred is None:
            raise _fail(info, "negate=True needs a predicate")
        operation = getattr(self, "operation", None)
        if operation is not None and self.ty not in COOPERATIVE_OPERATION_TYPES[operation]:
            accepted = ", ".join(t.name for t in sorted(COOPERATIVE_OPERATION_TYPES[operation], key=lambda t: t.code))
            raise _fail(info, f"operation {operation.name} does not accept {self.ty.name} (accepted: {accepted})")

    return __post_init__


def _type_list(info: OpcodeInfo) -> str:
    return ", ".join(t.name for t in sorted(info.types, key=lambda t: t.code))


def _immediate_key(value: object) -> object:
    """Floats by their bit pattern (``-0.0 != 0.0``; the one canonical NaN equals itself), ints as they are."""
    return ("float", struct.pack("<d", value)) if isinstance(value, float) else value


def _exact_equality(names: tuple[str, ...], immediates: tuple[str, ...]) -> dict[str, Callable]:
    """``__eq__`` and ``__hash__`` comparing immediates exactly (a dataclass compares ``-0.0 == 0.0``, so
    two programs with different bytecode would be equal)."""
    def key(self) -> tuple:
        return tuple(_immediate_key(getattr(self, n)) if n in immediates else getattr(self, n) for n in names)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return key(self) == key(other)

    def __hash__(self) -> int:
        return hash(key(self))

    return {"__eq__": __eq__, "__hash__": __hash__}


def make_instruction_class(info: OpcodeInfo) -> type:
    """The frozen dataclass of the instructions of row ``info`` (how every class of the table is made)."""
    fields: list = []
    for op in info.operands:
        if op.name in info.defaults:
            fields.append((op.name, object, dataclasses.field(default=info.defaults[op.name])))
        else:
            fields.append((op.name, object))
    for tf in info.type_fields:
        if info.default_type is not None:
            fields.append((tf, Type, dataclasses.field(default=info.default_type)))
        else:
            fields.append((tf, Type))
    namespace = {"__post_init__": _make_post_init(info), "INFO": info, "__doc__": f"{info.mnemonic}: {info.summary}."}
    immediates = tuple(op.name for op in info.operands if op.kind in (OperandKind.IMM, OperandKind.FLOAT))
    if immediates:
        namespace.update(_exact_equality(info.fields, immediates))
    cls = dataclasses.make_dataclass(
        info.name, fields, bases=(Instruction,), frozen=True, slots=True, eq=not immediates, namespace=namespace)
    cls.__module__ = __name__
    cls.__str__ = Instruction.__str__  # dataclass does not generate __str__, keep ours
    return cls


INSTRUCTION_CLASSES: dict[str, type] = {}
for _info in OPCODE_TABLE:
    _cls = make_instruction_class(_info)
    INSTRUCTION_CLASSES[_info.name] = _cls
    globals()[_info.name] = _cls
    __all__.append(_info.name)
del _info, _cls

_BY_OPCODE = {c.INFO.opcode: c for c in INSTRUCTION_CLASSES.values()}


def info_of(instr_or_cls) -> OpcodeInfo:
    """The opcode-table row of an instruction or instruction class."""
    return instr_or_cls.INFO


def by_opcode(opcode: int) -> type:
    """The instruction class of a bytecode opcode; raises KeyError for an unknown one."""
    return _BY_OPCODE[opcode]


def by_name(name: str) -> type:
    """The instruction class named ``name`` (seed spelling); raises KeyError."""
    return INSTRUCTION_CLASSES[name]


assert len(_BY_OPCODE) == len(OPCODE_TABLE), "duplicate opcode in the opcode table"
assert ADDRESS_MODES  # imported for re-export by the package
