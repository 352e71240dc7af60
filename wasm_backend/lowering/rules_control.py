"""Control flow and synchronization in the wasm backend.

The lowering plan's lane graph already lowered most of control flow: CALL and RET are inlined (the
lane graph copies each subroutine per call site), EXIT and the end of the program are EndLane
statements, BarSync and the cooperative instructions are Suspend statements, and BRA/LOOP edges are
structured Br/BrIf/If statements (``segment_function``). What remains per instruction is here:

* the branch tests of BRA with a predicate and of LOOP (evaluated once by the statement that uses
  them; LOOP decrements its count register there);
* MemFence, which changes no result (lanes see each other's writes only across barriers and stages).
"""

from __future__ import annotations

from ..encoding.types import ValType
from .lane_context import LaneContext
from .rules import branch_test, lane_rule, structural

__all__: list[str] = []

structural("BRA", "Br/BrIf/If statements of the lane graph (a predicate through its branch test)")
structural("LOOP", "a BrIf/If statement of the lane graph on its branch test")
structural("CALL", "the lane graph inlines the subroutine at each call site")
structural("RET", "the lane graph returns to the inlined call site, or ends the lane")
structural("EXIT", "an EndLane statement")
structural("BarSync", "a Suspend statement: the lane stops until its block arrives")


@branch_test("BRA")
def test_bra(ctx: LaneContext, instr) -> None:
    """The predicate (negated for ``bra.!p``): true when the branch is taken."""
    ctx.read_predicate("pred")
    if instr.negate:
        ctx.e.op("i32.eqz")


@branch_test("LOOP")
def test_loop(ctx: LaneContext, instr) -> None:
    """count := count - (count != 0); true when the new count is non-zero (the loop jumps)."""
    e = ctx.e
    count = ctx.temp(ValType.I32)
    ctx.read("count")
    e.tee(count).get(count).op("i32.eqz").op("i32.eqz").op("i32.sub").tee(count)
    ctx.write("count")
    e.get(count)


@lane_rule("MemFence")
def lower_mem_fence(ctx: LaneContext, instr) -> None:
    """Lanes see each other's writes only across barriers and stages: nothing to order here."""
