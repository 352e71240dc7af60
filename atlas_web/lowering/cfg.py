"""Control-flow graphs of Atlas programs: basic blocks, procedures, dominators, loops.

Blocks
    A block starts at instruction 0, at every BRA/CALL/LOOP target inside the
    program and after every control instruction (BRA, CALL, RET, LOOP, EXIT).
    Its ``successors`` are intra-procedural: a conditional BRA or a LOOP has
    (target, fall-through), an unconditional BRA its target, a CALL its return
    site (the next instruction), RET and EXIT none. A jump to ``len(program)``
    or running past the last instruction ends the lane: no successor.

Calls
    The program's entry (instruction 0) and every CALL target start a
    :class:`Procedure`: the blocks reachable from its entry block. A CALL block
    records its callee in ``target`` and in ``ControlFlowGraph.call_graph``;
    RET leaves the procedure (in a subroutine it returns to the call's return
    site, in the main procedure it ends the lane). Analyses therefore run per
    procedure and compose at call sites, which follows only realizable
    call/return paths, unlike a supergraph whose RET edges reach every return
    site. A block may belong to several procedures (code reached both by
    falling through and by a CALL). The Atlas ISA forbids recursion; the graph
    still represents it and :meth:`ControlFlowGraph.call_cycle` finds it.

Graph algorithms
    The functions below work on any graph given as ``{node: successors}``
    (every successor a key): reverse postorder, dominators and
    post-dominators (Cooper, Harvey and Kennedy's iterative algorithm over
    reverse postorder), control dependence, back edges, natural loops and
    reducibility. Post-dominators use the virtual node :data:`EXIT_NODE`
    after every sink; a region that cannot reach a sink (an endless loop) gets
    an extra edge to it from its highest-numbered node, so every node has a
    post-dominator.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Mapping, Sequence

from ..errors import ProgramError
from ..isa.opcodes import ExecKind, OperandKind

__all__ = [
    "EXIT_NODE", "Terminator", "BasicBlock", "Procedure", "ControlFlowGraph", "Loop", "build_cfg",
    "reverse_postorder", "predecessors_of", "immediate_dominators", "immediate_post_dominators", "dominates",
    "control_dependences", "back_edges", "natural_loops", "is_reducible", "resolve_targets",
]

#: the virtual node that follows every sink in post-dominator trees
EXIT_NODE = -1

Graph = Mapping[int, Sequence[int]]


# ---- generic graph algorithms -------------------------------------------------------------------

def reverse_postorder(successors: Graph, root: int) -> list[int]:
    """Nodes reachable from ``root``, root first, in reverse postorder of a depth-first search
    that visits successors in their given order. Iterative (no recursion limit)."""
    seen = {root}
    post: list[int] = []
    stack = [(root, iter(successors[root]))]
    while stack:
        node, pending = stack[-1]
        for succ in pending:
            if succ not in seen:
                seen.add(succ)
                stack.append((succ, iter(successors[succ])))
                break
        else:
            stack.pop()
            post.append(node)
    post.reverse()
    return post


def predecessors_of(successors: Graph) -> dict[int, list[int]]:
    """``{node: predecessors}`` of a successor map (each edge once, in node order)."""
    preds: dict[int, list[int]] = {n: [] for n in successors}
    for node, succs in successors.items():
        for succ in dict.fromkeys(succs):
            preds[succ].append(node)
    return preds


def _iterative_dominators(order: list[int], preds: Mapping[int, Sequence[int]]) -> dict[int, int]:
    """Cooper-Harvey-Kennedy: immediate dominators of the nodes of ``order`` (a reverse postorder
    from ``order[0]``); ``preds`` gives each node's predecessors in the graph being dominated."""
    rank = {n: i for i, n in enumerate(order)}
    root = order[0]
    idom: dict[int, int] = {root: root}
    changed = True
    while changed:
        changed = False
        for node in order[1:]:
            new = None
            for pred in preds[node]:
                if pred not in idom:
                    continue
                if new is None:
                    new = pred
                    continue
                a, b = pred, new
                while a != b:
                    while rank[a] > rank[b]:
                        a = idom[a]
                    while rank[b] > rank[a]:
                        b = idom[b]
                new = a
            if idom.get(node) != new:
                idom[node] = new  # type: ignore[assignment]  # a reachable node has a ranked predecessor
                changed = True
    return idom


def immediate_dominators(successors: Graph, root: int) -> dict[int, int]:
    """``{node: immediate dominator}`` for the nodes reachable from ``root``; the root maps to itself."""
    order = reverse_postorder(successors, root)
    preds: dict[int, list[int]] = {n: [] for n in order}
    for node in order:
        for succ in dict.fromkeys(successors[node]):
            preds[succ].append(node)
    return _iterative_dominators(order, preds)


def immediate_post_dominators(successors: Graph) -> dict[int, int]:
    """``{node: immediate post-dominator}`` for every node, with :data:`EXIT_NODE` as the root
    (mapped to itself) after every sink. Nodes that cannot reach a sink are connected to
    EXIT_NODE from the highest-numbered such node first, until every node reaches it."""
    reverse: dict[int, list[int]] = {n: [] for n in successors}
    reverse[EXIT_NODE] = []
    forward: dict[int, list[int]] = {}
    for node, succs in successors.items():
        unique = list(dict.fromkeys(succs))
        forward[node] = unique
        if not unique:
            reverse[EXIT_NODE].append(node)
            forward[node] = [EXIT_NODE]
        for succ in unique:
            reverse[succ].append(node)
    reached = {EXIT_NODE}
    stack = [EXIT_NODE]
    while True:
        while stack:
            for pred in reverse[stack.pop()]:
                if pred not in reached:
                    reached.add(pred)
                    stack.append(pred)
        if len(reached) == len(reverse):
            break
        stuck = max(n for n in successors if n not in reached)
        reverse[EXIT_NODE].append(stuck)
        forward[stuck] = forward[stuck] + [EXIT_NODE]
        reached.add(stuck)
        stack.append(stuck)
    return _iterative_dominators(reverse_postorder(reverse, EXIT_NODE), forward)


def dominates(idom: Mapping[int, int], a: int, b: int) -> bool:
    """True when ``a`` dominates ``b`` (every node dominates itself) in the tree ``idom``."""
    while True:
        if a == b:
            return True
        parent = idom.get(b)
        if parent is None or parent == b:
            return False
        b = parent


def control_dependences(successors: Graph, ipdom: Mapping[int, int]) -> dict[int, tuple[int, ...]]:
    """``{node: branch nodes it is control-dependent on}`` (Ferrante, Ottenstein and Warren):
    ``n`` depends on ``a`` when ``n`` post-dominates a successor of ``a`` but does not strictly
    post-dominate ``a``. Only nodes with two or more distinct successors are branches."""
    deps: dict[int, dict[int, None]] = {n: {} for n in successors}
    for node, succs in successors.items():
        unique = set(succs)
        if len(unique) < 2:
            continue
        stop = ipdom[node]
        for succ in unique:
            walker = succ
            while walker != stop and walker != EXIT_NODE:
                deps[walker][node] = None
                walker = ipdom[walker]
    return {n: tuple(d) for n, d in deps.items()}


def back_edges(successors: Graph, root: int, idom: Mapping[int, int] | None = None) -> list[tuple[int, int]]:
    """Edges ``(u, v)`` reachable from ``root`` whose target dominates their source."""
    if idom is None:
        idom = immediate_dominators(successors, root)
    return [(u, v) for u in idom for v in dict.fromkeys(successors[u]) if dominates(idom, v, u)]


@dataclass(frozen=True)
class Loop:
    """A natural loop: its ``header``, ``body`` (header included), the ``latches`` whose back
    edges enter the header, the ``exits`` (edges leaving the body), the header of the innermost
    enclosing loop (``parent``, or None) and its nesting ``depth`` (1 for an outermost loop)."""

    header: int
    body: frozenset[int]
    latches: tuple[int, ...]
    exits: tuple[tuple[int, int], ...]
    parent: int | None
    depth: int


def natural_loops(successors: Graph, root: int, idom: Mapping[int, int] | None = None) -> list[Loop]:
    """The natural loops reachable from ``root``, one per header (back edges to the same header
    merged), outermost first."""
    if idom is None:
        idom = immediate_dominators(successors, root)
    preds = predecessors_of(successors)
    latches: dict[int, list[int]] = {}
    for u, v in back_edges(successors, root, idom):
        latches.setdefault(v, []).append(u)
    bodies: dict[int, frozenset[int]] = {}
    for header, tails in latches.items():
        body = {header}
        stack = [t for t in tails if t != header]
        body.update(stack)
        while stack:
            for pred in preds[stack.pop()]:
                if pred not in body and pred in idom:
                    body.add(pred)
                    stack.append(pred)
        bodies[header] = frozenset(body)
    parents: dict[int, int | None] = {}
    for header, body in bodies.items():
        enclosing = [h for h, b in bodies.items() if h != header and header in b and body <= b]
        parents[header] = min(enclosing, key=lambda h: len(bodies[h])) if enclosing else None
    loops = []
    for header, body in bodies.items():
        depth, up = 1, parents[header]
        while up is not None:
            depth, up = depth + 1, parents[up]
        exits = tuple((u, s) for u in sorted(body) for s in dict.fromkeys(successors[u]) if s not in body)
        loops.append(Loop(header, body, tuple(sorted(latches[header])), exits, parents[header], depth))
    loops.sort(key=lambda lp: (lp.depth, lp.header))
    return loops


def is_reducible(successors: Graph, root: int, idom: Mapping[int, int] | None = None) -> bool:
    """True when every cycle reachable from ``root`` is entered only through its header: the
    graph without its back edges is acyclic."""
    if idom is None:
        idom = immediate_dominators(successors, root)
    backs = set(back_edges(successors, root, idom))
    indegree = {n: 0 for n in idom}
    forward = {n: [s for s in dict.fromkeys(successors[n]) if (n, s) not in backs] for n in idom}
    for succs in forward.values():
        for s in succs:
            indegree[s] += 1
    ready = [n for n, d in indegree.items() if d == 0]
    seen = 0
    while ready:
        node = ready.pop()
        seen += 1
        for s in forward[node]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    return seen == len(indegree)


# ---- the program's graph -------------------------------------------------------------------------

class Terminator(enum.Enum):
    """How a basic block ends."""

    FALLTHROUGH = "fallthrough"  # the next instruction starts a block (or the program ends)
    JUMP = "jump"                # BRA without a predicate
    BRANCH = "branch"            # BRA with a predicate
    LOOP = "loop"
    CALL = "call"
    RETURN = "return"
    EXIT = "exit"


_TERMINATORS = {"BRA": Terminator.JUMP, "LOOP": Terminator.LOOP, "CALL": Terminator.CALL,
                "RET": Terminator.RETURN, "EXIT": Terminator.EXIT}


@dataclass(frozen=True)
class BasicBlock:
    """Instructions ``start`` … ``end - 1``, with intra-procedural ``successors`` and
    ``predecessors`` (block ids) and, for BRA/LOOP/CALL blocks, the ``target`` instruction index
    (``len(program)`` for a jump that ends the lane).

    Successor order: a BRANCH or LOOP block lists its target's block first, then the
    fall-through block (one entry when they coincide; none for a target at the end).
    """

    id: int
    start: int
    end: int
    terminator: Terminator
    successors: tuple[int, ...]
    predecessors: tuple[int, ...]
    target: int | None = None

    @property
    def last(self) -> int:
        """Index of the block's last instruction."""
        return self.end - 1

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Procedure:
    """The blocks reachable from ``entry`` (an instruction index) by successor edges.

    ``blocks`` are in reverse postorder (``entry_block`` first; empty when the entry is
    ``len(program)``). In the main procedure (entry 0) RET ends the lane; elsewhere it returns.
    The analyses are computed on first use and kept.
    """

    entry: int
    entry_block: int | None
    blocks: tuple[int, ...]
    is_main: bool
    successors: Mapping[int, tuple[int, ...]] = field(repr=False, compare=False)
    terminators: Mapping[int, Terminator] = field(repr=False, compare=False)

    @property
    def returns(self) -> tuple[int, ...]:
        """Blocks that end with RET (in the main procedure these end the lane)."""
        return tuple(b for b in self.blocks if self.terminators[b] is Terminator.RETURN)

    @property
    def calls(self) -> tuple[int, ...]:
        """Blocks that end with CALL."""
        return tuple(b for b in self.blocks if self.terminators[b] is Terminator.CALL)

    def ends_lane(self, block: int) -> bool:
        """True when control leaving ``block`` ends the lane (a sink that is not a subroutine's RET)."""
        return not self.successors[block] and (self.is_main or self.terminators[block] is not Terminator.RETURN)

    @cached_property
    def dominators(self) -> Mapping[int, int]:
        """Immediate dominators (block -> block; the entry block maps to itself)."""
        if self.entry_block is None:
            return MappingProxyType({})
        return MappingProxyType(immediate_dominators(self.successors, self.entry_block))

    @cached_property
    def post_dominators(self) -> Mapping[int, int]:
        """Immediate post-dominators (block -> block or EXIT_NODE)."""
        return MappingProxyType(immediate_post_dominators(self.successors))

    @cached_property
    def control_dependences(self) -> Mapping[int, tuple[int, ...]]:
        """Block -> the branch blocks it is control-dependent on."""
        return MappingProxyType(control_dependences(self.successors, self.post_dominators))

    @cached_property
    def back_edges(self) -> tuple[tuple[int, int], ...]:
        if self.entry_block is None:
            return ()
        return tuple(back_edges(self.successors, self.entry_block, self.dominators))

    @cached_property
    def loops(self) -> tuple[Loop, ...]:
        """Natural loops, outermost first."""
        if self.entry_block is None:
            return ()
        return tuple(natural_loops(self.successors, self.entry_block, self.dominators))

    @cached_property
    def is_reducible(self) -> bool:
        if self.entry_block is None:
            return True
        return is_reducible(self.successors, self.entry_block, self.dominators)


@dataclass(frozen=True, eq=False)
class ControlFlowGraph:
    """Blocks, the instruction -> block map, the procedures (by entry instruction; 0 is the
    main program) and the call graph (procedure entry -> callee entries)."""

    size: int
    blocks: tuple[BasicBlock, ...]
    block_of: tuple[int, ...]
    procedures: Mapping[int, Procedure]
    call_graph: Mapping[int, tuple[int, ...]]

    @property
    def main(self) -> Procedure:
        return self.procedures[0]

    def block_at(self, index: int) -> BasicBlock:
        """The block holding instruction ``index``."""
        return self.blocks[self.block_of[index]]

    @cached_property
    def procedures_of_block(self) -> tuple[tuple[int, ...], ...]:
        """Block id -> entries of the procedures containing it (empty for unreachable code)."""
        owners: list[list[int]] = [[] for _ in self.blocks]
        for entry, proc in self.procedures.items():
            for b in proc.blocks:
                owners[b].append(entry)
        return tuple(tuple(o) for o in owners)

    def call_sites(self, caller: int) -> tuple[tuple[int, int], ...]:
        """``(CALL instruction index, callee entry)`` for each call in procedure ``caller``."""
        proc = self.procedures[caller]
        return tuple((self.blocks[b].last, self.blocks[b].target) for b in proc.calls)  # type: ignore[misc]

    def call_cycle(self) -> tuple[int, ...] | None:
        """CALL instruction indices of one recursive cycle (each calls the procedure holding the
        next, the last the first's), or None when the call graph is acyclic."""
        state: dict[int, int] = {}  # 1 on the stack, 2 done
        for root in sorted(self.procedures):
            if root in state:
                continue
            state[root] = 1
            path: list[tuple[int, int]] = []  # (procedure, CALL index taken from it)
            stack = [(root, iter(self.call_sites(root)))]
            while stack:
                proc, pending = stack[-1]
                for call, callee in pending:
                    if state.get(callee) == 1:
                        start = next(k for k, (p, _) in enumerate(path + [(proc, call)]) if p == callee)
                        return tuple(c for _, c in (path + [(proc, call)])[start:])
                    if callee not in state:
                        state[callee] = 1
                        path.append((proc, call))
                        stack.append((callee, iter(self.call_sites(callee))))
                        break
                else:
                    state[proc] = 2
                    stack.pop()
                    if path:
                        path.pop()
        return None

    def call_order(self) -> tuple[int, ...]:
        """Procedure entries with every caller before its callees, main first.

        Raises ProgramError when calls are recursive."""
        cycle = self.call_cycle()
        if cycle is not None:
            raise ProgramError(f"recursive calls through instructions {', '.join(map(str, cycle))}", index=cycle[0])
        indegree = {e: 0 for e in self.procedures}
        for callees in self.call_graph.values():
            for c in callees:
                indegree[c] += 1
        ready = sorted((e for e, d in indegree.items() if d == 0), reverse=True)
        order: list[int] = []
        while ready:
            entry = ready.pop()
            order.append(entry)
            for c in self.call_graph[entry]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    ready.append(c)
                    ready.sort(reverse=True)
        return tuple(order)

    def call_depth(self) -> int:
        """The most calls that can be pending at once, starting from the main procedure (0 when
        it calls nothing). Raises ProgramError when calls are recursive."""
        depth: dict[int, int] = {}
        for entry in reversed(self.call_order()):
            depth[entry] = max((depth[c] + 1 for c in self.call_graph[entry]), default=0)
        return depth[0]


def resolve_targets(program) -> dict[int, int]:
    """Instruction index -> target index for every instruction with a label operand
    (BRA, CALL, LOOP). Raises ProgramError naming an undefined label."""
    targets: dict[int, int] = {}
    for index, instr in enumerate(program.instructions):
        for operand in instr.INFO.operands:
            if operand.kind is OperandKind.LABEL:
                label = getattr(instr, operand.name)
                if label.name not in program.labels:
                    raise ProgramError(f"undefined label {label}", index=index)
                targets[index] = program.labels[label.name]
    return targets


def build_cfg(program, targets: Mapping[int, int] | None = None) -> ControlFlowGraph:
    """The control-flow graph of ``program``; ``targets`` as from :func:`resolve_targets`
    (computed when omitted). Raises ProgramError for an undefined label or a target outside
    ``0 … len(program)``."""
    instructions = program.instructions
    size = len(instructions)
    if targets is None:
        targets = resolve_targets(program)
    leaders = {0} if size else set()
    for index, instr in enumerate(instructions):
        target = targets.get(index)
        if target is not None:
            if not 0 <= target <= size:
                raise ProgramError(f"branch target {target} outside 0..{size}", index=index)
            if target < size:
                leaders.add(target)
        if instr.INFO.kind is ExecKind.CONTROL and index + 1 < size:
            leaders.add(index + 1)
    starts = sorted(leaders)
    block_of = [0] * size
    for b, start in enumerate(starts):
        end = starts[b + 1] if b + 1 < len(starts) else size
        block_of[start:end] = [b] * (end - start)

    shapes = []
    for b, start in enumerate(starts):
        end = starts[b + 1] if b + 1 < len(starts) else size
        last = end - 1
        instr = instructions[last]
        kind = _TERMINATORS.get(instr.INFO.name, Terminator.FALLTHROUGH)
        if kind is Terminator.JUMP and instr.pred is not None:
            kind = Terminator.BRANCH
        target = targets.get(last)
        after = [end] if end < size else []
        if kind is Terminator.JUMP:
            succ_instrs = [target]
        elif kind in (Terminator.BRANCH, Terminator.LOOP):
            succ_instrs = [target] + after
        elif kind in (Terminator.RETURN, Terminator.EXIT):
            succ_instrs = []
        else:  # FALLTHROUGH, CALL (the return site)
            succ_instrs = after
        succs = tuple(dict.fromkeys(block_of[i] for i in succ_instrs if i < size))
        shapes.append((start, end, kind, succs, target))
    preds: list[list[int]] = [[] for _ in starts]
    for b, (_, _, _, succs, _) in enumerate(shapes):
        for s in succs:
            preds[s].append(b)
    blocks = tuple(BasicBlock(b, start, end, kind, succs, tuple(preds[b]), target)
                   for b, (start, end, kind, succs, target) in enumerate(shapes))

    successors = MappingProxyType({blk.id: blk.successors for blk in blocks})
    terminators = MappingProxyType({blk.id: blk.terminator for blk in blocks})
    entries = sorted({0} | {targets[blk.last] for blk in blocks if blk.terminator is Terminator.CALL})
    procedures: dict[int, Procedure] = {}
    call_graph: dict[int, tuple[int, ...]] = {}
    for entry in entries:
        entry_block = block_of[entry] if entry < size else None
        order = tuple(reverse_postorder(successors, entry_block)) if entry_block is not None else ()
        proc_succ = MappingProxyType({b: successors[b] for b in order})
        procedures[entry] = Procedure(entry, entry_block, order, entry == 0, proc_succ, terminators)
        call_graph[entry] = tuple(sorted({blocks[b].target for b in order  # type: ignore[misc]
                                          if blocks[b].terminator is Terminator.CALL}))
    return ControlFlowGraph(size, blocks, tuple(block_of), MappingProxyType(procedures),
                            MappingProxyType(call_graph))
