"""Control flow, barriers, stages and budgets on WebGpuBackend, against the reference executor:
hand-written programs for each construct, then random control flow (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings

from atlas_web.errors import TrapCode
from atlas_web.isa import (
    AND, BRA, CALL, CVT, EXIT, LDG, LDS, LOOP, RET, STS, Address, BarSync, BinaryMapOperation, Condition,
    MapOperation, MemFence, MemoryScope, ParallelMap, ParallelMapBinary, SETcc, Type,
)
from atlas_web.launch import LaunchConfig
from tests.lowering.programs import (
    GID, I32, LANE_X, U32, U64, P, R, add, imm, lane_slot_pointer, out_presets, program, store,
)
from tests.lowering.strategies import RandomLaunch, control_flow_launches

from .harness import assert_matches_reference

GRID = LaunchConfig(grid=(2, 1, 1), block=(4, 1, 1))


def out_buffer(lanes: int = 8) -> bytes:
    return bytes(16 * lanes)


def setcc(pred: int, lhs: int, rhs: int, cond: Condition, ty: Type = U32):
    return SETcc(pred=P(pred), lhs=R(lhs), rhs=R(rhs), cond=cond, ty=ty)


def check(driver, prog, config=GRID, buffers=None, presets=None, budget=None):
    return assert_matches_reference(driver, prog, config,
                                    buffers if buffers is not None else [out_buffer(config.total_threads)],
                                    presets=out_presets() if presets is None else presets, budget=budget)


def test_nested_loops_with_lane_varying_trip_counts(gpu_driver):
    got = check(gpu_driver, program(
        lane_slot_pointer(), imm(1, 0), imm(2, 3), imm(5, 1),
        "outer", add(3, GID, 5),
        "inner", add(1, 1, 5), LOOP(count=R(3), body="inner"),
        imm(4, 100), add(1, 1, 4), LOOP(count=R(2), body="outer"),
        store(1, 0), store(2, 1)))
    assert got.trap is None and got.buffers[0][5 * 16:5 * 16 + 4] == (3 * 6 + 300).to_bytes(4, "little")


def test_early_exits_returns_calls_and_running_past_the_end(gpu_driver):
    check(gpu_driver, program(
        lane_slot_pointer(), imm(1, 0), imm(5, 1), imm(6, 2), AND(dst=R(7), lhs=R(GID), rhs=R(6), ty=U32),
        "loop", add(1, 1, 5), setcc(0, 1, GID, Condition.GT),
        BRA(target="done", pred=P(0)),
        setcc(1, 1, 6, Condition.GE), BRA(target="leave", pred=P(1)), BRA(target="loop"),
        "leave", store(1, 1), setcc(2, 7, 6, Condition.EQ), BRA(target="ret", pred=P(2)), EXIT(),
        "ret", store(GID, 2), RET(),
        "done", store(1, 0)))
    check(gpu_driver, program(
        BRA(target="main"),
        "twice", add(1, 1, 1), RET(),
        "inc", imm(9, 2), "inc_loop", add(1, 1, 5), LOOP(count=R(9), body="inc_loop"), CALL(target="twice"), RET(),
        "main", lane_slot_pointer(), imm(1, 1), imm(5, 1), imm(2, 3), add(3, GID, 5),
        "loop", CALL(target="inc"), setcc(0, 1, 3, Condition.GT), BRA(target="skip", pred=P(0)),
        CALL(target="twice"), "skip", LOOP(count=R(2), body="loop"),
        store(1, 0)))


def test_irreducible_control_flow_runs_in_the_dispatch_form(gpu_driver):
    check(gpu_driver, program(
        lane_slot_pointer(), imm(1, 0), imm(5, 1), imm(6, 7), imm(8, 2),
        AND(dst=R(2), lhs=R(GID), rhs=R(5), ty=U32), setcc(0, 2, 5, Condition.EQ),
        BRA(target="b", pred=P(0)),
        "a", add(1, 1, 5), setcc(1, 1, 6, Condition.GE), BRA(target="exit", pred=P(1)),
        "b", add(1, 1, 8), setcc(1, 1, 6, Condition.LT), BRA(target="a", pred=P(1)),
        "exit", store(1, 0)))


def test_barriers_hold_lanes_and_shared_memory_is_shared_within_a_block(gpu_driver):
    # each lane writes its id to shared memory, waits, then reads its neighbour's (in a loop with barriers)
    config = LaunchConfig(grid=(3, 1, 1), block=(4, 1, 1), shared_memory=16)
    four = 30
    got = check(gpu_driver, program(
        lane_slot_pointer(), imm(1, 0), imm(2, 2), imm(5, 1), imm(four, 4), imm(6, 3),
        AND(dst=R(7), lhs=R(LANE_X), rhs=R(6), ty=U32),
        "loop", add(8, GID, 1), CVT(dst=R(9), src=R(7), src_ty=U32, dst_ty=U32),
        MUL4(10, 7, four), STS(dst=Address.RegisterIndirect(R(10), 0), src=R(8), ty=U32),
        BarSync(id=0), add(11, 7, 5), AND(dst=R(11), lhs=R(11), rhs=R(6), ty=U32), MUL4(12, 11, four),
        LDS(dst=R(13), src=Address.RegisterIndirect(R(12), 0), ty=U32), add(1, 1, 13), BarSync(id=1),
        MemFence(scope=MemoryScope.Block), LOOP(count=R(2), body="loop"),
        store(1, 0)), config=config)
    assert got.trap is None


def MUL4(dst: int, src: int, four: int):
    from atlas_web.isa import MUL
    return MUL(dst=R(dst), lhs=R(src), rhs=R(four), ty=U32)


def test_cooperative_steps_in_a_uniform_loop_keep_live_registers(gpu_driver):
    counts = Address.BufferOffset(handle=3, offset=0)
    ones = Address.BufferOffset(handle=4, offset=0)
    buffers = [out_buffer(), bytes(16), (1).to_bytes(4, "little") * 4]
    check(gpu_driver, program(
        lane_slot_pointer(), imm(1, 7), imm(2, 3), add(3, GID, GID),
        "loop", add(1, 1, 3),
        ParallelMapBinary(dst_array=counts, src_a=counts, src_b=ones, count=4, operation=BinaryMapOperation.Add,
                          ty=I32),
        add(1, 1, GID),
        ParallelMap(dst_array=counts, src_array=counts, count=2, operation=MapOperation.Neg, ty=I32),
        LOOP(count=R(2), body="loop"),
        store(1, 0), store(3, 1)), buffers=buffers)


def test_an_ended_lane_zero_still_supplies_registers_to_a_cooperative_step(gpu_driver):
    counts = Address.RegisterIndirect(R(23), 0)
    buffers = [out_buffer(), bytes(16), (5).to_bytes(4, "little") * 4]
    got = check(gpu_driver, program(
        lane_slot_pointer(), imm(5, 0), imm(6, 4), CVT(dst=R(7), src=R(6), src_ty=U32, dst_ty=U64),
        setcc(0, GID, 5, Condition.EQ), BRA(target="lane0", pred=P(0)),
        ParallelMapBinary(dst_array=counts, src_a=counts, src_b=Address.BufferOffset(handle=4, offset=0), count=2,
                          operation=BinaryMapOperation.Add, ty=U32),
        store(GID, 0), EXIT(),
        "lane0", add(23, 23, 7, U64), store(GID, 1)),
        buffers=buffers, presets=out_presets(2))
    assert got.buffers[1] == bytes(4) + (5).to_bytes(4, "little") * 2 + bytes(4)


def test_budget_trap_reports_the_lowest_lane_and_the_backend_stays_usable(gpu_driver):
    spin = program(
        lane_slot_pointer(), imm(5, 1), imm(6, 2),
        setcc(0, GID, 6, Condition.LT), BRA(target="fine", pred=P(0)),
        "spin", add(1, 1, 5), BRA(target="spin"),
        "fine", store(GID, 0))
    got = check(gpu_driver, spin, budget=10)
    assert got.trap == (TrapCode.BUDGET_EXCEEDED, 9, 2)
    got = check(gpu_driver, program(lane_slot_pointer(), store(GID, 0)))
    assert got.trap is None


def test_a_lower_lane_trapping_in_a_later_segment_wins(gpu_driver):
    got = check(gpu_driver, program(
        lane_slot_pointer(), imm(5, 3),
        setcc(0, GID, 5, Condition.EQ), BRA(target="skip1", pred=P(0), negate=True),
        LDG(dst=R(1), src=Address.RegisterIndirect(R(21), 1 << 20), ty=U32),
        "skip1", BarSync(id=0), imm(5, 1),
        setcc(0, GID, 5, Condition.EQ), BRA(target="skip2", pred=P(0), negate=True),
        LDG(dst=R(1), src=Address.RegisterIndirect(R(21), 2), ty=U32),
        "skip2", store(GID, 0)))
    assert got.trap == (TrapCode.MISALIGNED, 12, 1)


def test_a_trap_in_a_cooperative_step_has_lane_minus_one(gpu_driver):
    got = check(gpu_driver, program(
        lane_slot_pointer(), imm(1, 9), store(1, 0),
        ParallelMap(dst_array=Address.RegisterIndirect(R(23), 8), src_array=Address.RegisterIndirect(R(23), 0),
                    count=4, operation=MapOperation.Abs, ty=I32),
        store(1, 1)),
        buffers=[out_buffer(), bytes(16)], presets=out_presets(2))
    assert got.trap[0] == TrapCode.OUT_OF_BOUNDS and got.trap[2] == -1


@settings(max_examples=25)
@given(control_flow_launches())
def test_random_control_flow_matches_the_reference(gpu_driver, launch: RandomLaunch):
    assert_matches_reference(gpu_driver, launch.program, launch.config, launch.buffers, presets=launch.presets,
                             budget=launch.budget)
