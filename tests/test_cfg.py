"""Tests of atlas_web.lowering.cfg: graph algorithms on known graphs, and program CFGs."""

from __future__ import annotations

import pytest

from atlas_web.errors import ProgramError
from atlas_web.isa import BRA, CALL, EXIT, LOOP, MOV_IMM, RET, Type
from atlas_web.isa.registers import Predicate, Register
from atlas_web.lowering import (
    EXIT_NODE, Terminator, back_edges, build_cfg, control_dependences, dominates, immediate_dominators,
    immediate_post_dominators, is_reducible, natural_loops, predecessors_of, reverse_postorder,
)
from atlas_web.program import Program

from .verify_programs import program

# ---- graphs ---------------------------------------------------------------------------------------

#: 0 -> 1 -> {2, 3} -> 4 -> {1, 5}: an if-then-else inside a loop
LOOPED_DIAMOND = {0: [1], 1: [2, 3], 2: [4], 3: [4], 4: [1, 5], 5: []}
#: the irreducible example of Cooper, Harvey and Kennedy (Figure 4), root 6
CHK_IRREDUCIBLE = {6: [5, 4], 5: [1], 4: [2, 3], 1: [2], 2: [1, 3], 3: [2]}


def test_reverse_postorder_puts_every_node_before_its_forward_successors():
    order = reverse_postorder(LOOPED_DIAMOND, 0)
    assert order[0] == 0 and sorted(order) == [0, 1, 2, 3, 4, 5]
    rank = {n: i for i, n in enumerate(order)}
    for u, v in [(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5)]:
        assert rank[u] < rank[v]


def test_reverse_postorder_skips_unreachable_nodes_and_handles_deep_graphs():
    assert reverse_postorder({0: [1], 1: [], 2: [1]}, 0) == [0, 1]
    chain = {i: [i + 1] for i in range(20000)} | {20000: []}
    assert len(reverse_postorder(chain, 0)) == 20001


def test_dominators_of_a_loop_with_a_diamond():
    idom = immediate_dominators(LOOPED_DIAMOND, 0)
    assert idom == {0: 0, 1: 0, 2: 1, 3: 1, 4: 1, 5: 4}
    assert dominates(idom, 1, 5) and dominates(idom, 4, 4)
    assert not dominates(idom, 2, 4) and not dominates(idom, 5, 1)


def test_dominators_of_the_irreducible_chk_graph():
    assert immediate_dominators(CHK_IRREDUCIBLE, 6) == {6: 6, 5: 6, 4: 6, 1: 6, 2: 6, 3: 6}


def test_post_dominators_of_a_loop_with_a_diamond():
    ipdom = immediate_post_dominators(LOOPED_DIAMOND)
    assert ipdom == {EXIT_NODE: EXIT_NODE, 5: EXIT_NODE, 4: 5, 2: 4, 3: 4, 1: 4, 0: 1}


def test_post_dominators_with_several_exits_meet_at_the_virtual_exit():
    ipdom = immediate_post_dominators({0: [1, 2], 1: [], 2: [3], 3: []})
    assert ipdom[0] == EXIT_NODE and ipdom[2] == 3 and ipdom[1] == EXIT_NODE


def test_post_dominators_exist_for_endless_loops():
    graph = {0: [1, 3], 1: [2], 2: [1], 3: []}  # 1 <-> 2 never reaches an exit
    ipdom = immediate_post_dominators(graph)
    assert set(ipdom) == {EXIT_NODE, 0, 1, 2, 3}
    assert ipdom[1] == 2 and ipdom[2] == EXIT_NODE


def test_control_dependences_of_a_diamond_and_a_loop():
    diamond = {0: [1, 2], 1: [3], 2: [3], 3: []}
    deps = control_dependences(diamond, immediate_post_dominators(diamond))
    assert deps == {0: (), 1: (0,), 2: (0,), 3: ()}
    deps = control_dependences(LOOPED_DIAMOND, immediate_post_dominators(LOOPED_DIAMOND))
    assert deps[2] == (1,) and deps[3] == (1,)
    assert deps[1] == (4,) and deps[4] == (4,)  # the loop body runs again only where 4 branches back
    assert deps[0] == () and deps[5] == ()


def test_back_edges_and_natural_loops_nest():
    # 0 -> 1 (outer header) -> 2 (inner header) -> 3 -> {2, 4}; 4 -> {1, 5}
    graph = {0: [1], 1: [2], 2: [3], 3: [2, 4], 4: [1, 5], 5: []}
    assert sorted(back_edges(graph, 0)) == [(3, 2), (4, 1)]
    outer, inner = natural_loops(graph, 0)
    assert (outer.header, outer.body, outer.latches, outer.parent, outer.depth) == (1, frozenset({1, 2, 3, 4}),
                                                                                   (4,), None, 1)
    assert (inner.header, inner.body, inner.latches, inner.parent, inner.depth) == (2, frozenset({2, 3}), (3,), 1, 2)
    assert outer.exits == ((4, 5),) and inner.exits == ((3, 4),)


def test_loops_with_one_header_merge_their_back_edges():
    graph = {0: [1], 1: [2, 3], 2: [1], 3: [1, 4], 4: []}
    (loop,) = natural_loops(graph, 0)
    assert loop.header == 1 and loop.latches == (2, 3) and loop.body == frozenset({1, 2, 3})


def test_reducibility():
    assert is_reducible(LOOPED_DIAMOND, 0)
    assert not is_reducible({0: [1, 2], 1: [2], 2: [1]}, 0)
    assert not is_reducible(CHK_IRREDUCIBLE, 6)
    assert is_reducible({0: [0]}, 0)


def test_predecessors_of_lists_each_edge_once():
    assert predecessors_of({0: [1, 1], 1: [0]}) == {0: [1], 1: [0]}


# ---- program graphs -------------------------------------------------------------------------------

r1, p0 = Register(1), Predicate(0)


def _mov(value: int = 0):
    return MOV_IMM(dst=r1, value=value, ty=Type.I32)


def test_blocks_split_at_targets_and_after_control_instructions():
    prog = program(_mov(), _mov(), BRA(target="skip", pred=p0), _mov(), "skip", _mov(), EXIT(), _mov())
    cfg = build_cfg(prog)
    assert [(b.start, b.end, b.terminator) for b in cfg.blocks] == [
        (0, 3, Terminator.BRANCH), (3, 4, Terminator.FALLTHROUGH), (4, 6, Terminator.EXIT),
        (6, 7, Terminator.FALLTHROUGH)]
    assert [b.successors for b in cfg.blocks] == [(2, 1), (2,), (), ()]
    assert [b.predecessors for b in cfg.blocks] == [(), (0,), (0, 1), ()]
    assert cfg.block_of == (0, 0, 0, 1, 2, 2, 3)
    assert cfg.block_at(5).id == 2 and cfg.blocks[0].target == 4
    assert cfg.main.blocks == (0, 1, 2)  # block 3 is unreachable
    assert cfg.procedures_of_block == ((0,), (0,), (0,), ())


def test_jumps_to_the_end_and_running_past_it_have_no_successor():
    prog = program(BRA(target="end", pred=p0), _mov(), BRA(target="end"), "end")
    cfg = build_cfg(prog)
    assert [b.successors for b in cfg.blocks] == [(1,), ()]
    assert cfg.blocks[0].target == 3 and cfg.main.ends_lane(1)
    assert [b.successors for b in build_cfg(program(_mov(), _mov())).blocks] == [()]


def test_loop_instruction_has_body_and_fall_through_successors():
    prog = program("body", _mov(), LOOP(count=Register(2), body="body"), EXIT())
    cfg = build_cfg(prog)
    assert [(b.start, b.end) for b in cfg.blocks] == [(0, 2), (2, 3)]
    assert cfg.blocks[0].terminator is Terminator.LOOP and cfg.blocks[0].successors == (0, 1)
    assert cfg.main.back_edges == ((0, 0),) and cfg.main.loops[0].header == 0 and cfg.main.is_reducible


def test_calls_make_procedures_and_a_call_graph():
    prog = program(CALL(target="f"), CALL(target="g"), EXIT(),
                    "f", CALL(target="g"), RET(),
                    "g", _mov(), RET())
    cfg = build_cfg(prog)
    assert sorted(cfg.procedures) == [0, 3, 5]
    assert dict(cfg.call_graph) == {0: (3, 5), 3: (5,), 5: ()}
    main, f, g = cfg.procedures[0], cfg.procedures[3], cfg.procedures[5]
    assert main.is_main and not f.is_main
    assert [cfg.blocks[b].start for b in main.blocks] == [0, 1, 2]
    assert cfg.blocks[main.entry_block].successors == (cfg.block_of[1],)  # CALL -> its return site
    assert [cfg.blocks[b].start for b in f.blocks] == [3, 4] and f.returns == (cfg.block_of[4],)
    assert g.calls == () and f.calls == (cfg.block_of[3],)
    assert cfg.call_sites(3) == ((3, 5),)
    assert cfg.call_cycle() is None
    assert cfg.call_order() == (0, 3, 5)
    assert cfg.call_depth() == 2
    assert not f.ends_lane(cfg.block_of[4]) and main.ends_lane(cfg.block_of[2])


def test_code_shared_by_fall_through_and_call_belongs_to_both_procedures():
    prog = program(CALL(target="f"), "f", _mov(), RET())
    cfg = build_cfg(prog)
    shared = cfg.block_of[1]
    assert cfg.procedures_of_block[shared] == (0, 1)
    assert cfg.main.ends_lane(shared) and not cfg.procedures[1].ends_lane(shared)


def test_call_cycles_are_found():
    direct = build_cfg(program(CALL(target="f"), EXIT(), "f", CALL(target="f"), RET()))
    assert direct.call_cycle() == (2,)
    indirect = build_cfg(program(CALL(target="f"), EXIT(), "f", CALL(target="g"), RET(), "g", CALL(target="f"), RET()))
    assert sorted(indirect.call_cycle()) == [2, 4]
    with pytest.raises(ProgramError, match="recursive"):
        indirect.call_order()


def test_procedure_analyses_on_a_program_loop():
    prog = program(_mov(), "top", BRA(target="out", pred=p0), _mov(), BRA(target="top"), "out", EXIT())
    main = build_cfg(prog).main
    assert dict(main.dominators) == {0: 0, 1: 0, 2: 1, 3: 1}
    assert main.post_dominators[1] == 3 and main.post_dominators[2] == 1
    assert main.control_dependences[2] == (1,) and main.control_dependences[1] == (1,)
    assert main.back_edges == ((2, 1),) and main.loops[0].body == frozenset({1, 2})


def test_irreducible_program_is_detected():
    prog = program(BRA(target="b", pred=p0), "a", _mov(), BRA(target="b", pred=p0), EXIT(),
                    "b", _mov(), BRA(target="a", pred=p0), EXIT())
    main = build_cfg(prog).main
    assert not main.is_reducible and main.back_edges == ()


def test_empty_program_and_undefined_labels():
    cfg = build_cfg(Program([]))
    assert cfg.blocks == () and cfg.main.entry_block is None and cfg.main.loops == () and cfg.main.is_reducible
    assert cfg.call_depth() == 0
    with pytest.raises(ProgramError, match="undefined label @nowhere"):
        build_cfg(program(BRA(target="nowhere")))
    with pytest.raises(ProgramError, match="outside"):
        build_cfg(program(BRA(target="x"), "x"), targets={0: 5})
