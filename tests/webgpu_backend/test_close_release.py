"""close() destroys the launcher's scratch buffers (lane state and its windows, runtime words, kernel work
memory, launch slots, snapshots) at once, also on a driver the backend shares with others: before, they
waited for the garbage collector, GPU memory held after close(). Another backend on the same driver has
its own scratch and goes on. The binding limit is patched small (as in test_state_windows) so softmax's
lane state takes two windows, each its own buffer."""

from __future__ import annotations

import pytest

import examples
from atlas_web import BackendClosed, CpuBackend
from examples import allocate_buffers, compare_outputs, read_outputs
from webgpu_backend import WebGpuBackend
from webgpu_backend.launcher import Launcher
from webgpu_backend.resources import GpuBuffer
from webgpu_backend.wgsl import runtime_layout

LIMIT = 2 << 20      # the boundary memory (1.1 MiB) fits a chunk
LANES = 131072       # softmax: 7 slots of 512 KiB, 3.5 MiB of lane state over 2 MiB bindings


def _held(launcher: Launcher) -> list:
    """Every GpuBuffer the launcher's attributes name (whatever buffers() says)."""
    held = []
    for value in vars(launcher).values():
        for item in value if isinstance(value, list) else (value,):
            if isinstance(item, GpuBuffer):
                held.append(item)
    return held


def test_close_destroys_the_launchers_buffers_on_a_shared_driver_and_the_other_backend_goes_on(gpu_driver,
                                                                                               monkeypatch):
    monkeypatch.setitem(gpu_driver._limits, "maxStorageBufferBindingSize", LIMIT)
    monkeypatch.setitem(gpu_driver._limits, "maxBufferSize", LIMIT)
    monkeypatch.setattr(runtime_layout, "BLOCK_RECORDS_FROM_LANES", 1)
    example = examples.build_all(LANES)[2]
    assert example.name == "softmax"
    reference = CpuBackend()
    try:
        expected = read_outputs(example, reference, _run(example, reference))
    finally:
        reference.close()
    first = WebGpuBackend(driver=gpu_driver, chunk_capacity=LIMIT, max_chunks=4)
    second = WebGpuBackend(driver=gpu_driver, chunk_capacity=LIMIT, max_chunks=4)
    try:
        first_handles, second_handles = _run(example, first), _run(example, second)
        assert compare_outputs(example, read_outputs(example, first, first_handles), expected) == []
        launcher = first._launcher
        assert launcher.state_windows, "the launch kept its lane state in windows"
        held = _held(launcher)
        assert {id(b) for b in held} <= {id(b) for b in launcher.buffers()}
        assert not {id(b) for b in held} & {id(b) for b in _held(second._launcher)}   # nothing shared
        natives, destroyed = {id(b.native) for b in held}, set()
        native_destroy = gpu_driver._native_destroy_buffer
        monkeypatch.setattr(gpu_driver, "_native_destroy_buffer",
                            lambda native: destroyed.add(id(native)) or native_destroy(native))
        first.close()
        assert not [b for b in held if b.alive] and natives <= destroyed
        assert launcher.state_windows == [] and len(launcher._records) == 0
        with pytest.raises(BackendClosed):
            first.execute_program(example.program_object(), example.config)
        with pytest.raises(BackendClosed):
            first.resonance_accumulator()
        assert all(b.alive for b in _held(second._launcher))
        second.execute_program(example.program_object(), example.config)      # the recorded launch again
        assert compare_outputs(example, read_outputs(example, second, second_handles), expected) == []
        fresh = WebGpuBackend(driver=gpu_driver, chunk_capacity=LIMIT, max_chunks=4)   # the driver still serves
        try:
            assert compare_outputs(example, read_outputs(example, fresh, _run(example, fresh)), expected) == []
        finally:
            fresh.close()
    finally:
        first.close()
        second.close()


def _run(example, backend) -> dict:
    handles = allocate_buffers(example, backend)
    backend.execute_program(example.program_object(), example.config)
    return handles
