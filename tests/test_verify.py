"""Tests of atlas_web.verify: structure, special registers, presets, types, calls, ProgramInfo.

Each rule has a program that must fail and a near-identical one that must pass.
Uniformity is in test_verify_uniformity.py, launch checks in test_verify_launch.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from atlas_web.errors import ProgramError
from atlas_web.isa import (
    ABS, BRA, CALL, CVT, EXIT, LDG, LDS, LOOP, RET, SEL, SHL, STG, STS, Address, BarSync, ClsGet, Condition,
    MapOperation, ParallelMap, PhaseAdv, PhaseGet, PoolAlloc, PoolLoad, ResAccum, SETcc, UnityTest,
)
from atlas_web.program import Program, ProgramBuilder
from atlas_web.verify import ProgramInfo, Uniformity, verify
from tests.strategies import programs
from tests.verify_programs import (
    BLOCK_DIM_X, F32, F64, GLOBAL_ID, I32, I64, U32, U64, U8, P, R, add, bra, mov, mov_imm, program, rejects, set_lt,
)

Type = type(F32)


# ---- structure --------------------------------------------------------------------------------------

def test_undefined_label_is_rejected_at_the_branch():
    rejects(program(mov_imm(1, 0, I32), bra("nowhere")), r"instruction 1 \(.*\): undefined label @nowhere", 1)
    verify(program(mov_imm(1, 0, I32), bra("there"), "there"))


def test_a_label_at_the_end_ends_the_lane():
    info = verify(program(set_lt(0, GLOBAL_ID, BLOCK_DIM_X), bra("end", 0), mov_imm(1, 0, I32), "end"))
    assert info.targets == {1: 3}


def test_verify_takes_a_program():
    with pytest.raises(ProgramError, match="verify takes a Program"):
        verify([mov_imm(1, 0, I32)])  # type: ignore[arg-type]


def test_builder_build_runs_the_verifier():
    builder = ProgramBuilder().add(mov_imm(1, 0, I32)).add(add(2, 1, 1, F32))
    with pytest.raises(ProgramError, match="r1 holds i32"):
        builder.build()
    assert len(builder.build(verify=False)) == 2


# ---- special registers and presets -------------------------------------------------------------------

def test_special_registers_are_read_only():
    rejects(program(mov_imm(255, 0, U32)), r"writes r255, the special register GLOBAL_LANE_ID, which is read-only", 0)
    rejects(program(mov_imm(243, 0, U32)), "LANE_IDX_Y", 0)
    rejects(program("top", LOOP(count=R(250), body="top")), "GRID_DIM_Y", 0)
    verify(program(mov_imm(242, 0, U32), "top", LOOP(count=R(242), body="top")))


def test_special_registers_read_as_u32():
    info = verify(program(add(1, GLOBAL_ID, BLOCK_DIM_X, U32), add(2, GLOBAL_ID, GLOBAL_ID, I32)))
    assert info.use_types[(0, "lhs")] is U32 and info.use_types[(1, "lhs")] is I32
    rejects(program(add(1, GLOBAL_ID, GLOBAL_ID, F32)), r"r255 holds u32 \(special register\)", 0)


def test_presets_define_registers_at_entry():
    prog = program(add(2, 1, 1, F32))
    info = verify(prog, preset_types={R(1): F32})
    assert info.use_types[(0, "lhs")] is F32 and info.reaching[(0, "lhs")] == (-1,)
    assert info.preset_types == {R(1): F32}
    rejects(prog, r"r1 holds i64 \(preset\), but the operand needs f32", 0, preset_types={R(1): I64})


def test_malformed_presets_are_rejected():
    prog = program(add(2, 1, 1, F32))
    with pytest.raises(ProgramError, match="special register"):
        verify(prog, preset_types={R(255): U32})
    with pytest.raises(ProgramError, match="not a Register"):
        verify(prog, preset_types={1: F32})
    with pytest.raises(ProgramError, match="must be a Type"):
        verify(prog, preset_types={R(1): (F32, 1.0)})
    with pytest.raises(ProgramError, match="must map"):
        verify(prog, preset_types=[R(1)])


# ---- types --------------------------------------------------------------------------------------------

def _either_side(then_def, else_def, use):
    """Two definitions on the two sides of a lane-dependent branch, then ``use`` at the join (7)."""
    return program(set_lt(0, GLOBAL_ID, BLOCK_DIM_X),   # 0
                   bra("else", 0),                      # 1
                   mov_imm(3, 2.0, F32),                # 2
                   then_def,                            # 3
                   bra("join"),                         # 4
                   "else", else_def,                    # 5
                   mov_imm(3, 2.0, F32),                # 6
                   "join", use)                         # 7


def test_a_use_that_may_see_two_types_names_both_definitions():
    prog = _either_side(mov_imm(2, 1, I32), mov_imm(2, 1.0, F32), add(1, 2, 3, F32))
    error = rejects(prog, "r2 may hold", 7)
    assert str(error) == "instruction 7 (add.f32 r1, r2, r3): r2 may hold i32 (defined at 3) or f32 (defined at 5)"
    info = verify(_either_side(mov_imm(2, 1.0, F32), mov_imm(2, 1.0, F32), add(1, 2, 3, F32)))
    assert info.use_types[(7, "lhs")] is F32 and info.reaching[(7, "lhs")] == (3, 5)


def test_integers_of_the_same_width_are_compatible_at_a_use():
    info = verify(_either_side(mov_imm(2, 1, I32), mov_imm(2, 1, U32), add(1, 2, 2, U32)))
    assert info.use_types[(7, "lhs")] is U32
    rejects(_either_side(mov_imm(2, 1, I32), mov_imm(2, 1, I64), add(1, 2, 2, I32)), "r2 may hold i32", 7)


def test_the_entry_zero_is_compatible_with_any_type():
    info = verify(_either_side(mov_imm(2, 1.0, F32), mov_imm(4, 0, I32), add(1, 2, 3, F32)))
    assert info.reaching[(7, "lhs")] == (-1, 3) and info.use_types[(7, "lhs")] is F32


def test_a_never_defined_register_takes_the_operands_type():
    info = verify(program(add(1, 2, 2, F64), ClsGet(dst=R(3), src=R(4)),
                          LDG(dst=R(5), src=Address.RegisterIndirect(R(6), 0), ty=F32)))
    assert info.use_types[(0, "lhs")] is F64
    assert info.use_types[(1, "src")] is U32
    assert info.use_types[(2, "src.base")] is U64
    assert info.def_types == {(0, "dst"): F64, (1, "dst"): U8, (2, "dst"): F32}


def test_loop_carried_definitions_reach_the_top_of_the_loop():
    def loop(second):
        return program(mov_imm(1, 1.0, F32), "top", add(2, 1, 1, F32), second,
                       set_lt(0, GLOBAL_ID, BLOCK_DIM_X), bra("top", 0), EXIT())
    rejects(loop(mov_imm(1, 0, I32)), r"r1 may hold f32 \(defined at 0\) or i32 \(defined at 2\)", 1)
    verify(loop(mov_imm(1, 0.0, F32)))


def test_operand_rules_ty_and_src_ty():
    rejects(program(mov_imm(1, 0, I32), add(2, 1, 1, F32)), r"operand 'lhs': r1 holds i32 \(defined at 0\), "
                                                           r"but the operand needs f32", 1)
    rejects(program(mov_imm(1, 0.5, F32), CVT(dst=R(2), src=R(1), src_ty=F64, dst_ty=I32)), "needs f64", 1)
    info = verify(program(mov_imm(1, 0.5, F32), CVT(dst=R(2), src=R(1), src_ty=F32, dst_ty=I32)))
    assert info.use_types[(1, "src")] is F32 and info.def_types[(1, "dst")] is I32


def test_operand_rule_int32():
    def shift(amount_type):
        return program(mov_imm(1, 3, amount_type), mov_imm(2, 1, U64), SHL(dst=R(3), src=R(2), amount=R(1), ty=U64))
    rejects(shift(I64), "operand 'amount': r1 holds i64 .* needs i32 or u32", 2)
    rejects(shift(F32), "needs i32 or u32", 2)
    assert verify(shift(I32)).use_types[(2, "amount")] is I32


def test_operand_rule_int():
    def classify(src_type):
        return program(mov_imm(1, 3, src_type), ClsGet(dst=R(2), src=R(1)))
    rejects(classify(F32), "needs an integer type of at most 64 bits", 1)
    rejects(classify(Type.U128), "needs an integer type of at most 64 bits", 1)
    assert verify(classify(I64)).use_types[(1, "src")] is I64


def test_address_register_rules():
    def load(base_type, space):
        address = Address.RegisterIndirect(R(1), 4)
        load_instr = LDG(dst=R(2), src=address, ty=F32) if space == "global" else LDS(dst=R(2), src=address, ty=F32)
        return program(mov_imm(1, 0, base_type), load_instr)
    rejects(load(U32, "global"), r"operand 'src.base': r1 holds u32 .* needs i64 or u64 \(a pointer\)", 1)
    assert verify(load(U64, "global")).use_types[(1, "src.base")] is U64
    assert verify(load(U32, "shared")).use_types[(1, "src.base")] is U32
    rejects(load(F32, "shared"), "operand 'src.base'.*needs an integer", 1)

    def store(handle_type, offset_type):
        address = Address.RegisterIndirectComputed(R(1), R(2))
        return program(mov_imm(1, 2, handle_type), mov_imm(2, 8, offset_type), mov_imm(3, 1.0, F32),
                       STG(dst=address, src=R(3), ty=F32))
    rejects(store(U64, U32), "operand 'dst.handle_reg': r1 holds u64 .* needs i32 or u32", 3)
    rejects(store(U32, F64), "operand 'dst.offset_reg'", 3)
    info = verify(store(U32, U64))
    assert info.use_types[(3, "dst.handle_reg")] is U32 and info.use_types[(3, "dst.offset_reg")] is U64
    assert info.use_types[(3, "src")] is F32


def test_loop_count_is_read_and_written_with_its_own_type():
    info = verify(program(mov_imm(1, 4, I32), "top", LOOP(count=R(1), body="top")))
    assert info.use_types[(1, "count")] is I32 and info.def_types[(1, "count")] is I32
    assert info.reaching[(1, "count")] == (0, 1)
    rejects(program(mov_imm(1, 4.0, F32), "top", LOOP(count=R(1), body="top")), "needs i32 or u32", 1)
    fresh = verify(program("top", LOOP(count=R(1), body="top")))
    assert fresh.def_types[(0, "count")] is U32


def test_first_error_in_program_order_is_reported():
    prog = program(mov_imm(1, 0, I32), add(2, 1, 1, F32), add(3, 1, 1, F64))
    rejects(prog, "needs f32", 1)


# ---- calls --------------------------------------------------------------------------------------------

def test_subroutine_effects_follow_only_their_own_call_site():
    # f leaves r1 alone: after each call r1 keeps the caller's type (a supergraph would mix them)
    prog = program(mov_imm(1, 1.0, F32), CALL(target="f"), add(2, 1, 1, F32),
                   mov_imm(1, 1, I32), CALL(target="f"), add(3, 1, 1, I32), EXIT(),
                   "f", mov_imm(4, 0, U32), RET())
    info = verify(prog)
    assert info.use_types[(2, "lhs")] is F32 and info.use_types[(5, "lhs")] is I32
    assert info.reaching[(2, "lhs")] == (0,) and info.reaching[(5, "lhs")] == (3,)
    assert info.max_call_depth == 1


def test_definitions_made_by_a_subroutine_reach_the_caller():
    def caller(ty):
        return program(mov_imm(1, 1.0, F32), CALL(target="f"), add(2, 1, 1, F32), EXIT(),
                       "f", mov_imm(1, 1, ty), RET())
    rejects(caller(I32), r"r1 holds i32 \(defined at 4\)", 2)
    assert verify(caller(F32)).reaching[(2, "lhs")] == (4,)


def test_a_subroutine_that_may_skip_a_definition_passes_the_callers_through():
    prog = program(mov_imm(1, 1.0, F32), CALL(target="f"), add(2, 1, 1, F32), EXIT(),
                   "f", set_lt(0, GLOBAL_ID, BLOCK_DIM_X), bra("out", 0), mov_imm(1, 1, I32), "out", RET())
    rejects(prog, r"r1 may hold f32 \(defined at 0\) or i32 \(defined at 6\)", 2)


def test_a_subroutine_sees_the_types_of_all_its_callers():
    def callers(second):
        return program(mov_imm(1, 1.0, F32), CALL(target="f"), second, CALL(target="f"), EXIT(),
                       "f", add(2, 1, 1, F32), RET())
    rejects(callers(mov_imm(1, 1, I32)), r"r1 may hold f32 \(defined at 0\) or i32 \(defined at 2\)", 5)
    verify(callers(mov_imm(1, 2.0, F32)))


def test_nested_calls_compose():
    prog = program(CALL(target="f"), add(2, 1, 1, F32), EXIT(),
                   "f", CALL(target="g"), RET(),
                   "g", mov_imm(1, 1.0, F32), RET())
    info = verify(prog)
    assert info.reaching[(1, "lhs")] == (5,) and info.max_call_depth == 2


def test_a_subroutine_that_never_returns_defines_nothing_after_the_call():
    prog = program(mov_imm(1, 1, I32), CALL(target="f"), add(2, 1, 1, F32), "f", EXIT())
    assert verify(prog).reaching[(2, "lhs")] == ()


def test_recursion_is_rejected_with_its_cycle():
    direct = program(CALL(target="f"), EXIT(), "f", CALL(target="f"), RET())
    rejects(direct, r"recursion through CALL: the CALL at 2 enters @f \(2\)", 2)
    indirect = program(CALL(target="f"), EXIT(), "f", CALL(target="g"), RET(), "g", CALL(target="f"), RET())
    error = rejects(indirect, "recursion through CALL", 2)
    assert "the CALL at 2 enters @g (4), the CALL at 4 enters @f (2)" in str(error)
    verify(program(CALL(target="f"), EXIT(), "f", CALL(target="g"), RET(), "g", RET()))


def test_recursion_into_the_main_program_is_rejected():
    rejects(program("main", mov_imm(1, 0, I32), CALL(target="main"), EXIT()), "enters @main", 1)


# ---- ProgramInfo -------------------------------------------------------------------------------------

def test_program_info_lists_and_flags():
    prog = program(PoolAlloc(dst=R(1), size=64),                                            # 0
                   LDG(dst=R(2), src=Address.Class(3, 8), ty=F32),                         # 1
                   STS(dst=Address.Shared(0), src=R(2), ty=F32),                           # 2
                   BarSync(id=0),                                                          # 3
                   ParallelMap(dst_array=Address.BufferOffset(2, 0), src_array=Address.BufferOffset(2, 0),
                               count=4, operation=MapOperation.Abs),                      # 4
                   ResAccum(class_id=R(1), value=R(2), ty=F32),                            # 5
                   PhaseAdv(delta=3),                                                      # 6
                   set_lt(0, GLOBAL_ID, 1), bra("end", 0), CALL(target="f"), "end", EXIT(),  # 7-10
                   "f", RET())                                                             # 11
    info = verify(prog)
    assert isinstance(info, ProgramInfo) and info.program is prog
    assert info.cooperative == (0, 4) and info.barriers == (3,)
    assert info.uses_shared and info.uses_boundary and info.uses_pools and info.uses_phase and info.uses_resaccum
    assert not info.uses_pointers
    assert info.targets == {8: 10, 9: 11}
    assert info.max_call_depth == 1
    assert info.registers_read == {R(1), R(2), R(GLOBAL_ID)}
    assert info.registers_written == {R(1), R(2)}
    assert info.predicates_read == {P(0)} and info.predicates_written == {P(0)}
    assert info.def_types[(0, "dst")] is U32 and info.use_types[(5, "class_id")] is U32
    assert [(a.index, a.path, a.space) for a in info.static_accesses] == [
        (1, "src", "boundary"), (2, "dst", "shared"), (4, "dst_array", "buffer"), (4, "src_array", "buffer")]
    assert info.cfg.size == len(prog) and info.divergent_branches == {8: Uniformity.VARYING}


def test_flags_are_off_for_a_plain_program():
    info = verify(program(mov_imm(1, 0, U64), PoolLoad(dst=R(2), pool=R(3), offset=R(4), ty=F32),
                          LDG(dst=R(5), src=Address.RegisterIndirect(R(1), 0), ty=F32)))
    assert info.uses_pools and info.uses_pointers
    assert not (info.uses_shared or info.uses_boundary or info.uses_phase or info.uses_resaccum)
    plain = verify(program(mov_imm(1, 0, U64)))
    assert not (plain.uses_pools or plain.uses_pointers) and plain.cooperative == () and plain.max_call_depth == 0
    boundary_by_handle = verify(program(LDG(dst=R(5), src=Address.BufferOffset(1, 0), ty=F32)))
    assert boundary_by_handle.uses_boundary


def test_unreachable_code_is_typed_by_its_operands():
    info = verify(program(EXIT(), mov_imm(1, 0, I32), add(2, 1, 1, F32)))
    assert info.use_types[(2, "lhs")] is F32 and info.reaching[(2, "lhs")] == ()
    assert 1 not in info.block_uniformity


def test_mov_keeps_its_type():
    info = verify(program(mov_imm(1, 0, I32), mov(2, 1, U32), add(3, 2, 2, U32)))
    assert info.def_types[(1, "dst")] is U32 and info.use_types[(1, "src")] is U32


# ---- random programs ---------------------------------------------------------------------------------

_LABELS = ("a", "b", "c", "d")
_TYPES = (F32, I32, U32, U64, I64)
#: a few registers (so definitions meet), the special ones that matter, predicates p0/p1
_REGS = st.sampled_from([R(i) for i in (0, 1, 2, 3)] + [R(GLOBAL_ID), R(BLOCK_DIM_X), R(253)])
#: destinations: general registers, and now and then a special one (which must be rejected)
_DSTS = st.sampled_from([R(i) for i in (0, 1, 2, 3)] * 8 + [R(GLOBAL_ID)])
_PREDS = st.sampled_from([P(0), P(1)])
_LABEL = st.sampled_from(_LABELS)


def _small_instruction() -> st.SearchStrategy:
    ty = st.sampled_from(_TYPES)
    return st.one_of(
        st.builds(lambda d, t: mov_imm(d.index, 1, t), _DSTS, ty),
        st.builds(lambda d, a, b, t: add(d.index, a.index, b.index, t), _DSTS, _REGS, _REGS, ty),
        st.builds(lambda d, s, t: ABS(dst=d, src=s, ty=t), _DSTS, _REGS, ty),
        st.builds(lambda p, a, b, t: SETcc(pred=p, lhs=a, rhs=b, cond=Condition.LT, ty=t), _PREDS, _REGS, _REGS, ty),
        st.builds(lambda d, p, a, b, t: SEL(dst=d, pred=p, true_val=a, false_val=b, ty=t), _DSTS, _PREDS, _REGS,
                  _REGS, ty),
        st.builds(lambda p, s: UnityTest(pred=p, src=s), _PREDS, _REGS),
        st.builds(lambda d: PhaseGet(dst=d), _DSTS),
        st.builds(lambda t, p, n: BRA(target=t, pred=p, negate=n and p is not None), _LABEL, st.none() | _PREDS,
                  st.booleans()),
        st.builds(lambda t: CALL(target=t), _LABEL),
        st.builds(lambda c, t: LOOP(count=c, body=t), _DSTS, _LABEL),
        st.just(RET()), st.just(EXIT()), st.just(BarSync(id=0)),
        st.just(ParallelMap(dst_array=Address.BufferOffset(2, 0), src_array=Address.BufferOffset(2, 0), count=4,
                            operation=MapOperation.Abs)),
        st.builds(lambda d: PoolAlloc(dst=d, size=16), _DSTS),
    )


@st.composite
def _small_programs(draw) -> Program:
    body = draw(st.lists(_small_instruction(), max_size=24))
    defined = draw(st.lists(_LABEL, unique=True))
    return Program(body, {name: draw(st.integers(0, len(body))) for name in defined})


def _verify_or_program_error(prog: Program, **kwargs) -> None:
    try:
        info = verify(prog, **kwargs)
    except ProgramError as error:
        assert error.reason and (error.index is None or 0 <= error.index < len(prog))
        return
    # a verified program's facts cover every read and write
    assert len(info.def_uniformity) == len(info.def_types) + sum(
        1 for (i, path) in info.def_uniformity if path == "pred")
    assert set(info.reaching) >= set(info.use_types)
    assert all(0 <= i < len(prog) for i in info.block_uniformity.keys() | {b.start for b in info.cfg.blocks})


@given(_small_programs())
def test_random_small_programs_only_raise_program_error(prog):
    _verify_or_program_error(prog, preset_types={R(0): U32})


@given(programs(max_instructions=16))
def test_random_structurally_valid_programs_only_raise_program_error(prog):
    _verify_or_program_error(prog)


def test_a_ten_thousand_instruction_program_verifies():
    # a sanity check of scale, not a timing: 600 guarded loops of lane-local arithmetic with barriers
    items: list = []
    for k in range(600):
        items += [set_lt(0, GLOBAL_ID, 1), bra(f"skip{k}", 0), mov_imm(2, 0.0, F32), mov_imm(3, 4, U32),
                  f"loop{k}", add(2, 2, 2, F32), LOOP(count=R(3), body=f"loop{k}"), f"skip{k}",
                  BarSync(id=0), mov_imm(4, k, I32), add(5, 4, 4, I32), mov(6, 5, I32),
                  add(7, 6, 6, I32), add(8, 7, 7, I32), add(9, 8, 8, I32), add(10, 9, 9, I32),
                  add(11, 10, 10, I32), add(12, 11, 11, I32)]
    items.append(EXIT())
    prog = program(*items)
    assert len(prog) >= 9000
    info = verify(prog, preset_types={R(1): U32})
    assert len(info.barriers) == 600 and info.use_types[(len(prog) - 2, "lhs")] is I32
    assert len(info.cfg.blocks) == 600 * 3 + 1  # [guard] [loop set-up] [loop body] ... then the next guard


def test_calls_and_loops_may_target_the_end():
    info = verify(program(CALL(target="end"), mov_imm(1, 4, U32), LOOP(count=R(1), body="end"), "end"))
    assert info.targets == {0: 3, 2: 3} and info.max_call_depth == 1
    assert info.reaching[(2, "count")] == (1,)


def test_error_text_falls_back_to_repr_when_the_instruction_cannot_be_formatted(monkeypatch):
    import atlas_web.asm

    def broken(instr):
        raise RuntimeError("no formatter")
    monkeypatch.setattr(atlas_web.asm, "format_instruction", broken)
    error = rejects(program(mov_imm(1, 0, I32), add(2, 1, 1, F32)), "needs f32", 1)
    assert error.text == repr(add(2, 1, 1, F32))
