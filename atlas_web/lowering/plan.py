"""The lowering plan: everything a code generator needs, from one call to :func:`plan_program`.

A :class:`LoweringPlan` bundles the lane graph (calls inlined, ``stages.py``),
one structured tree per segment (``structure.py``), the virtual registers and
their liveness (``liveness.py``) and, per resume point, the lane state that
crosses it. It is engine-neutral: the WebAssembly and WGSL generators read the
same plan.

How a launch runs a plan (the reference's semantics, docs/semantics.md)::

    stage = plan.stages[0]                              # starts at the ENTRY
    loop:
        for each block (lanes in increasing order):
            resume = stage.entry
            loop:
                run segment ``resume`` for each live lane of the block
                if no lane of the block is live: break
                resume = the resume point they suspended at   # one per block (uniform control)
                if it is a COOPERATIVE one: break
        if some lane trapped: raise the trap of the lowest lane (its block finished the stage)
        if no lane of the launch is live: done
        run cooperative step ``resume_points[resume].after`` once (all live lanes suspended there)
        stage = plan.stage_entered_at(resume)

Per lane, in its lane-state area (one slot per virtual register of
``lane_state``, plus the lane's budget count when ``counts_backward_jumps``,
its "ended" flag, and its phase when the program uses PhaseGet/Adv/Write):

* at the lane's start the locals of ``boundaries[0].reload`` get their entry
  value (the preset of ExecutionParams.registers for that register, else zero
  or false);
* a segment starts by loading ``boundaries[resume].reload`` from the slots; at
  ``Suspend(index, r)`` the lane stores ``boundaries[r].spill`` (for a
  cooperative instruction this includes the registers the step reads) and
  leaves the segment, reporting ``r``;
* a cooperative step reads its register operands from global lane 0's slots
  (``CooperativeStep.reads``) and its result (``writes``) is the same in every
  lane: write it to every lane's slot, or keep one uniform copy that the
  resumed segments load (``boundaries[r].uniform`` lists those);
* at ``EndLane`` the lane stores ``lane_end_stores`` (the virtual registers
  cooperative instructions read: when global lane 0 ended earlier, a later
  cooperative step still reads lane 0's last values) and marks itself ended;
* ``CountJump(i)`` adds one to the lane's count and traps BUDGET_EXCEEDED at
  ``i`` once it exceeds the budget. A trapping lane stops like an ended one.

Special registers are recomputed, never stored. Nothing here copies the
program; standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

from .liveness import Liveness, RegisterAssignment, VirtualRegister, analyse_liveness, assign_virtual_registers
from .stages import LaneGraph, ResumeKind, ResumePoint, Stage, build_lane_graph
from .structure import Statement, structure_segment

if TYPE_CHECKING:  # the verifier imports this package (cfg); import its types only for checking
    from ..verify import ProgramInfo

__all__ = ["Boundary", "Segment", "CooperativeStep", "LoweringPlan", "plan_program"]


@dataclass(frozen=True)
class Boundary:
    """The lane state crossing into resume point ``resume``: ``spill`` (stored by a lane
    suspending there, before its BarSync or cooperative instruction: a cooperative step's reads
    included; at the ENTRY, where nothing suspends, the same as ``reload``), ``reload`` (loaded
    by the segment starting there; at the ENTRY: initialized to the entry values) and
    ``uniform`` (the part of ``reload`` a cooperative step just wrote, the same in every lane)."""

    resume: int
    spill: tuple[VirtualRegister, ...]
    reload: tuple[VirtualRegister, ...]
    uniform: tuple[VirtualRegister, ...]


@dataclass(frozen=True)
class Segment:
    """The code one lane runs from resume point ``resume`` until it suspends or ends: its tree
    ``body`` in ``form`` ("structured" or "dispatch") using labels 0 … ``labels - 1``, the
    lane-graph ``nodes`` it covers, the resume points it may suspend at and whether it may end
    the lane."""

    resume: ResumePoint
    body: tuple[Statement, ...]
    form: str
    reducible: bool
    labels: int
    nodes: tuple[int, ...]
    suspends: tuple[int, ...]
    ends_lane: bool


@dataclass(frozen=True)
class CooperativeStep:
    """Cooperative instruction ``index``: the virtual registers its operands read (from global
    lane 0) and write (uniform), as ``(operand path, virtual register)`` pairs."""

    index: int
    reads: tuple[tuple[str, VirtualRegister], ...]
    writes: tuple[tuple[str, VirtualRegister], ...]


@dataclass(frozen=True)
class LoweringPlan:
    """Everything a code generator needs (see the module docstring for how a launch runs it).

    ``segments`` and ``boundaries`` are indexed by resume point id; ``stages[0]`` starts at
    the ENTRY; ``registers.reads`` / ``.writes`` give the virtual register of every operand.
    ``lane_state``: the virtual registers that ever cross a boundary or are stored at a lane's
    end (one slot each). ``counts_backward_jumps``: some edge counts against the budget.
    """

    info: "ProgramInfo"
    graph: LaneGraph
    registers: RegisterAssignment
    liveness: Liveness
    segments: tuple[Segment, ...]
    boundaries: tuple[Boundary, ...]
    stages: tuple[Stage, ...]
    cooperative_steps: Mapping[int, CooperativeStep]
    lane_end_stores: tuple[VirtualRegister, ...]
    lane_state: tuple[VirtualRegister, ...]
    counts_backward_jumps: bool

    @property
    def resume_points(self) -> tuple[ResumePoint, ...]:
        return self.graph.resume_points

    def stage_entered_at(self, resume: int) -> Stage:
        """The stage that starts at ENTRY or COOPERATIVE resume point ``resume``; raises KeyError
        for a BARRIER resume point."""
        return self.stages[self.graph.stage_of_entry[resume]]


def _boundaries(graph: LaneGraph, liveness: Liveness, registers: RegisterAssignment) -> list[Boundary]:
    vregs_of = registers.vregs_of
    out = []
    for rp in graph.resume_points:
        live = liveness.live_in[rp.node]
        if rp.after is None:
            spill = live
            uniform = 0
        else:
            written = registers.write_bits[rp.after]
            spill = (live & ~written) | registers.read_bits[rp.after]
            uniform = live & written if rp.kind is ResumeKind.COOPERATIVE else 0
        out.append(Boundary(rp.id, vregs_of(spill), vregs_of(live), vregs_of(uniform)))
    return out


def plan_program(info: "ProgramInfo", *, form: str = "structured", max_instructions: int | None = None,
                 backend: str = "lowering") -> LoweringPlan:
    """The lowering plan of the verified program of ``info`` (a ProgramInfo from ``verify``).

    ``form`` is "structured" (dispatch only for irreducible or too deeply nested segments) or
    "dispatch" (every segment as a dispatch loop: no multi-level breaks, for WGSL).
    ``max_instructions`` caps the instruction copies of inlining and segment sharing (default
    ``stages.instruction_limit``). Raises UnsupportedOperation naming ``backend`` when the
    program needs more copies than that, ProgramError for an unknown form.
    """
    graph = build_lane_graph(info, max_instructions=max_instructions, backend=backend)
    registers = assign_virtual_registers(info)
    cooperative = info.cooperative
    end_uses = 0
    for i in cooperative:
        end_uses |= registers.read_bits[i]
    liveness = analyse_liveness(graph, registers, end_uses)
    boundaries = _boundaries(graph, liveness, registers)
    segments = []
    for shape in graph.segments:
        tree = structure_segment(graph, shape.resume, form=form)
        segments.append(Segment(graph.resume_points[shape.resume], tree.body, tree.form, tree.reducible, tree.labels,
                                shape.nodes, shape.suspends, shape.ends_lane))
    steps = {}
    for i in cooperative:
        reads = tuple((path, v) for (at, path), v in registers.reads.items() if at == i)
        writes = tuple((path, v) for (at, path), v in registers.writes.items() if at == i)
        steps[i] = CooperativeStep(i, reads, writes)
    state_bits = end_uses
    for b in boundaries[1:]:
        for v in (*b.spill, *b.reload):
            state_bits |= 1 << v.id
    counts = any(e.backward_jump is not None for node in graph.nodes for e in node.edges)
    return LoweringPlan(info, graph, registers, liveness, tuple(segments), tuple(boundaries), graph.stages,
                        MappingProxyType(steps), registers.vregs_of(end_uses), registers.vregs_of(state_bits), counts)
