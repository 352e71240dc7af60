"""Lane rules of control flow and synchronization: BRA, LOOP, CALL, RET, EXIT, MemFence.

They act through the lane function (``LaneFunction.jump``, ``count_backward``, ``call_push``,
``call_return``, ``end_lane``). A taken BRA, LOOP or CALL whose target is at or before its own index
counts one backward jump against the lane's budget (trap BUDGET_EXCEEDED past it). BarSync and the
cooperative instructions are stops, written by the lane function itself; BarSync's entry here only
declares that the backend compiles it.
"""

from __future__ import annotations

from ..encoding.types import ValType
from .lane_function import LaneFunction
from .rules import lane_rule

__all__: list[str] = []


def _backward(ctx: LaneFunction, target: int) -> None:
    if target <= ctx.index:
        ctx.count_backward()


@lane_rule("BRA")
def lower_bra(ctx: LaneFunction, instr) -> None:
    target = ctx.plan.targets[ctx.index]
    if instr.pred is None:
        _backward(ctx, target)
        ctx.jump(target)
        return
    ctx.read_predicate("pred")
    if instr.negate:
        ctx.e.op("i32.eqz")
    with ctx.e.if_():
        _backward(ctx, target)
        ctx.jump(target)


@lane_rule("LOOP")
def lower_loop(ctx: LaneFunction, instr) -> None:
    """count := count - (count != 0); jump to body while the new count is non-zero."""
    e = ctx.e
    count = ctx.temp(ValType.I32)
    ctx.read("count")
    e.tee(count).get(count).op("i32.eqz").op("i32.eqz").op("i32.sub").tee(count)
    ctx.write("count")
    e.get(count)
    with e.if_():
        _backward(ctx, ctx.plan.targets[ctx.index])
        ctx.jump(ctx.plan.targets[ctx.index])


@lane_rule("CALL")
def lower_call(ctx: LaneFunction, instr) -> None:
    target = ctx.plan.targets[ctx.index]
    ctx.call_push(ctx.index + 1)
    _backward(ctx, target)
    ctx.jump(target)


@lane_rule("RET")
def lower_ret(ctx: LaneFunction, instr) -> None:
    ctx.call_return()


@lane_rule("EXIT")
def lower_exit(ctx: LaneFunction, instr) -> None:
    ctx.end_lane()


@lane_rule("MemFence")
def lower_mem_fence(ctx: LaneFunction, instr) -> None:
    """Lanes see each other's writes only across barriers and stages: nothing to order here."""


@lane_rule("BarSync")
def lower_bar_sync(ctx: LaneFunction, instr) -> None:
    """Written by the lane function as a stop (see ``LaneFunction._instruction``)."""
