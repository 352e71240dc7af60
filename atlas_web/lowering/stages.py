"""The lane graph: a lane's code with every CALL inlined, cut into segments and stages.

What a code generator runs per lane is not the program's control-flow graph
but this graph, built once per program from the verifier's ProgramInfo:

Inlined calls
    The Atlas ISA has no recursion (the verifier rejects it), so a call chain
    is a finite path through the call graph and every subroutine is *inlined*
    at each call site: a node is a piece of code in a *context*, the tuple of
    CALL instruction indices pending (outermost first). RET returns to the
    instruction after the context's last CALL; with an empty context it ends
    the lane. No return-index variable and no call stack remain, so each call
    site's copy can be structured and optimized like straight-line code. Code
    reached by several call chains is copied once per chain; the copies are
    capped (:func:`instruction_limit`), and a program whose lowering needs more
    raises UnsupportedOperation instead of growing without bound.

Nodes
    A node runs instructions ``start … end - 1`` (never a control, BarSync or
    cooperative instruction) and then leaves by its :class:`ExitKind`: GOTO
    (one edge: fall-through, BRA, CALL into the callee, RET to the return
    site), BRANCH (two edges, taken first: BRA with a predicate, LOOP), END
    (the lane ends: EXIT, RET with nothing pending, running past the last
    instruction, a jump to ``len(program)``) or SUSPEND (a BarSync or
    cooperative instruction: the lane stops here and continues at a resume
    point). Edges that end the lane lead to the one shared END node, whose run
    is empty.

Backward jumps
    The budget counts, per lane, each taken BRA, LOOP or CALL whose target
    index is at or before its own, in ORIGINAL instruction indices. An edge
    carries ``backward_jump``, the index of that instruction, exactly when
    taking it counts; nothing else counts (fall-through and RET never do).

Resume points, segments, stages
    A *resume point* is where a suspended lane continues: the lane's start
    (ENTRY), the instruction after a BarSync (BARRIER) or after a cooperative
    instruction (COOPERATIVE), each in its context. Because a BarSync or a
    cooperative instruction may stand inside a (uniform) loop, a resume point
    can lie in the middle of a loop; it is simply the entry of its own
    segment. A *segment* is the code one lane runs from one resume point until
    it suspends again or ends: the nodes reachable from the resume point's
    node without passing a SUSPEND. Code reachable from several resume points
    is copied into each of their segments (counted against the same limit).

    BarSync stands in block-uniform control flow and cooperative instructions
    in grid-uniform control flow (the verifier's guarantee), so all live lanes
    of a block suspend at the same resume point: a code generator dispatches
    on the resume point once per block, not per lane. A *stage* starts at the
    ENTRY or a COOPERATIVE resume point and holds every segment reachable from
    it through BARRIER resume points; it ends when every live lane of the
    launch suspended at a COOPERATIVE resume point (run that cooperative step
    once, then the stage starting there) or ended (the launch is over: a
    cooperative step with no live lane left does not run).

Everything here is standard library and copies nothing of the program.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from ..errors import UnsupportedOperation
from ..isa.opcodes import ExecKind
from .cfg import ControlFlowGraph, Terminator

__all__ = [
    "ExitKind", "ResumeKind", "Edge", "LaneNode", "ResumePoint", "SegmentShape", "Stage", "LaneGraph",
    "build_lane_graph", "inlined_size", "instruction_limit", "MIN_INSTRUCTION_LIMIT", "INSTRUCTION_LIMIT_FACTOR",
]

#: lowering may always copy instructions up to this many (calls inlined, code shared by segments copied) …
MIN_INSTRUCTION_LIMIT = 1 << 16
#: … or up to this many times the program's length, whichever is more
INSTRUCTION_LIMIT_FACTOR = 8


def instruction_limit(program_length: int) -> int:
    """The most instruction copies the lowering of a program of ``program_length`` instructions
    may make: ``max(MIN_INSTRUCTION_LIMIT, INSTRUCTION_LIMIT_FACTOR * program_length)``."""
    return max(MIN_INSTRUCTION_LIMIT, INSTRUCTION_LIMIT_FACTOR * program_length)


class ExitKind(enum.Enum):
    """How control leaves a node."""

    GOTO = "goto"        # one edge
    BRANCH = "branch"    # two edges: taken, not taken (BRA with a predicate, LOOP)
    END = "end"          # the lane ends
    SUSPEND = "suspend"  # a BarSync or cooperative instruction: continue at ``resume``


class ResumeKind(enum.Enum):
    """Where a resume point sits."""

    ENTRY = "entry"              # the lane's start (instruction 0, nothing pending)
    BARRIER = "barrier"          # after a BarSync
    COOPERATIVE = "cooperative"  # after a cooperative instruction (its step runs first)


@dataclass(frozen=True, slots=True)
class Edge:
    """A way out of a node: to node ``target``; ``backward_jump`` is the index of the BRA, LOOP
    or CALL whose taking this is when it counts against the budget (target index at or before
    its own), else None."""

    target: int
    backward_jump: int | None = None


@dataclass(frozen=True, slots=True)
class LaneNode:
    """Instructions ``start … end - 1`` in ``context`` (CALL indices pending, outermost first), then
    the exit: ``kind``; ``exit_index``, the instruction this node runs at its exit (BRA, LOOP,
    CALL, RET, EXIT, BarSync or the cooperative instruction; None for a fall-through and for the
    shared END node); ``edges`` (GOTO: one, BRANCH: taken then not taken); ``resume``, the
    resume point id of a SUSPEND."""

    id: int
    context: tuple[int, ...]
    start: int
    end: int
    kind: ExitKind
    exit_index: int | None
    edges: tuple[Edge, ...] = ()
    resume: int | None = None

    @property
    def successors(self) -> tuple[int, ...]:
        """Target node ids of the edges, in edge order (a SUSPEND has none: it leaves the segment)."""
        return tuple(e.target for e in self.edges)

    @property
    def is_terminal_stub(self) -> bool:
        """True for a node with no code that only ends the lane or suspends (cheap to copy)."""
        return self.start == self.end and self.kind in (ExitKind.END, ExitKind.SUSPEND)


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where lanes continue: instruction ``index`` (``len(program)``: the lane ends at once) in
    ``context``; ``after`` is the BarSync or cooperative instruction it follows (None for the
    ENTRY); ``node`` the lane-graph node it enters."""

    id: int
    kind: ResumeKind
    context: tuple[int, ...]
    index: int
    after: int | None
    node: int


@dataclass(frozen=True, slots=True)
class SegmentShape:
    """The code run from resume point ``resume``: its ``nodes`` (the entry node first, then in
    discovery order), the resume points it may suspend at (``suspends``) and whether some path
    ends the lane (``ends_lane``)."""

    resume: int
    nodes: tuple[int, ...]
    suspends: tuple[int, ...]
    ends_lane: bool


@dataclass(frozen=True, slots=True)
class Stage:
    """Lane code between cooperative steps: starts at resume point ``entry`` (ENTRY or
    COOPERATIVE); ``segments`` are the resume points whose segments may run in it (the entry
    first, then the BARRIER ones reachable from it); ``cooperative_exits`` the COOPERATIVE resume
    points where it may end (their step runs, then the stage entered there)."""

    id: int
    entry: int
    segments: tuple[int, ...]
    cooperative_exits: tuple[int, ...]


@dataclass(frozen=True)
class LaneGraph:
    """The lane graph of a program (see the module docstring). ``end_node`` is the shared END
    node; ``stage_of_entry`` maps a stage's entry resume point to its stage id;
    ``instruction_copies`` counts the instructions in the runs of all segments together (what a
    code generator emits)."""

    program_length: int
    nodes: tuple[LaneNode, ...]
    end_node: int
    resume_points: tuple[ResumePoint, ...]
    segments: tuple[SegmentShape, ...]
    stages: tuple[Stage, ...]
    stage_of_entry: Mapping[int, int]
    instruction_copies: int

    @property
    def entry(self) -> ResumePoint:
        """The ENTRY resume point (id 0)."""
        return self.resume_points[0]


# ---- building ------------------------------------------------------------------------------------

def _exit_bra(build: "_Builder", context, index, instr):
    target = build.targets[index]
    taken = build.edge(context, target, index)
    if instr.pred is None:
        return ExitKind.GOTO, (taken,)
    return ExitKind.BRANCH, (taken, build.edge(context, index + 1, None))


def _exit_loop(build: "_Builder", context, index, instr):
    taken = build.edge(context, build.targets[index], index)
    return ExitKind.BRANCH, (taken, build.edge(context, index + 1, None))


def _exit_call(build: "_Builder", context, index, instr):
    target = build.targets[index]
    return ExitKind.GOTO, (build.edge(context + (index,), target, index),)


def _exit_ret(build: "_Builder", context, index, instr):
    if not context:
        return ExitKind.END, ()
    return ExitKind.GOTO, (build.edge(context[:-1], context[-1] + 1, None),)


def _exit_exit(build: "_Builder", context, index, instr):
    return ExitKind.END, ()


#: control instruction name -> (builder, context, index, instruction) -> (exit kind, edges)
EXIT_RULES = {"BRA": _exit_bra, "LOOP": _exit_loop, "CALL": _exit_call, "RET": _exit_ret, "EXIT": _exit_exit}


class _Builder:
    """Discovers the nodes reachable from the lane's start, one (context, piece) at a time."""

    def __init__(self, info) -> None:
        program = info.program
        self.instructions = program.instructions
        self.size = len(self.instructions)
        self.targets = info.targets
        self.cuts = {**{i: ResumeKind.BARRIER for i in info.barriers},
                     **{i: ResumeKind.COOPERATIVE for i in info.cooperative}}
        starts = {blk.start for blk in info.cfg.blocks} | {c + 1 for c in self.cuts if c + 1 < self.size}
        ordered = sorted(starts)
        self.piece_end = {s: (ordered[k + 1] if k + 1 < len(ordered) else self.size) for k, s in enumerate(ordered)}
        self.node_ids: dict[tuple[tuple[int, ...], int], int] = {}
        self.shapes: list[tuple | None] = []  # per node id: (context, start) until built; None: the END node
        self.nodes: list[LaneNode | None] = []
        self.pending: list[int] = []  # nodes discovered, not yet built
        self.resume_ids: dict[tuple[tuple[int, ...], int], int] = {}
        self.resume_points: list[ResumePoint] = []
        self.end_node = self._new_node(None)
        self.nodes[self.end_node] = LaneNode(self.end_node, (), self.size, self.size, ExitKind.END, None)

    def _new_node(self, key) -> int:
        ident = len(self.nodes)
        self.nodes.append(None)
        if key is not None:
            self.node_ids[key] = ident
            self.shapes.append(key)
            self.pending.append(ident)
        else:
            self.shapes.append(None)
        return ident

    def node(self, context: tuple[int, ...], index: int) -> int:
        """The node running from instruction ``index`` in ``context`` (the END node past the end)."""
        if index >= self.size:
            return self.end_node
        key = (context, index)
        ident = self.node_ids.get(key)
        if ident is None:
            ident = self._new_node(key)
        return ident

    def edge(self, context: tuple[int, ...], target: int, jump: int | None) -> Edge:
        """An edge to ``target`` in ``context``, taken by instruction ``jump`` (None: not a jump)."""
        counted = jump if jump is not None and target <= jump else None
        return Edge(self.node(context, target), counted)

    def resume(self, kind: ResumeKind, context: tuple[int, ...], index: int, after: int | None) -> int:
        key = (context, index)
        ident = self.resume_ids.get(key)
        if ident is None:
            ident = self.resume_ids[key] = len(self.resume_points)
            self.resume_points.append(ResumePoint(ident, kind, context, index, after, self.node(context, index)))
        return ident

    def run(self) -> None:
        self.resume(ResumeKind.ENTRY, (), 0, None)
        while self.pending:
            ident = self.pending.pop()
            context, start = self.shapes[ident]  # type: ignore[misc]  # pending nodes have a key
            self.nodes[ident] = self._build(ident, context, start)

    def _build(self, ident: int, context: tuple[int, ...], start: int) -> LaneNode:
        end = self.piece_end[start]
        last = end - 1
        instr = self.instructions[last]
        cut = self.cuts.get(last)
        if cut is not None:
            resume = self.resume(cut, context, last + 1, last)
            return LaneNode(ident, context, start, last, ExitKind.SUSPEND, last, (), resume)
        rule = EXIT_RULES.get(instr.INFO.name) if instr.INFO.kind is ExecKind.CONTROL else None
        if rule is None:
            return LaneNode(ident, context, start, end, ExitKind.GOTO, None, (self.edge(context, end, None),))
        kind, edges = rule(self, context, last, instr)
        return LaneNode(ident, context, start, last, kind, last, edges)


def _segment(nodes: list[LaneNode], resume: ResumePoint) -> SegmentShape:
    order = [resume.node]
    seen = {resume.node}
    suspends: dict[int, None] = {}
    ends = False
    k = 0
    while k < len(order):
        node = nodes[order[k]]
        k += 1
        if node.kind is ExitKind.SUSPEND:
            suspends[node.resume] = None  # type: ignore[index]
        elif node.kind is ExitKind.END:
            ends = True
        for target in node.successors:
            if target not in seen:
                seen.add(target)
                order.append(target)
    return SegmentShape(resume.id, tuple(order), tuple(suspends), ends)


def _stages(resume_points: list[ResumePoint], segments: list[SegmentShape]) -> list[Stage]:
    stages: list[Stage] = []
    for entry in resume_points:
        if entry.kind is ResumeKind.BARRIER:
            continue
        members = [entry.id]
        seen = {entry.id}
        exits: dict[int, None] = {}
        k = 0
        while k < len(members):
            for nxt in segments[members[k]].suspends:
                if resume_points[nxt].kind is ResumeKind.COOPERATIVE:
                    exits[nxt] = None
                elif nxt not in seen:
                    seen.add(nxt)
                    members.append(nxt)
            k += 1
        stages.append(Stage(len(stages), entry.id, tuple(members), tuple(exits)))
    return stages


def inlined_size(cfg: ControlFlowGraph) -> int:
    """The instructions of the main procedure with every call inlined (reachable code only), by
    summing each procedure's blocks and its callees' sizes bottom-up over the call graph (without
    building anything, so exponential inlining is refused at once). The call graph must be acyclic."""
    sizes: dict[int, int] = {}
    blocks = cfg.blocks
    for entry in reversed(cfg.call_order()):
        total = 0
        for b in cfg.procedures[entry].blocks:
            blk = blocks[b]
            total += blk.end - blk.start
            if blk.terminator is Terminator.CALL:
                total += sizes[blk.target]  # type: ignore[index]  # a CALL block has a target
        sizes[entry] = total
    return sizes[0]


def build_lane_graph(info, *, max_instructions: int | None = None, backend: str = "lowering") -> LaneGraph:
    """The lane graph of the verified program of ``info`` (a ProgramInfo).

    ``max_instructions`` caps the instruction copies (inlined calls plus code copied into
    several segments; default :func:`instruction_limit`). Raises UnsupportedOperation (naming
    ``backend``, CALL for too much inlining (checked before anything is built, with
    :func:`inlined_size`), BarSync or the cooperative instruction for too much code shared between
    segments) when the lowering would need more.
    """
    size = len(info.program)
    limit = instruction_limit(size) if max_instructions is None else max_instructions
    inlined = inlined_size(info.cfg)
    if inlined > limit:
        raise UnsupportedOperation(
            "CALL", "this program", backend,
            f"inlining every call makes {inlined} instruction copies, more than the lowering limit of {limit} for a "
            f"program of {size} instructions; call the deepest subroutines from fewer places")
    build = _Builder(info)
    build.run()
    nodes: list[LaneNode] = build.nodes  # type: ignore[assignment]  # every node is built now
    resume_points = build.resume_points
    segments = [_segment(nodes, rp) for rp in resume_points]
    copies = sum(nodes[n].end - nodes[n].start for seg in segments for n in seg.nodes)
    if copies > limit:
        cut = next(i for i in (*info.barriers, *info.cooperative))
        raise UnsupportedOperation(
            build.instructions[cut].INFO.name, "this program", backend,
            f"the {len(segments)} segments between barriers and cooperative steps copy {copies} instructions, more "
            f"than the lowering limit of {limit}; move code shared by several resume points into fewer places")
    stages = _stages(resume_points, segments)
    return LaneGraph(size, tuple(nodes), build.end_node, tuple(resume_points), tuple(segments), tuple(stages),
                     MappingProxyType({s.entry: s.id for s in stages}), copies)
