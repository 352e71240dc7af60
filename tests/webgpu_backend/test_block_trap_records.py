"""Trap records per block for large launches (issue 13: at 10M lanes the per-lane records needed 280 MB, over
lavapipe's 128 MiB binding, so every program that may trap was refused there). From
BLOCK_RECORDS_FROM_LANES lanes on, each block's lowest trapping lane writes the block's one record after a
barrier; the report stays the reference's: the earliest stage's lowest lane, its index, code and numbers."""

from __future__ import annotations

import pytest

from atlas_web import AtlasTrap, LaunchConfig, Program
from atlas_web.isa import Type
from atlas_web.reference import CpuBackend
from webgpu_backend.wgsl import runtime_layout

from . import test_traps_and_state as traps
from .harness import fresh_backend


@pytest.fixture
def every_launch_large(monkeypatch):
    """Block records for every launch, so the small trap tests run them."""
    monkeypatch.setattr(runtime_layout, "BLOCK_RECORDS_FROM_LANES", 1)


@pytest.mark.parametrize("ty", [Type.I32, Type.U128])
@pytest.mark.parametrize("operation", [traps.DIV, traps.REM])
def test_division_traps_at_the_lowest_lane(every_launch_large, gpu_driver, ty, operation):
    traps.test_division_by_zero_and_overflow_trap_at_the_lowest_lane(gpu_driver, ty, operation)


def test_address_traps(every_launch_large, gpu_driver):
    traps.test_address_traps_in_their_order_with_the_reference(gpu_driver)


def test_the_earliest_trapping_stage_wins(every_launch_large, gpu_driver):
    traps.test_the_earliest_trapping_stage_wins_and_the_backend_stays_usable(gpu_driver)


def test_a_barrier_stage(every_launch_large, gpu_driver):
    traps.test_phase_advances_and_wraps_across_a_barrier_and_a_stage(gpu_driver)


#: lanes from 700,001 on divide by zero, and lanes from 650,000 on by their id - 650,000 (lane 650,000: by zero
#: first; the lowest trapping lane is in the middle of a block)
LARGE = """
    mov_imm.u32 r1, 700001
    set.lt.u32 p0, r255, r1
    mov_imm.u32 r2, 1
    mov_imm.u32 r5, 650000
    sub.u32 r6, r255, r5
    mov_imm.u32 r3, 0
    bra.p0 @low
    div.u32 r4, r2, r3
low:
    set.ge.u32 p1, r255, r5
    bra.!p1 @done
    mov_imm.u32 r7, 650010
    set.lt.u32 p2, r255, r7
    bra.!p2 @done
    div.u32 r4, r2, r6
done:
    exit
"""


def test_a_launch_past_the_threshold_reports_the_references_trap(gpu_driver):
    program = Program.from_text(LARGE)
    config = LaunchConfig.linear(runtime_layout.BLOCK_RECORDS_FROM_LANES + 4096)
    backend = fresh_backend(gpu_driver)
    reference = CpuBackend()
    try:
        with pytest.raises(AtlasTrap) as expected:
            reference.execute_program(program, config)
        with pytest.raises(AtlasTrap) as got:
            backend.execute_program(program, config)
        assert (got.value.code, got.value.instruction_index, got.value.lane, str(got.value)) == \
            (expected.value.code, expected.value.instruction_index, expected.value.lane, str(expected.value))
        assert got.value.lane == 650000
    finally:
        reference.close()
        backend.close()


def test_a_launch_whose_per_lane_records_would_not_fit_runs(every_launch_large, gpu_driver, monkeypatch):
    """The binding limit patched to 2 MiB: 131,072 lanes need 3.7 MB of per-lane records (refused before) and
    57 KB of per-block ones; the launch runs and reports the reference's trap."""
    program = Program.from_text(LARGE.replace("700001", "60001").replace("650000", "50000")
                                .replace("650010", "50010"))
    config = LaunchConfig.linear(131072)
    from webgpu_backend import WebGpuBackend
    backend = WebGpuBackend(driver=gpu_driver, chunk_capacity=2 << 20)    # memory binds within the limit too
    reference = CpuBackend()
    try:
        monkeypatch.setitem(gpu_driver._limits, "maxStorageBufferBindingSize", 2 << 20)
        with pytest.raises(AtlasTrap) as got:
            backend.execute_program(program, config)
        monkeypatch.undo()
        with pytest.raises(AtlasTrap) as expected:
            reference.execute_program(program, config)
        assert (got.value.lane, str(got.value)) == (expected.value.lane, str(expected.value)) == \
            (50000, str(expected.value))
        compiled = backend._compile(backend._pipeline.compile(program, {}), config)
        assert "block_trap" in compiled.stage_shaders(config, backend.features, len(backend._memory.chunks))[0].source
    finally:
        reference.close()
        backend.close()
