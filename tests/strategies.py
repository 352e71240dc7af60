"""Hypothesis strategies for Atlas instructions and programs (reused by differential tests).

Everything is derived from the opcode table: ``instructions()`` draws any
instruction of any row with valid operands (every address mode an operand
accepts, extended-int immediates at their limits, NaN / ±0 / ±inf floats,
every enum member with the types it accepts); ``programs()`` draws
structurally valid Programs (every label an instruction names is defined), not
necessarily ones the verifier accepts.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import string
from typing import Callable

from hypothesis import strategies as st

from atlas_web.isa.addresses import CLASS_STRIDE, MAX_HANDLE, MAX_OFFSET, Address
from atlas_web.isa.dims import MAX_DIMS
from atlas_web.isa.instructions import ADDRESS_MODES_BY_RULE, INSTRUCTION_CLASSES, Instruction
from atlas_web.isa.opcodes import OPCODE_TABLE, OpcodeInfo, OperandKind, float_storage
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES
from atlas_web.isa.registers import NUM_PREDICATES, NUM_REGISTERS, Label, Predicate, Register
from atlas_web.isa.types import Type
from atlas_web.program import Program

__all__ = [
    "registers", "predicates", "label_names", "addresses", "immediates", "types_of", "instruction_of",
    "instructions", "programs", "ADDRESS_STRATEGIES", "VOCABULARIES",
]

_LABEL_START = string.ascii_letters + "_"
_LABEL_REST = string.ascii_letters + string.digits + "_."


@functools.lru_cache(maxsize=None)
def registers() -> st.SearchStrategy[Register]:
    """Any register r0 … r255 (special ones included)."""
    return st.builds(Register, st.integers(0, NUM_REGISTERS - 1))


@functools.lru_cache(maxsize=None)
def predicates() -> st.SearchStrategy[Predicate]:
    """Any predicate p0 … p15."""
    return st.builds(Predicate, st.integers(0, NUM_PREDICATES - 1))


@functools.lru_cache(maxsize=None)
def label_names() -> st.SearchStrategy[str]:
    """Valid label names, from one character up to the 255-character limit."""
    short = st.builds(str.__add__, st.sampled_from(_LABEL_START), st.text(_LABEL_REST, max_size=16))
    longest = st.builds(lambda c, rest: c + rest * 254, st.sampled_from(_LABEL_START), st.sampled_from(_LABEL_REST))
    return st.integers(0, 9).flatmap(lambda k: longest if k == 0 else short)


def _bounded(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Integers in lo..hi, with the ends and small values drawn often."""
    return st.one_of(st.sampled_from(sorted({lo, hi, max(lo, min(hi, 0)), max(lo, min(hi, 1))})),
                     st.integers(lo, min(hi, lo + 4096)), st.integers(lo, hi))


_HANDLES = _bounded(1, MAX_HANDLE)
_OFFSETS = _bounded(0, MAX_OFFSET)

#: address mode -> strategy of its instances (tests check that every mode has one)
ADDRESS_STRATEGIES: dict[type, st.SearchStrategy] = {
    Address.BufferOffset: st.builds(Address.BufferOffset, _HANDLES, _OFFSETS),
    Address.PoolOffset: st.builds(Address.PoolOffset, _HANDLES, _OFFSETS),
    Address.Shared: st.builds(Address.Shared, _OFFSETS),
    Address.Class: st.builds(Address.Class, st.integers(0, 95), _bounded(0, CLASS_STRIDE - 1)),
    Address.RegisterIndirect: st.builds(Address.RegisterIndirect, registers(), _bounded(-(1 << 31), (1 << 31) - 1)),
    Address.RegisterIndirectComputed: st.builds(Address.RegisterIndirectComputed, registers(), registers()),
}


@functools.lru_cache(maxsize=None)
def addresses(rule: str = "global") -> st.SearchStrategy:
    """Addresses of every mode an ADDR operand with ``rule`` ("global" or "shared") accepts."""
    return st.one_of([ADDRESS_STRATEGIES[mode] for mode in ADDRESS_MODES_BY_RULE[rule]])


_FLOAT_EDGES = st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.5, 65504.0, 5e-324,
                                float.fromhex("0x1.fffffep127"), 1e-45])
_FLOAT_WIDTHS = {Type.F16: 16, Type.BF16: 32, Type.F32: 32, Type.F64: 64}


@functools.lru_cache(maxsize=None)
def immediates(ty: Type) -> st.SearchStrategy:
    """Immediates MOV_IMM accepts for ``ty``: any float (rounded by the instruction) or any int in the
    accepted range -2**(bits-1) … 2**bits - 1 (wrapped by the instruction), ends included."""
    if ty.is_float():
        return st.one_of(_FLOAT_EDGES, st.floats(width=_FLOAT_WIDTHS[ty]), st.floats(), st.integers(-10**6, 10**6))
    lo, hi = -(1 << (ty.bits - 1)), (1 << ty.bits) - 1
    return _bounded(lo, hi)


def types_of(types) -> st.SearchStrategy[Type]:
    """One of ``types``, in a stable order (so shrinking is reproducible)."""
    return st.sampled_from(sorted(types, key=lambda t: t.code))


@functools.lru_cache(maxsize=None)
def _uints(bits: int) -> st.SearchStrategy[int]:
    return _bounded(0, (1 << bits) - 1)


def _dims(arity: int, number: st.SearchStrategy[int], most: int) -> st.SearchStrategy[tuple]:
    """A DIMS operand's values: up to ``most`` numbers (arity 1) or pairs (arity 2)."""
    entry = number if arity == 1 else st.tuples(number, number)
    return st.lists(entry, max_size=most).map(tuple)


#: OperandKind -> strategy of its values, given (operand, instruction type, label names, previous value);
#: ENUM operands are drawn first (they restrict the types), so they are not here
_OPERAND_STRATEGIES: dict[OperandKind, Callable[..., st.SearchStrategy]] = {
    OperandKind.REG: lambda op, ty, labels, previous: registers(),
    OperandKind.PRED: lambda op, ty, labels, previous: predicates(),
    OperandKind.OPT_PRED: lambda op, ty, labels, previous: st.none() | predicates(),
    # the table puts BRA's negation right after the predicate it negates
    OperandKind.FLAG: lambda op, ty, labels, previous: st.booleans() if previous is not None else st.just(False),
    OperandKind.LABEL: lambda op, ty, labels, previous: st.builds(Label, labels),
    OperandKind.ADDR: lambda op, ty, labels, previous: addresses(op.rule),
    OperandKind.UINT: lambda op, ty, labels, previous: _uints(op.rule),
    OperandKind.IMM: lambda op, ty, labels, previous: immediates(ty),
    OperandKind.FLOAT: lambda op, ty, labels, previous: immediates(float_storage(op, ty)),
    OperandKind.DIMS: lambda op, ty, labels, previous: _dims(op.rule, _uints(32), MAX_DIMS),
}


#: a few registers (general and special), small handles and offsets, small counts: operands that programs
#: run on a small launch with buffers 2 … 4 and a pool actually meet (more of them verify and touch memory)
_RUNNABLE_REGISTERS = st.builds(Register, st.sampled_from([0, 1, 2, 3, 4, 5, 252, 255]))
_RUNNABLE_ADDRESSES: dict[type, st.SearchStrategy] = {
    Address.BufferOffset: st.builds(Address.BufferOffset, st.integers(1, 5), st.integers(0, 64)),
    Address.PoolOffset: st.builds(Address.PoolOffset, st.integers(1, 6), st.integers(0, 64)),
    Address.Shared: st.builds(Address.Shared, st.integers(0, 64)),
    Address.Class: st.builds(Address.Class, st.integers(0, 95), st.integers(0, 64)),
    Address.RegisterIndirect: st.builds(Address.RegisterIndirect, _RUNNABLE_REGISTERS, st.integers(-8, 64)),
    Address.RegisterIndirectComputed: st.builds(Address.RegisterIndirectComputed, _RUNNABLE_REGISTERS,
                                                _RUNNABLE_REGISTERS),
}
_RUNNABLE_OPERAND_STRATEGIES: dict[OperandKind, Callable[..., st.SearchStrategy]] = {
    **_OPERAND_STRATEGIES,
    OperandKind.REG: lambda op, ty, labels, previous: _RUNNABLE_REGISTERS,
    OperandKind.ADDR: lambda op, ty, labels, previous: st.one_of(
        [_RUNNABLE_ADDRESSES[mode] for mode in ADDRESS_MODES_BY_RULE[op.rule]]),
    OperandKind.UINT: lambda op, ty, labels, previous: st.integers(0, min(40, (1 << op.rule) - 1)),
    OperandKind.DIMS: lambda op, ty, labels, previous: _dims(op.rule, st.integers(0, 3), 3),
}
#: vocabulary name -> its operand strategies: "any" (every valid operand) or "runnable" (see above)
VOCABULARIES: dict[str, dict[OperandKind, Callable[..., st.SearchStrategy]]] = {
    "any": _OPERAND_STRATEGIES, "runnable": _RUNNABLE_OPERAND_STRATEGIES,
}


@st.composite
def instruction_of(draw, info: OpcodeInfo, labels: st.SearchStrategy[str] | None = None,
                   vocabulary: str = "any") -> Instruction:
    """An instruction of the row ``info`` with valid operands from ``vocabulary``; LABEL operands are
    drawn from ``labels``."""
    label_strategy = label_names() if labels is None else labels
    values: dict[str, object] = {}
    accepted = info.types
    for op in info.operands:
        if op.kind is OperandKind.ENUM:
            member = draw(st.sampled_from(list(op.rule)))
            values[op.name] = member
            accepted = accepted & COOPERATIVE_OPERATION_TYPES.get(member, accepted)
    for name in info.type_fields:
        values[name] = draw(types_of(accepted))
    ty = values.get("ty", values.get("dst_ty"))
    previous = None
    for op in info.operands:
        if op.kind is not OperandKind.ENUM:
            values[op.name] = draw(VOCABULARIES[vocabulary][op.kind](op, ty, label_strategy, previous))
        previous = values[op.name]
    return INSTRUCTION_CLASSES[info.name](**values)


def instructions(labels: st.SearchStrategy[str] | None = None,
                 vocabulary: str = "any") -> st.SearchStrategy[Instruction]:
    """Any instruction of any row of the opcode table, its operands from ``vocabulary``."""
    return st.one_of([instruction_of(info, labels, vocabulary) for info in OPCODE_TABLE])


#: LABEL operands of program bodies are drawn from these slots, then renamed to the drawn label names
#: (building a fresh instruction strategy per program would make hypothesis re-validate it every time)
_LABEL_SLOTS = tuple(f"slot{i}" for i in range(4))


@functools.lru_cache(maxsize=None)
def _bodies(max_instructions: int, vocabulary: str) -> st.SearchStrategy[list]:
    return st.lists(instructions(st.sampled_from(_LABEL_SLOTS), vocabulary), max_size=max_instructions)


def _renamed(instr: Instruction, names: dict[str, str]) -> Instruction:
    changes = {op.name: Label(names[getattr(instr, op.name).name]) for op in instr.INFO.operands
               if op.kind is OperandKind.LABEL}
    return dataclasses.replace(instr, **changes) if changes else instr


@st.composite
def programs(draw, max_instructions: int = 12, max_labels: int = 4, vocabulary: str = "any") -> Program:
    """A structurally valid Program: labels at positions 0 … len, every LABEL operand defined, operands
    from ``vocabulary`` (``"any"`` or ``"runnable"``).

    Not necessarily verifier-valid (types, control flow and uniformity are not considered).
    """
    names = draw(st.lists(label_names(), min_size=1, max_size=max_labels, unique=True))
    slot_names = {slot: names[i % len(names)] for i, slot in enumerate(_LABEL_SLOTS)}
    body = [_renamed(instr, slot_names) for instr in draw(_bodies(max_instructions, vocabulary))]
    referenced = {getattr(ins, op.name).name for ins in body for op in ins.INFO.operands
                  if op.kind is OperandKind.LABEL}
    defined = referenced | {n for n in names if draw(st.booleans())}
    labels = {name: draw(st.integers(0, len(body))) for name in sorted(defined)}
    return Program(body, labels)
