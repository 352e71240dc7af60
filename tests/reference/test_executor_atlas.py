"""Reference executor Atlas state: the resonance accumulator (ResAccum) and the per-lane phase."""

from __future__ import annotations

import pytest

from atlas_web import TrapCode
from atlas_web.isa import (
    ADD, CVT, MOV_IMM, MUL, REM, STG, Address, PhaseAdv, PhaseGet, PhaseWrite, ResAccum, Type,
)
from atlas_web.reference import CpuBackend

from .executor_helpers import decode, lane_pointer, pointer, prog, r, run, trap_of

COVERS = [("ResAccum", Type.F32), ("ResAccum", Type.F64), ("PhaseGet", None), ("PhaseAdv", None),
          ("PhaseWrite", None)]

U32, U64 = Type.U32, Type.U64


@pytest.fixture
def backend():
    return CpuBackend()


def _store_u32(value_reg: int) -> list:
    return [*lane_pointer(r(51), r(50), 4, r(52)), STG(dst=Address.RegisterIndirect(r(51)), src=r(value_reg), ty=U32)]


@pytest.mark.parametrize("ty", [Type.F32, Type.F64], ids=lambda t: t.name)
def test_res_accum_sums_per_class_and_is_zeroed_at_each_launch(backend, ty):
    assert backend.resonance_accumulator() == [0.0] * 96
    # lane k adds (k + 0.5) to class (k mod 3) * 40 + 1: classes 1, 41, 81
    program = prog(MOV_IMM(dst=r(1), value=3, ty=U32),
                   MOV_IMM(dst=r(3), value=40, ty=U32),
                   MOV_IMM(dst=r(4), value=1, ty=U32),
                   REM(dst=r(5), lhs=r(255), rhs=r(1), ty=U32),
                   MUL(dst=r(5), lhs=r(5), rhs=r(3), ty=U32),
                   ADD(dst=r(5), lhs=r(5), rhs=r(4), ty=U32),
                   CVT(dst=r(6), src=r(255), src_ty=U32, dst_ty=ty),
                   MOV_IMM(dst=r(7), value=0.5, ty=ty),
                   ADD(dst=r(6), lhs=r(6), rhs=r(7), ty=ty),
                   ResAccum(class_id=r(5), value=r(6), ty=ty))
    for _ in range(2):
        run(backend, program, 12)
        sums = backend.resonance_accumulator()
        expected = [0.0] * 96
        for k in range(12):
            expected[(k % 3) * 40 + 1] += k + 0.5
        assert sums == expected


def test_res_accum_widens_f32_exactly(backend):
    tiny = 2.0 ** -30  # exact in f32; an f32 sum of 1 + tiny would lose it, an f64 one keeps it
    program = prog(MOV_IMM(dst=r(1), value=7, ty=Type.I16),
                   MOV_IMM(dst=r(2), value=1.0, ty=Type.F32), MOV_IMM(dst=r(3), value=tiny, ty=Type.F32),
                   ResAccum(class_id=r(1), value=r(2), ty=Type.F32), ResAccum(class_id=r(1), value=r(3), ty=Type.F32))
    run(backend, program, 1)
    assert backend.resonance_accumulator()[7] == 1.0 + tiny


def test_a_trapping_res_accum_leaves_the_backend_usable(backend):
    program = prog(MOV_IMM(dst=r(1), value=96, ty=U32), MOV_IMM(dst=r(2), value=1.0, ty=Type.F64),
                   ResAccum(class_id=r(1), value=r(2), ty=Type.F64))
    assert trap_of(backend, program, 3) == (TrapCode.INVALID_CLASS, 2, 0)
    run(backend, prog(MOV_IMM(dst=r(1), value=95, ty=Type.U8), MOV_IMM(dst=r(2), value=2.0, ty=Type.F64),
                      ResAccum(class_id=r(1), value=r(2), ty=Type.F64)), 3)
    assert backend.resonance_accumulator()[95] == 6.0


def test_phase_starts_at_zero_advances_and_wraps_per_lane(backend):
    out_start, out_adv, out_write = (backend.allocate_buffer(4 * 8) for _ in range(3))
    program = prog(PhaseGet(dst=r(1)),
                   *_store_u32(1),
                   PhaseAdv(delta=700), PhaseAdv(delta=100),                 # 800 mod 768 = 32
                   PhaseGet(dst=r(2)),
                   *_store_at(53, 2),
                   CVT(dst=r(3), src=r(255), src_ty=U32, dst_ty=Type.I32),
                   MOV_IMM(dst=r(4), value=-1000, ty=Type.I32),
                   MUL(dst=r(3), lhs=r(3), rhs=r(4), ty=Type.I32),             # lane k: -1000 k
                   PhaseWrite(src=r(3)),
                   PhaseAdv(delta=0xFFFFFFFF),
                   PhaseGet(dst=r(5)),
                   *_store_at(56, 5))
    run(backend, program, 8, registers={r(50): (U64, pointer(out_start)), r(53): (U64, pointer(out_adv)),
                                        r(56): (U64, pointer(out_write))})
    assert decode(U32, backend.copy_from_buffer(out_start)) == [0] * 8
    assert decode(U32, backend.copy_from_buffer(out_adv)) == [32] * 8
    # PhaseWrite reads its source unsigned: (2**32 - 1000 k) mod 768, then + (2**32 - 1) mod 768
    expected = [(((-1000 * k) % (1 << 32)) % 768 + 0xFFFFFFFF) % 768 for k in range(8)]
    assert decode(U32, backend.copy_from_buffer(out_write)) == expected


def _store_at(out_reg: int, value_reg: int) -> list:
    return [*lane_pointer(r(out_reg + 1), r(out_reg), 4, r(60)),
            STG(dst=Address.RegisterIndirect(r(out_reg + 1)), src=r(value_reg), ty=U32)]


def test_phase_is_reset_at_each_launch(backend):
    out = backend.allocate_buffer(4 * 4)
    program = prog(PhaseGet(dst=r(1)), PhaseAdv(delta=5), *_store_u32(1))
    for _ in range(2):
        run(backend, program, 4, registers={r(50): (U64, pointer(out))})
        assert decode(U32, backend.copy_from_buffer(out)) == [0] * 4
