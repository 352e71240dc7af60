"""The host API of WebGpuBackend: buffers and pools in one handle space, copies, sizes and errors,
memory spread over several storage chunks, and what device_info reports."""

from __future__ import annotations

import array

import pytest

from atlas_web import AllocationFailed, InvalidBuffer
from atlas_web.isa import BOUNDARY_BYTES, Type


def test_handles_start_at_two_and_are_never_reused(fresh):
    a, b = fresh.allocate_buffer(16), fresh.allocate_pool(32)
    assert (a, b) == (2, 3)
    fresh.free_buffer(a)
    assert fresh.allocate_buffer(8) == 4
    assert fresh.buffer_size(4) == 8 and fresh.pool_size(3) == 32
    assert fresh.buffer_size(fresh.boundary_buffer) == BOUNDARY_BYTES


def test_new_allocations_are_zero_even_where_freed_memory_is_reused(fresh):
    first = fresh.allocate_buffer(64)
    fresh.copy_to_buffer(first, b"\xff" * 64)
    fresh.free_buffer(first)
    again = fresh.allocate_buffer(64)
    assert fresh.copy_from_buffer(again) == bytes(64)


def test_copies_at_offsets_unaligned_edges_and_typed_helpers(fresh):
    handle = fresh.allocate_buffer(11)
    fresh.copy_to_buffer(handle, b"abcdefghijk")
    fresh.copy_to_buffer(handle, b"XY", offset=3)
    assert fresh.copy_from_buffer(handle) == b"abcXYfghijk"
    assert fresh.copy_from_buffer(handle, offset=9) == b"jk"
    out = bytearray(3)
    assert fresh.copy_from_buffer(handle, out, offset=1) is out and bytes(out) == b"bcX"
    typed = fresh.allocate_typed(array.array("f", [1.5, -2.0]))
    assert list(fresh.copy_typed_from(typed, Type.F32)) == [1.5, -2.0]


def test_pools_copy_and_refuse_buffer_calls(fresh):
    pool = fresh.allocate_pool(8)
    fresh.copy_to_pool(pool, 2, b"\x01\x02")
    assert fresh.copy_from_pool(pool, 0, 4) == b"\x00\x00\x01\x02"
    with pytest.raises(InvalidBuffer, match="is a pool, not a buffer"):
        fresh.free_buffer(pool)
    with pytest.raises(InvalidBuffer):
        fresh.copy_from_pool(pool, 6, 4)
    fresh.free_pool(pool)
    with pytest.raises(InvalidBuffer, match="names no live"):
        fresh.pool_size(pool)


@pytest.mark.parametrize("call", [
    lambda b, h: b.copy_to_buffer(h, b"12345", offset=4),
    lambda b, h: b.copy_from_buffer(h, bytearray(9)),
    lambda b, h: b.copy_to_buffer(h, b"1", offset=-1),
    lambda b, h: b.copy_from_buffer(h, b"readonly"),
    lambda b, h: b.free_buffer(99),
    lambda b, h: b.free_buffer(1),
])
def test_bad_copies_and_handles_raise_invalid_buffer(fresh, call):
    handle = fresh.allocate_buffer(8)
    with pytest.raises(InvalidBuffer):
        call(fresh, handle)


def test_allocation_limits_say_what_was_asked(gpu_driver):
    from webgpu_backend import WebGpuBackend
    with WebGpuBackend(driver=gpu_driver, memory_limit=4096) as backend:
        backend.allocate_buffer(4000)
        with pytest.raises(AllocationFailed, match="asked"):
            backend.allocate_buffer(200)
        with pytest.raises(AllocationFailed, match="per allocation"):
            backend.allocate_buffer(1 << 31)
        with pytest.raises(AllocationFailed):
            backend.allocate_buffer(-1)


def test_memory_spreads_over_chunks_and_every_chunk_is_reachable(gpu_driver):
    from webgpu_backend import WebGpuBackend
    with WebGpuBackend(driver=gpu_driver, chunk_capacity=2 << 20, max_chunks=3) as backend:
        handles = [backend.allocate_buffer(1 << 20) for _ in range(4)]
        assert len(backend._memory.chunks) >= 2
        for k, handle in enumerate(handles):
            backend.copy_to_buffer(handle, bytes([k + 1]) * 64, offset=1000)
        for k, handle in enumerate(handles):
            assert backend.copy_from_buffer(handle, bytearray(64), offset=1000) == bytes([k + 1]) * 64
        with pytest.raises(AllocationFailed, match="chunks"):
            for _ in range(8):
                backend.allocate_buffer(1 << 20)


def test_device_info_names_the_device_and_memory(webgpu):
    info = webgpu.device_info()
    assert info["name"] == "webgpu" and info["device"] and info["engine"]
    # this machine has no GPU: wgpu runs on Mesa's lavapipe, a Vulkan implementation on the CPU
    assert info["device_type"] == ("software-gpu" if "llvmpipe" in info["device"].lower() else "gpu")
    assert info["max_memory"] >= info["chunk_capacity"] > 0
    assert webgpu.resonance_accumulator() == [0.0] * 96 or len(webgpu.resonance_accumulator()) == 96
