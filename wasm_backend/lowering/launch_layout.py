"""LaunchLayout: the per-launch area of a compiled program, at ``layout.HEADER_LAUNCH_BASE`` at run time.

In order (each part 16-byte aligned): the preset registers (8 bytes each, or the extended type's
bytes), the result slots of the cooperative instructions that write a register (8 bytes each), one
scratch lane record (programs whose lanes never suspend but need a record), shared memory (one
block's worth, or every block's when cooperative stages must keep it), the lane records (one
per lane of the launch, for programs whose lanes suspend) and the scratch of the cooperative steps (the
largest ``scratch`` need of their ``rules.CooperativeRule``: GEMM's packed panels; its contents do not outlive a
step). The host allocates ``total`` bytes; the
lane records and per-block shared memory are zeroed by the module's ``launch`` function.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .lane_state import LaneState
from .rules import COOPERATIVE_RULES

__all__ = ["LaunchLayout", "plan_launch_area"]


def _align(value: int) -> int:
    return (value + 15) // 16 * 16


@dataclass
class LaunchLayout:
    presets: dict[int, int] = field(default_factory=dict)
    results: dict[int, int] = field(default_factory=dict)
    scratch_record: int | None = None
    shared: int = 0
    shared_bytes: int = 0
    shared_per_block: bool = False
    records: int = 0
    records_bytes: int = 0
    coop_scratch: int = 0
    coop_scratch_bytes: int = 0
    total: int = 0


def plan_launch_area(info, state: LaneState, config) -> LaunchLayout:
    """The launch area of the program of ``info`` over ``config``."""
    out = LaunchLayout()
    offset = 0
    for reg, ty in sorted(info.preset_types.items(), key=lambda item: item[0].index):
        out.presets[reg.index] = offset
        offset += max(8, ty.size_bytes())
    offset = _align(offset)
    for index, step in sorted(state.plan.cooperative_steps.items()):
        if step.writes:
            out.results[index] = offset
            offset += 8
    offset = _align(offset)
    if state.needs_record and not state.sync:
        out.scratch_record = offset
        offset = _align(offset + state.record_size)
    if info.uses_shared and config.shared_memory:
        out.shared_per_block = bool(info.cooperative)
        out.shared = offset
        out.shared_bytes = config.shared_memory * (config.num_blocks if out.shared_per_block else 1)
        offset = _align(offset + out.shared_bytes)
    if state.sync:
        out.records = offset
        out.records_bytes = state.record_size * config.total_threads
        offset = _align(offset + out.records_bytes)
    instructions = info.program.instructions
    rules = ((COOPERATIVE_RULES[instructions[index].INFO.name], instructions[index])
             for index in state.plan.cooperative_steps)
    needs = [rule.scratch(instr) for rule, instr in rules if rule.scratch is not None]
    if needs:
        out.coop_scratch = offset
        out.coop_scratch_bytes = max(needs)
        offset = _align(offset + out.coop_scratch_bytes)
    out.total = max(offset, 16)
    return out
