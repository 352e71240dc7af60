"""The lane graph: inlined calls, backward-jump annotations, resume points, segments and stages."""

from __future__ import annotations

import pytest

from atlas_web.errors import UnsupportedOperation
from atlas_web.isa import (
    BRA, CALL, EXIT, LOOP, RET, Address, BarSync, BinaryMapOperation, ParallelMapBinary, ParallelReduce,
    ReduceOperation, Type,
)
from atlas_web.lowering.stages import (
    ExitKind, ResumeKind, build_lane_graph, inlined_size, instruction_limit, MIN_INSTRUCTION_LIMIT,
)

from .programs import GID, P, R, add, imm, info_of, program


def graph_of(*items, **kwargs):
    return build_lane_graph(info_of(program(*items), {}), **kwargs)


def coop(handle: int = 2):
    buf = Address.BufferOffset(handle=handle, offset=0)
    return ParallelMapBinary(dst_array=buf, src_a=buf, src_b=buf, count=1, operation=BinaryMapOperation.Add,
                             ty=Type.F32)


def test_straight_code_is_one_node_that_ends_the_lane_past_the_end():
    graph = graph_of(imm(1, 1), imm(2, 2), add(3, 1, 2))
    entry = graph.nodes[graph.entry.node]
    assert (entry.start, entry.end, entry.kind) == (0, 3, ExitKind.GOTO)
    assert graph.nodes[entry.edges[0].target].kind is ExitKind.END
    assert len(graph.stages) == 1 and graph.stages[0].segments == (0,) and graph.instruction_copies == 3


def test_exit_and_ret_in_main_end_the_lane_and_exclude_the_control_instruction_from_the_run():
    graph = graph_of(imm(1, 1), EXIT(), imm(1, 2), RET())
    entry = graph.nodes[graph.entry.node]
    assert (entry.start, entry.end, entry.kind, entry.exit_index) == (0, 1, ExitKind.END, 1)


def test_backward_jumps_are_annotated_by_original_indices():
    graph = graph_of(
        BRA(target="main"),                                     # 0: forward, not counted
        "sub", imm(1, 1), RET(),                                # 1, 2: RET never counts
        "main", imm(2, 2), "loop", add(1, 1, 1),                # 3, 4
        CALL(target="sub"),                                     # 5: target 1 <= 5: counted
        LOOP(count=R(2), body="loop"),                          # 6: target 4 <= 6: counted
        BRA(target="main", pred=P(0)), BRA(target="end"), "end")  # 7: counted; 8: to the end
    counted = {}
    for node in graph.nodes:
        for edge in node.edges:
            counted[(node.exit_index, graph.nodes[edge.target].start)] = edge.backward_jump
    assert counted[(0, 3)] is None and counted[(5, 1)] == 5 and counted[(6, 4)] == 6 and counted[(7, 3)] == 7
    assert counted[(2, 6)] is None and counted[(6, 7)] is None and counted[(8, 9)] is None


def test_a_subroutine_is_inlined_once_per_call_chain_and_returns_to_its_own_call_site():
    graph = graph_of(
        CALL(target="a"), CALL(target="a"), EXIT(),
        "a", CALL(target="b"), RET(),
        "b", imm(1, 1), RET())
    copies = sorted(n.context for n in graph.nodes if n.start == 5)
    assert copies == [(0, 3), (1, 3)]
    for node in graph.nodes:
        if node.exit_index == 6:  # b's RET returns into a, after the CALL at 3, in the same chain
            back = graph.nodes[node.edges[0].target]
            assert back.start == 4 and back.context == node.context[:-1]


def test_exponential_inlining_is_refused_at_once_with_the_documented_limit():
    items = [CALL(target="f0"), EXIT()]
    for k in range(40):
        items += [f"f{k}", CALL(target=f"f{k + 1}"), CALL(target=f"f{k + 1}"), RET()]
    items += ["f40", imm(1, 1), RET()]
    with pytest.raises(UnsupportedOperation, match=r"CALL.*'wasm'.*makes \d{13} instruction copies.*limit of 65536"):
        graph_of(*items, backend="wasm")
    assert inlined_size(info_of(program(*items[:2], "f0", imm(1, 1), CALL(target="f1"), CALL(target="f1"),
                                        RET(), "f1", imm(2, 2), RET()), {}).cfg) == 2 + 4 + 2 * 2
    assert instruction_limit(10) == MIN_INSTRUCTION_LIMIT and instruction_limit(1 << 20) == 8 << 20
    with pytest.raises(UnsupportedOperation, match="more than the lowering limit of 20"):
        graph_of(*items[:2], "f0", *[imm(1, k) for k in range(25)], RET(), max_instructions=20)


def test_barriers_split_segments_and_resume_points_remember_the_call_chain():
    graph = graph_of(
        imm(1, 1), BarSync(id=0), CALL(target="s"), CALL(target="s"), EXIT(),
        "s", add(1, 1, 1), BarSync(id=1), add(1, 1, 1), RET())
    kinds = [(rp.kind, rp.context, rp.index, rp.after) for rp in graph.resume_points]
    assert kinds == [(ResumeKind.ENTRY, (), 0, None), (ResumeKind.BARRIER, (), 2, 1),
                     (ResumeKind.BARRIER, (2,), 7, 6), (ResumeKind.BARRIER, (3,), 7, 6)]
    assert graph.segments[1].suspends == (2,) and graph.segments[2].suspends == (3,)
    assert graph.segments[3].suspends == () and graph.segments[3].ends_lane
    assert len(graph.stages) == 1 and graph.stages[0].segments == (0, 1, 2, 3)


def test_a_barrier_inside_a_loop_resumes_in_the_middle_of_the_loop():
    graph = graph_of(imm(2, 3), "loop", add(1, 1, GID), BarSync(id=0), add(1, 1, 1), LOOP(count=R(2), body="loop"))
    barrier = graph.resume_points[1]
    assert (barrier.kind, barrier.index) == (ResumeKind.BARRIER, 3)
    segment = graph.segments[1]
    assert segment.suspends == (1,) and segment.ends_lane  # around the loop to the barrier again, or out
    assert graph.stages[0].segments == (0, 1)


def test_cooperative_instructions_split_stages_and_a_loop_with_one_shares_segments():
    graph = graph_of(
        imm(2, 2), "loop", BarSync(id=0), coop(), add(1, 1, 1), LOOP(count=R(2), body="loop"),
        ParallelReduce(dst=R(5), src_array=Address.BufferOffset(handle=2, offset=0), count=1,
                       operation=ReduceOperation.Sum, ty=Type.F32))
    kinds = [(rp.kind, rp.index) for rp in graph.resume_points]
    assert kinds == [(ResumeKind.ENTRY, 0), (ResumeKind.BARRIER, 2), (ResumeKind.COOPERATIVE, 3),
                     (ResumeKind.COOPERATIVE, 6)]
    stages = {s.entry: s for s in graph.stages}
    assert set(stages) == {0, 2, 3}
    assert stages[0].segments == (0, 1) and stages[0].cooperative_exits == (2,)
    # after the step: back around the loop to the barrier (a segment shared with stage 0), or on to the reduce
    assert stages[2].segments == (2, 1) and set(stages[2].cooperative_exits) == {2, 3}
    assert stages[3].segments == (3,) and stages[3].cooperative_exits == ()
    assert graph.stage_of_entry[3] == stages[3].id


def test_a_barrier_at_the_very_end_resumes_into_the_end_node():
    graph = graph_of(imm(1, 1), BarSync(id=0))
    assert graph.resume_points[1].node == graph.end_node
    assert graph.nodes[graph.end_node].is_terminal_stub


def test_code_shared_by_many_segments_counts_against_the_limit():
    # the code after the loop is reached from both barriers' resume points: copied into both segments
    items = [imm(2, 3), "loop", add(1, 1, 1), BarSync(id=0), add(1, 1, 1), BRA(target="exit", pred=P(0)),
             BarSync(id=1), add(1, 1, 1), LOOP(count=R(2), body="loop"), "exit", *[add(1, 1, 1)] * 40]
    graph = graph_of(*items)
    assert graph.instruction_copies > len(program(*items))
    with pytest.raises(UnsupportedOperation, match="BarSync.*segments"):
        graph_of(*items, max_instructions=graph.instruction_copies - 1)


def test_a_call_at_the_end_and_a_call_to_the_end_end_the_lane():
    graph = graph_of(BRA(target="main"), "s", imm(1, 1), RET(), "main", CALL(target="s"))
    ret = next(n for n in graph.nodes if n.exit_index == 2)
    assert ret.context == (3,) and ret.edges[0].target == graph.end_node
    graph = graph_of(imm(1, 1), CALL(target="end"), "end")
    call = graph.nodes[graph.entry.node]
    assert call.kind is ExitKind.GOTO and call.edges[0].target == graph.end_node
    assert call.edges[0].backward_jump is None
