"""Traps on WebGpuBackend report what the reference reports (code, instruction index, lowest lane of
the earliest trapping stage), leave the backend usable, and the per-launch Atlas state (ResAccum
sums, phase) matches the reference."""

from __future__ import annotations

import asyncio
import math
import struct
from fractions import Fraction

import pytest

from atlas_web import ExecutionFailed, ExecutionParams, LaunchConfig
from atlas_web.errors import TrapCode
from atlas_web.isa import (
    BoundMap, CVT, DIV, LDG, MIRROR, MOV_IMM, NbrGet, PhaseAdv, PhaseGet, PhaseWrite, PoolLoad, REM, ResAccum,
    STG, SUB, Address, BarSync, ParallelMap, MapOperation, Register as R, Type,
)
from tests.lowering.programs import GID, program

from .harness import assert_matches_reference, fresh_backend, run_on
from .test_memory import lane_pointer

CONFIG = LaunchConfig(grid=(3, 1, 1), block=(8, 1, 1))
U32, U64 = Type.U32, Type.U64


def _lane_value(dst: int, ty: Type, subtract: int = 0) -> list:
    """r<dst> (of ty) = GLOBAL_LANE_ID - subtract."""
    return [CVT(dst=R(dst), src=R(GID), src_ty=U32, dst_ty=ty), MOV_IMM(dst=R(90), value=subtract, ty=ty),
            SUB(dst=R(dst), lhs=R(dst), rhs=R(90), ty=ty)]


@pytest.mark.parametrize("ty", [Type.I8, Type.U16, Type.I32, Type.I64, Type.U128, Type.I256])
@pytest.mark.parametrize("operation", [DIV, REM])
def test_division_by_zero_and_overflow_trap_at_the_lowest_lane(gpu_driver, ty, operation):
    lo = ty.int_range()[0]
    body = [*_lane_value(1, ty, 13), MOV_IMM(dst=R(2), value=lo, ty=ty), *_lane_value(3, ty, 9),
            operation(dst=R(4), lhs=R(2), rhs=R(3), ty=ty),          # lane 9 divides by zero
            operation(dst=R(5), lhs=R(2), rhs=R(1), ty=ty),          # lane 12 divides MIN by -1 (signed types)
            *lane_pointer(10, 2, ty.size_bytes()), STG(dst=Address.RegisterIndirect(R(10), 0), src=R(5), ty=ty)]
    got = assert_matches_reference(gpu_driver, program(body), CONFIG, [bytes(ty.size_bytes() * 24)])
    assert got.trap is not None and got.trap[2] in (8, 9)


def test_address_traps_in_their_order_with_the_reference(gpu_driver):
    freed_pointer = 3 << 32
    cases = [
        [MOV_IMM(dst=R(1), value=freed_pointer, ty=U64), LDG(dst=R(2), src=Address.RegisterIndirect(R(1), 0), ty=U32)],
        [MOV_IMM(dst=R(1), value=0, ty=U64), LDG(dst=R(2), src=Address.RegisterIndirect(R(1), 0), ty=U32)],
        [*lane_pointer(1, 2, 4), LDG(dst=R(2), src=Address.RegisterIndirect(R(1), -4), ty=U32)],
        [*lane_pointer(1, 2, 2), LDG(dst=R(2), src=Address.RegisterIndirect(R(1), 0), ty=Type.I64)],
        [MOV_IMM(dst=R(3), value=2, ty=U32), MOV_IMM(dst=R(4), value=1 << 40, ty=U64),
         LDG(dst=R(2), src=Address.RegisterIndirectComputed(R(3), R(4)), ty=U32)],
        [MOV_IMM(dst=R(3), value=2, ty=U32), *_lane_value(4, U32), PoolLoad(dst=R(2), pool=R(3), offset=R(4), ty=U32)],
        [*_lane_value(1, U32, -80), MIRROR(dst=R(2), src=R(1)), NbrGet(dst=R(3), class_id=R(2), index=R(GID))],
        [*_lane_value(1, Type.I16, -80), BoundMap(dst=R(2), class_id=R(1), page=R(GID), byte=R(GID))],
    ]
    for number, body in enumerate(cases):
        got = assert_matches_reference(gpu_driver, program(body), CONFIG, [bytes(64)])
        assert got.trap is not None, f"case {number}"


def test_the_earliest_trapping_stage_wins_and_the_backend_stays_usable(gpu_driver):
    body = [*lane_pointer(1, 2, 4), MOV_IMM(dst=R(5), value=7, ty=U32),
            STG(dst=Address.RegisterIndirect(R(1), 0), src=R(5), ty=U32),
            LDG(dst=R(2), src=Address.RegisterIndirect(R(1), 4 * 24), ty=U32),      # lanes 0..: OOB from lane 0
            ParallelMap(dst_array=Address.BufferOffset(handle=2, offset=0),
                        src_array=Address.BufferOffset(handle=2, offset=0), count=4, operation=MapOperation.Neg,
                        ty=Type.I32),
            DIV(dst=R(3), lhs=R(5), rhs=R(2), ty=U32)]
    config = LaunchConfig(grid=(4, 1, 1), block=(6, 1, 1))
    got = assert_matches_reference(gpu_driver, program(body), config, [bytes(4 * 24)])
    assert got.trap == (TrapCode.OUT_OF_BOUNDS, 7, 0)
    backend = fresh_backend(gpu_driver)
    try:
        assert run_on(backend, program(body), config, [bytes(4 * 24)]).trap == got.trap
        # the next buffer gets handle 3: the same stores through it run cleanly
        fine = run_on(backend, program([*lane_pointer(1, 3, 4), *body[5:7]]), config, [bytes(4 * 24)])
        assert fine.trap is None and fine.buffers[0] == (7).to_bytes(4, "little") * 24
    finally:
        backend.close()



def test_resonance_sums_are_exact_and_reset_at_each_launch(gpu_driver):
    values = [1.5, -2.25, 1e-30, 3e38, 3e38, -7.0, float("inf")]
    data = b"".join(struct.pack("<f", v) for v in values * 4)
    body = [*lane_pointer(1, 2, 4), LDG(dst=R(2), src=Address.RegisterIndirect(R(1), 0), ty=Type.F32),
            MOV_IMM(dst=R(3), value=7, ty=U32), DIV(dst=R(4), lhs=R(GID), rhs=R(3), ty=U32),
            ResAccum(class_id=R(4), value=R(2), ty=Type.F32)]
    config = LaunchConfig.linear(len(values) * 4 - 1)
    backend = fresh_backend(gpu_driver)
    try:
        got = run_on(backend, program(body), config, [data])
        singles = struct.unpack("<6f", data[:24])     # lanes 21..26 (class 3): the finite values, as f32
        exact = float(sum((Fraction(v) for v in singles), Fraction(0)))
        assert got.resonance[:4] == [math.inf, math.inf, math.inf, exact] and got.resonance[4:] == [0.0] * 92
        again = run_on(backend, program(body[:2]), config, [data])
        assert again.resonance == [0.0] * 96
    finally:
        backend.close()


def test_phase_advances_and_wraps_across_a_barrier_and_a_stage(gpu_driver):
    body = [PhaseAdv(delta=700), *_lane_value(1, U64, 0), MOV_IMM(dst=R(2), value=(1 << 40) + 5, ty=U64),
            BarSync(id=0), PhaseAdv(delta=(1 << 32) - 1), PhaseGet(dst=R(3)),
            ParallelMap(dst_array=Address.BufferOffset(handle=3, offset=0),
                        src_array=Address.BufferOffset(handle=3, offset=0), count=1, operation=MapOperation.Abs,
                        ty=Type.I32),
            PhaseGet(dst=R(4)), PhaseWrite(src=R(2)), PhaseGet(dst=R(5)),
            *lane_pointer(10, 2, 12), STG(dst=Address.RegisterIndirect(R(10), 0), src=R(3), ty=U32),
            STG(dst=Address.RegisterIndirect(R(10), 4), src=R(4), ty=U32),
            STG(dst=Address.RegisterIndirect(R(10), 8), src=R(5), ty=U32)]
    assert_matches_reference(gpu_driver, program(body), CONFIG, [bytes(12 * 24), bytes(4)])


def test_execute_async_awaits_the_gpu(gpu_driver):
    body = [*lane_pointer(1, 2, 4), STG(dst=Address.RegisterIndirect(R(1), 0), src=R(GID), ty=U32)]
    backend = fresh_backend(gpu_driver)
    try:
        handle = backend.allocate_buffer(4 * 24)
        asyncio.run(backend.execute_async(program(body), CONFIG))
        assert bytes(backend.copy_from_buffer(handle)) == b"".join(i.to_bytes(4, "little") for i in range(24))
    finally:
        backend.close()


def test_a_loop_past_the_engines_limit_fails_loudly_not_wrongly(gpu_driver):
    from atlas_web.isa import LOOP
    if not fresh_backend(gpu_driver).features.loop_limit:
        pytest.skip("this device has no loop limit")
    body = [MOV_IMM(dst=R(1), value=70_000, ty=U32), MOV_IMM(dst=R(2), value=0, ty=U32),
            MOV_IMM(dst=R(3), value=1, ty=U32), "top", SUB(dst=R(2), lhs=R(2), rhs=R(3), ty=U32),
            LOOP(count=R(1), body="top")]
    backend = fresh_backend(gpu_driver)
    try:
        with pytest.raises(ExecutionFailed, match="backward jumps in one dispatch"):
            backend.execute_program_with_params(program(body), ExecutionParams(LaunchConfig.linear(1), budget=1 << 24))
    finally:
        backend.close()


def test_a_runaway_loop_with_the_default_budget_traps_as_the_reference(gpu_driver):
    """Issue 17 item 8: on a device with a loop limit (llvmpipe) the default budget fits it, so a runaway loop
    traps BUDGET_EXCEEDED with the reference's index, lane and message (before: ExecutionFailed)."""
    from atlas_web import AtlasTrap, Program
    from atlas_web.reference import CpuBackend
    runaway = Program.from_text("mov_imm.u32 r1, 1\nmov_imm.u32 r2, 0\ntop:\nadd.u32 r2, r2, r1\nbra @top\n")
    backend = fresh_backend(gpu_driver)
    reference = CpuBackend(budget=backend.budget)
    try:
        config = LaunchConfig(grid=(2, 1, 1), block=(4, 1, 1))
        with pytest.raises(AtlasTrap) as got:
            backend.execute_program(runaway, config)
        assert got.value.code == TrapCode.BUDGET_EXCEEDED
        with pytest.raises(AtlasTrap) as expected:
            reference.execute_program(runaway, config)
        assert (got.value.instruction_index, got.value.lane, str(got.value)) == \
            (expected.value.instruction_index, expected.value.lane, str(expected.value))
        # a budget given per launch is exact too, below the device's limit
        with pytest.raises(AtlasTrap, match="budget of 1000 backward"):
            backend.execute_program_with_params(runaway, ExecutionParams(config, budget=1000))
    finally:
        reference.close()
        backend.close()


def test_a_launch_whose_trap_records_exceed_the_binding_limit_is_refused_saying_how_many_lanes_fit(gpu_driver,
                                                                                                  monkeypatch):
    """Issue 13's softmax at 10M lanes: 280 MB of per-lane trap records over lavapipe's 128 MiB binding. The
    refusal says what the bytes hold, the limit and about how many lanes fit; the backend stays usable."""
    from atlas_web import Program
    backend = fresh_backend(gpu_driver)
    try:
        out = backend.allocate_typed(1, U32)
        may_trap = Program.from_text(f"mov_imm.u32 r1, 7\nmov_imm.u32 r2, 1\ndiv.u32 r3, r1, r2\n"
                                     f"mov_imm.u64 r4, {int(out) << 32}\nstg.u32 [r4 + 0], r3\n")
        monkeypatch.setitem(gpu_driver._limits, "maxStorageBufferBindingSize", 1 << 20)
        with pytest.raises(ExecutionFailed, match=r"of 65,536 lanes needs .* trap record .* binds at most 1,048,576 "
                                                  r"bytes \(maxStorageBufferBindingSize\); about 3\d,\d{3} lanes"):
            backend.execute_program(may_trap, LaunchConfig.linear(65536))
        monkeypatch.undo()
        backend.execute_program(may_trap, LaunchConfig.linear(64))
        assert list(backend.copy_typed_from(out, U32)) == [7]
    finally:
        backend.close()
