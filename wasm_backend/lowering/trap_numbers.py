"""The numbers a generated trap records (``atlas_web.trap_report.TrapRecord``: operand, handle, value,
extent, limit), pushed as the i64 arguments of the ``trap`` helper on the trap's path only, so code
that does not trap pays nothing for them.

A number is an int (a constant) or a function that pushes an i64 onto the emitter's stack; ``u32``,
``i64``, ``signed`` and ``entry_size`` make the usual ones from locals.
"""

from __future__ import annotations

from typing import Callable, Union

from atlas_web.trap_report import NO_OPERAND, RECORD_NUMBERS, operand_position

from .. import layout

__all__ = ["Number", "push_record", "u32", "i64", "signed", "entry_size", "operand"]

Number = Union[int, Callable[[object], None]]


def push_record(e, numbers: tuple[Number, ...] = ()) -> None:
    """Push RECORD_NUMBERS i64 values: ``numbers`` (operand, handle, value, extent, limit), the rest
    the record's defaults (no operand, zeros)."""
    if len(numbers) > RECORD_NUMBERS:
        raise ValueError(f"a trap records at most {RECORD_NUMBERS} numbers, got {len(numbers)}")
    padded = tuple(numbers) + ((NO_OPERAND,) + (0,) * (RECORD_NUMBERS - 1))[len(numbers):]
    for number in padded:
        if isinstance(number, int):
            e.i64(number)
        else:
            number(e)


def operand(instr, name: str) -> int:
    """The record's operand number of ``instr``'s operand ``name`` (a path ``field.sub`` names ``field``)."""
    return operand_position(instr, name.partition(".")[0])


def u32(local: int) -> Callable:
    """An i32 local read unsigned."""
    return lambda e: e.get(local).op("i64.extend_i32_u")


def signed(local: int) -> Callable:
    """An i32 local read signed."""
    return lambda e: e.get(local).op("i64.extend_i32_s")


def i64(local: int) -> Callable:
    """An i64 local."""
    return lambda e: e.get(local)


def entry_size(entry: int) -> Callable:
    """The size of the device-table entry whose address is in i32 local ``entry``."""
    return lambda e: e.get(entry).op("i64.load32_u", layout.ENTRY_SIZE)
