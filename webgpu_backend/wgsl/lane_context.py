"""LaneContext: what a per-lane rule sees while one instruction of a segment is generated.

Registers are module-scope ``var<private>`` variables, one per virtual register of the
lowering plan (``r5_f32``, ``p3``), so segments of one stage (separate WGSL functions) share
them and a lane keeps its registers across barriers; extended-integer registers are slots of
the wide register file in memory instead (``wide_slot``, ``scratch``; see ``lib_wide``).
Special registers are private variables set once when the lane starts. A trap is
``trap_if(cond, code, index, numbers…);`` (no branch: selects): the lane keeps its first trap's record (code,
index and trap_report's numbers) in private variables, written to ``rt`` when it retires, and stops
being ``alive`` but does *not* return: an early return per check would nest every later
instruction one level deeper, and Mesa's llvmpipe silently drops code nested beyond its
limit (about 80 levels). A dead lane writes no memory (the accessors test ``alive``), leaves
its loops at the next backward jump and is retired when its segment returns.

``ShaderResources`` records what the shader must declare because some rule used it: atomic
views of memory (sub-word stores), shared memory, the Atlas neighbour table, phase, ResAccum.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field

from atlas_web.errors import TrapCode
from atlas_web.trap_report import NO_OPERAND, operand_position
from atlas_web.lowering.liveness import VirtualRegister

from .emitter import CodeWriter, ShaderFeatures
from .library import HelperSet
from .types import PREDICATE_WGSL, TYPE_MAP, WgslType, wgsl_type

__all__ = ["LaneContext", "ShaderResources", "register_name", "register_names", "register_wgsl_type", "special_name"]


_REGISTER_NAME = re.compile(r"\b(?:r\d+_[a-z0-9]+|p\d+)\b")


def register_names(text: str) -> set[str]:
    """The register variable names (``r5_f32``, ``p2``) that WGSL ``text`` mentions."""
    return set(_REGISTER_NAME.findall(text))


def register_name(vreg: VirtualRegister) -> str:
    """The WGSL variable of a virtual register: ``r5_f32``, ``r7_u64``, ``p2``."""
    if vreg.type is None:
        return f"p{vreg.register.index}"
    return f"r{vreg.register.index}_{vreg.type.suffix}"


def special_name(index: int) -> str:
    """The private variable holding special register ``r<index>`` (u32)."""
    return f"special{index}"


def register_wgsl_type(vreg: VirtualRegister) -> str:
    return PREDICATE_WGSL if vreg.type is None else wgsl_type(vreg.type).wgsl


@dataclass
class ShaderResources:
    """What one shader needs declared, filled in while its code is generated."""

    atomic_memory: bool = False
    atomic_shared: bool = False
    shared: bool = False
    neighbours: bool = False
    phase: bool = False
    resonance: bool = False
    may_trap: bool = False
    specials: set[int] = field(default_factory=set)


class LaneContext(CodeWriter):
    """A CodeWriter for per-lane code of a lowering ``plan``; ``index`` and ``instr`` name the
    instruction being generated."""

    def __init__(self, plan, helpers: HelperSet, features: ShaderFeatures, resources: ShaderResources,
                 chunks: int, wide_slots: dict[int, int] | None = None, wide_register_slots: int = 0,
                 indent: int = 1) -> None:
        super().__init__(helpers, features, indent)
        self.plan = plan
        self.info = plan.info
        self.resources = resources
        self.chunks = chunks
        self.index = -1
        self.instr = None
        self.wide_slots = wide_slots or {}
        self._scratch_base = wide_register_slots
        self._scratch_next = wide_register_slots
        #: the most wide-register-file slots any instruction used (registers and scratch)
        self.wide_slots_used = wide_register_slots
        #: expression -> the ``let`` holding its value, for this run of straight-line code (see ``known``)
        self._known: dict[str, str] = {}
        #: register name -> the ``_known`` keys that name it (so a write drops them without rescanning every key;
        #: a key dropped through another of its registers may stay listed: it is looked up, not trusted)
        self._known_by_register: dict[str, set[str]] = {}
        self._written: dict[int, frozenset[str]] | None = None

    # ---- operands ---------------------------------------------------------------------------
    def at(self, index: int) -> None:
        """Generate instruction ``index`` next (its scratch slots start afresh)."""
        self.index = index
        self.instr = self.info.program.instructions[index]
        self._scratch_next = self._scratch_base

    def wide_slot(self, path: str, write: bool = False) -> int:
        """The wide-register-file slot of the extended-integer operand ``path``."""
        table = self.plan.registers.writes if write else self.plan.registers.reads
        return self.wide_slots[table[(self.index, path)].id]

    def scratch(self, wt: WgslType) -> int:
        """A scratch slot of ``wt``'s limbs, private to the current instruction."""
        slot = self._scratch_next
        self._scratch_next += wt.words
        self.wide_slots_used = max(self.wide_slots_used, self._scratch_next)
        return slot

    def vreg_read(self, path: str, index: int | None = None) -> VirtualRegister:
        return self.plan.registers.reads[(self.index if index is None else index, path)]

    def read(self, path: str, index: int | None = None) -> str:
        """The WGSL expression of register or predicate operand ``path`` (its storage bits)."""
        vreg = self.vreg_read(path, index)
        if vreg.is_special:
            self.resources.specials.add(vreg.register.index)
            return special_name(vreg.register.index)
        return register_name(vreg)

    def read_type(self, path: str) -> WgslType:
        """The WgslType an operand is read as (the verifier's use type)."""
        return TYPE_MAP[self.info.use_types[(self.index, path)]]

    def write(self, path: str, expr: str) -> None:
        """Assign ``expr`` to the register or predicate operand ``path``."""
        vreg = self.plan.registers.writes[(self.index, path)]
        self.emit(f"{register_name(vreg)} = {expr};")

    def predicate(self, index: int | None = None) -> str:
        """The register holding the predicate operand of instruction ``index`` (default: the current one)."""
        return register_name(self.plan.registers.reads[(self.index if index is None else index, "pred")])

    # ---- values reused within straight-line code ----------------------------------------------------
    def known(self, expr: str, prefix: str = "t") -> str:
        """A ``let`` holding ``expr``: the one made earlier in this run of straight-line code when no
        register ``expr`` names was written since (``expr`` must read only registers and read-only data:
        the handle table, the launch slot), else a fresh one. Every memory access through one pointer
        register reads the same handle-table entry: a read of a storage buffer at a lane-dependent index
        is a loop over the SIMD lanes with a branch per lane in llvmpipe, and LLVM's coroutine frame
        analysis of a compute shader grows with the square of the basic blocks, so each repeat cost
        compile time that grew with the program's length."""
        name = self._known.get(expr)
        if name is None:
            name = self.temp(expr, prefix)
            self._remember(expr, name)
        return name

    def seen(self, fact: str) -> bool:
        """Whether ``fact`` (a check's text) was recorded before in this run of straight-line code with
        nothing it names written since; records it. A repeated check can be left out: where it holds,
        the first one stopped the lane already (a lane keeps only its first trap)."""
        if fact in self._known:
            return True
        self._remember(fact, "")
        return False

    def _remember(self, key: str, value: str) -> None:
        self._known[key] = value
        for register in register_names(key):
            self._known_by_register.setdefault(register, set()).add(key)

    def forget(self) -> None:
        """Forget every ``known`` value (a scope opens or closes: a ``let`` inside it is not visible
        after it, and a loop body runs again after later writes)."""
        self._known.clear()
        self._known_by_register.clear()

    def written(self, index: int) -> None:
        """Forget the ``known`` values that read a register instruction ``index`` writes."""
        if not self._known:
            return
        if self._written is None:
            by_index: dict[int, set[str]] = {}
            for (at, _path), vreg in self.plan.registers.writes.items():
                by_index.setdefault(at, set()).add(register_name(vreg))
            self._written = {at: frozenset(names) for at, names in by_index.items()}
        for register in self._written.get(index, ()):
            for key in self._known_by_register.pop(register, ()):
                self._known.pop(key, None)

    @contextmanager
    def block(self, head: str):
        self.forget()
        try:
            with super().block(head):
                yield
        finally:
            self.forget()

    # ---- traps ------------------------------------------------------------------------------
    def trap(self, code: TrapCode | int | str, condition: str, *, operand: str | None = None,
             position: str | None = None,
             handle: str = "0u", value: str | tuple[str, str] = "0u", extent: str = "0u", limit: str = "0u") -> None:
        """Trap with ``code`` at the current instruction where ``condition`` holds (first trap only),
        recording its numbers (atlas_web.trap_report.TrapRecord; WGSL u32 expressions, evaluated whether
        or not it traps, so they must be safe for any operands: WGSL's arithmetic never faults): ``operand`` names the instruction's operand (None: none), ``value`` is a u32 or
        its (low, high) words; ``position`` a u32 expression of the operand's position instead of ``operand``;
        ``code`` may be a WGSL u32 expression choosing among codes (one check for several conditions)."""
        self.resources.may_trap = True
        code = code if isinstance(code, str) else f"{int(code)}u"
        if position is None:
            number = NO_OPERAND if operand is None else operand_position(self.instr, operand.partition(".")[0])
            position = f"{number & 0xFFFFFFFF}u"
        low, high = (value, "0u") if isinstance(value, str) else value
        self.emit(f"trap_if({condition}, {code}, {self.index}u, {position}, {handle}, "
                  f"{low}, {high}, {extent}, {limit});")
