"""Lane state over several bindings (webgpu_backend/state_windows.py): a launch whose registers kept between
stages exceed one storage binding runs with its slots in windows of the state buffer (issue 13: softmax at
10M lanes needs 280 MB of lane state, lavapipe binds 128 MiB). Here the binding limit is patched to 2 MiB,
so 131,072 lanes of softmax (7 slots, 3.7 MB) take two windows."""

from __future__ import annotations

import pytest

import examples
from atlas_web import ExecutionFailed, LaunchConfig, Program
from examples import allocate_buffers, compare_outputs, read_outputs
from webgpu_backend.state_windows import plan_state_windows

LIMIT = 2 << 20
LANES = 131072


def _softmax_outputs(gpu_driver, lanes: int, limit: int | None):
    from webgpu_backend import WebGpuBackend
    example = examples.build_all(lanes)[2]
    assert example.name == "softmax"
    backend = WebGpuBackend(driver=gpu_driver, chunk_capacity=LIMIT, max_chunks=4)   # memory binds within the limit too
    try:
        handles = allocate_buffers(example, backend)
        with pytest.MonkeyPatch.context() as patch:
            seen = _small_bindings(patch, gpu_driver, limit) if limit is not None else []
            backend.execute_program(example.program_object(), example.config)
            backend.execute_program(example.program_object(), example.config)   # the recorded launch again
        return example, read_outputs(example, backend, handles), [w.count for w in seen if w is not None]
    finally:
        backend.close()


def _small_bindings(patch, gpu_driver, limit: int) -> list:
    """Bindings of ``limit`` bytes; trap records per block (as from 2**20 lanes on), which then fit. Returns the
    list the launcher's state windows of each launch are appended to."""
    from webgpu_backend.launcher import Launcher
    from webgpu_backend.wgsl import runtime_layout
    patch.setitem(gpu_driver._limits, "maxStorageBufferBindingSize", limit)
    patch.setattr(runtime_layout, "BLOCK_RECORDS_FROM_LANES", 1)
    seen, plan = [], Launcher._state_windows

    def spy(self, compiled, config):
        seen.append(plan(self, compiled, config))
        return seen[-1]
    patch.setattr(Launcher, "_state_windows", spy)
    return seen


def test_plan_state_windows_holds_whole_slots_at_aligned_offsets():
    windows = plan_state_windows(7, LANES, LIMIT, 256)
    assert (windows.per_window, windows.count, windows.stride) == (4, 2, LIMIT)
    assert windows.ranges() == [(0, LIMIT), (LIMIT, 3 * LANES * 4)]
    assert windows.word(5) == "state1[1u * 131072u + lane_id]" and windows.slot_byte(5) == LIMIT + 4 * LANES
    odd = plan_state_windows(3, 1000, 8200, 256)             # 2 slots of 4,000 bytes a window, stride aligned
    assert (odd.per_window, odd.stride, odd.count, odd.total_bytes) == (2, 8192, 2, 12192)
    assert plan_state_windows(3, 1 << 20, LIMIT, 256) is None  # one slot alone exceeds a binding


def test_softmax_with_its_lane_state_in_two_windows_matches_one_binding(gpu_driver):
    example, windowed, windows = _softmax_outputs(gpu_driver, LANES, LIMIT)
    _, whole, _ = _softmax_outputs(gpu_driver, LANES, None)
    assert windows and set(windows) == {2}
    assert compare_outputs(example, windowed) == []
    assert windowed == whole


def test_a_state_window_per_slot_needs_more_bindings_than_a_stage_has_and_is_refused(gpu_driver, monkeypatch):
    from webgpu_backend import WebGpuBackend
    monkeypatch.setitem(gpu_driver._limits, "maxStorageBuffersPerShaderStage", 5)
    example = examples.build_all(LANES)[2]
    backend = WebGpuBackend(driver=gpu_driver, chunk_capacity=LIMIT, max_chunks=4)
    try:
        allocate_buffers(example, backend)
        _small_bindings(monkeypatch, gpu_driver, 4 * LANES)   # one slot a window
        with pytest.raises(ExecutionFailed, match=r"lane state in 7 storage bindings; .* this device allows 5 "
                                                  r"\(maxStorageBuffersPerShaderStage\)"):
            backend.execute_program(example.program_object(), example.config)
        monkeypatch.undo()
        backend.execute_program(example.program_object(), example.config)   # usable afterwards
    finally:
        backend.close()
