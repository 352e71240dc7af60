"""One trap report: the AtlasTrap every backend raises, worded once.

A trap's message is ``trap CODE at instruction I in lane L: <the instruction's text>: <what went
wrong>`` (``AtlasTrap`` writes the head), where "what went wrong" is the detail a backend knows with
its numbers (the budget for BUDGET_EXCEEDED, the pool failure for POOL_EXHAUSTED, the handle for
INVALID_HANDLE), else the code's meaning (``TrapCode.meaning``). The reference, the wasm backend and
the webgpu backend build their AtlasTrap here, so the same trap reads the same on each.
Standard library only.
"""

from __future__ import annotations

from typing import Any

from .errors import AtlasTrap, TrapCode
from .verify_operands import instruction_text

__all__ = ["trap", "trap_detail", "budget_detail", "program_trap"]


def budget_detail(budget: int) -> str:
    """What went wrong when a lane exceeded ``budget`` backward jumps."""
    return f"more than the execution budget of {budget} backward jumps (a runaway loop?)"


def trap_detail(instr: Any, code: TrapCode, what: str | None = None) -> str:
    """The end of an AtlasTrap message: the instruction's text and ``what`` went wrong (default: the
    code's meaning)."""
    return f"{instruction_text(instr)}: {what or TrapCode(code).meaning}"


def trap(code: TrapCode | int, index: int, lane: int, instr: Any, what: str | None = None) -> AtlasTrap:
    """The AtlasTrap of ``code`` at instruction ``index`` (``instr``, an Instruction) in global lane
    ``lane`` (-1: the cooperative step), ``what`` saying what went wrong (default: the code's meaning)."""
    code = TrapCode(code)
    return AtlasTrap(code, index, lane, trap_detail(instr, code, what))


def program_trap(program: Any, code: TrapCode | int, index: int, lane: int, budget: int | None = None
                 ) -> AtlasTrap:
    """The AtlasTrap a compiled backend raises from its trap record (code, instruction ``index`` of
    ``program``, lane); ``budget``: the launch's, for BUDGET_EXCEEDED."""
    code = TrapCode(code)
    what = budget_detail(budget) if code is TrapCode.BUDGET_EXCEEDED and budget is not None else None
    return trap(code, index, lane, program.instructions[index], what)
