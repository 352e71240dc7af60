"""Virtual registers and liveness: what crosses each boundary, with which type."""

from __future__ import annotations

from atlas_web.isa import (
    BRA, CVT, LOOP, MOV_IMM, Address, BarSync, BinaryMapOperation, Condition, ParallelMapBinary, ParallelReduce,
    ReduceOperation, SETcc, Type,
)
from atlas_web.lowering import plan_program, storage_type
from atlas_web.lowering.liveness import bits_of

from .programs import GID, I32, F32, P, R, U32, U64, add, imm, info_of, program


def plan_of(*items, presets=None):
    return plan_program(info_of(program(*items), presets or {}))


def names(vregs) -> list[str]:
    return [str(v) for v in vregs]


def test_storage_types_drop_integer_signedness_only():
    assert storage_type(Type.I32) is Type.U32 and storage_type(Type.I8) is Type.U8
    assert storage_type(Type.I4096) is Type.U4096 and storage_type(Type.U64) is Type.U64
    assert storage_type(Type.F16) is Type.F16 and storage_type(Type.BF16) is Type.BF16


def test_one_virtual_register_per_register_and_storage_type():
    plan = plan_of(
        imm(1, 1, I32), add(2, 1, 1, U32),                      # r1 written as i32, read as u32: one local
        MOV_IMM(dst=R(1), value=2.5, ty=F32), add(3, 1, 1, F32),  # r1 reused as f32: another
        SETcc(pred=P(0), lhs=R(2), rhs=R(GID), cond=Condition.LT, ty=U32))
    regs = plan.registers
    assert names(regs.vregs) == ["r1:f32", "r1:u32", "r2:u32", "r3:f32", "r255:u32", "p0"]
    assert regs.writes[(0, "dst")] is regs.reads[(1, "lhs")] is regs.find(R(1), I32)
    assert regs.writes[(2, "dst")] is regs.reads[(3, "rhs")] is regs.find(R(1), F32)
    assert regs.find(R(255), U32).is_special and regs.find(P(0)).is_predicate
    assert regs.find(R(9), U32) is None


def test_values_cross_a_barrier_only_when_used_after_it():
    plan = plan_of(
        imm(1, 1), imm(2, 2), imm(3, 3), SETcc(pred=P(1), lhs=R(1), rhs=R(2), cond=Condition.LT, ty=U32),
        BarSync(id=0),
        add(4, 1, GID), imm(2, 7), add(4, 4, 2), BRA(target="end", pred=P(1)), "end")
    boundary = plan.boundaries[1]
    assert names(boundary.reload) == names(boundary.spill) == ["r1:u32", "p1"]  # r2 redefined first, r3 dead
    assert boundary.uniform == () and plan.boundaries[0].reload == ()


def test_values_live_around_a_loop_that_holds_a_barrier():
    plan = plan_of(
        imm(1, 0), imm(2, 3), imm(3, 5),
        "loop", add(1, 1, GID), BarSync(id=0), add(1, 1, 3), LOOP(count=R(2), body="loop"),
        add(5, 1, 1))
    assert names(plan.boundaries[1].reload) == ["r1:u32", "r2:u32", "r3:u32"]


def test_registers_read_before_written_are_the_entry_values():
    plan = plan_of(add(1, 7, 8), LOOP(count=R(9), body="end"), "end",
                   presets={R(7): (U32, 5)})
    assert names(plan.boundaries[0].reload) == ["r7:u32", "r8:u32", "r9:u32"]


def test_a_cooperative_step_spills_what_it_reads_and_reloads_what_it_writes_as_uniform():
    buf = Address.BufferOffset(handle=2, offset=0)
    plan = plan_of(
        imm(1, 4), CVT(dst=R(6), src=R(1), src_ty=U32, dst_ty=U64), add(6, 6, 7, U64), imm(2, 9),
        ParallelMapBinary(dst_array=buf, src_a=Address.RegisterIndirect(R(6), 0), src_b=buf, count=1,
                          operation=BinaryMapOperation.Add, ty=F32),
        ParallelReduce(dst=R(3), src_array=buf, count=1, operation=ReduceOperation.Sum, ty=F32),
        add(4, 3, 3, F32), add(5, 2, 2),
        presets={R(7): (U64, 0)})
    first, second = plan.boundaries[1], plan.boundaries[2]
    assert names(first.spill) == ["r2:u32", "r6:u64"] and names(first.reload) == ["r2:u32", "r6:u64"]
    assert names(second.spill) == ["r2:u32", "r6:u64"]          # r3 is written by the step, not stored
    assert names(second.reload) == ["r2:u32", "r3:f32", "r6:u64"] and names(second.uniform) == ["r3:f32"]
    step = plan.cooperative_steps[4]
    assert [(path, str(v)) for path, v in step.reads] == [("src_a.base", "r6:u64")] and step.writes == ()
    assert [(path, str(v)) for path, v in plan.cooperative_steps[5].writes] == [("dst", "r3:f32")]
    # what cooperative steps read is stored when a lane ends (an ended lane 0 still supplies it)
    assert names(plan.lane_end_stores) == ["r6:u64"]
    assert bits_of(plan.lane_end_stores) & ~bits_of(plan.lane_state) == 0


def test_special_registers_are_never_live():
    plan = plan_of(add(1, GID, GID), BarSync(id=0), add(2, 1, GID), imm(3, 0), BarSync(id=1), add(3, 3, GID))
    assert names(plan.boundaries[1].reload) == ["r1:u32"]
    assert names(plan.boundaries[2].reload) == ["r3:u32"]
    assert all(not v.is_special for v in plan.lane_state)


def test_live_sets_of_nodes_follow_the_backward_dataflow():
    plan = plan_of(imm(1, 1), imm(2, 2), BRA(target="b", pred=P(0)), add(3, 1, 1), BRA(target="end"),
                   "b", add(3, 2, 2), "end", add(4, 3, 3))
    live = plan.liveness
    by_start = {n.start: n.id for n in plan.graph.nodes if n.context == ()}
    assert names(live.live_at_entry(by_start[3])) == ["r1:u32"]
    assert names(live.live_at_entry(by_start[5])) == ["r2:u32"]
    assert names(live.live_at_entry(by_start[6])) == ["r3:u32"]
    assert names(live.live_at_entry(by_start[0])) == ["p0"]  # the predicate is read before written: false
