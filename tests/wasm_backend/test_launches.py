"""Launches on WasmBackend: the compile cache (by digest and launch shape), per-launch state, pools that
cannot be had, large cooperative steps against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import AtlasTrap, LaunchConfig, Program, ProgramBuilder
from atlas_web.errors import ExecutionFailed, ProgramError, TrapCode
from atlas_web.isa import (
    Address, BinaryMapOperation, ParallelMapBinary, ParallelReduce, ReduceOperation, Register, Type,
)
from atlas_web.launch import ExecutionParams
from wasm_backend import WasmBackend


@pytest.fixture
def backend():
    started = WasmBackend()
    yield started
    started.close()


def _scale_program(handle: int) -> Program:
    return Program.from_text(f"""
    cvt.u64.u32 r1, r255
    mov_imm.u64 r2, 4
    mul.u64 r3, r1, r2
    mov_imm.u64 r4, {handle << 32}
    or.u64 r5, r3, r4
    ldg.f32 r6, [r5 + 0]
    add.f32 r6, r6, r6
    stg.f32 [r5 + 0], r6
""")


def test_programs_compile_once_per_launch_shape(backend):
    h = backend.allocate_typed(np.ones(64, dtype=np.float32))
    program = _scale_program(h)
    for _ in range(3):
        backend.execute_program(program, LaunchConfig.linear(64))
    assert backend.device_info()["compiled_programs"] == 1
    backend.execute_program(program, LaunchConfig.linear(64, 32))
    assert backend.device_info()["compiled_programs"] == 2
    assert backend.copy_typed_from(h, Type.F32).tolist() == [16.0] * 64
    # an equal program (same digest) built again reuses the module
    backend.execute_program(Program.from_text(program.to_text()), LaunchConfig.linear(64))
    assert backend.device_info()["compiled_programs"] == 2


def test_preset_types_are_part_of_the_cache_key(backend):
    program = Program.from_text("    cvt.f64.u32 r2, r1")
    for ty, value in ((Type.U32, 7), (Type.U32, 9), (Type.I32, -1)):
        backend.execute_program_with_params(program, ExecutionParams(LaunchConfig(), {Register(1): (ty, value)}))
    assert backend.device_info()["compiled_programs"] == 2


def test_static_addresses_are_checked_at_every_launch(backend):
    h = backend.allocate_buffer(16)
    program = Program.from_text(f"    ldg.u32 r1, [buf{int(h)} + 12]")
    backend.execute_program(program, LaunchConfig())
    backend.free_buffer(h)
    with pytest.raises(ProgramError, match="no live allocation"):
        backend.execute_program(program, LaunchConfig())


def test_the_backend_stays_usable_after_a_trap(backend):
    h = backend.allocate_typed(np.ones(8, dtype=np.float32))
    program = _scale_program(h)
    with pytest.raises(AtlasTrap) as trap:
        backend.execute_program(program, LaunchConfig.linear(9))
    assert (trap.value.code, trap.value.lane) == (TrapCode.OUT_OF_BOUNDS, 8)
    backend.copy_typed_to(h, np.arange(8, dtype=np.float32))  # contents after a trap are unspecified
    backend.execute_program(program, LaunchConfig.linear(8))
    assert backend.copy_typed_from(h, Type.F32).tolist() == [2.0 * k for k in range(8)]


def test_pool_alloc_that_cannot_be_had_traps_pool_exhausted():
    backend = WasmBackend(memory_limit=4 << 20)
    program = Program.from_text("    pool.alloc r1, 4000000000\n    pool.free r1")
    with pytest.raises(AtlasTrap) as trap:
        backend.execute_program(program, LaunchConfig())
    assert (trap.value.code, trap.value.instruction_index, trap.value.lane) == (TrapCode.POOL_EXHAUSTED, 0, -1)
    ok = Program.from_text("    pool.alloc r1, 1024\n    pool.free r1")
    backend.execute_program(ok, LaunchConfig.linear(64))


def test_a_launch_whose_lane_records_do_not_fit_fails_cleanly():
    backend = WasmBackend(memory_limit=4 << 20)
    program = Program.from_text("    mov_imm.u32 r1, 5\n    bar.sync 0\n    add.u32 r2, r1, r1")
    with pytest.raises(ExecutionFailed, match="per-launch state"):
        backend.execute_program(program, LaunchConfig.linear(1 << 20))
    backend.execute_program(program, LaunchConfig.linear(64))


def test_resonance_sums_are_reset_by_launches_without_res_accum(backend):
    accumulate = Program.from_text("    mov_imm.u32 r1, 3\n    mov_imm.f32 r2, 1.5\n    res.accum.f32 r1, r2")
    backend.execute_program(accumulate, LaunchConfig.linear(4))
    assert backend.resonance_accumulator()[3] == 6.0
    backend.execute_program(Program.from_text("    exit"), LaunchConfig())
    assert backend.resonance_accumulator() == [0.0] * 96


@pytest.mark.parametrize("dtype, ty", [(np.float32, Type.F32), (np.float64, Type.F64)])
def test_large_float_sums_stay_close_to_the_exact_sum(backend, dtype, ty):
    rng = np.random.default_rng(3)
    values = (rng.standard_normal(100_003) * 1e3).astype(dtype)
    h = backend.allocate_typed(values)
    out = backend.allocate_typed(1, ty)
    program = ProgramBuilder().add(ParallelReduce(dst=Register(1), src_array=Address.BufferOffset(h),
                                                  count=values.size, operation=ReduceOperation.Sum, ty=ty))
    program.add(Program.from_text(f"    stg.{ty.suffix} [buf{int(out)} + 0], r1").instructions[0])
    backend.execute_program(program.build(), LaunchConfig())
    got = float(backend.copy_typed_from(out, ty)[0])
    exact = float(np.sum(values.astype(np.float64)))
    assert abs(got - exact) <= 64 * np.finfo(dtype).eps * np.sum(np.abs(values.astype(np.float64)))


def test_large_maps_with_overlap_equal_numpy(backend):
    rng = np.random.default_rng(4)
    values = rng.standard_normal(10_000).astype(np.float32)
    h = backend.allocate_typed(values)
    program = ProgramBuilder().add(ParallelMapBinary(
        dst_array=Address.BufferOffset(h, 8), src_a=Address.BufferOffset(h), src_b=Address.BufferOffset(h, 40),
        count=9_000, operation=BinaryMapOperation.Mul)).build()
    backend.execute_program(program, LaunchConfig())
    want = values.copy()
    want[2:9_002] = values[:9_000] * values[10:9_010]
    np.testing.assert_array_equal(backend.copy_typed_from(h, Type.F32), want)


def test_each_launch_runs_with_its_own_budget_and_launch_area(backend):
    """WasmBackend._run writes the header's budget and per-launch area words only when they change: a launch after
    one with another budget, or after the area moved, still runs with its own (presets are read from the area)."""
    loop = Program.from_text("    mov_imm.i32 r2, 5\nbody:\n    mov_imm.i32 r1, 0\n    loop r2, @body\n")  # 4 back
    for budget, traps in ((4, False), (3, True), (4, False), (None, False), (3, True)):
        params = ExecutionParams(LaunchConfig(), budget=budget)
        if traps:
            with pytest.raises(AtlasTrap) as trap:
                backend.execute_program_with_params(loop, params)
            assert trap.value.code is TrapCode.BUDGET_EXCEEDED
        else:
            backend.execute_program_with_params(loop, params)
    out = backend.allocate_typed(1, Type.U32)
    store = Program.from_text(f"    stg.u32 [buf{int(out)} + 0], r1")
    backend.execute_program_with_params(store, ExecutionParams(LaunchConfig(), {Register(1): (Type.U32, 7)}))
    area = backend._area_base
    backend.allocate_buffer(64)   # after the area: a larger one cannot grow in place
    records = Program.from_text("    mov_imm.u32 r1, 5\n    bar.sync 0\n    add.u32 r2, r1, r1")
    backend.execute_program(records, LaunchConfig.linear(1 << 12))
    assert backend._area_base != area
    backend.execute_program_with_params(store, ExecutionParams(LaunchConfig(), {Register(1): (Type.U32, 9)}))
    assert backend.copy_typed_from(out, Type.U32).tolist() == [9]
    with pytest.raises(AtlasTrap):
        backend.execute_program_with_params(loop, ExecutionParams(LaunchConfig(), budget=3))
