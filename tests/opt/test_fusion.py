"""atlas_web.opt.fusion.map_chains: which adjacent cooperative maps a backend may run as one pass, and which not."""

from __future__ import annotations

from atlas_web import Program
from atlas_web.opt.fusion import map_chains


def _chains(text: str):
    return map_chains(Program.from_text(text))


def test_consecutive_maps_of_one_type_and_count_form_one_chain():
    assert _chains("""
    pmap.exp.f32 [buf2 + 0], [buf3 + 0], 64
    pmap2.add.f32 [buf4 + 0], [buf2 + 0], [buf3 + 0], 64
    pmap.neg.f32 [buf4 + 0], [buf4 + 0], 64
""") == ((0, 1, 2),)


def test_different_counts_or_types_are_not_fused():
    assert _chains("""
    pmap.exp.f32 [buf2 + 0], [buf3 + 0], 64
    pmap.neg.f32 [buf4 + 0], [buf2 + 0], 32
    pmap.neg.f64 [buf5 + 0], [buf6 + 0], 32
""") == ()


def test_lane_code_or_a_reduction_between_maps_ends_a_chain():
    assert _chains("""
    pmap.exp.f32 [buf2 + 0], [buf3 + 0], 64
    mov_imm.u32 r1, 7
    pmap.neg.f32 [buf4 + 0], [buf2 + 0], 64
    preduce.sum.f32 r2, [buf4 + 0], 64
    pmap.abs.f32 [buf5 + 0], [buf4 + 0], 64
""") == ()


def test_a_chain_breaks_where_the_count_changes_and_a_new_one_starts():
    assert _chains("""
    pmap.exp.f32 [buf2 + 0], [buf3 + 0], 64
    pmap.neg.f32 [buf4 + 0], [buf2 + 0], 64
    pmap.abs.f32 [buf5 + 0], [buf4 + 0], 16
    pmap.neg.f32 [buf6 + 0], [buf5 + 0], 16
""") == ((0, 1), (2, 3))


def test_a_single_map_or_a_map_of_no_elements_is_not_a_chain():
    assert _chains("    pmap.exp.f32 [buf2 + 0], [buf3 + 0], 64\n") == ()
    assert _chains("""
    pmap.exp.f32 [buf2 + 0], [buf3 + 0], 0
    pmap.neg.f32 [buf4 + 0], [buf2 + 0], 0
""") == ()


def test_a_map_directly_before_a_reduction_of_its_type_and_count_may_be_absorbed():
    from atlas_web.opt.fusion import map_reductions
    program = Program.from_text("""
    pmap.exp.f32 [buf2 + 0], [buf3 + 0], 64
    preduce.sum.f32 r1, [buf2 + 0], 64
    pmap.neg.f32 [buf4 + 0], [buf2 + 0], 64
    preduce.sum.f32 r2, [buf4 + 0], 32
    pmap.neg.f32 [buf5 + 0], [buf2 + 0], 64
    mov_imm.u32 r3, 1
    preduce.max.f32 r4, [buf5 + 0], 64
    pmap.neg.f32 [buf6 + 0], [buf2 + 0], 64
    pmap.abs.f32 [buf6 + 0], [buf6 + 0], 64
    preduce.max.f32 r5, [buf6 + 0], 64
""")
    # not: another count, lane code between, the last map of a chain
    assert map_reductions(program) == ((0, 1),)
    assert map_chains(program) == ((7, 8),)
