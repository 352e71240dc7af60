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

Every rule returns the WGSL *behaviors* of what it emitted (the specification's behavior
analysis: NEXT, BREAK, CONTINUE, RETURN), so nothing is emitted where WGSL deems it unreachable
(browsers print a warning for such code): statements after one without NEXT are dead and left
out, and a Loop's closing ``break`` or the segment's final return only follow a body that can
complete. A Loop that never breaks gets ``if (launch.zero != 0u) { break; }`` first (never
taken), since naga insists on a return after a loop that ends a function.
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.lowering.structure import (
    Block, Br, BranchTest, BrIf, Code, CountJump, Dispatch, EndLane, Goto, If, Loop, Suspend, walk,
)

from .emitter import ENGINE_LIMIT_TRAP
from .lane_context import LaneContext
from .rules import WGSL_LANE_RULES, unsupported
from .runtime_layout import LANE_ENDED

__all__ = ["render_segment", "STATEMENT_RULES", "NO_LABEL"]

NO_LABEL = 0xFFFFFFFF
#: WGSL statement behaviors
NEXT, BREAK, CONTINUE, RETURN = "next", "break", "continue", "return"
_FALLS = frozenset({NEXT})


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
    def statements(self, body) -> frozenset:
        """Render ``body`` in order; returns its behaviors. Statements after one that cannot
        complete are unreachable and left out."""
        behaviors = _FALLS
        for stmt in body:
            if NEXT not in behaviors:
                break
            behaviors = (behaviors - _FALLS) | STATEMENT_RULES[type(stmt)](self, stmt)
        return behaviors

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
            jumps = ctx.predicate(test.index)
            if instr.negate:
                jumps = f"!{jumps}"
        return f"!({jumps})" if test.negated else f"({jumps})"

    def construct(self, kind: str, label: int, body) -> frozenset:
        ctx = self.ctx
        escaping = _escaping_labels(body, label)
        if kind == "block":
            with ctx.block("switch 0u"):
                with ctx.block("default:"):
                    self.scope = _Scope(kind, label, self.scope)
                    inner = self.statements(body)
                    self.scope = self.scope.parent
            # a switch completes where its body does or breaks
            behaviors = (inner - {BREAK}) | _FALLS if BREAK in inner else inner
        else:
            with ctx.block("loop"):
                first = len(ctx.lines)
                self.scope = _Scope(kind, label, self.scope)
                inner = self.statements(body)
                self.scope = self.scope.parent
                if NEXT in inner:
                    ctx.emit("break;")
                    inner = (inner - _FALLS) | {BREAK}
                if BREAK not in inner:
                    # a loop left only by returning: naga wants a return after it at the end of a
                    # function, Tint calls that return unreachable; a break that never runs (zero is
                    # 0) makes the loop complete for both
                    ctx.lines.insert(first, "    " * ctx.level + "if (launch.zero != 0u) { break; }")
                    inner = inner | {BREAK}
            # a loop completes where it breaks
            behaviors = (inner - {BREAK, CONTINUE}) | _FALLS if BREAK in inner else inner - {NEXT, CONTINUE}
        if escaping and NEXT in behaviors:
            behaviors = (behaviors - _FALLS) | self.after_escape(escaping)
        return frozenset(behaviors)

    def after_escape(self, escaping: set[int]) -> frozenset:
        """The check after a construct some Br left by setting ``brk``; returns its behaviors."""
        ctx = self.ctx
        outer = self.scope.innermost_loop() if self.scope is not None else None
        behaviors = {NEXT}
        with ctx.block("if (brk != NO_LABEL)"):
            if outer is not None and outer.label in escaping:
                resume = "continue;" if outer.kind == "loop" else "break;"
                with ctx.block(f"if (brk == {outer.label}u)"):
                    ctx.emit("brk = NO_LABEL;")
                    ctx.emit(resume)
                behaviors.add(CONTINUE if outer.kind == "loop" else BREAK)
            if outer is not None and escaping - {outer.label}:
                ctx.emit("break;")
                behaviors.add(BREAK)
        return frozenset(behaviors)

    def branch(self, label: int, crossed: int) -> frozenset:
        target = self._find(label)
        if crossed == 0 and target.kind == "loop":
            self.ctx.emit("continue;")
            return frozenset({CONTINUE})
        if crossed != 0:
            self.ctx.emit(f"brk = {label}u;")
        self.ctx.emit("break;")
        return frozenset({BREAK})

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


def _code(r: _Renderer, stmt: Code) -> frozenset:
    ctx = r.ctx
    for index in range(stmt.start, stmt.end):
        ctx.at(index)
        instr = ctx.instr
        rule = WGSL_LANE_RULES.get(instr.INFO.name)
        if rule is None:
            raise unsupported(instr.INFO.name, instr.type)
        ctx.emit(f"// {index}: {str(instr)}")
        rule(ctx, instr)
        ctx.written(index)
    return frozenset({NEXT, RETURN})


def _block(r: _Renderer, stmt: Block) -> frozenset:
    return r.construct("block", stmt.label, stmt.body)


def _loop(r: _Renderer, stmt: Loop) -> frozenset:
    return r.construct("loop", stmt.label, stmt.body)


def _if(r: _Renderer, stmt: If) -> frozenset:
    ctx = r.ctx
    condition = r.test(stmt.test)
    r.scope = _Scope("if", None, r.scope)
    with ctx.block(f"if {condition}"):
        behaviors = r.statements(stmt.then)
    if stmt.orelse:
        with ctx.block("else"):
            behaviors = behaviors | r.statements(stmt.orelse)
    else:
        behaviors = behaviors | _FALLS
    r.scope = r.scope.parent
    return behaviors


def _br(r: _Renderer, stmt: Br) -> frozenset:
    return r.branch(stmt.label, stmt.crossed)


def _br_if(r: _Renderer, stmt: BrIf) -> frozenset:
    condition = r.test(stmt.test)
    with r.ctx.block(f"if {condition}"):
        behaviors = r.branch(stmt.label, stmt.crossed)
    return behaviors | _FALLS


def _count_jump(r: _Renderer, stmt: CountJump) -> frozenset:
    ctx = r.ctx
    ctx.emit("jumps = jumps + 1u;")
    ctx.at(stmt.index)
    ctx.trap(TrapCode.BUDGET_EXCEEDED, "jumps > launch.budget")
    if ctx.features.loop_limit:
        ctx.emit("dispatch_jumps = dispatch_jumps + 1u;")
        ctx.trap(ENGINE_LIMIT_TRAP, f"dispatch_jumps > {ctx.features.loop_limit}u")
    ctx.emit("if (!alive) { return LANE_TRAPPED; }")
    return frozenset({NEXT, RETURN})


def _end_lane(r: _Renderer, stmt: EndLane) -> frozenset:
    r.ctx.emit("return LANE_ENDED;")
    return frozenset({RETURN})


def _suspend(r: _Renderer, stmt: Suspend) -> frozenset:
    r.ctx.emit(f"return {stmt.resume}u;")
    return frozenset({RETURN})


def _dispatch(r: _Renderer, stmt: Dispatch) -> frozenset:
    ctx = r.ctx
    case = f"case{stmt.label}"
    ctx.emit(f"var {case}: u32 = {stmt.entry}u;")
    cases = frozenset(_FALLS)                      # the empty default case
    with ctx.block("loop"):
        ctx.emit("if (launch.zero != 0u) { break; }")     # never taken (see the module docstring)
        r.scope = _Scope("dispatch", stmt.label, r.scope)
        with ctx.block(f"switch {case}"):
            for k, body in enumerate(stmt.cases):
                with ctx.block(f"case {k}u:"):
                    cases = cases | r.statements(body)
            ctx.emit("default: {}")
        r.scope = r.scope.parent
    # the switch breaks to the end of the loop body, which repeats: the loop only ends by returning
    # (or, for WGSL's analysis, by the break that never runs)
    return frozenset(cases - {BREAK, CONTINUE}) | _FALLS


def _goto(r: _Renderer, stmt: Goto) -> frozenset:
    r.ctx.emit(f"case{stmt.label} = {stmt.case}u;")
    return _FALLS


#: statement class -> renderer
STATEMENT_RULES = {
    Code: _code, Block: _block, Loop: _loop, If: _if, Br: _br, BrIf: _br_if, CountJump: _count_jump,
    EndLane: _end_lane, Suspend: _suspend, Dispatch: _dispatch, Goto: _goto,
}


def render_segment(ctx: LaneContext, segment) -> str:
    """The WGSL function of ``segment`` (a lowering Segment); its helpers go to ``ctx.helpers``."""
    ctx.lines = []
    ctx.level = 1
    ctx.forget()
    renderer = _Renderer(ctx)
    uses_brk = any(isinstance(s, (Br, BrIf)) and s.crossed > 0 for s in walk(segment.body))
    if uses_brk:
        ctx.emit("var brk: u32 = NO_LABEL;")
    if NEXT in renderer.statements(segment.body):
        ctx.emit(f"return 0x{LANE_ENDED:08x}u;")
    body = ctx.text()
    return f"fn segment_{segment.resume.id}() -> u32 {{\n{body}\n}}"
