"""LaneState: the per-lane record of a program's lanes, derived from the lowering plan.

The shared front-end (``atlas_web.lowering.plan_program``) gives the lane graph (calls inlined),
the segments (one per resume point) as structured trees, the virtual registers and, per resume
point, what crosses it. This module lays out what a lane keeps in linear memory::

    0   ended flag (i32; lanes with a record only)
    8   backward-jump count (i64), saved at a suspend
    16  phase (i32), saved at a suspend
    24  one 8-byte slot per native virtual register of ``plan.lane_state`` (predicates included)
    ..  the extended-integer registers (little-endian limbs; they always live here)
    ..  EXT_TEMPORARIES extended temporaries of the widest extended type

Programs whose lanes never suspend need no per-lane record; they use one scratch record (reused
lane after lane) when they have extended registers.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.registers import SpecialRegister
from atlas_web.lowering.liveness import VirtualRegister
from atlas_web.lowering.plan import LoweringPlan

__all__ = ["LaneState", "plan_lane_state", "RECORD_ENDED", "RECORD_JUMPS", "RECORD_PHASE", "EXT_TEMPORARIES"]

RECORD_ENDED = 0
RECORD_JUMPS = 8
RECORD_PHASE = 16
_FIRST_SLOT = 24
#: extended-integer temporaries per lane record (operand magnitudes, quotient, remainder, product)
EXT_TEMPORARIES = 5


def _align(value: int, to: int) -> int:
    return (value + to - 1) // to * to


@dataclass
class LaneState:
    """Where a program's lanes keep their state (see the module docstring)."""

    plan: LoweringPlan
    #: virtual register id -> record offset (native registers and predicates of plan.lane_state)
    slots: dict[int, int]
    #: (register index, bits) -> record offset of an extended register
    ext_slots: dict[tuple[int, int], int]
    ext_temp: int
    ext_temp_bytes: int
    record_size: int
    specials: frozenset[SpecialRegister]
    frees_pools: bool

    @property
    def sync(self) -> bool:
        """Whether lanes suspend (the program has barriers or cooperative instructions)."""
        return len(self.plan.resume_points) > 1

    @property
    def needs_record(self) -> bool:
        return self.sync or bool(self.ext_slots)

    def native(self, vreg: VirtualRegister) -> bool:
        """True for a virtual register held in a local (not special, not an extended integer)."""
        return not vreg.is_special and (vreg.type is None or not vreg.type.is_extended())


def plan_lane_state(plan: LoweringPlan) -> LaneState:
    """The LaneState of a lowering plan."""
    info = plan.info
    program = info.program
    offset = _FIRST_SLOT
    slots: dict[int, int] = {}
    for vreg in plan.lane_state:
        if not vreg.is_special and (vreg.type is None or not vreg.type.is_extended()):
            slots[vreg.id] = offset
            offset += 8
    ext_slots: dict[tuple[int, int], int] = {}
    widest = 0
    extended = [(v.register.index, v.type) for v in plan.registers.vregs if v.type is not None and v.type.is_extended()]
    extended += [(reg.index, ty) for reg, ty in info.preset_types.items() if ty.is_extended()]
    for index, ty in extended:
        key = (index, ty.bits)
        if key not in ext_slots:
            ext_slots[key] = offset
            offset += ty.bits // 8
            widest = max(widest, ty.bits // 8)
    ext_temp = offset
    ext_temp_bytes = EXT_TEMPORARIES * widest
    specials = frozenset(SpecialRegister(v.register.index) for v in plan.registers.vregs if v.is_special)
    frees = any(instr.INFO.name == "PoolFree" for instr in program.instructions)
    return LaneState(plan, slots, ext_slots, ext_temp, ext_temp_bytes, _align(offset + ext_temp_bytes, 16),
                     specials, frees)
