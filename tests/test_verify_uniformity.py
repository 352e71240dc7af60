"""Tests of the verifier's uniformity rules: BarSync in block-uniform, cooperative instructions in
grid-uniform control flow. Each failing program has a near-identical passing one."""

from __future__ import annotations

from atlas_web.isa import (
    CALL, EXIT, LDG, LOOP, RET, Address, BarSync, MapOperation, ParallelMap, ParallelReduce, PoolAlloc, PoolFree,
    ReduceOperation, SETcc, Condition,
)
from atlas_web.verify import Uniformity, verify
from tests.verify_programs import (
    BLOCK_DIM_X, BLOCK_X, F32, GLOBAL_ID, GRID_DIM_X, LANE_X, U32, P, R, add, bra, mov, mov_imm, program, rejects,
    set_lt,
)

BUF = Address.BufferOffset(2, 0)


def pmap():
    return ParallelMap(dst_array=BUF, src_array=BUF, count=4, operation=MapOperation.Abs)


def barrier(ident: int = 0):
    return BarSync(id=ident)


def test_barrier_inside_a_lane_dependent_branch_is_rejected():
    def guarded(index_register):
        return program(set_lt(0, index_register, BLOCK_DIM_X),  # 0
                       bra("skip", 0),                          # 1
                       barrier(),                               # 2
                       "skip", barrier(1),                      # 3
                       EXIT())
    error = rejects(guarded(LANE_X), "BarSync", 2)
    assert str(error) == ("instruction 2 (bar.sync 0): BarSync must be reached by every lane of its block, but it "
                          "depends on the branch at 1 (bra.p0 @skip), whose predicate p0 may differ between lanes "
                          "of a block")
    assert verify(guarded(GRID_DIM_X)).divergent_branches == {}


def test_barrier_after_the_join_of_a_divergent_branch_passes():
    info = verify(program(set_lt(0, LANE_X, BLOCK_DIM_X), bra("skip", 0), mov_imm(1, 1, U32), "skip", barrier(),
                          EXIT()))
    assert info.divergent_branches == {1: Uniformity.VARYING}
    assert info.def_uniformity[(2, "dst")] is Uniformity.VARYING


def test_block_dependent_branches_allow_barriers_but_not_cooperative_instructions():
    def block_branch(body):
        return program(set_lt(0, BLOCK_X, 1), bra("skip", 0), body, "skip", barrier(), EXIT())
    info = verify(block_branch(barrier(1)))
    assert info.divergent_branches == {1: Uniformity.BLOCK}
    rejects(block_branch(pmap()), "ParallelMap must stand in grid-uniform control flow, but it depends on the "
                                  r"branch at 1 \(bra.p0 @skip\), whose predicate p0 may differ between blocks", 2)
    uniform = program(set_lt(0, GRID_DIM_X, 1), bra("skip", 0), pmap(), "skip", barrier(), EXIT())
    assert verify(uniform).block_uniformity == {0: Uniformity.GRID, 1: Uniformity.GRID, 2: Uniformity.GRID}


def test_presets_and_immediates_are_grid_uniform():
    prog = program(set_lt(0, 7, 8), bra("skip", 0), pmap(), "skip", barrier(), EXIT())
    verify(prog, preset_types={R(7): U32, R(8): U32})
    with_lane = program(add(8, 8, LANE_X, U32), set_lt(0, 7, 8), bra("skip", 0), pmap(), "skip", barrier(), EXIT())
    rejects(with_lane, "may differ between lanes", 3, preset_types={R(7): U32, R(8): U32})


def test_lanes_that_exit_count_as_arrived():
    guard = program(set_lt(0, GLOBAL_ID, 1),       # 0: spare lanes leave
                    bra("work", 0), EXIT(),        # 1, 2
                    "work", barrier(), pmap(),     # 3, 4
                    mov_imm(2, 0, U32), barrier(1), EXIT())
    info = verify(guard, preset_types={R(1): U32})
    assert info.def_uniformity[(5, "dst")] is Uniformity.GRID
    leaving_through_a_barrier = program(set_lt(0, GLOBAL_ID, 1), bra("work", 0), barrier(), EXIT(),
                                        "work", barrier(1), EXIT())
    rejects(leaving_through_a_barrier, "depends on the branch at 1", 2, preset_types={R(1): U32})


def test_ret_in_the_main_program_ends_the_lane():
    prog = program(set_lt(0, GLOBAL_ID, 1), bra("work", 0), RET(), "work", barrier(), EXIT())
    verify(prog, preset_types={R(1): U32})


def test_exit_inside_a_subroutine_counts_as_arrived_but_its_return_does_not():
    def caller(leave):
        return program(CALL(target="f"), barrier(), EXIT(),
                       "f", set_lt(0, GLOBAL_ID, 1), bra("go", 0), leave, "go", barrier(1), RET())
    verify(caller(EXIT()), preset_types={R(1): U32})
    rejects(caller(RET()), "depends on the branch at 4", 6, preset_types={R(1): U32})


def test_values_defined_under_divergence_make_later_branches_divergent():
    def two_branches(first):
        return program(first,                                # 0
                       set_lt(0, LANE_X, BLOCK_DIM_X),        # 1
                       bra("a", 0),                           # 2
                       mov_imm(6, 9, U32),                    # 3
                       "a", set_lt(1, 5, 6),                  # 4
                       bra("skip", 1),                        # 5
                       barrier(),                             # 6
                       "skip", barrier(1), EXIT())            # 7, 8
    rejects(two_branches(mov_imm(5, 1, U32)), r"depends on the branch at 5 \(bra.p1 @skip\), whose predicate p1", 6)
    ok = program(mov_imm(5, 1, U32), mov_imm(6, 9, U32), set_lt(0, LANE_X, BLOCK_DIM_X), bra("a", 0),
                 mov_imm(7, 9, U32), "a", set_lt(1, 5, 6), bra("skip", 1), barrier(), "skip", barrier(1), EXIT())
    verify(ok)


def test_loads_are_lane_varying():
    def branch_on(define):
        return program(define, mov_imm(2, 0.0, F32), SETcc(pred=P(0), lhs=R(1), rhs=R(2), cond=Condition.GT, ty=F32),
                       bra("skip", 0), pmap(), "skip", barrier(), EXIT())
    load = LDG(dst=R(1), src=BUF, ty=F32)
    rejects(branch_on(load), "may differ between lanes", 4)
    reduce = ParallelReduce(dst=R(1), src_array=BUF, count=4, operation=ReduceOperation.Sum, ty=F32)
    info = verify(branch_on(reduce))
    assert info.def_uniformity[(0, "dst")] is Uniformity.GRID


def test_loops_with_a_lane_dependent_exit_are_divergent():
    def loop(bound):
        return program(mov_imm(1, 0, U32), mov_imm(2, 1, U32),
                       "top", barrier(),                       # 2
                       add(1, 1, 2, U32),                      # 3
                       set_lt(0, 1, bound),                    # 4
                       bra("top", 0), barrier(1), EXIT())      # 5
    error = rejects(loop(LANE_X), "depends on the branch at 5", 2)
    assert "predicate p0 may differ between lanes" in str(error)
    info = verify(loop(BLOCK_DIM_X))
    assert info.def_uniformity[(3, "dst")] is Uniformity.GRID


def test_loop_counts_decide_divergence():
    def counted(first):
        return program(first, "body", barrier(), LOOP(count=R(3), body="body"), barrier(1), EXIT())
    rejects(counted(mov(3, LANE_X, U32)), r"depends on the branch at 2 \(loop r3, @body\), whose count r3", 1)
    info = verify(counted(mov_imm(3, 4, U32)))
    assert info.def_uniformity[(2, "count")] is Uniformity.GRID


def test_the_lane_varying_loop_counter_varies_after_the_loop():
    prog = program(mov(3, LANE_X, U32), "body", LOOP(count=R(3), body="body"), set_lt(0, 3, 4), bra("skip", 0),
                   barrier(), "skip", barrier(1), EXIT())
    rejects(prog, "depends on the branch at 3", 4)


def test_subroutines_inherit_the_divergence_of_their_call_sites():
    def caller(index_register, body=None):
        return program(set_lt(0, index_register, BLOCK_DIM_X), bra("skip", 0), CALL(target="f"), "skip", barrier(),
                       EXIT(), "f", body or barrier(1), RET())
    rejects(caller(LANE_X), r"depends on the branch at 1 \(bra.p0 @skip\)", 5)
    verify(caller(GRID_DIM_X))
    verify(caller(BLOCK_X))
    rejects(caller(BLOCK_X, pmap()), "ParallelMap must stand in grid-uniform control flow.* between blocks", 5)


def test_pool_instructions_are_cooperative():
    prog = program(set_lt(0, LANE_X, BLOCK_DIM_X), bra("skip", 0), PoolFree(handle=R(1)), "skip", barrier(), EXIT())
    rejects(prog, "PoolFree must stand in grid-uniform control flow", 2)
    info = verify(program(PoolAlloc(dst=R(1), size=16), set_lt(0, 1, 2), bra("skip", 0), pmap(), "skip", barrier(),
                          EXIT()), preset_types={R(2): U32})
    assert info.def_uniformity[(0, "dst")] is Uniformity.GRID


def test_divergence_inside_the_terminal_tail_needs_no_uniformity():
    info = verify(program(barrier(), set_lt(0, LANE_X, BLOCK_DIM_X), bra("a", 0), mov_imm(1, 0, U32), "a", EXIT()))
    assert info.def_uniformity[(3, "dst")] is Uniformity.VARYING


def test_unreachable_barriers_are_not_checked():
    verify(program(EXIT(), set_lt(0, LANE_X, BLOCK_DIM_X), bra("a", 0), barrier(), "a", barrier(), EXIT()))
