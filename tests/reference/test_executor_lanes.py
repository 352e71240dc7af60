"""Reference executor lane state: special registers of a 3-D launch, presets, register types under divergence."""

from __future__ import annotations

import pytest

from atlas_web import LaunchConfig
from atlas_web.isa import (
    ADD, BRA, MOV, MOV_IMM, STG, Address, Condition, Predicate, SETcc, SpecialRegister, Type,
)
from atlas_web.reference import CpuBackend

from .executor_helpers import decode, lane_pointer, pointer, prog, r, run

COVERS = [("MOV", Type.U32), ("MOV_IMM", Type.I32), ("MOV_IMM", Type.F32), ("MOV_IMM", Type.U256),
          ("ADD", Type.U32), ("STG", Type.U32), ("STG", Type.F32), ("STG", Type.I32), ("STG", Type.U256)]

U32, U64 = Type.U32, Type.U64
P0 = Predicate(0)


@pytest.fixture
def backend():
    return CpuBackend()


def _store(out_reg: int, value_reg: int, ty: Type) -> list:
    return [*lane_pointer(r(out_reg + 1), r(out_reg), ty.size_bytes(), r(99)),
            STG(dst=Address.RegisterIndirect(r(out_reg + 1)), src=r(value_reg), ty=ty)]


def test_special_registers_of_a_three_dimensional_launch(backend):
    config = LaunchConfig(grid=(2, 3, 2), block=(2, 2, 3))
    n = config.total_threads
    specials = list(SpecialRegister)
    outs = [backend.allocate_buffer(4 * n) for _ in specials]
    code, registers = [], {}
    for k, (special, out) in enumerate(zip(specials, outs)):
        registers[r(100 + 2 * k)] = (U64, pointer(out))
        code += _store(100 + 2 * k, special.value, U32)
    run(backend, prog(*code), config, registers=registers)
    (gx, gy, gz), (bx, by, bz) = config.grid, config.block
    for special, out in zip(specials, outs):
        got = decode(U32, backend.copy_from_buffer(out))
        for gid in range(n):
            block, lane = divmod(gid, bx * by * bz)
            expected = {
                SpecialRegister.GLOBAL_LANE_ID: gid,
                SpecialRegister.LANE_IDX_X: lane % bx, SpecialRegister.LANE_IDX_Y: lane // bx % by,
                SpecialRegister.LANE_IDX_Z: lane // (bx * by),
                SpecialRegister.BLOCK_IDX_X: block % gx, SpecialRegister.BLOCK_IDX_Y: block // gx % gy,
                SpecialRegister.BLOCK_IDX_Z: block // (gx * gy),
                SpecialRegister.BLOCK_DIM_X: bx, SpecialRegister.BLOCK_DIM_Y: by, SpecialRegister.BLOCK_DIM_Z: bz,
                SpecialRegister.GRID_DIM_X: gx, SpecialRegister.GRID_DIM_Y: gy, SpecialRegister.GRID_DIM_Z: gz,
            }[special]
            assert got[gid] == expected, (special, gid)


def test_preset_registers_are_uniform_typed_values(backend):
    out_u, out_x = backend.allocate_buffer(4 * 4), backend.allocate_buffer(32 * 4)
    program = prog(ADD(dst=r(3), lhs=r(1), rhs=r(255), ty=U32), *_store(10, 3, U32), *_store(20, 2, Type.U256))
    big = (1 << 255) + 12345
    run(backend, program, 4, registers={r(1): (U32, 1000), r(2): (Type.U256, big),
                                        r(10): (U64, pointer(out_u)), r(20): (U64, pointer(out_x))})
    assert decode(U32, backend.copy_from_buffer(out_u)) == [1000, 1001, 1002, 1003]
    assert decode(Type.U256, backend.copy_from_buffer(out_x)) == [big] * 4


def test_a_register_written_with_two_types_by_divergent_lanes_keeps_each_lanes_value(backend):
    # lane 0 writes r1 as i32 first; the other lanes then write it as f32; lane 0 reads its i32
    # afterwards: each lane must see its own value, not a zero-filled array of the other type
    out_i, out_f = backend.allocate_buffer(4 * 8), backend.allocate_buffer(4 * 8)
    program = prog(MOV_IMM(dst=r(2), value=1, ty=U32),                                  # 0
                   SETcc(pred=P0, lhs=r(255), rhs=r(2), cond=Condition.GE, ty=U32),     # 1: lanes >= 1 …
                   BRA(target="other", pred=P0),                                          # 2
                   MOV_IMM(dst=r(1), value=-7, ty=Type.I32),                              # 3: lane 0
                   BRA(target="late"),                                                    # 4
                   MOV_IMM(dst=r(1), value=2.5, ty=Type.F32),                             # 5: other lanes
                   *_store(30, 1, Type.F32),                                              # 6 … 10
                   BRA(target="end"),                                                     # 11
                   *_store(40, 1, Type.I32),                                              # 12 … 16: late
                   other=5, late=12, end=17)
    run(backend, program, 8, registers={r(30): (U64, pointer(out_f)), r(40): (U64, pointer(out_i))})
    assert decode(Type.I32, backend.copy_from_buffer(out_i)) == [-7] + [0] * 7
    assert decode(Type.F32, backend.copy_from_buffer(out_f)) == [0.0] + [2.5] * 7


def test_same_width_integers_of_the_other_signedness_reinterpret_the_bits(backend):
    out = backend.allocate_buffer(4 * 4)
    program = prog(MOV_IMM(dst=r(1), value=-1, ty=Type.I32),
                   MOV(dst=r(2), src=r(1), ty=U32),                  # i32 -1 read as u32
                   ADD(dst=r(2), lhs=r(2), rhs=r(255), ty=U32),      # 0xFFFFFFFF + lane wraps
                   *_store(10, 2, U32))
    run(backend, program, 4, registers={r(10): (U64, pointer(out))})
    assert decode(U32, backend.copy_from_buffer(out)) == [0xFFFFFFFF, 0, 1, 2]
