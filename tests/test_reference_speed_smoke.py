"""Smoke test of the reference backend's fast path: a million lanes run and give NumPy's result.

No timing is asserted here (benchmarks/reference_lanes.py measures it).
"""

from __future__ import annotations

import numpy as np

from atlas_web import LaunchConfig, Program
from atlas_web.isa import ADD, CVT, MOV_IMM, MUL, STG, Address, Register, Type
from atlas_web.reference import CpuBackend

LANES = 1 << 20


def test_a_million_lanes_of_ten_arithmetic_instructions():
    r = Register
    backend = CpuBackend()
    out = backend.allocate_buffer(4 * LANES)
    program = Program([
        CVT(dst=r(1), src=r(255), src_ty=Type.U32, dst_ty=Type.F32), MOV_IMM(dst=r(2), value=1.5, ty=Type.F32),
        *[(MUL if k % 2 == 0 else ADD)(dst=r(1), lhs=r(1), rhs=r(2), ty=Type.F32) for k in range(8)],
        CVT(dst=r(3), src=r(255), src_ty=Type.U32, dst_ty=Type.U64), MOV_IMM(dst=r(4), value=4, ty=Type.U64),
        MUL(dst=r(3), lhs=r(3), rhs=r(4), ty=Type.U64),
        MOV_IMM(dst=r(5), value=int(out) << 32, ty=Type.U64), ADD(dst=r(3), lhs=r(3), rhs=r(5), ty=Type.U64),
        STG(dst=Address.RegisterIndirect(r(3)), src=r(1), ty=Type.F32),
    ])
    backend.execute_program(program, LaunchConfig.linear(LANES))
    expected = np.arange(LANES, dtype=np.uint32).astype(np.float32)
    for k in range(8):
        expected = expected * np.float32(1.5) if k % 2 == 0 else expected + np.float32(1.5)
    assert np.array_equal(backend.copy_typed_from(out, Type.F32), expected)
