"""Executor rules of control flow and synchronization: BRA CALL RET LOOP EXIT BarSync MemFence.

A control rule returns where the step's lanes go next: an int (every lane
there), an int64 array (one index per lane) or None (the next instruction).
The index ``len(program)`` ends a lane. A taken BRA, LOOP or CALL whose target
is at or before its own index is a backward jump: each lane may take
``machine.budget`` of them; the one past it traps BUDGET_EXCEEDED here.
BarSync returns ``WAIT``: the scheduler holds the lanes until their block has
arrived.
"""

from __future__ import annotations

import numpy as np

from ..errors import TrapCode
from .exec_step import Step

__all__ = ["CONTROL_RULES", "WAIT"]

#: returned by BarSync: hold these lanes at the barrier
WAIT = object()


def _count_backward(step: Step, taken: np.ndarray | None) -> None:
    """Add one backward jump to each taking lane; trap the lanes that go past the budget."""
    machine = step.machine
    jumps = machine.backjumps
    if step.idx is None and taken is None:
        jumps += 1
        machine.max_backjumps += 1
        if machine.max_backjumps > machine.budget:
            step.trap(TrapCode.BUDGET_EXCEEDED, jumps > machine.budget)
        return
    lanes = step.lanes() if taken is None else step.lanes()[taken]
    counts = jumps[lanes] + 1
    jumps[lanes] = counts
    if counts.size:
        machine.max_backjumps = max(machine.max_backjumps, int(counts.max()))
    if machine.max_backjumps > machine.budget:
        over = counts > machine.budget
        if taken is not None:
            mask = np.zeros(step.count, dtype=bool)
            mask[taken] = over
            over = mask
        step.trap(TrapCode.BUDGET_EXCEEDED, over)


def _jump(step: Step, taken: np.ndarray | None, target: int):
    """Lanes where ``taken`` holds (None: all) go to ``target``, the others to the next instruction."""
    here = step.plan.index
    if target <= here and (taken is None or taken.any()):
        _count_backward(step, taken)
    if taken is None:
        return target
    return np.where(taken, target, here + 1)


def _bra(step: Step):
    if step.instr.pred is None:
        return _jump(step, None, step.plan.target)
    holds = step.read("pred")
    return _jump(step, ~holds if step.instr.negate else holds, step.plan.target)


def _call(step: Step):
    step.machine.calls.push(step.idx, step.plan.index + 1)
    return _jump(step, None, step.plan.target)


def _ret(step: Step):
    had_frame, returns = step.machine.calls.pop(step.idx)
    return np.where(had_frame, returns, step.machine.end)


def _loop(step: Step):
    ty, count = step.read_typed("count")
    nonzero = count != 0
    decremented = np.where(nonzero, count - count.dtype.type(1), count)
    step.write_register(step.plan.reads["count"].number, ty, decremented)
    return _jump(step, nonzero & (decremented != 0), step.plan.target)


def _exit(step: Step):
    return step.machine.end


def _bar_sync(step: Step):
    return WAIT


def _mem_fence(step: Step):
    # lanes see each other's writes only across barriers and stages, so a fence changes no result
    return None


CONTROL_RULES = {
    "BRA": _bra, "CALL": _call, "RET": _ret, "LOOP": _loop, "EXIT": _exit,
    "BarSync": _bar_sync, "MemFence": _mem_fence,
}
