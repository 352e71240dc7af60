"""Where values live between dispatches: the per-lane state area and the uniform words of ``rt``.

Lane state (multi-stage programs only) is a storage buffer in structure-of-arrays order: word
``slot * LANES + lane``. Slot 0 is the lane's flags (1: ended or trapped); then the budget
count and the phase when the program needs them; then each virtual register of the plan's
``lane_state`` (one slot per u32 word); after all lanes' slots, when the program uses shared
memory in several stages, each block's copy of its shared memory; then the *wide register file*
(``lib_wide``): every extended-integer register lives there for the whole launch (so it is never
spilled), followed by the scratch slots the extended rules use.

Uniform words (in ``rt``) hold the ExecutionParams presets and the registers cooperative steps
write (the same value in every lane): the host writes presets and pool handles, the reduction
kernels write their results.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atlas_web.lowering.liveness import VirtualRegister

from .emitter import CodeWriter
from .lane_context import register_name
from .types import wgsl_type

__all__ = ["LaneStateLayout", "load_words", "store_words", "vreg_words"]


def vreg_words(vreg: VirtualRegister) -> int:
    """u32 words a virtual register occupies (predicates: one)."""
    return 1 if vreg.type is None else wgsl_type(vreg.type).words


@dataclass
class LaneStateLayout:
    """Slots of the lane-state area and words of the uniform area of one compiled program."""

    slots: dict[int, int] = field(default_factory=dict)
    flags_slot: int = 0
    jumps_slot: int | None = None
    phase_slot: int | None = None
    total_slots: int = 1
    #: (what, key) -> first uniform word: ("preset", vreg id) or ("result", instruction index, vreg id)
    uniform_words: dict[tuple, int] = field(default_factory=dict)
    uniform_total: int = 0
    #: extended-integer vreg id -> its first slot in the wide register file
    wide_slots: dict[int, int] = field(default_factory=dict)
    #: slots of the wide register file taken by registers (scratch slots follow)
    wide_register_slots: int = 0

    @classmethod
    def build(cls, plan, presets: dict[int, VirtualRegister], multi_stage: bool) -> "LaneStateLayout":
        """The layout for ``plan``; ``presets`` maps vreg id -> vreg of each preset register."""
        layout = cls()
        for vreg in plan.registers.vregs:
            if vreg.type is not None and vreg.type.is_extended():
                layout.wide_slots[vreg.id] = layout.wide_register_slots
                layout.wide_register_slots += vreg_words(vreg)
        if multi_stage:
            next_slot = 1
            if plan.counts_backward_jumps:
                layout.jumps_slot, next_slot = next_slot, next_slot + 1
            if plan.info.uses_phase:
                layout.phase_slot, next_slot = next_slot, next_slot + 1
            for vreg in plan.lane_state:
                if vreg.is_special or vreg.id in layout.wide_slots:
                    continue
                layout.slots[vreg.id] = next_slot
                next_slot += vreg_words(vreg)
            layout.total_slots = next_slot
        for vreg in presets.values():
            layout._uniform(("preset", vreg.id), vreg)
        for step in plan.cooperative_steps.values():
            for _path, vreg in step.writes:
                layout._uniform(("result", step.index, vreg.id), vreg)
        return layout

    def _uniform(self, key: tuple, vreg: VirtualRegister) -> None:
        self.uniform_words[key] = self.uniform_total
        self.uniform_total += vreg_words(vreg)


def _assemble(vreg: VirtualRegister, words: list[str]) -> str:
    if vreg.type is None:
        return f"({words[0]} != 0u)"
    wt = wgsl_type(vreg.type)
    if wt.family == "float":
        return f"bitcast<f32>({words[0]})"
    if wt.family == "word":
        return words[0]
    return f"{wt.wgsl}({', '.join(words)})"


def _split(vreg: VirtualRegister, name: str) -> list[str]:
    if vreg.type is None:
        return [f"select(0u, 1u, {name})"]
    wt = wgsl_type(vreg.type)
    if wt.family == "float":
        return [f"bitcast<u32>({name})"]
    if wt.family == "word":
        return [name]
    return [f"{name}[{k}]" for k in range(wt.words)]


def load_words(w: CodeWriter, vreg: VirtualRegister, word: str) -> None:
    """``register = value`` from the words ``word(k)`` (a function of the word number k)."""
    count = vreg_words(vreg)
    if count <= 4:
        w.emit(f"{register_name(vreg)} = {_assemble(vreg, [word(k) for k in range(count)])};")
        return
    with w.block(f"for (var k = 0u; k < ({count}u ^ launch.zero); k = k + 1u)"):
        w.emit(f"{register_name(vreg)}[k] = {word('k')};")


def store_words(w: CodeWriter, vreg: VirtualRegister, store) -> None:
    """``store(k, value)`` for each word k of the register (a statement per word)."""
    count = vreg_words(vreg)
    if count <= 4:
        for k, part in enumerate(_split(vreg, register_name(vreg))):
            w.emit(store(k, part))
        return
    with w.block(f"for (var k = 0u; k < ({count}u ^ launch.zero); k = k + 1u)"):
        w.emit(store("k", f"{register_name(vreg)}[k]"))
