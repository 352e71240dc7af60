"""The effects column of the opcode table: what an instruction reads and writes, how it may trap, and
whether lanes may run it in any order.

``Effects.reads`` / ``writes`` are drawn from ``STATE``: "registers" (the lane's registers and predicates),
"global" (buffers, pools and the boundary memory through an address), "shared" (the block's shared
memory), "pool" (pool allocations and, for PoolLoad/PoolStore, their bytes) and "atlas" (the resonance
accumulator and the lane's phase). ``traps`` is every TrapCode the instruction may raise; ``order_free``
says the lanes of a launch may run it in any order or at once with the same results (no effect another
lane can observe: it writes only its own registers or per-lane state).

:func:`derive_effects` computes a row's effects from its operands (register accesses, address operands'
spaces and memory access, which bring the address traps) and its kind (control transfers count toward
the budget); a row overrides what its operands do not say (DIV's traps, ResAccum's accumulator).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TrapCode

__all__ = ["Effects", "STATE", "derive_effects", "ADDRESS_TRAPS", "is_typed_computation"]

#: what an instruction may read or write
STATE = ("registers", "global", "shared", "pool", "atlas")

#: the traps of an access through an address, by the address's space
ADDRESS_TRAPS = {
    "global": frozenset({TrapCode.OUT_OF_BOUNDS, TrapCode.MISALIGNED, TrapCode.INVALID_HANDLE}),
    "shared": frozenset({TrapCode.OUT_OF_BOUNDS, TrapCode.MISALIGNED}),
}


@dataclass(frozen=True, slots=True)
class Effects:
    """What an instruction reads and writes (names of ``STATE``), the traps it may raise, and whether lanes may
    run it in any order."""

    reads: frozenset[str]
    writes: frozenset[str]
    traps: frozenset[TrapCode]
    order_free: bool
    #: the lane waits at it for the other lanes of its block (BarSync)
    barrier: bool = False

    def __post_init__(self) -> None:
        unknown = (self.reads | self.writes) - set(STATE)
        if unknown:
            raise ValueError(f"effects name unknown state {sorted(unknown)} (known: {', '.join(STATE)})")

    @property
    def may_trap(self) -> bool:
        """Whether the instruction may trap (dead-code elimination must keep it)."""
        return bool(self.traps)


def derive_effects(info, *, reads=(), writes=(), traps=(), order_free: bool | None = None,
                   barrier: bool = False) -> Effects:
    """The effects of row ``info`` from its operands and kind, plus the ``reads``, ``writes`` and ``traps`` given.

    Registers: read when an operand register or predicate is read (or an address may use registers),
    written when one is written. Memory: each address operand reads or writes its space and may raise that
    space's ADDRESS_TRAPS. A control instruction that jumps (it has a label) may exceed the budget. Order-free
    (unless ``order_free`` says): a per-lane instruction that writes nothing but registers."""
    from .opcodes import Access, ExecKind, OperandKind  # the table imports this module

    read, written, raised = set(reads), set(writes), set(traps)
    for op in info.operands:
        if op.kind in (OperandKind.REG, OperandKind.PRED, OperandKind.OPT_PRED):
            if op.access is not Access.WRITE:
                read.add("registers")
            if op.access is not Access.READ:
                written.add("registers")
        elif op.kind is OperandKind.ADDR:
            read.add("registers")
            if op.memory is not Access.WRITE:
                read.add(op.rule)
            if op.memory is not Access.READ:
                written.add(op.rule)
            raised |= ADDRESS_TRAPS[op.rule]
        elif op.kind is OperandKind.LABEL and info.kind is ExecKind.CONTROL:
            raised.add(TrapCode.BUDGET_EXCEEDED)
    if order_free is None:
        order_free = info.kind is ExecKind.LANE and written <= {"registers"}
    return Effects(frozenset(read), frozenset(written), frozenset(raised), order_free, barrier)


def is_typed_computation(info) -> bool:
    """Whether a row computes ``dst`` from register operands of the instruction's type: a per-lane row with one
    type field ``ty`` whose operands are all registers, only ``dst`` written, that touches nothing but
    registers and is not data movement (the lane code "read the operands, compute, write dst")."""
    from .opcodes import Access, ExecKind, OperandKind

    return (info.kind is ExecKind.LANE and info.type_fields == ("ty",) and info.category != "data movement"
            and all(o.kind is OperandKind.REG for o in info.operands)
            and [o.name for o in info.operands if o.access is not Access.READ] == ["dst"]
            and info.effects.reads == info.effects.writes == frozenset({"registers"}))
