"""What close() means, the same on every backend that starts here: it releases the device, memory, buffers
and pools; every later call that touches them raises BackendClosed naming the call (capability queries
still answer); close() again does nothing; the context manager closes (issue 16: webgpu raised
IndexError from copy_from_buffer after close, cpu and wasm went on). A backend never closed is freed when
its last reference goes, without the cycle collector."""

from __future__ import annotations

import asyncio
import gc
import weakref

import numpy as np
import pytest

from atlas_web import BackendClosed, BackendUnavailable, LaunchConfig, Program, Type

PROGRAM = Program.from_text("mov_imm.u32 r1, 1\nexit")

#: name -> a call on a closed backend (handles 2 and 3 were a buffer and a pool before close)
CALLS = {
    "allocate_buffer": lambda b: b.allocate_buffer(16),
    "free_buffer": lambda b: b.free_buffer(2),
    "copy_to_buffer": lambda b: b.copy_to_buffer(2, b"abcd"),
    "copy_from_buffer": lambda b: b.copy_from_buffer(2),
    "buffer_size": lambda b: b.buffer_size(2),
    "allocate_pool": lambda b: b.allocate_pool(16),
    "free_pool": lambda b: b.free_pool(3),
    "copy_to_pool": lambda b: b.copy_to_pool(3, 0, b"abcd"),
    "copy_from_pool": lambda b: b.copy_from_pool(3, 0, 4),
    "pool_size": lambda b: b.pool_size(3),
    "allocate_typed": lambda b: b.allocate_typed(np.arange(4, dtype=np.float32)),
    "copy_typed_to": lambda b: b.copy_typed_to(2, [1.0], Type.F32),
    "copy_typed_from": lambda b: b.copy_typed_from(2, Type.F32),
    "execute_program": lambda b: b.execute_program(PROGRAM, LaunchConfig()),
    "execute_async": lambda b: asyncio.run(b.execute_async(PROGRAM, LaunchConfig())),
    "copy_from_buffer_async": lambda b: asyncio.run(b.copy_from_buffer_async(2)),
    "copy_typed_from_async": lambda b: asyncio.run(b.copy_typed_from_async(2, Type.F32)),
    "device_info": lambda b: b.device_info(),
    "resonance_accumulator": lambda b: b.resonance_accumulator(),
}


@pytest.fixture
def closed(available_backend):
    backend = available_backend
    assert backend.allocate_buffer(16) == 2 and backend.allocate_pool(16) == 3
    backend.execute_program(PROGRAM, LaunchConfig())
    backend.close()
    return backend


@pytest.mark.parametrize("call", sorted(CALLS))
def test_every_call_after_close_raises_backend_closed(closed, call):
    with pytest.raises(BackendClosed, match=f"the {closed.name} backend is closed") as error:
        CALLS[call](closed)
    assert isinstance(error.value, BackendUnavailable)  # a closed backend is one that cannot run


def test_close_twice_does_nothing_and_capabilities_still_answer(closed):
    closed.close()
    assert closed.supports("ADD", Type.I32)
    assert closed.ulp_tolerance("ADD", Type.I32) == 0.0


def test_the_context_manager_closes(available_backend_name):
    from atlas_web.registry import get_backend
    with get_backend(available_backend_name) as backend:
        handle = backend.allocate_typed([1, 2, 3], Type.I32)
        assert backend.copy_typed_from(handle, Type.I32).tolist() == [1, 2, 3]
    with pytest.raises(BackendClosed):
        backend.copy_typed_from(handle, Type.I32)


def test_an_unclosed_backend_is_freed_by_its_last_reference(available_backend_name):
    """No reference cycle holds a backend that was used and dropped unclosed: with the cycle collector off its
    weak reference dies with the last reference (the compile pipeline held its backend back: a cycle)."""
    from atlas_web.registry import get_backend
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        backend = get_backend(available_backend_name)
        handle = backend.allocate_typed([1, 2, 3], Type.I32)
        program = Program.from_text(f"mov_imm.u64 r1, {handle << 32}\nmov_imm.i32 r2, 7\nstg.i32 [r1 + 4], r2")
        backend.execute_program(program, LaunchConfig())
        asyncio.run(backend.execute_async(program, LaunchConfig()))
        assert backend.copy_typed_from(handle, Type.I32).tolist() == [1, 7, 3]
        ref = weakref.ref(backend)
        del backend
        assert ref() is None, [type(r).__name__ for r in gc.get_referrers(ref())]
    finally:
        if enabled:
            gc.enable()
