"""Hand-written programs run through their LoweringPlan (both forms) and on the reference executor:
same buffers, same trap, same backward-jump count in every lane."""

from __future__ import annotations

import pytest

from atlas_web.errors import TrapCode
from atlas_web.isa import (
    AND, BRA, CALL, CVT, EXIT, LOOP, RET, Address, BarSync, BinaryMapOperation, Condition, LDG, MapOperation,
    ParallelMap, ParallelMapBinary, SETcc, Type,
)
from atlas_web.launch import LaunchConfig
from atlas_web.lowering import plan_program

from .harness import assert_same_launch, run_lowered
from .programs import (
    GID, LANE_X, P, R, U32, U64, I32, add, imm, info_of, lane_slot_pointer, out_presets, program, store,
)

GRID = LaunchConfig(grid=(2, 1, 1), block=(4, 1, 1))


def out_buffer(lanes: int = 8) -> bytes:
    return bytes(16 * lanes)


def setcc(pred: int, lhs: int, rhs: int, cond: Condition, ty: Type = U32):
    return SETcc(pred=P(pred), lhs=R(lhs), rhs=R(rhs), cond=cond, ty=ty)


def cvt_u64(dst: int, src: int):
    return CVT(dst=R(dst), src=R(src), src_ty=U32, dst_ty=U64)


def check(prog, config=GRID, buffers=None, presets=None, budget=1 << 24):
    return assert_same_launch(prog, config, buffers if buffers is not None else [out_buffer(config.total_threads)],
                              presets=out_presets() if presets is None else presets, budget=budget)


def test_nested_loops_with_lane_varying_trip_counts():
    outcome = check(program(
        lane_slot_pointer(), imm(1, 0), imm(2, 3), imm(5, 1),
        "outer", add(3, GID, 5),                 # inner count: gid + 1
        "inner", add(1, 1, 5), LOOP(count=R(3), body="inner"),
        imm(4, 100), add(1, 1, 4), LOOP(count=R(2), body="outer"),
        store(1, 0), store(2, 1)))
    assert outcome.jumps[5] == 2 + 3 * 5 and outcome.trap is None


def test_early_exits_ret_in_main_and_running_past_the_end():
    check(program(
        lane_slot_pointer(), imm(1, 0), imm(5, 1), imm(6, 2), AND(dst=R(7), lhs=R(GID), rhs=R(6), ty=U32),
        "loop", add(1, 1, 5), setcc(0, 1, GID, Condition.GT),
        BRA(target="done", pred=P(0)),
        setcc(1, 1, 6, Condition.GE), BRA(target="leave", pred=P(1)), BRA(target="loop"),
        "leave", store(1, 1), setcc(2, 7, 6, Condition.EQ), BRA(target="ret", pred=P(2)), EXIT(),
        "ret", store(GID, 2), RET(),
        "done", store(1, 0)))


def test_calls_in_loops_shared_and_nested_subroutines_and_a_backward_call():
    outcome = check(program(
        BRA(target="main"),
        "twice", add(1, 1, 1), RET(),                                 # called before its call sites: backward
        "inc", imm(9, 2), "inc_loop", add(1, 1, 5), LOOP(count=R(9), body="inc_loop"), CALL(target="twice"), RET(),
        "main", lane_slot_pointer(), imm(1, 1), imm(5, 1), imm(2, 3), add(3, GID, 5),
        "loop", CALL(target="inc"), setcc(0, 1, 3, Condition.GT), BRA(target="skip", pred=P(0)),
        CALL(target="twice"), "skip", LOOP(count=R(2), body="loop"),
        store(1, 0)))
    assert all(j > 0 for j in outcome.jumps)
    plan = plan_program(info_of(program(
        BRA(target="main"), "s", RET(), "main", CALL(target="s"), CALL(target="s"))))
    contexts = {n.context for n in plan.graph.nodes if n.start == 1}
    assert contexts == {(2,), (3,)}


def test_barriers_in_a_uniform_loop_with_early_exits_and_in_a_subroutine():
    outcome = check(program(
        lane_slot_pointer(), imm(1, 0), imm(5, 1), imm(2, 3), imm(6, 6),
        setcc(3, GID, 6, Condition.GE), BRA(target="gone", pred=P(3)),   # lanes 6, 7 end before any barrier
        "loop", BarSync(id=0), add(1, 1, GID), CALL(target="sync"), add(1, 1, 5),
        LOOP(count=R(2), body="loop"),
        store(1, 0), EXIT(),
        "sync", add(1, 1, 1), BarSync(id=1), add(1, 1, LANE_X), RET(),
        "gone", store(5, 3)))
    assert outcome.jumps[:6] == [2] * 6 and outcome.jumps[6:] == [0, 0]
    plan = plan_program(info_of(program(
        imm(2, 2), "loop", BarSync(id=0), add(1, 1, GID), LOOP(count=R(2), body="loop"))))
    assert [rp.kind.value for rp in plan.resume_points] == ["entry", "barrier"]


def test_cooperative_steps_in_a_uniform_loop_and_live_registers_across_them():
    counts = Address.BufferOffset(handle=3, offset=0)
    ones = Address.BufferOffset(handle=4, offset=0)
    buffers = [out_buffer(), bytes(16), (1).to_bytes(4, "little") * 4]
    outcome = check(program(
        lane_slot_pointer(), imm(1, 7), imm(2, 3), add(3, GID, GID),
        "loop", add(1, 1, 3),
        ParallelMapBinary(dst_array=counts, src_a=counts, src_b=ones, count=4, operation=BinaryMapOperation.Add,
                          ty=I32),
        add(1, 1, GID),
        ParallelMap(dst_array=counts, src_array=counts, count=2, operation=MapOperation.Neg, ty=I32),
        LOOP(count=R(2), body="loop"),
        store(1, 0), store(3, 1)), buffers=buffers)
    assert outcome.buffers[3][:16] != bytes(16)


def test_irreducible_control_flow_takes_the_dispatch_form_and_matches():
    prog = program(
        lane_slot_pointer(), imm(1, 0), imm(5, 1), imm(6, 7), imm(8, 2),
        AND(dst=R(2), lhs=R(GID), rhs=R(5), ty=U32), setcc(0, 2, 5, Condition.EQ),
        BRA(target="b", pred=P(0)),
        "a", add(1, 1, 5), setcc(1, 1, 6, Condition.GE), BRA(target="exit", pred=P(1)),
        "b", add(1, 1, 8), setcc(1, 1, 6, Condition.LT), BRA(target="a", pred=P(1)),
        "exit", store(1, 0))
    check(prog)
    plan = plan_program(info_of(prog))
    assert plan.segments[0].form == "dispatch" and not plan.segments[0].reducible


def test_budget_trap_reports_the_lowest_lane_and_every_lane_runs_to_the_stage_end():
    outcome = check(program(
        lane_slot_pointer(), imm(5, 1), imm(6, 2),
        setcc(0, GID, 6, Condition.LT), BRA(target="fine", pred=P(0)),
        "spin", add(1, 1, 5), BRA(target="spin"),
        "fine", store(GID, 0)), budget=10)
    assert outcome.trap == (TrapCode.BUDGET_EXCEEDED, 9, 2)
    assert outcome.jumps == [0, 0] + [11] * 6


def test_a_lower_lane_trapping_in_a_later_segment_wins():
    outcome = check(program(
        lane_slot_pointer(), imm(5, 3),
        setcc(0, GID, 5, Condition.EQ), BRA(target="skip1", pred=P(0), negate=True),
        LDG(dst=R(1), src=Address.RegisterIndirect(R(21), 1 << 20), ty=U32),       # lane 3: out of bounds
        "skip1", BarSync(id=0), imm(5, 1),
        setcc(0, GID, 5, Condition.EQ), BRA(target="skip2", pred=P(0), negate=True),
        LDG(dst=R(1), src=Address.RegisterIndirect(R(21), 2), ty=U32),             # lane 1: misaligned
        "skip2", store(GID, 0)))
    assert outcome.trap == (TrapCode.MISALIGNED, 12, 1)


def test_an_ended_lane_zero_still_supplies_the_registers_a_cooperative_step_reads():
    # lane 0 moves its copy of the pointer on by 4 bytes and exits; the step reads lane 0's registers
    counts = Address.RegisterIndirect(R(23), 0)
    buffers = [out_buffer(), bytes(16), (5).to_bytes(4, "little") * 4]
    outcome = check(program(
        lane_slot_pointer(), imm(5, 0), imm(6, 4), cvt_u64(7, 6),
        setcc(0, GID, 5, Condition.EQ), BRA(target="lane0", pred=P(0)),
        ParallelMapBinary(dst_array=counts, src_a=counts, src_b=Address.BufferOffset(handle=4, offset=0), count=2,
                          operation=BinaryMapOperation.Add, ty=U32),
        store(GID, 0), EXIT(),
        "lane0", add(23, 23, 7, U64), store(GID, 1)),
        buffers=buffers, presets=out_presets(2))
    assert outcome.buffers[3] == bytes(4) + (5).to_bytes(4, "little") * 2 + bytes(4)


def test_a_trap_in_a_cooperative_step_has_lane_minus_one():
    outcome = check(program(
        lane_slot_pointer(), imm(1, 9), store(1, 0),
        ParallelMap(dst_array=Address.RegisterIndirect(R(23), 8), src_array=Address.RegisterIndirect(R(23), 0),
                    count=4, operation=MapOperation.Abs, ty=I32),
        store(1, 1)),
        buffers=[out_buffer(), bytes(16)], presets=out_presets(2))
    assert outcome.trap[0] is TrapCode.OUT_OF_BOUNDS and outcome.trap[2] == -1


@pytest.mark.parametrize("form", ["structured", "dispatch"])
def test_a_barrier_as_the_last_instruction_resumes_into_the_end(form):
    prog = program(lane_slot_pointer(), imm(1, 5), store(1, 0), BarSync(id=0))
    got = run_lowered(prog, GRID, [out_buffer()], presets=out_presets(), form=form)
    assert got.trap is None and got.buffers[2][:4] == (5).to_bytes(4, "little")



def test_calls_at_and_to_the_end_of_the_program():
    check(program(BRA(target="main"), "s", lane_slot_pointer(), imm(1, 4), store(1, 0), RET(),
                  "main", CALL(target="s")))
    check(program(lane_slot_pointer(), imm(1, 4), store(1, 0), CALL(target="end"), store(1, 1), "end"))
