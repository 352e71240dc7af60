"""One trap report: the AtlasTrap every backend raises, worded once, with its numbers.

A trap's message is ``trap CODE at instruction I in lane L: <the instruction's text>: <what went
wrong>`` (``AtlasTrap`` writes the head). "What went wrong" is worded here from the trap's
``TrapRecord``: five numbers every backend records the same way when (and only when) a lane or a
cooperative step traps (the reference from its arrays, the wasm module in its header, the WebGPU
shader in its per-lane trap record, the hosts of cooperative steps from their checks):

========================  =========  ==========  ===========================  =====================  ===========
code                      operand    handle      value                        extent                 limit
========================  =========  ==========  ===========================  =====================  ===========
OUT_OF_BOUNDS (address)   the ADDR   the handle  byte offset (signed 64-bit)  bytes accessed         its size
OUT_OF_BOUNDS (a value)   the reg    —           the operand's value          —                      its bound
MISALIGNED                the ADDR   the handle  byte offset                  the alignment          —
INVALID_HANDLE            operand    the handle  —                            1: a pool is required  —
DIVISION_BY_ZERO          ``lhs``    —           the dividend (-1 operand:    —                      —
                                                 an extended type's, unsaid)
INTEGER_OVERFLOW          —          —           —                            —                      —
INVALID_CLASS             the reg    —           the operand read unsigned    —                      —
POOL_EXHAUSTED            —          —           the size asked               —                      —
BUDGET_EXCEEDED           —          —           —                            —                      —
========================  =========  ==========  ===========================  =====================  ===========

``operand`` is the operand's position in the instruction's table row (-1: none; PoolLoad and
PoolStore name ``pool``); handle ``SHARED_MEMORY`` names the block's shared memory; a value's
OUT_OF_BOUNDS (BoundMap's page or byte) has extent 0. What no record can hold comes from the host that
raises: the launch's budget (BUDGET_EXCEEDED) and the bytes free for a pool (POOL_EXHAUSTED).
Numbers are read modulo 2**64 and shown as the operand's type shows them. Standard library only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .errors import AtlasTrap, TrapCode
from .isa.opcodes import OperandKind
from .verify_operands import instruction_text

__all__ = ["TrapRecord", "SHARED_MEMORY", "RECORD_NUMBERS", "NO_OPERAND", "trap", "trap_detail",
           "budget_detail", "program_trap", "operand_position", "with_operand", "moved", "renumbered"]

#: the handle number of the block's shared memory in a record
SHARED_MEMORY = 0xFFFFFFFF
#: the operand number of a record that names no operand
NO_OPERAND = -1
#: how many numbers a record holds (the compiled backends reserve this many per trap)
RECORD_NUMBERS = 5

_U64 = (1 << 64) - 1


class TrapRecord(NamedTuple):
    """The numbers of one trap (see the module docstring for what each means per code)."""

    operand: int = NO_OPERAND
    handle: int = 0
    value: int = 0
    extent: int = 0
    limit: int = 0

    @classmethod
    def of(cls, numbers) -> "TrapRecord":
        """A record from RECORD_NUMBERS integers as a backend stored them (the operand as signed 32-bit,
        the others modulo 2**64)."""
        operand, handle, value, extent, limit = (int(n) for n in numbers)
        operand &= 0xFFFFFFFF
        return cls(operand - (1 << 32) if operand >= 1 << 31 else operand, handle & 0xFFFFFFFF, value & _U64,
                   extent & _U64, limit & _U64)


def operand_position(instr: Any, name: str) -> int:
    """The position of operand ``name`` in ``instr``'s table row (what a record's ``operand`` holds)."""
    for position, op in enumerate(instr.INFO.operands):
        if op.name == name:
            return position
    raise KeyError(f"{instr.INFO.name} has no operand {name!r}")


def with_operand(record: TrapRecord, instr: Any, name: str) -> TrapRecord:
    """``record`` naming ``instr``'s operand ``name`` instead (an expansion's check reported as the operand
    of the instruction it expands)."""
    return record._replace(operand=operand_position(instr, name))


def _signed(value: int, bits: int = 64) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _typed(value: int, ty: Any) -> int:
    """``value`` (modulo 2**64) as an integer of ``ty`` shows it."""
    bits = min(ty.bits, 64)
    return _signed(value, bits) if ty.is_signed() else value & ((1 << bits) - 1)


def _operand(instr: Any, record: TrapRecord) -> tuple[str, Any]:
    op = instr.INFO.operands[record.operand]
    return op.name, op


def _where(record: TrapRecord) -> str:
    offset = _signed(record.value)
    return f"offset {offset}" if record.handle == SHARED_MEMORY else f"offset {offset} of handle {record.handle}"


def _out_of_bounds(instr: Any, record: TrapRecord) -> str:
    name, op = _operand(instr, record)
    if op.kind is not OperandKind.ADDR and not record.extent:   # a value (BoundMap's page), not an access
        return f"{name} = {record.value} is not below {record.limit}"
    what = "the block's shared memory" if record.handle == SHARED_MEMORY else "the allocation"
    return f"{name}: {record.extent} bytes at {_where(record)} leave {what} of {record.limit} bytes"


def _misaligned(instr: Any, record: TrapRecord) -> str:
    name, _ = _operand(instr, record)
    where = "shared memory " if record.handle == SHARED_MEMORY else ""
    return f"{name}: {where}{_where(record)} is not a multiple of {record.extent}"


def _invalid_handle(instr: Any, record: TrapRecord) -> str:
    name, _ = _operand(instr, record)
    what = "pool" if record.extent else "buffer or pool"
    return f"{name}: handle {record.handle} names no live {what}"


def _division_by_zero(instr: Any, record: TrapRecord) -> str:
    if record.operand == NO_OPERAND:
        return f"rhs = 0: {TrapCode.DIVISION_BY_ZERO.meaning}"
    return f"lhs = {_typed(record.value, instr.ty)}, rhs = 0: {TrapCode.DIVISION_BY_ZERO.meaning}"


def _overflow(instr: Any, record: TrapRecord) -> str:
    low, _ = instr.ty.int_range()
    return f"lhs = {low}, rhs = -1: {low} / -1 does not fit {instr.ty.name.lower()}"


def _invalid_class(instr: Any, record: TrapRecord) -> str:
    name, _ = _operand(instr, record)
    return f"{name} = {record.value}: {TrapCode.INVALID_CLASS.meaning}"


def _invalid_sparse(instr: Any, record: TrapRecord) -> str:
    """``extent`` is the element's index, ``value`` its value and ``limit`` what it broke (the previous row
    pointer, or k for a column index)."""
    name, _ = _operand(instr, record)
    if name == "a_ptr":
        return f"a_ptr[{record.extent}] = {record.value} is below a_ptr[{record.extent - 1}] = {record.limit}"
    return f"{name}[{record.extent}] = {record.value} is not below k = {record.limit}"


def _pool_exhausted(instr: Any, record: TrapRecord, free: int | None) -> str:
    left = "" if free is None else f"; {free} bytes are free"
    return f"a pool of {record.value} bytes asked{left}"


def budget_detail(budget: int) -> str:
    """What went wrong when a lane exceeded ``budget`` backward jumps."""
    return f"more than the execution budget of {budget} backward jumps (a runaway loop?)"


def trap_detail(instr: Any, code: TrapCode, record: TrapRecord | None = None, *, budget: int | None = None,
                free: int | None = None) -> str:
    """The end of an AtlasTrap message: the instruction's text and what went wrong with the numbers of
    ``record`` (no record: the code's meaning)."""
    code = TrapCode(code)
    if code is TrapCode.BUDGET_EXCEEDED and budget is not None:
        what = budget_detail(budget)
    elif code is TrapCode.POOL_EXHAUSTED and record is not None:
        what = _pool_exhausted(instr, record, free)
    elif record is not None and code in _WORDING and (record.operand != NO_OPERAND or code in _NO_OPERAND_NEEDED):
        what = _WORDING[code](instr, record)
    else:
        what = code.meaning
    return f"{instruction_text(instr)}: {what}"


#: codes worded without an operand
_NO_OPERAND_NEEDED = frozenset({TrapCode.DIVISION_BY_ZERO, TrapCode.INTEGER_OVERFLOW})
_WORDING = {
    TrapCode.OUT_OF_BOUNDS: _out_of_bounds, TrapCode.MISALIGNED: _misaligned,
    TrapCode.INVALID_HANDLE: _invalid_handle, TrapCode.DIVISION_BY_ZERO: _division_by_zero,
    TrapCode.INTEGER_OVERFLOW: _overflow, TrapCode.INVALID_CLASS: _invalid_class,
    TrapCode.INVALID_SPARSE: _invalid_sparse,
}


def trap(code: TrapCode | int, index: int, lane: int, instr: Any, record: TrapRecord | None = None, *,
         budget: int | None = None, free: int | None = None) -> AtlasTrap:
    """The AtlasTrap of ``code`` at instruction ``index`` (``instr``, an Instruction) in global lane
    ``lane`` (-1: the cooperative step) with ``record``'s numbers (``budget``: the launch's, for
    BUDGET_EXCEEDED; ``free``: the bytes free, for POOL_EXHAUSTED). The record stays on the trap as
    ``record`` (an expansion re-words it for the instruction it expands: ``moved``)."""
    code = TrapCode(code)
    return AtlasTrap(code, index, lane, trap_detail(instr, code, record, budget=budget, free=free), record)


def moved(raised: AtlasTrap, ran: Any, index: int, instr: Any, operand: str | None) -> AtlasTrap:
    """``raised`` (a trap of instruction ``ran``) as the trap of instruction ``index`` (``instr``) it stands
    for: its record naming ``instr``'s ``operand`` (None: no operand), or, without a record, the same
    words after the instruction's text."""
    if raised.record is None:
        what = raised.detail.removeprefix(f"{instruction_text(ran)}: ")
        return AtlasTrap(raised.code, index, raised.lane, f"{instruction_text(instr)}: {what}")
    record = with_operand(raised.record, instr, operand) if operand else raised.record._replace(operand=NO_OPERAND)
    return trap(raised.code, index, raised.lane, instr, record)


def renumbered(raised: AtlasTrap, index: int) -> AtlasTrap:
    """``raised`` at instruction ``index`` instead, its words and record kept: the trap of an optimized
    program as the original's (atlas_web.opt changes no instruction that may trap, only where it stands)."""
    if index == raised.instruction_index:
        return raised
    return AtlasTrap(raised.code, index, raised.lane, raised.detail, raised.record)


def program_trap(program: Any, code: TrapCode | int, index: int, lane: int, numbers=None, *,
                 budget: int | None = None, free: int | None = None) -> AtlasTrap:
    """The AtlasTrap a compiled backend raises from its trap record: code, instruction ``index`` of
    ``program``, lane and the record's RECORD_NUMBERS ``numbers`` (None: none recorded)."""
    record = None if numbers is None else TrapRecord.of(numbers)
    return trap(code, index, lane, program.instructions[index], record, budget=budget, free=free)
