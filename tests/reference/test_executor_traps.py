"""Reference executor traps: every code with its exact (code, instruction index, lane), check order,
the lowest-lane rule across a stage, stages, and a backend that stays usable."""

from __future__ import annotations

import pytest

from atlas_web import LaunchConfig, Program, TrapCode
from atlas_web.isa import (
    ADD, BRA, CVT, DIV, EXIT, LDG, LDS, MIRROR, MOV_IMM, MUL, REM, STG, Address, BinaryMapOperation, BoundMap,
    Condition, ParallelMapBinary, PoolLoad, PoolStore, Predicate, ResAccum, SETcc, SUB, Type,
)
from atlas_web.reference import CpuBackend

from .executor_helpers import decode, lane_pointer, pointer, prog, r, run, trap_of, typed_bytes

COVERS = [("DIV", Type.I32), ("REM", Type.I64), ("DIV", Type.U8), ("MIRROR", None), ("BoundMap", None),
          ("ResAccum", Type.F32), ("LDG", Type.F32), ("LDG", Type.I128), ("LDS", Type.U32), ("STG", Type.I32),
          ("PoolLoad", Type.U16), ("PoolStore", Type.U16), ("BRA", None), ("EXIT", None)]

U64, U32 = Type.U64, Type.U32
P0 = Predicate(0)


@pytest.fixture
def backend():
    return CpuBackend()


def _lane_u32(dst: int, scale: int, ty: Type = U32) -> list:
    """``r[dst]`` := GLOBAL_LANE_ID * scale as ``ty`` (uses r60)."""
    return [CVT(dst=r(dst), src=r(255), src_ty=U32, dst_ty=ty), MOV_IMM(dst=r(60), value=scale, ty=ty),
            MUL(dst=r(dst), lhs=r(dst), rhs=r(60), ty=ty)]


def _lane_load(stride: int, ty: Type = Type.F32, offset: int = 0) -> list:
    """Load ``ty`` at the pointer in r10 + lane * ``stride`` + ``offset`` (the LDG is instruction 4)."""
    return [*lane_pointer(r(12), r(10), stride, r(13)),
            LDG(dst=r(1), src=Address.RegisterIndirect(r(12), offset), ty=ty)]


def test_invalid_handle_null_pointer(backend):
    program = prog(*_lane_load(4))
    assert trap_of(backend, program, 8, registers={r(10): (U64, 0)}) == (TrapCode.INVALID_HANDLE, 4, 0)


def test_invalid_handle_of_a_freed_buffer_and_of_a_handle_never_given(backend):
    gone = backend.allocate_buffer(64)
    backend.free_buffer(gone)
    program = prog(*_lane_load(4))
    assert trap_of(backend, program, 4, registers={r(10): (U64, pointer(gone))}) == (TrapCode.INVALID_HANDLE, 4, 0)
    assert trap_of(backend, program, 4, registers={r(10): (U64, pointer(77))}) == (TrapCode.INVALID_HANDLE, 4, 0)


def test_out_of_bounds_past_the_end(backend):
    buf = backend.allocate_buffer(16)  # four f32: lanes 4 … 7 are outside
    program = prog(*_lane_load(4))
    assert trap_of(backend, program, 8, registers={r(10): (U64, pointer(buf))}) == (TrapCode.OUT_OF_BOUNDS, 4, 4)


def test_out_of_bounds_by_a_negative_register_offset(backend):
    buf = backend.allocate_buffer(64)
    program = prog(*_lane_load(4, offset=-4))
    assert trap_of(backend, program, 8, registers={r(10): (U64, pointer(buf))}) == (TrapCode.OUT_OF_BOUNDS, 4, 0)


def test_out_of_bounds_by_a_computed_offset_beyond_32_bits(backend):
    # offsets 2**32 + 4 * lane: wrapped to 32 bits they would lie inside the buffer
    buf = backend.allocate_buffer(64)
    program = prog(*_lane_u32(12, 4, U64), MOV_IMM(dst=r(13), value=1 << 32, ty=U64),
                   ADD(dst=r(12), lhs=r(12), rhs=r(13), ty=U64),
                   LDG(dst=r(1), src=Address.RegisterIndirectComputed(r(10), r(12)), ty=Type.F32))
    assert trap_of(backend, program, 4, registers={r(10): (U32, int(buf))}) == (TrapCode.OUT_OF_BOUNDS, 5, 0)


def test_misaligned_scalar_and_extended(backend):
    buf = backend.allocate_buffer(256)
    program = prog(*_lane_load(2))
    assert trap_of(backend, program, 8, registers={r(10): (U64, pointer(buf))}) == (TrapCode.MISALIGNED, 4, 1)
    wide = prog(*_lane_load(4, Type.I128))
    # I128 aligns to 8 bytes: lane 1 (offset 4) is the first misaligned one
    assert trap_of(backend, wide, 8, registers={r(10): (U64, pointer(buf))}) == (TrapCode.MISALIGNED, 4, 1)


def test_checks_are_made_handle_then_bounds_then_alignment(backend):
    buf = backend.allocate_buffer(8)
    program = prog(*_lane_load(4, offset=2))
    # every lane is misaligned; lane 0 names no buffer, so its trap is INVALID_HANDLE
    assert trap_of(backend, program, 4, registers={r(10): (U64, pointer(999))}) == (TrapCode.INVALID_HANDLE, 4, 0)
    # lanes 0 and 1 are misaligned only, lanes 2 and 3 out of bounds too: lane 0 reports MISALIGNED
    assert trap_of(backend, program, 4, registers={r(10): (U64, pointer(buf))}) == (TrapCode.MISALIGNED, 4, 0)
    outside = prog(*_lane_load(4, offset=10))
    assert trap_of(backend, outside, 4, registers={r(10): (U64, pointer(buf))}) == (TrapCode.OUT_OF_BOUNDS, 4, 0)


def test_pool_access_through_a_buffer_handle_is_an_invalid_handle(backend):
    buf = backend.allocate_buffer(64)
    program = prog(PoolLoad(dst=r(1), pool=r(10), offset=r(11), ty=Type.U16))
    assert trap_of(backend, program, 4, registers={r(10): (U32, int(buf))}) == (TrapCode.INVALID_HANDLE, 0, 0)
    pool = backend.allocate_pool(64)
    backend.free_pool(pool)
    store = prog(MOV_IMM(dst=r(2), value=1, ty=Type.U16), PoolStore(pool=r(10), offset=r(11), src=r(2), ty=Type.U16))
    assert trap_of(backend, store, 4, registers={r(10): (U32, int(pool))}) == (TrapCode.INVALID_HANDLE, 1, 0)


def test_shared_memory_out_of_bounds_and_misaligned(backend):
    config = LaunchConfig(grid=(2, 1, 1), block=(8, 1, 1), shared_memory=16)
    outside = prog(*_lane_u32(12, 4), LDS(dst=r(1), src=Address.RegisterIndirect(r(12)), ty=U32))
    assert trap_of(backend, outside, config) == (TrapCode.OUT_OF_BOUNDS, 3, 4)
    crooked = prog(*_lane_u32(12, 1), LDS(dst=r(1), src=Address.RegisterIndirect(r(12)), ty=U32))
    assert trap_of(backend, crooked, config) == (TrapCode.MISALIGNED, 3, 1)


@pytest.mark.parametrize("ty", [Type.I32, Type.U8], ids=lambda t: t.name)
def test_division_by_zero(backend, ty):
    # divisor = lane - 5 wraps for lanes below 5; lane 5 divides by zero
    program = prog(CVT(dst=r(1), src=r(255), src_ty=U32, dst_ty=ty), MOV_IMM(dst=r(2), value=5, ty=ty),
                   SUB(dst=r(3), lhs=r(1), rhs=r(2), ty=ty), MOV_IMM(dst=r(4), value=100, ty=ty),
                   DIV(dst=r(5), lhs=r(4), rhs=r(3), ty=ty))
    assert trap_of(backend, program, 8) == (TrapCode.DIVISION_BY_ZERO, 4, 5)


def test_integer_overflow_min_by_minus_one(backend):
    low = -(1 << 63)
    program = prog(MOV_IMM(dst=r(1), value=low, ty=Type.I64), CVT(dst=r(2), src=r(255), src_ty=U32, dst_ty=Type.I64),
                   MOV_IMM(dst=r(3), value=3, ty=Type.I64),
                   SUB(dst=r(2), lhs=r(2), rhs=r(3), ty=Type.I64),                              # lane 2: -1
                   REM(dst=r(4), lhs=r(1), rhs=r(2), ty=Type.I64))
    assert trap_of(backend, program, 8) == (TrapCode.INTEGER_OVERFLOW, 4, 2)


def test_invalid_class_from_mirror_and_res_accum(backend):
    program = prog(*_lane_u32(1, 13), MIRROR(dst=r(2), src=r(1)))   # lane 8: class 104
    assert trap_of(backend, program, 10) == (TrapCode.INVALID_CLASS, 3, 8)
    accum = prog(*_lane_u32(1, 20), MOV_IMM(dst=r(2), value=1.0, ty=Type.F32),
                 ResAccum(class_id=r(1), value=r(2), ty=Type.F32))
    assert trap_of(backend, accum, 8) == (TrapCode.INVALID_CLASS, 4, 5)
    negative = prog(MOV_IMM(dst=r(1), value=-1, ty=Type.I32), MOV_IMM(dst=r(2), value=1.0, ty=Type.F32),
                    ResAccum(class_id=r(1), value=r(2), ty=Type.F32))
    assert trap_of(backend, negative, 2) == (TrapCode.INVALID_CLASS, 2, 0)


def test_bound_map_page_out_of_bounds(backend):
    program = prog(MOV_IMM(dst=r(1), value=3, ty=U32), *_lane_u32(2, 7), MOV_IMM(dst=r(3), value=0, ty=U32),
                   BoundMap(dst=r(4), class_id=r(1), page=r(2), byte=r(3)))   # lane 7: page 49
    assert trap_of(backend, program, 8) == (TrapCode.OUT_OF_BOUNDS, 5, 7)


def test_lowest_lane_of_the_stage_wins_even_when_it_traps_later(backend):
    # Lanes >= 4 run the early path, where lane 6 divides by zero at 6. Lanes < 4 take the later
    # path and load an f32 at byte offset = lane id at 9: lanes 1, 2, 3 are misaligned, after
    # lane 6 trapped. The stage runs to its end and the lowest lane, 1, is reported.
    buf = backend.allocate_buffer(64)
    program = prog(MOV_IMM(dst=r(1), value=4, ty=U32),                                  # 0
                   SETcc(pred=P0, lhs=r(255), rhs=r(1), cond=Condition.LT, ty=U32),     # 1
                   BRA(target="late", pred=P0),                                           # 2
                   MOV_IMM(dst=r(2), value=6, ty=U32),                                    # 3
                   SUB(dst=r(3), lhs=r(255), rhs=r(2), ty=U32),                           # 4: zero in lane 6
                   MOV_IMM(dst=r(4), value=1, ty=U32),                                    # 5
                   DIV(dst=r(6), lhs=r(4), rhs=r(3), ty=U32),                             # 6
                   EXIT(),                                                                # 7
                   CVT(dst=r(12), src=r(255), src_ty=U32, dst_ty=U64),                    # 8: late
                   LDG(dst=r(7), src=Address.RegisterIndirectComputed(r(11), r(12)), ty=Type.F32),  # 9
                   late=8)
    assert trap_of(backend, program, 8, registers={r(11): (U32, int(buf))}) == (TrapCode.MISALIGNED, 9, 1)


def test_a_trap_in_an_earlier_stage_stops_the_launch_before_the_next(backend):
    a, b, c = (backend.allocate_buffer(64) for _ in range(3))
    backend.copy_to_buffer(a, typed_bytes(Type.F32, [1.0] * 16))
    backend.copy_to_buffer(b, typed_bytes(Type.F32, [2.0] * 16))
    program = prog(MOV_IMM(dst=r(1), value=7, ty=U32),
                   SUB(dst=r(2), lhs=r(255), rhs=r(1), ty=U32),                          # zero in lane 7
                   DIV(dst=r(3), lhs=r(1), rhs=r(2), ty=U32),              # 2: lane 7 traps
                   ParallelMapBinary(dst_array=Address.BufferOffset(handle=c, offset=0),
                                     src_a=Address.BufferOffset(handle=a, offset=0),
                                     src_b=Address.BufferOffset(handle=b, offset=0), count=16,
                                     operation=BinaryMapOperation.Add),
                   DIV(dst=r(3), lhs=r(1), rhs=r(4), ty=U32))              # 4: every lane would trap
    assert trap_of(backend, program, 8) == (TrapCode.DIVISION_BY_ZERO, 2, 7)
    assert decode(Type.F32, backend.copy_from_buffer(c)) == [0.0] * 16     # the next stage never ran


def test_the_backend_stays_usable_after_a_trap(backend):
    buf = backend.allocate_buffer(16)
    bad = prog(*lane_pointer(r(12), r(10), 4, r(13)), STG(dst=Address.RegisterIndirect(r(12)), src=r(255), ty=Type.I32))
    assert trap_of(backend, bad, 8, registers={r(10): (U64, pointer(buf))}) == (TrapCode.OUT_OF_BOUNDS, 4, 4)
    run(backend, bad, 4, registers={r(10): (U64, pointer(buf))})
    assert decode(Type.I32, backend.copy_from_buffer(buf)) == [0, 1, 2, 3]
    assert backend.allocate_buffer(4) == buf + 1


def test_trap_messages_name_the_instruction_text_and_what_went_wrong(backend):
    from atlas_web import AtlasTrap
    program = prog(MOV_IMM(dst=r(1), value=7, ty=Type.I32), MOV_IMM(dst=r(2), value=0, ty=Type.I32),
                   DIV(dst=r(3), lhs=r(1), rhs=r(2), ty=Type.I32))
    with pytest.raises(AtlasTrap) as caught:
        run(backend, program, 4)
    assert str(caught.value) == ("trap DIVISION_BY_ZERO at instruction 2 in lane 0: div.i32 r3, r1, r2: "
                                 "lhs = 7, rhs = 0: an integer division or remainder by zero")
    small = backend.allocate_buffer(4)
    step = prog(ParallelMapBinary(dst_array=Address.RegisterIndirect(r(10)), src_a=Address.BufferOffset(small),
                                  src_b=Address.BufferOffset(small), count=1, operation=BinaryMapOperation.Add))
    with pytest.raises(AtlasTrap, match=r"in the cooperative step: pmap2\.add\.f32 \[r10 \+ 0\], .*: dst_array: "
                                        r"handle 0 names no live buffer or pool"):
        run(backend, step, 1, registers={r(10): (U64, 0)})


def test_budget_trap_message_names_the_budget():
    from atlas_web import AtlasTrap, ExecutionParams
    with pytest.raises(AtlasTrap, match=r"bra @x: more than the execution budget of 5 backward jumps"):
        CpuBackend().execute_program_with_params(
            Program.from_text("x:\n    bra @x"), ExecutionParams(LaunchConfig(), budget=5))


def test_every_trap_code_has_a_meaning():
    assert all(code.meaning and code.meaning[0].islower() for code in TrapCode)


def test_a_per_lane_reduction_far_outside_its_buffer_traps_without_reading_it(backend):
    from atlas_web.isa import ReduceAdd
    buf = backend.allocate_buffer(8)
    program = prog(ReduceAdd(dst=r(1), src_array=Address.RegisterIndirect(r(10)), count=(1 << 32) - 1, ty=Type.F32))
    assert trap_of(backend, program, 64, registers={r(10): (U64, pointer(buf))}) == (TrapCode.OUT_OF_BOUNDS, 0, 0)
