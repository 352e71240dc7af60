"""WasmBackend's host API: buffers, pools, the boundary memory, copies and views, growth and its limit,
the device handle table mirrored in linear memory, capabilities."""

from __future__ import annotations

import array
import struct

import numpy as np
import pytest

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.errors import AllocationFailed, ExecutionFailed, InvalidBuffer, UnsupportedOperation
from atlas_web.isa import (
    BOUNDARY_BYTES, EXP, ParallelMap, MapOperation, Address, Type, BinaryMapOperation, ReduceOperation,
)
from atlas_web.registry import get_backend
from wasm_backend import WasmBackend
from wasm_backend import layout


@pytest.fixture
def backend():
    started = WasmBackend()
    yield started
    started.close()


def _entry(backend: WasmBackend, handle: int) -> tuple[int, int, int]:
    memory = backend._memory
    return struct.unpack_from("<III", memory.bytes(), memory.table_base + handle * layout.TABLE_ENTRY_BYTES)


def test_registry_builds_the_wasm_backend():
    backend = get_backend("wasm")
    assert isinstance(backend, WasmBackend) and backend.name == "wasm"
    info = backend.device_info()
    assert {"name", "device", "engine", "memory_limit", "memory_used", "max_memory"} <= set(info)
    assert info["engine"].startswith("wasmtime")


def test_handles_count_from_two_and_are_never_reused(backend):
    a = backend.allocate_buffer(16)
    p = backend.allocate_pool(32)
    assert (int(a), int(p)) == (2, 3)
    backend.free_buffer(a)
    assert int(backend.allocate_buffer(16)) == 4
    assert backend.buffer_size(4) == 16 and backend.pool_size(p) == 32


def test_buffers_start_zeroed_even_where_freed_memory_was_dirty(backend):
    a = backend.allocate_buffer(64)
    backend.copy_to_buffer(a, bytes(range(64)))
    backend.free_buffer(a)
    b = backend.allocate_buffer(64)
    assert backend.copy_from_buffer(b) == bytes(64)


def test_copies_in_and_out(backend):
    h = backend.allocate_buffer(40)
    backend.copy_to_buffer(h, array.array("i", [1, 2, 3]), 8)
    out = bytearray(12)
    assert backend.copy_from_buffer(h, out, 8) is out
    assert struct.unpack("<3i", out) == (1, 2, 3)
    assert backend.copy_from_buffer(h, offset=36) == bytes(4)
    values = np.arange(10, dtype=np.float32)
    typed = backend.allocate_typed(values)
    assert np.array_equal(backend.copy_typed_from(typed, Type.F32), values)
    with pytest.raises(InvalidBuffer, match="outside buffer"):
        backend.copy_to_buffer(h, bytes(8), 36)
    with pytest.raises(InvalidBuffer):
        backend.copy_from_buffer(h, bytearray(41))
    with pytest.raises(InvalidBuffer):
        backend.copy_to_buffer(h, 5)
    with pytest.raises(InvalidBuffer):
        backend.copy_from_buffer(h, bytes(4))  # not writable


def test_buffer_view_is_zero_copy(backend):
    h = backend.allocate_typed(np.zeros(8, dtype=np.float32))
    view = backend.buffer_view(h, Type.F32)
    view[3] = 2.5
    assert backend.copy_typed_from(h, Type.F32)[3] == 2.5
    assert backend.buffer_view(h).size == 32
    with pytest.raises(UnsupportedOperation):
        backend.buffer_view(h, Type.BF16)


def test_pools_and_buffers_are_kept_apart(backend):
    b = backend.allocate_buffer(16)
    p = backend.allocate_pool(16)
    backend.copy_to_pool(p, 4, b"\x01\x02")
    assert backend.copy_from_pool(p, 4, 2) == b"\x01\x02"
    out = bytearray(3)
    backend.copy_from_pool(p, 3, out)
    assert bytes(out) == b"\x00\x01\x02"
    with pytest.raises(InvalidBuffer):
        backend.free_pool(b)
    with pytest.raises(InvalidBuffer):
        backend.free_buffer(p)
    with pytest.raises(InvalidBuffer):
        backend.copy_from_pool(p, 10, 7)
    with pytest.raises(InvalidBuffer):
        backend.copy_from_pool(p, 0, -1)
    backend.free_pool(p)
    with pytest.raises(InvalidBuffer):
        backend.pool_size(p)


def test_boundary_memory_is_handle_one_and_cannot_be_freed(backend):
    boundary = backend.boundary_buffer
    assert int(boundary) == 1 and backend.buffer_size(boundary) == BOUNDARY_BYTES
    backend.copy_to_buffer(boundary, b"\x07", BOUNDARY_BYTES - 1)
    assert backend.copy_from_buffer(boundary, offset=BOUNDARY_BYTES - 1) == b"\x07"
    with pytest.raises(InvalidBuffer):
        backend.free_buffer(boundary)


def test_device_table_mirrors_the_host_table(backend):
    b = backend.allocate_buffer(100)
    p = backend.allocate_pool(7)
    base_b, size_b, kind_b = _entry(backend, b)
    assert (size_b, kind_b) == (100, layout.KIND_BUFFER) and base_b % 16 == 0
    assert _entry(backend, p)[1:] == (7, layout.KIND_POOL)
    assert _entry(backend, 1)[1:] == (BOUNDARY_BYTES, layout.KIND_BOUNDARY)
    assert _entry(backend, 0) == (0, 0, 0)
    backend.free_buffer(b)
    assert _entry(backend, b) == (0, 0, 0)  # a stale pointer finds no allocation


def test_device_table_grows_and_moves(backend):
    handles = [backend.allocate_buffer(1) for _ in range(layout.INITIAL_TABLE_CAPACITY + 10)]
    memory = backend._memory
    assert memory.table_capacity > layout.INITIAL_TABLE_CAPACITY
    base, capacity = struct.unpack_from("<II", memory.bytes(), layout.HEADER_TABLE_BASE)
    assert (base, capacity) == (memory.table_base, memory.table_capacity)
    assert _entry(backend, handles[-1])[1:] == (1, layout.KIND_BUFFER)
    assert _entry(backend, handles[0])[1:] == (1, layout.KIND_BUFFER)


def test_memory_grows_on_demand_up_to_the_limit():
    backend = WasmBackend(memory_limit=8 << 20)
    size_before = backend.device_info()["memory_size"]
    h = backend.allocate_buffer(3 << 20)
    assert backend.device_info()["memory_size"] > size_before
    backend.copy_to_buffer(h, bytes([9]) * 16, (3 << 20) - 16)  # views taken after the growth
    assert backend.copy_from_buffer(h, offset=(3 << 20) - 1) == b"\x09"
    with pytest.raises(AllocationFailed) as failure:
        backend.allocate_buffer(6 << 20)
    assert "asked" in str(failure.value) and "left" in str(failure.value)
    assert backend.device_info()["memory_used"] == 3 << 20


def test_memory_limit_below_the_runtime_needs_is_refused():
    with pytest.raises(AllocationFailed, match="memory_limit"):
        WasmBackend(memory_limit=1 << 16)


def test_bad_options_raise():
    with pytest.raises(ExecutionFailed):
        WasmBackend(budget=-1)
    with pytest.raises(AllocationFailed):
        WasmBackend(memory_limit="big")


def test_supports_follows_the_rule_tables(backend):
    assert backend.supports("ADD", Type.I4096) and backend.supports("CVT", Type.BF16)
    assert backend.supports("BRA") and backend.supports("BarSync") and backend.supports("PoolAlloc")
    assert backend.supports("ParallelReduce", Type.U8)
    assert backend.supports_operation(ReduceOperation.Product, Type.F16)
    assert backend.supports_operation(BinaryMapOperation.Min, Type.I64)
    assert not backend.supports("FMA", Type.I32)  # the opcode table does not accept it at all
    assert backend.supports_operation(MapOperation.Sqrt, Type.BF16)


def test_transcendentals_follow_the_math_library_seam(backend):
    from wasm_backend.lowering import math_seam
    saved = dict(math_seam.MATH_FUNCTIONS)
    try:
        math_seam.MATH_FUNCTIONS.clear()
        assert not backend.supports("EXP", Type.F32)
        assert not backend.supports_operation(MapOperation.Exp, Type.F32)
        program = ProgramBuilder().add(ParallelMap(dst_array=Address.BufferOffset(1), src_array=Address.BufferOffset(1),
                                                   count=4, operation=MapOperation.Exp)).build()
        with pytest.raises(UnsupportedOperation, match="math library"):
            backend.execute_program(program, LaunchConfig())
        lane = ProgramBuilder().add(EXP(dst=_r(1), src=_r(2), ty=Type.F32)).build()
        with pytest.raises(UnsupportedOperation, match="EXP on F32"):
            backend.execute_program(lane, LaunchConfig())
    finally:
        math_seam.MATH_FUNCTIONS.update(saved)
    assert backend.supports("EXP", Type.F32) == bool(saved)


def _r(index: int):
    from atlas_web.isa import Register
    return Register(index)


def test_ulp_tolerance_reads_the_measured_table(backend):
    from wasm_backend.ulp_table import MEASURED_ULPS
    assert backend.ulp_tolerance("ADD", Type.F32) == 0.0
    for (op, ty), ulps in MEASURED_ULPS.items():
        if "." not in op:
            assert backend.ulp_tolerance(op, Type[ty]) == ulps
    with pytest.raises(KeyError):
        backend.ulp_tolerance(3.5, Type.F32)


def test_resonance_accumulator_is_zero_before_any_launch(backend):
    assert backend.resonance_accumulator() == [0.0] * 96
