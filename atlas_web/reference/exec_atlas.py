"""Executor rules of the Atlas instructions that touch per-launch state: ResAccum, PhaseGet, PhaseAdv, PhaseWrite.

The other Atlas instructions (ClsGet, MIRROR, UnityTest, NbrCount, NbrGet,
BoundMap) are pure per-lane functions in ``numeric.PURE_LANE_RULES``. Class and
phase operands are read as unsigned values of their register's type, so a
negative ``i32`` class id is a huge number and traps INVALID_CLASS.
"""

from __future__ import annotations

import numpy as np

from ..atlas import NUM_CLASSES, PHASE_MODULUS
from ..errors import TrapCode
from ..trap_report import TrapRecord, operand_position
from .exec_address import unsigned
from .exec_step import Step

__all__ = ["ATLAS_STATE_RULES"]


def _lanes(step: Step):
    return slice(None) if step.idx is None else step.idx


def _res_accum(step: Step) -> None:
    ty, classes = step.read_typed("class_id")
    classes = unsigned(ty, classes)
    invalid = classes >= np.uint64(NUM_CLASSES)
    values = np.asarray(step.read("value"), dtype=np.float64)
    if invalid.any():
        operand = operand_position(step.instr, "class_id")
        step.trap(TrapCode.INVALID_CLASS, invalid, lambda k: TrapRecord(operand, value=int(classes[k])))
        classes, values = classes[~invalid], values[~invalid]
    np.add.at(step.machine.accumulator, classes.astype(np.int64), values)


def _phase_get(step: Step) -> None:
    step.write_dest(step.machine.phase[_lanes(step)].copy())


def _phase_adv(step: Step) -> None:
    phase = step.machine.phase
    lanes = _lanes(step)
    phase[lanes] = (phase[lanes].astype(np.uint64) + np.uint64(step.instr.delta)) % np.uint64(PHASE_MODULUS)


def _phase_write(step: Step) -> None:
    ty, values = step.read_typed("src")
    step.machine.phase[_lanes(step)] = unsigned(ty, values) % np.uint64(PHASE_MODULUS)


ATLAS_STATE_RULES = {
    "ResAccum": _res_accum, "PhaseGet": _phase_get, "PhaseAdv": _phase_adv, "PhaseWrite": _phase_write,
}
