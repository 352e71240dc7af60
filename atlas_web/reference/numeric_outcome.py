"""The result of one per-lane rule: the values of the executed lanes, their trap masks and the numbers of
their traps."""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple

import numpy as np

from ..errors import TrapCode
from ..trap_report import TrapRecord, operand_position

__all__ = ["Outcome", "trap_list", "lane_record", "operand_values"]


class Outcome(NamedTuple):
    """``value``: the result for the executed lanes (storage dtype of the destination, bool for predicates).

    ``traps``: ``(code, mask)`` pairs in priority order, each mask a bool array
    over the executed lanes; a lane's first matching code is its trap. Masks
    with no lane set are left out, so an empty tuple means no lane trapped.
    The value of a trapping lane is unspecified.

    ``numbers``: code -> ``numbers(position)``, the (operand name, value, limit) of the trap of the lane
    at ``position`` (trap_report's record: the operand that failed, its value, the bound it broke); a
    code without an entry records no operand (an extended integer's dividend).
    """

    value: np.ndarray
    traps: tuple[tuple[TrapCode, np.ndarray], ...] = ()
    numbers: Mapping[TrapCode, Callable[[int], tuple[str, int, int]]] | None = None


def trap_list(*pairs: tuple[TrapCode, np.ndarray]) -> tuple[tuple[TrapCode, np.ndarray], ...]:
    """The pairs whose mask has a lane set, in the given (priority) order."""
    return tuple((code, mask) for code, mask in pairs if mask.any())


def operand_values(name: str, values: np.ndarray, limit: int = 0) -> Callable[[int], tuple[str, int, int]]:
    """Outcome numbers naming operand ``name``: its value in the lane at a position, and ``limit``."""
    return lambda position: (name, int(values[position]), limit)


def lane_record(instr, outcome: Outcome, code: TrapCode) -> Callable[[int], TrapRecord]:
    """``record(position)``: the TrapRecord of ``code`` for the lane at ``position`` of ``outcome``."""
    numbers = (outcome.numbers or {}).get(code)
    if numbers is None:
        return lambda position: TrapRecord()

    def record(position: int) -> TrapRecord:
        name, value, limit = numbers(position)
        return TrapRecord(operand_position(instr, name), value=value, limit=limit)

    return record
