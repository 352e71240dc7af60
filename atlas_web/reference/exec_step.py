"""One instruction executed for one group of converged lanes: operand reads, destination writes, traps.

A rule of the executor's table receives a ``Step``: the instruction, its
prepared ``Plan`` (operand types resolved once per program) and the lanes it
runs for (``idx``: None for every lane of the launch, else global lane ids).
Every array a rule reads or writes is over those lanes, in that order. A lane
that traps stops: ``trap`` removes it from the launch, and later writes of the
same step skip it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..errors import TrapCode
from ..isa.opcodes import Access, ExecKind, OperandKind, TypeRule
from ..isa.registers import Register
from ..isa.types import Type

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from .executor import Machine

__all__ = ["Plan", "Step", "OperandSlot", "operand_type"]


@dataclass(frozen=True, slots=True)
class OperandSlot:
    """A register or predicate operand: field name, kind (REG/PRED), index, and its type.

    ``ty`` is None for a register whose rule admits several types (``int``,
    ``int32``, ``ptr``) when the verifier did not give one; the register is then
    read in the type it holds.
    """

    field: str
    kind: OperandKind
    number: int
    ty: Type | None


@dataclass(slots=True)
class Plan:
    """An instruction prepared for execution: its rule, operand slots and resolved branch target."""

    index: int
    instr: object
    rule: Callable[["Step"], object]
    kind: ExecKind
    reads: dict[str, OperandSlot]
    dest: OperandSlot | None
    target: int | None
    #: (address field, register field of the address) -> static type or None
    address_types: dict[tuple[str, str], Type | None] = field(default_factory=dict)


_STATIC_RULES = {TypeRule.TY: "ty", TypeRule.SRC_TY: "src_ty", TypeRule.DST_TY: "dst_ty"}


def operand_type(instr: object, rule: object, verified: Type | None) -> Type | None:
    """The type a register operand is read or written as: fixed by its rule, or the verifier's, or None."""
    if isinstance(rule, Type):
        return rule
    if rule in _STATIC_RULES:
        return getattr(instr, _STATIC_RULES[rule])
    return verified


def plan_slots(instr: object, verified_type: Callable[[str], Type | None]) -> tuple[dict, OperandSlot | None]:
    """The read slots and the destination slot of ``instr`` (see OperandSlot)."""
    reads: dict[str, OperandSlot] = {}
    dest = None
    for op in instr.INFO.operands:
        if op.kind is OperandKind.REG:
            slot = OperandSlot(op.name, op.kind, getattr(instr, op.name).index,
                               operand_type(instr, op.rule, verified_type(op.name)))
        elif op.kind is OperandKind.PRED or (op.kind is OperandKind.OPT_PRED and getattr(instr, op.name) is not None):
            slot = OperandSlot(op.name, OperandKind.PRED, getattr(instr, op.name).index, None)
        else:
            continue
        if op.access is Access.WRITE:
            dest = slot
        else:
            reads[op.name] = slot
    return reads, dest


class Step:
    """The execution of ``plan`` for lanes ``idx`` (None: every lane) of ``machine``."""

    __slots__ = ("machine", "plan", "instr", "idx", "count", "trapped")

    def __init__(self, machine: "Machine", plan: Plan, idx: np.ndarray | None, count: int) -> None:
        self.machine = machine
        self.plan = plan
        self.instr = plan.instr
        self.idx = idx
        self.count = count
        #: bool mask over this step's lanes of those that trapped in it, or None
        self.trapped: np.ndarray | None = None

    # ---- lanes --------------------------------------------------------------
    def lanes(self) -> np.ndarray:
        """The global ids of this step's lanes (int64)."""
        return self.machine.geometry.global_ids() if self.idx is None else self.idx

    # ---- reads --------------------------------------------------------------
    def read(self, name: str) -> np.ndarray:
        """The values of register or predicate operand ``name`` for this step's lanes."""
        slot = self.plan.reads[name]
        if slot.kind is OperandKind.PRED:
            return self.machine.preds.read(slot.number, self.idx)
        return self.read_register_slot(slot)[1]

    def read_typed(self, name: str) -> tuple[Type, np.ndarray]:
        """``(type, values)`` of register operand ``name`` (its static type, else the type it holds)."""
        return self.read_register_slot(self.plan.reads[name])

    def read_register_slot(self, slot: OperandSlot) -> tuple[Type, np.ndarray]:
        regs = self.machine.regs
        if slot.ty is None:
            return regs.read_as_stored(slot.number, self.idx)
        return slot.ty, regs.read(slot.number, slot.ty, self.idx)

    def read_register(self, reg: Register, ty: Type | None) -> tuple[Type, np.ndarray]:
        """``(type, values)`` of ``reg`` read as ``ty`` (None: as the type it holds)."""
        regs = self.machine.regs
        if ty is None:
            return regs.read_as_stored(reg.index, self.idx)
        return ty, regs.read(reg.index, ty, self.idx)

    # ---- writes -------------------------------------------------------------
    def _targets(self, values):
        """Lanes and values to write after removing the lanes that trapped in this step."""
        if self.trapped is None:
            return self.idx, values
        keep = ~self.trapped
        lanes = self.lanes()[keep]
        if np.ndim(values):
            values = values[keep]
        return lanes, values

    def write_dest(self, values) -> None:
        """Write the instruction's destination (register or predicate) for the lanes that did not trap."""
        slot = self.plan.dest
        if slot.kind is OperandKind.PRED:
            self.write_predicate(slot.number, values)
        else:
            self.write_register(slot.number, slot.ty, values)

    def write_register(self, number: int, ty: Type, values) -> None:
        """Register ``number`` := ``values`` (of ``ty``) for the lanes that did not trap."""
        lanes, values = self._targets(values)
        self.machine.regs.write(number, ty, values, lanes)

    def write_predicate(self, number: int, values) -> None:
        lanes, values = self._targets(values)
        self.machine.preds.write(number, values, lanes)

    # ---- traps --------------------------------------------------------------
    def trap(self, code: TrapCode, mask: np.ndarray, record=None) -> None:
        """Lanes of this step where ``mask`` holds trap with ``code`` (unless they already trapped here);
        ``record(position)`` gives the TrapRecord of the lane at ``position`` of this step (asked only for
        the lane the launch may report)."""
        mask = np.asarray(mask, dtype=bool)
        if self.trapped is not None:
            mask = mask & ~self.trapped
        if not mask.any():
            return
        self.trapped = mask if self.trapped is None else (self.trapped | mask)
        positions = np.flatnonzero(mask)
        self.machine.lanes_trapped(self.lanes()[positions], code, self.plan.index,
                                   None if record is None else (lambda k: record(int(positions[k]))))
