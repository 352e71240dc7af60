"""Tests of verify_launch: static addresses checked against live allocations and shared memory."""

from __future__ import annotations

import pytest

from atlas_web.errors import ProgramError
from atlas_web.isa import (
    LDG, LDS, STG, Address, MapOperation, ParallelMap, ParallelMapBinary, BinaryMapOperation, ParallelReduce,
    ReduceAdd, ReduceOperation, Type,
)
from atlas_web.launch import LaunchConfig
from atlas_web.memory import HandleTable
from atlas_web.verify import verify, verify_launch
from tests.verify_programs import F32, F64, R, program

CONFIG = LaunchConfig(grid=(1, 1, 1), block=(4, 1, 1), shared_memory=64)


@pytest.fixture
def memory() -> HandleTable:
    """Buffer 2 of 64 bytes, pool 3 of 32 bytes, buffer 4 freed; handle 1 is the boundary memory."""
    table = HandleTable()
    assert table.add("buffer", 64).handle == 2
    assert table.add("pool", 32).handle == 3
    table.remove(table.add("buffer", 8).handle, "buffer")
    return table


def launch(memory, *instrs, config=CONFIG):
    verify_launch(verify(program(*instrs)), config, memory)


def load(address, ty=F32):
    return LDG(dst=R(1), src=address, ty=ty)


def test_buffer_offsets_need_a_live_buffer(memory):
    launch(memory, load(Address.BufferOffset(2, 60)))
    with pytest.raises(ProgramError, match=r"instruction 0 \(.*\): operand 'src': handle 4 names no live allocation, "
                                           r"not a live buffer"):
        launch(memory, load(Address.BufferOffset(4, 0)))
    with pytest.raises(ProgramError, match="handle 3 names a pool, not a live buffer"):
        launch(memory, load(Address.BufferOffset(3, 0)))
    launch(memory, load(Address.BufferOffset(1, 0)))  # the boundary memory is a buffer too


def test_ranges_must_lie_inside_their_allocation(memory):
    with pytest.raises(ProgramError, match="operand 'dst': bytes 64..68 lie outside buffer 2 of 64 bytes"):
        launch(memory, STG(dst=Address.BufferOffset(2, 64), src=R(1), ty=F32))
    with pytest.raises(ProgramError, match="bytes 60..68 lie outside"):
        launch(memory, load(Address.BufferOffset(2, 60), F64))
    launch(memory, load(Address.BufferOffset(2, 56), F64))


def test_static_offsets_must_be_aligned(memory):
    with pytest.raises(ProgramError, match="offset 2 is misaligned for f32 \\(needs a multiple of 4\\)"):
        launch(memory, load(Address.BufferOffset(2, 2)))
    with pytest.raises(ProgramError, match="offset 4 is misaligned for u128 \\(needs a multiple of 8\\)"):
        launch(memory, load(Address.BufferOffset(2, 4), Type.U128))
    launch(memory, load(Address.BufferOffset(2, 8), Type.U128), load(Address.BufferOffset(2, 2), Type.I16))


def test_pool_offsets_need_a_live_pool(memory):
    launch(memory, load(Address.PoolOffset(3, 28)))
    with pytest.raises(ProgramError, match="handle 2 names a buffer, not a live pool"):
        launch(memory, load(Address.PoolOffset(2, 0)))
    with pytest.raises(ProgramError, match="bytes 32..36 lie outside pool 3 of 32 bytes"):
        launch(memory, load(Address.PoolOffset(3, 32)))


def test_class_addresses_lie_in_the_boundary_memory(memory):
    launch(memory, load(Address.Class(95, 12284)), load(Address.Class(3, 12280), Type.U128))  # into class 4
    with pytest.raises(ProgramError, match="bytes 1179644..1179652 lie outside boundary 1 of 1179648 bytes"):
        launch(memory, load(Address.Class(95, 12284), F64))
    with pytest.raises(ProgramError, match="misaligned"):
        launch(memory, load(Address.Class(0, 6)))


def test_shared_addresses_lie_in_the_launch_shared_memory(memory):
    shared = LDS(dst=R(1), src=Address.Shared(60), ty=F32)
    launch(memory, shared)
    with pytest.raises(ProgramError, match="bytes 60..64 lie outside the launch's shared memory of 32 bytes"):
        launch(memory, shared, config=LaunchConfig(block=(4, 1, 1), shared_memory=32))


def test_cooperative_ranges_cover_count_values(memory):
    def pmap(count, dst_offset=0):
        return ParallelMap(dst_array=Address.BufferOffset(2, dst_offset), src_array=Address.BufferOffset(2, 0),
                           count=count, operation=MapOperation.Abs)
    launch(memory, pmap(16))
    with pytest.raises(ProgramError, match="operand 'dst_array': bytes 0..68 lie outside"):
        launch(memory, pmap(17))
    with pytest.raises(ProgramError, match="operand 'src_b': bytes 0..64 lie outside pool 3"):
        launch(memory, ParallelMapBinary(dst_array=Address.BufferOffset(2, 0), src_a=Address.BufferOffset(2, 0),
                                         src_b=Address.PoolOffset(3, 0), count=16, operation=BinaryMapOperation.Add))
    reduce = ParallelReduce(dst=R(1), src_array=Address.BufferOffset(2, 32), count=8, operation=ReduceOperation.Sum)
    launch(memory, reduce)
    with pytest.raises(ProgramError, match="bytes 32..68"):
        launch(memory, ParallelReduce(dst=R(1), src_array=Address.BufferOffset(2, 32), count=9,
                                      operation=ReduceOperation.Sum))
    launch(memory, pmap(0, dst_offset=64))  # an empty range at the end is inside


def test_per_lane_reductions_cover_count_values(memory):
    launch(memory, ReduceAdd(dst=R(1), src_array=Address.BufferOffset(2, 0), count=8, ty=F64))
    with pytest.raises(ProgramError, match="bytes 0..72 lie outside buffer 2"):
        launch(memory, ReduceAdd(dst=R(1), src_array=Address.BufferOffset(2, 0), count=9, ty=F64))


def test_register_addresses_are_left_to_run_time(memory):
    launch(memory, LDG(dst=R(1), src=Address.RegisterIndirect(R(2), 1 << 20), ty=F32))
