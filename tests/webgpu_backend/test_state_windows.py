"""Lane state over several buffers (webgpu_backend/state_windows.py): a launch whose registers kept between
stages exceed one storage binding runs with its slots in windows, each its own buffer (issue 13: softmax at
10M lanes needs 280 MB of lane state, lavapipe binds 128 MiB, some browsers' buffers hold 256 MiB). Here the
binding limit and the buffer limit are both patched to 2 MiB, so 131,072 lanes of softmax (7 slots, 3.7 MB)
take two windows in two buffers, which one buffer could not hold."""

from __future__ import annotations

import numpy as np
import pytest

import examples
from atlas_web import ExecutionFailed, LaunchConfig, Program
from examples import allocate_buffers, compare_outputs, read_outputs
from webgpu_backend.state_windows import FIRST_WINDOW_BINDING, plan_state_windows

LIMIT = 2 << 20
LANES = 131072


def _softmax_outputs(gpu_driver, lanes: int, limit: int | None):
    """(example, outputs, window counts of the launches, the largest buffer the launches created)."""
    from webgpu_backend import WebGpuBackend
    example = examples.build_all(lanes)[2]
    assert example.name == "softmax"
    backend = WebGpuBackend(driver=gpu_driver, chunk_capacity=LIMIT, max_chunks=4)   # memory binds within the limit too
    try:
        handles = allocate_buffers(example, backend)
        with pytest.MonkeyPatch.context() as patch:
            seen = _small_bindings(patch, gpu_driver, limit) if limit is not None else []
            created, create = [], gpu_driver.create_buffer
            patch.setattr(gpu_driver, "create_buffer", lambda size, *a, **k: created.append(size) or create(size, *a, **k))
            backend.execute_program(example.program_object(), example.config)
            backend.execute_program(example.program_object(), example.config)   # the recorded launch again
        return (example, read_outputs(example, backend, handles), [w.count for w in seen if w is not None],
                max(created, default=0))
    finally:
        backend.close()


def _small_bindings(patch, gpu_driver, limit: int) -> list:
    """Bindings and buffers of at most ``limit`` bytes; trap records per block (as from 2**20 lanes on), which
    then fit. Returns the list the launcher's state windows of each launch are appended to."""
    from webgpu_backend.launcher import Launcher
    from webgpu_backend.wgsl import runtime_layout
    patch.setitem(gpu_driver._limits, "maxStorageBufferBindingSize", limit)
    patch.setitem(gpu_driver._limits, "maxBufferSize", limit)
    patch.setattr(runtime_layout, "BLOCK_RECORDS_FROM_LANES", 1)
    seen, plan = [], Launcher._state_windows

    def spy(self, compiled, config):
        seen.append(plan(self, compiled, config))
        return seen[-1]
    patch.setattr(Launcher, "_state_windows", spy)
    return seen


def test_plan_state_windows_holds_whole_slots_each_in_its_own_buffer():
    windows = plan_state_windows(7, LANES, LIMIT)
    assert (windows.per_window, windows.count) == (4, 2)
    assert windows.sizes() == [LIMIT, 3 * LANES * 4]
    assert windows.word(5) == "state1[1u * 131072u + lane_id]" and windows.slot_byte(5) == (1, 4 * LANES)
    assert [windows.binding(j) for j in range(3)] == [3, FIRST_WINDOW_BINDING, FIRST_WINDOW_BINDING + 1]
    odd = plan_state_windows(3, 1000, 8200)                   # 2 slots of 4,000 bytes a window
    assert (odd.per_window, odd.count, odd.sizes()) == (2, 2, [8000, 4000])
    assert plan_state_windows(3, 1 << 20, LIMIT) is None      # one slot alone exceeds a binding


def test_softmax_with_its_lane_state_in_two_buffers_matches_one_binding_and_numpy(gpu_driver):
    """3.7 MB of lane state under a 2 MiB buffer limit: two windows, no buffer over the limit."""
    example, windowed, windows, largest = _softmax_outputs(gpu_driver, LANES, LIMIT)
    _, whole, _, _ = _softmax_outputs(gpu_driver, LANES, None)
    assert windows and set(windows) == {2} and largest <= LIMIT
    assert compare_outputs(example, windowed) == []          # the example's oracle (binary64 Python)
    assert windowed == whole
    x = np.asarray(example.buffer("x").data, dtype=np.float64)
    np.testing.assert_allclose(windowed["out"], np.exp(x - x.max()) / np.exp(x - x.max()).sum(), rtol=1e-5, atol=1e-12)


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
