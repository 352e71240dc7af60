"""Segment functions: one WGSL function per segment of the lowering plan, rendered from its tree.

``fn segment_<resume>() -> u32`` runs one lane from resume point ``resume`` until it ends
(returns LANE_ENDED), traps (it stops being ``alive``; see ``lane_context``) or suspends at a barrier or
cooperative instruction (returns the resume point where it continues). Registers are private
variables, so the stage's main function does every spill and reload around the call.

Statements (``atlas_web.lowering.structure``) are rendered by a table keyed by their class:

* A Block becomes ``switch 0u { default: { body } }`` and a Loop ``loop { body; break; }``; a
  Br to the innermost one is ``break`` (Block) or ``continue`` (Loop). A Block is a switch, not
  a loop, because lavapipe counts every loop iteration against a limit of 65535 per lane and
  dispatch. WGSL has no multi-level break, so a Br that crosses other constructs sets
  ``brk = label`` and breaks; after every construct it may leave that way a check either
  consumes the label (its enclosing Block/Loop is the target) or breaks again.
* Dispatch becomes ``loop { switch case { ... } }``; a Goto sets the case variable and falls
  to the end of the switch.
* A BranchTest of a LOOP first decrements the count register (the LOOP's side effect runs
  exactly once, where its test is evaluated).
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.lowering.structure import (
    Block, Br, BranchTest, BrIf, Code, CountJump, Dispatch, EndLane, Goto, If, Loop, Suspend, walk,
)

from .emitter import ENGINE_LIMIT_TRAP
from .lane_context import LaneContext
from .rules import LANE_RULES, unsupported
from .runtime_layout import LANE_ENDED

__all__ = ["render_segment", "STATEMENT_RULES", "NO_LABEL"]

NO_LABEL = 0xFFFFFFFF


class _Scope:
    """One enclosing construct while rendering: kind ("block", "loop", "if", "dispatch") and label."""

    __slots__ = ("kind", "label", "parent")

    def __init__(self, kind: str, label: int | None, parent: "_Scope | None") -> None:
        self.kind, self.label, self.parent = kind, label, parent

    def innermost_loop(self) -> "_Scope | None":
        scope = self
        while scope is not None and scope.kind not in ("block", "loop"):
            scope = scope.parent
        return scope


class _Renderer:
    def __init__(self, ctx: LaneContext) -> None:
        self.ctx = ctx
        self.scope: _Scope | None = None
        self.escapes: dict[int, set[int]] = {}

    # ---- helpers ------------------------------------------------------------------------------
    def statements(self, body) -> None:
        for stmt in body:
            STATEMENT_RULES[type(stmt)](self, stmt)

    def test(self, test: BranchTest) -> str:
        """The condition of a BranchTest (true when the branch jumps, unless negated)."""
        ctx = self.ctx
        instr = ctx.info.program.instructions[test.index]
        if instr.INFO.name == "LOOP":
            count = ctx.read("count", test.index)
            before = ctx.temp(count, "count")
            ctx.emit(f"if ({before} != 0u) {{ {count} = {before} - 1u; }}")
            jumps = f"({before} != 0u && {before} != 1u)"
        else:
            jumps = ctx.predicate(instr.pred, test.index)
            if instr.negate:
                jumps = f"!{jumps}"
        return f"!({jumps})" if test.negated else f"({jumps})"

    def construct(self, kind: str, label: int, body) -> None:
        ctx = self.ctx
        escaping = _escaping_labels(body, label)
        if kind == "block":
            with ctx.block("switch 0u"):
                with ctx.block("default:"):
                    self.scope = _Scope(kind, label, self.scope)
                    self.statements(body)
                    self.scope = self.scope.parent
        else:
            with ctx.block("loop"):
                self.scope = _Scope(kind, label, self.scope)
                self.statements(body)
                self.scope = self.scope.parent
                ctx.emit("break;")
        if escaping:
            self.after_escape(escaping)

    def after_escape(self, escaping: set[int]) -> None:
        """The check after a construct some Br left by setting ``brk``."""
        ctx = self.ctx
        outer = self.scope.innermost_loop() if self.scope is not None else None
        with ctx.block("if (brk != NO_LABEL)"):
            if outer is not None and outer.label in escaping:
                resume = "continue;" if outer.kind == "loop" else "break;"
                with ctx.block(f"if (brk == {outer.label}u)"):
                    ctx.emit("brk = NO_LABEL;")
                    ctx.emit(resume)
            if outer is not None and escaping - {outer.label}:
                ctx.emit("break;")

    def branch(self, label: int, crossed: int) -> None:
        target = self._find(label)
        if crossed == 0:
            self.ctx.emit("continue;" if target.kind == "loop" else "break;")
        else:
            self.ctx.emit(f"brk = {label}u;")
            self.ctx.emit("break;")

    def _find(self, label: int) -> _Scope:
        scope = self.scope
        while scope is not None and scope.label != label:
            scope = scope.parent
        if scope is None:
            raise unsupported("BRA", None, f"a structured branch to label {label} outside its construct")
        return scope


def _escaping_labels(body, own: int) -> set[int]:
    """Labels targeted by Br/BrIf in ``body`` that no construct inside it (nor ``own``) defines."""
    defined = {own}
    targets = set()
    for stmt in walk(body):
        if isinstance(stmt, (Block, Loop)):
            defined.add(stmt.label)
        elif isinstance(stmt, (Br, BrIf)) and stmt.crossed > 0:
            targets.add(stmt.label)
    return targets - defined


def _code(r: _Renderer, stmt: Code) -> None:
    ctx = r.ctx
    for index in range(stmt.start, stmt.end):
        ctx.at(index)
        instr = ctx.instr
        rule = LANE_RULES.get(instr.INFO.name)
        if rule is None:
            raise unsupported(instr.INFO.name, instr.type)
        ctx.emit(f"// {index}: {str(instr)}")
        rule(ctx, instr)


def _block(r: _Renderer, stmt: Block) -> None:
    r.construct("block", stmt.label, stmt.body)


def _loop(r: _Renderer, stmt: Loop) -> None:
    r.construct("loop", stmt.label, stmt.body)


def _if(r: _Renderer, stmt: If) -> None:
    ctx = r.ctx
    condition = r.test(stmt.test)
    r.scope = _Scope("if", None, r.scope)
    with ctx.block(f"if {condition}"):
        r.statements(stmt.then)
    if stmt.orelse:
        with ctx.block("else"):
            r.statements(stmt.orelse)
    r.scope = r.scope.parent


def _br(r: _Renderer, stmt: Br) -> None:
    r.branch(stmt.label, stmt.crossed)


def _br_if(r: _Renderer, stmt: BrIf) -> None:
    condition = r.test(stmt.test)
    with r.ctx.block(f"if {condition}"):
        r.branch(stmt.label, stmt.crossed)


def _count_jump(r: _Renderer, stmt: CountJump) -> None:
    ctx = r.ctx
    ctx.emit("jumps = jumps + 1u;")
    ctx.at(stmt.index)
    ctx.trap(TrapCode.BUDGET_EXCEEDED, "jumps > launch.budget")
    if ctx.features.loop_limit:
        ctx.emit("dispatch_jumps = dispatch_jumps + 1u;")
        ctx.trap(ENGINE_LIMIT_TRAP, f"dispatch_jumps > {ctx.features.loop_limit}u")
    ctx.emit("if (!alive) { return LANE_TRAPPED; }")


def _end_lane(r: _Renderer, stmt: EndLane) -> None:
    r.ctx.emit("return LANE_ENDED;")


def _suspend(r: _Renderer, stmt: Suspend) -> None:
    r.ctx.emit(f"return {stmt.resume}u;")


def _dispatch(r: _Renderer, stmt: Dispatch) -> None:
    ctx = r.ctx
    case = f"case{stmt.label}"
    ctx.emit(f"var {case}: u32 = {stmt.entry}u;")
    with ctx.block("loop"):
        r.scope = _Scope("dispatch", stmt.label, r.scope)
        with ctx.block(f"switch {case}"):
            for k, body in enumerate(stmt.cases):
                with ctx.block(f"case {k}u:"):
                    r.statements(body)
            ctx.emit("default: {}")
        r.scope = r.scope.parent


def _goto(r: _Renderer, stmt: Goto) -> None:
    r.ctx.emit(f"case{stmt.label} = {stmt.case}u;")


#: statement class -> renderer
STATEMENT_RULES = {
    Code: _code, Block: _block, Loop: _loop, If: _if, Br: _br, BrIf: _br_if, CountJump: _count_jump,
    EndLane: _end_lane, Suspend: _suspend, Dispatch: _dispatch, Goto: _goto,
}


def render_segment(ctx: LaneContext, segment) -> str:
    """The WGSL function of ``segment`` (a lowering Segment); its helpers go to ``ctx.helpers``."""
    ctx.lines = []
    ctx.level = 1
    renderer = _Renderer(ctx)
    uses_brk = any(isinstance(s, (Br, BrIf)) and s.crossed > 0 for s in walk(segment.body))
    if uses_brk:
        ctx.emit("var brk: u32 = NO_LABEL;")
    renderer.statements(segment.body)
    ctx.emit(f"return 0x{LANE_ENDED:08x}u;")
    body = ctx.text()
    return f"fn segment_{segment.resume.id}() -> u32 {{\n{body}\n}}"
