"""Structured control flow for one segment: a small tree of block / loop / if / br.

The tree
    A segment's body is a tuple of statements:

    ==========================  =================================================================
    ``Code(start, end)``        run instructions ``start … end - 1`` (original indices; never a
                                control, BarSync or cooperative instruction)
    ``Block(label, body)``      ``Br`` to ``label`` continues after the block
    ``Loop(label, body)``       ``Br`` to ``label`` starts the body again
    ``If(test, then, orelse)``  ``then`` when ``test`` holds, else ``orelse``
    ``Br(label, depth, crossed)``   jump to an enclosing Block's end or Loop's start
    ``BrIf(test, label, …)``    ``Br`` when ``test`` holds, else go on
    ``CountJump(index)``        a taken backward jump of instruction ``index``: add one to the
                                lane's count; past the budget trap BUDGET_EXCEEDED at ``index``
    ``EndLane()``               the lane ends (EXIT, RET with nothing pending, past the end)
    ``Suspend(index, resume)``  the lane suspends at BarSync / cooperative instruction ``index``
                                and continues at resume point ``resume``
    ``Dispatch(label, entry, cases)`` / ``Goto(case, label, depth)``   the fallback, below
    ==========================  =================================================================

    A ``BranchTest(index, negated)`` is the condition of the BRA (with a
    predicate) or LOOP at ``index``: true when it jumps (with ``negated``, when
    it does not). Evaluating it runs that instruction's effects exactly once
    (LOOP decrements its count). Every statement list ends in a statement that
    does not fall through (Br, Goto, EndLane, Suspend, an If whose arms end so,
    a Loop), so no code runs off the end of a Block, Loop or case.

    WebAssembly: Block, Loop and If are ``block``, ``loop`` and ``if … else``
    (void), ``Br``/``BrIf`` are ``br``/``br_if`` with relative label index
    ``depth`` (the Block, Loop and If constructs between the branch and its
    target, wasm's own count). WGSL has no labelled break: render a Loop as
    ``loop { … }`` and a Block as ``loop { … }`` too (its body never falls
    through); a Br with ``crossed == 0`` (no Block or Loop between it and its
    target) is ``break`` (to a Block) or ``continue`` (to a Loop); a Br that
    crosses constructs sets a function-scope ``exit_to`` variable to the label
    and breaks, and after each rendered loop ``if (exit_to != 0)`` either
    clears it and continues (the loop named: a Loop target) / falls out (a
    Block target), or breaks again. A WGSL generator that prefers no flags can
    ask for the dispatch form everywhere (``plan_program(form="dispatch")``).

Structuring (reducible graphs)
    Ramsey's dominator-tree method ("Beyond Relooper", 2022): walk the
    dominator tree; a node that is the target of a back edge becomes a Loop; a
    *merge node* (two or more forward in-edges) is placed after a Block nested
    inside its immediate dominator, the later (in reverse postorder) merge
    children outside the earlier ones; a branch to a loop header is a Br to
    its Loop, a branch to a merge node a Br to its Block's end, and a branch to
    any other node places that node's code right there. Nodes without code
    that only end the lane or suspend are copied at each branch to them.

Fallback (irreducible graphs, and trees nested deeper than MAX_NESTING)
    ``Dispatch(label, entry, cases)``: a dispatch loop over a case variable:
    ``case = entry; loop label { switch case { k: cases[k] } }``. One case per
    node; a case body holds only Code, CountJump, If, EndLane, Suspend and
    ``Goto(case, label, depth)``: set the case variable, then continue the
    dispatch loop (``depth`` is the If constructs between the Goto and its case
    body; in wasm add the case's own blocks). WGSL renders it as ``loop {
    switch case { … } }`` with ``case = k;`` for a Goto, falling to the loop's
    end (no multi-level break anywhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ..errors import ProgramError
from .cfg import immediate_dominators, reverse_postorder
from .stages import Edge, ExitKind, LaneGraph, LaneNode

__all__ = [
    "BranchTest", "Code", "Block", "Loop", "If", "Br", "BrIf", "CountJump", "EndLane", "Suspend", "Dispatch",
    "Goto", "Statement", "StructuredBody", "structure_segment", "MAX_NESTING", "FORMS", "walk", "nesting_depth",
    "nested_bodies",
]

#: structured trees nested deeper than this fall back to the dispatch form
MAX_NESTING = 96
#: the forms ``structure_segment`` accepts: "structured" (dispatch only where needed) or "dispatch"
FORMS = ("structured", "dispatch")


@dataclass(frozen=True, slots=True)
class BranchTest:
    """The condition of the BRA (with a predicate) or LOOP at ``index``: true when it jumps, or,
    ``negated``, when it does not."""

    index: int
    negated: bool = False

    def inverted(self) -> "BranchTest":
        return BranchTest(self.index, not self.negated)


@dataclass(frozen=True, slots=True)
class Code:
    """Run instructions ``start … end - 1``."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Block:
    label: int
    body: tuple["Statement", ...]


@dataclass(frozen=True, slots=True)
class Loop:
    label: int
    body: tuple["Statement", ...]


@dataclass(frozen=True, slots=True)
class If:
    test: BranchTest
    then: tuple["Statement", ...]
    orelse: tuple["Statement", ...]


@dataclass(frozen=True, slots=True)
class Br:
    """Jump to the enclosing Block or Loop ``label``; ``depth`` Block/Loop/If constructs lie in
    between (wasm's relative label index), ``crossed`` of them Blocks or Loops."""

    label: int
    depth: int
    crossed: int


@dataclass(frozen=True, slots=True)
class BrIf:
    """``Br(label, depth, crossed)`` when ``test`` holds."""

    test: BranchTest
    label: int
    depth: int
    crossed: int


@dataclass(frozen=True, slots=True)
class CountJump:
    """A taken backward jump of instruction ``index``: count it against the lane's budget."""

    index: int


@dataclass(frozen=True, slots=True)
class EndLane:
    """The lane ends."""


@dataclass(frozen=True, slots=True)
class Suspend:
    """Suspend at BarSync / cooperative instruction ``index``; continue at resume point ``resume``."""

    index: int
    resume: int


@dataclass(frozen=True, slots=True)
class Goto:
    """Inside a Dispatch: set the case variable to ``case`` and continue dispatch loop ``label``."""

    case: int
    label: int
    depth: int


@dataclass(frozen=True, slots=True)
class Dispatch:
    """``case = entry; loop label { switch case { k: cases[k] } }``."""

    label: int
    entry: int
    cases: tuple[tuple["Statement", ...], ...]


Statement = Union[Code, Block, Loop, If, Br, BrIf, CountJump, EndLane, Suspend, Goto, Dispatch]


@dataclass(frozen=True, slots=True)
class StructuredBody:
    """A segment's tree: ``body``, the ``form`` it took ("structured" or "dispatch"), whether its
    graph is ``reducible`` and ``labels``, the number of labels used (0 … labels-1)."""

    body: tuple[Statement, ...]
    form: str
    reducible: bool
    labels: int


def walk(body: tuple[Statement, ...]):
    """Every statement of ``body`` and of the bodies nested in it, parents first."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        yield stmt
        for nested in nested_bodies(stmt)[::-1]:
            stack.extend(reversed(nested))


def nested_bodies(stmt: Statement) -> tuple[tuple[Statement, ...], ...]:
    """The statement lists nested directly in ``stmt``: a Block's or Loop's body, an If's two arms, a
    Dispatch's cases; none for the others."""
    if isinstance(stmt, (Block, Loop)):
        return (stmt.body,)
    if isinstance(stmt, If):
        return (stmt.then, stmt.orelse)
    if isinstance(stmt, Dispatch):
        return stmt.cases
    return ()


def nesting_depth(body: tuple[Statement, ...]) -> int:
    """The most Block/Loop/If/Dispatch constructs nested in each other in ``body``."""
    deepest = 0
    stack = [(body, 0)]
    while stack:
        stmts, depth = stack.pop()
        deepest = max(deepest, depth)
        for stmt in stmts:
            for nested in nested_bodies(stmt):
                stack.append((nested, depth + 1))
    return deepest


class _TooDeep(Exception):
    """The structured tree would nest deeper than MAX_NESTING."""


@dataclass(frozen=True, slots=True)
class _Scope:
    """One enclosing construct while emitting: its label (None for an If), the enclosing scope."""

    label: int | None
    parent: "_Scope | None"
    depth: int


def _append_code(out: list[Statement], node: LaneNode) -> None:
    """Append the node's run, joined to a Code just before it that ends where the run starts."""
    if node.start == node.end:
        return
    last = out[-1] if out else None
    if isinstance(last, Code) and last.end == node.start:
        out[-1] = Code(last.start, node.end)
    else:
        out.append(Code(node.start, node.end))


def _terminal(node: LaneNode) -> Statement:
    return Suspend(node.exit_index, node.resume) if node.kind is ExitKind.SUSPEND else EndLane()  # type: ignore[arg-type]


class _Ramsey:
    """Emits the structured tree of a reducible segment graph."""

    def __init__(self, nodes: tuple[LaneNode, ...], entry: int, successors: dict[int, tuple[int, ...]],
                 order: list[int], idom: dict[int, int]) -> None:
        self.nodes = nodes
        self.entry = entry
        self.rank = {n: k for k, n in enumerate(order)}
        rank = self.rank
        children: dict[int, list[int]] = {n: [] for n in order}
        for n, d in idom.items():
            if n != d:
                children[d].append(n)
        forward_in = dict.fromkeys(order, 0)
        self.headers: set[int] = set()
        for u in order:
            for v in successors[u]:
                if rank[v] <= rank[u]:
                    self.headers.add(v)
                else:
                    forward_in[v] += 1
        self.merge = {v for v, count in forward_in.items() if count >= 2 and not nodes[v].is_terminal_stub}
        # merge children outermost (latest in reverse postorder) first
        self.merge_children = {n: sorted((c for c in cs if c in self.merge), key=rank.__getitem__, reverse=True)
                               for n, cs in children.items()}
        self.loop_label: dict[int, int] = {}
        self.block_label: dict[int, int] = {}
        self.labels = 0

    def _label(self) -> int:
        self.labels += 1
        return self.labels - 1

    @staticmethod
    def _enter(scope: _Scope | None, label: int | None) -> _Scope:
        depth = 1 if scope is None else scope.depth + 1
        if depth > MAX_NESTING:
            raise _TooDeep
        return _Scope(label, scope, depth)

    @staticmethod
    def _br_fields(scope: _Scope | None, label: int) -> tuple[int, int]:
        depth = crossed = 0
        while scope is not None and scope.label != label:
            depth += 1
            crossed += scope.label is not None
            scope = scope.parent
        if scope is None:
            raise AssertionError(f"label {label} does not enclose its branch")  # the method's invariant
        return depth, crossed

    def emit(self) -> tuple[Statement, ...]:
        out: list[Statement] = []
        self._tree(self.entry, None, out)
        return tuple(out)

    def _tree(self, x: int | None, scope: _Scope | None, out: list[Statement]) -> None:
        """Append the code of dominator subtree ``x`` (then of each tail node it continues with)."""
        while x is not None:
            ys = self.merge_children[x]
            if x in self.headers:
                label = self._label()
                self.loop_label[x] = label
                body: list[Statement] = []
                self._within(x, ys, self._enter(scope, label), body)
                out.append(Loop(label, tuple(body)))
                return
            x = self._within_step(x, ys, scope, out)

    def _within(self, x: int, ys: list[int], scope: _Scope, out: list[Statement]) -> None:
        self._tree(self._within_step(x, ys, scope, out), scope, out)

    def _within_step(self, x: int, ys: list[int], scope: _Scope | None, out: list[Statement]) -> int | None:
        """Append x's code nested in Blocks for its merge children ``ys``; return the node whose
        code comes next in the same statement list (a tail), or None."""
        if ys:
            label = self._label()
            self.block_label[ys[0]] = label
            inner: list[Statement] = []
            self._within(x, ys[1:], self._enter(scope, label), inner)
            out.append(Block(label, tuple(inner)))
            return ys[0]
        node = self.nodes[x]
        _append_code(out, node)
        if node.kind is ExitKind.GOTO:
            return self._edge(x, node.edges[0], scope, out)
        if node.kind is ExitKind.BRANCH:
            taken, not_taken = node.edges
            test = BranchTest(node.exit_index)  # type: ignore[arg-type]
            if self._is_plain_br(x, taken):
                out.append(BrIf(test, *self._target_fields(x, taken.target, scope)))
                return self._edge(x, not_taken, scope, out)
            if self._is_plain_br(x, not_taken):
                out.append(BrIf(test.inverted(), *self._target_fields(x, not_taken.target, scope)))
                return self._edge(x, taken, scope, out)
            if_scope = self._enter(scope, None)
            arms = []
            for edge in (taken, not_taken):
                arm: list[Statement] = []
                self._tree(self._edge(x, edge, if_scope, arm), if_scope, arm)
                arms.append(tuple(arm))
            out.append(If(test, arms[0], arms[1]))
            return None
        out.append(_terminal(node))
        return None

    def _is_plain_br(self, x: int, edge: Edge) -> bool:
        """True when taking ``edge`` is a lone Br (no jump to count, no code placed there)."""
        target = edge.target
        return (edge.backward_jump is None and not self.nodes[target].is_terminal_stub
                and (self.rank[target] <= self.rank[x] or target in self.merge))

    def _target_fields(self, x: int, target: int, scope: _Scope | None) -> tuple[int, int, int]:
        label = self.loop_label[target] if self.rank[target] <= self.rank[x] else self.block_label[target]
        return (label, *self._br_fields(scope, label))

    def _edge(self, x: int, edge: Edge, scope: _Scope | None, out: list[Statement]) -> int | None:
        """Append the branch along ``edge``; return the node placed right here (a tail), or None."""
        if edge.backward_jump is not None:
            out.append(CountJump(edge.backward_jump))
        target = edge.target
        node = self.nodes[target]
        if node.is_terminal_stub:
            out.append(_terminal(node))
            return None
        if self.rank[target] <= self.rank[x] or target in self.merge:
            out.append(Br(*self._target_fields(x, target, scope)))
            return None
        return target


def _dispatch(nodes: tuple[LaneNode, ...], order: list[int], label: int) -> tuple[Statement, ...]:
    """The dispatch form: one case per node of ``order`` with code (terminal stubs are inlined)."""
    cases = [n for n in order if not nodes[n].is_terminal_stub]
    case_of = {n: k for k, n in enumerate(cases)}

    def edge(e: Edge, depth: int) -> list[Statement]:
        stmts: list[Statement] = [CountJump(e.backward_jump)] if e.backward_jump is not None else []
        target = nodes[e.target]
        stmts.append(_terminal(target) if target.is_terminal_stub else Goto(case_of[e.target], label, depth))
        return stmts

    bodies = []
    for n in cases:
        node = nodes[n]
        body: list[Statement] = []
        _append_code(body, node)
        if node.kind is ExitKind.GOTO:
            body += edge(node.edges[0], 0)
        elif node.kind is ExitKind.BRANCH:
            taken, not_taken = node.edges
            body.append(If(BranchTest(node.exit_index), tuple(edge(taken, 1)), tuple(edge(not_taken, 1))))  # type: ignore[arg-type]
        else:
            body.append(_terminal(node))
        bodies.append(tuple(body))
    return (Dispatch(label, 0, tuple(bodies)),)


def _reducible(order: list[int], successors: dict[int, tuple[int, ...]], idom: dict[int, int]) -> bool:
    """True when every edge that retreats in reverse postorder ``order`` enters a node dominating its
    source (then the retreating edges are exactly the back edges: the graph is reducible)."""
    rank = {n: k for k, n in enumerate(order)}
    for u in order:
        for v in successors[u]:
            if rank[v] <= rank[u]:
                w = u
                while rank[w] > rank[v]:
                    w = idom[w]
                if w != v:
                    return False
    return True


def structure_segment(graph: LaneGraph, resume: int, *, form: str = "structured") -> StructuredBody:
    """The tree of the segment starting at resume point ``resume`` of ``graph``.

    ``form``: "structured" (Ramsey's method; the dispatch form where the segment's graph is
    irreducible or the tree would nest deeper than MAX_NESTING) or "dispatch" (always).
    Raises ProgramError for an unknown form.
    """
    if form not in FORMS:
        raise ProgramError(f"unknown structuring form {form!r} (known: {', '.join(FORMS)})")
    nodes = graph.nodes
    shape = graph.segments[resume]
    entry = shape.nodes[0]
    if nodes[entry].is_terminal_stub:
        return StructuredBody((_terminal(nodes[entry]),), "structured", True, 0)
    successors = {n: nodes[n].successors for n in shape.nodes}
    order = reverse_postorder(successors, entry)
    idom = immediate_dominators(successors, entry)
    reducible = _reducible(order, successors, idom)
    if form == "structured" and reducible:
        ramsey = _Ramsey(nodes, entry, successors, order, idom)
        try:
            return StructuredBody(ramsey.emit(), "structured", True, ramsey.labels)
        except _TooDeep:
            pass
    return StructuredBody(_dispatch(nodes, order, 0), "dispatch", reducible, 1)
