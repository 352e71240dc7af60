"""Structured trees: the shapes Ramsey's method gives, the dispatch fallback, and tree invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atlas_web.errors import ProgramError
from atlas_web.isa import BRA, LOOP, BarSync, ExecKind
from atlas_web.lowering import immediate_dominators, is_reducible, plan_program, reverse_postorder, structure
from atlas_web.lowering.structure import (
    Block, Br, BranchTest, BrIf, Code, CountJump, Dispatch, EndLane, Goto, If, Loop, Suspend, nested_bodies,
    nesting_depth, walk,
)
from atlas_web.verify import verify

from .programs import P, R, add, imm, info_of, program
from .strategies import control_flow_launches


def body_of(*items, form="structured", resume=0):
    return plan_program(info_of(program(*items), {}), form=form).segments[resume].body


def test_an_if_else_that_joins_nests_in_a_block_ended_by_branches():
    body = body_of(BRA(target="b", pred=P(0)), add(1, 1, 1), BRA(target="end"),
                   "b", add(2, 2, 2), "end", add(3, 3, 3))
    assert body == (
        Block(0, (If(BranchTest(0), (Code(3, 4), Br(0, 1, 0)), (Code(1, 2), Br(0, 1, 0))),)),
        Code(4, 5), EndLane())


def test_a_forward_branch_to_a_merge_point_is_a_br_if():
    body = body_of(imm(1, 1), BRA(target="end", pred=P(0), negate=True), add(1, 1, 1), "end", add(2, 1, 1))
    assert body == (Block(0, (Code(0, 1), BrIf(BranchTest(1), 0, 0, 0), Code(2, 3), Br(0, 0, 0))),
                    Code(3, 4), EndLane())


def test_a_counted_loop_is_a_loop_whose_back_edge_counts_then_branches():
    body = body_of(imm(2, 3), "loop", add(1, 1, 1), LOOP(count=R(2), body="loop"), add(3, 1, 1))
    assert body == (Code(0, 1), Loop(0, (Code(1, 2), If(BranchTest(2), (CountJump(2), Br(0, 1, 0)),
                                                        (Code(3, 4), EndLane())))))


def test_nested_loops_give_depths_through_ifs_and_loops():
    body = body_of(imm(2, 3), "outer", imm(3, 2), "inner", add(1, 1, 1), LOOP(count=R(3), body="inner"),
                   BRA(target="outer", pred=P(0)))
    outer, = [s for s in body if isinstance(s, Loop)]
    inner, = [s for s in outer.body if isinstance(s, Loop)]
    branches = [s for s in walk(outer.body) if isinstance(s, Br)]
    assert {(b.label, b.depth, b.crossed) for b in branches} == {(inner.label, 1, 0), (outer.label, 3, 1)}
    assert nesting_depth(body) == 4


def test_irreducible_graphs_and_form_dispatch_give_a_dispatch_loop():
    items = (BRA(target="b", pred=P(0)), "a", add(1, 1, 1), BRA(target="end", pred=P(1)),
             "b", add(2, 2, 2), BRA(target="a", pred=P(2)), "end")
    body = body_of(*items)
    assert len(body) == 1 and isinstance(body[0], Dispatch)
    gotos = [s for s in walk(body) if isinstance(s, Goto)]
    assert gotos and all(g.label == body[0].label and g.depth == 1 for g in gotos)
    assert any(isinstance(s, CountJump) and s.index == 4 for s in walk(body))
    reducible = body_of(imm(1, 1), BRA(target="end", pred=P(0)), add(1, 1, 1), "end", add(2, 1, 1), form="dispatch")
    assert isinstance(reducible[0], Dispatch) and len(reducible[0].cases) == 3
    with pytest.raises(ProgramError, match="unknown structuring form 'relooper'"):
        plan_program(info_of(program(*items), {}), form="relooper")


def test_trees_nested_too_deeply_fall_back_to_the_dispatch_form(monkeypatch):
    items = (imm(2, 3), "outer", imm(3, 2), "inner", add(1, 1, 1), LOOP(count=R(3), body="inner"),
             LOOP(count=R(2), body="outer"))
    monkeypatch.setattr(structure, "MAX_NESTING", 2)
    segment = plan_program(info_of(program(*items), {})).segments[0]
    assert segment.form == "dispatch" and segment.reducible


def test_a_segment_of_a_resume_point_at_the_end_is_just_the_end():
    plan = plan_program(info_of(program(imm(1, 1), BarSync(id=0)), {}))
    assert plan.segments[0].body == (Code(0, 1), Suspend(1, 1)) and plan.segments[1].body == (EndLane(),)


_FALLS_THROUGH = (Code, Block, CountJump, BrIf)


def _ends_without_falling_through(stmts) -> bool:
    last = stmts[-1] if stmts else None
    if isinstance(last, If):
        return _ends_without_falling_through(last.then) and _ends_without_falling_through(last.orelse)
    return last is not None and not isinstance(last, _FALLS_THROUGH)


@settings(max_examples=30)
@given(control_flow_launches())
def test_tree_invariants_on_random_programs(launch):
    info = verify(launch.program, preset_types={reg: ty for reg, (ty, _v) in launch.presets.items()})
    instructions = launch.program.instructions
    backward = {i for i, target in info.targets.items() if target <= i}
    for form in ("structured", "dispatch"):
        plan = plan_program(info, form=form)
        for segment in plan.segments:
            bodies = [segment.body] + [b for s in walk(segment.body) for b in nested_bodies(s)]
            assert all(_ends_without_falling_through(b) for b in bodies)
            for stmt in walk(segment.body):
                if isinstance(stmt, Code):
                    assert all(instructions[i].INFO.kind not in (ExecKind.CONTROL, ExecKind.COOPERATIVE)
                               and instructions[i].INFO.name != "BarSync" for i in range(stmt.start, stmt.end))
                elif isinstance(stmt, CountJump):
                    assert stmt.index in backward
                elif isinstance(stmt, (If, BrIf)):
                    assert instructions[stmt.test.index].INFO.name in ("BRA", "LOOP")
            labels = {s.label for s in walk(segment.body) if isinstance(s, (Block, Loop, Dispatch))}
            assert labels == set(range(segment.labels))


@given(st.integers(1, 9).flatmap(lambda n: st.lists(st.lists(st.integers(0, n - 1), max_size=2), min_size=n,
                                                    max_size=n)))
def test_the_reducibility_check_agrees_with_the_cfg_module(edges):
    graph = {n: tuple(succ) for n, succ in enumerate(edges)}
    order = reverse_postorder(graph, 0)
    reachable = {n: graph[n] for n in order}
    idom = immediate_dominators(reachable, 0)
    assert structure._reducible(order, reachable, idom) == is_reducible(reachable, 0, idom)
