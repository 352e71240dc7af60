"""Per-lane memory instructions on WebGpuBackend against the reference: every type through every
global address mode (8- and 16-bit stores from neighbouring lanes share words), shared memory,
pools, per-lane reductions, memory spread over several chunks, and a grid split over dimensions."""

from __future__ import annotations

import random

import pytest

from atlas_web import LaunchConfig
from atlas_web.isa import (
    ADD, BOUNDARY_HANDLE, CVT, LDG, LDS, MOV_IMM, MUL, OR, STG, STS, Address, BarSync, PoolAlloc, PoolFree,
    PoolLoad, PoolStore, ReduceAdd, ReduceMax, ReduceMin, ReduceMul, Type, make_pointer,
)
from atlas_web.isa.opcodes import SCALARS
from tests.conformance.harness import compare_buffers
from tests.conformance.values import encode, float_values, int_values
from tests.lowering.programs import GID, R, program

from .harness import assert_matches_reference

U32, U64 = Type.U32, Type.U64
TYPES = [t for t in Type if t is not Type.F64]
LANES = 40
CONFIG = LaunchConfig(grid=(5, 1, 1), block=(8, 1, 1))


def values_of(ty: Type, n: int, seed: int) -> bytes:
    return encode(ty, float_values(ty, n, seed) if ty.is_float() else int_values(ty, n, seed))


def lane_pointer(dst: int, handle: int, size: int, scratch: int = 200) -> list:
    """r<dst>:u64 = (handle << 32) + GLOBAL_LANE_ID * size."""
    return [CVT(dst=R(dst), src=R(GID), src_ty=U32, dst_ty=U64), MOV_IMM(dst=R(scratch), value=size, ty=U64),
            MUL(dst=R(dst), lhs=R(dst), rhs=R(scratch), ty=U64),
            MOV_IMM(dst=R(scratch), value=handle << 32, ty=U64), OR(dst=R(dst), lhs=R(dst), rhs=R(scratch), ty=U64)]


def test_every_type_through_pointers_and_computed_addresses(gpu_driver):
    """Lane i copies element i of an input buffer to an output buffer, for every type in one program:
    loads through a pointer, stores through (handle, offset) registers."""
    buffers, body, types = [], [], []
    for k, ty in enumerate(TYPES):
        size = ty.size_bytes()
        src, dst = 2 + 2 * k, 3 + 2 * k
        buffers += [values_of(ty, LANES, k), bytes(size * LANES)]
        types += [ty, ty]
        body += lane_pointer(10, src, size)
        body.append(LDG(dst=R(11), src=Address.RegisterIndirect(R(10), 0), ty=ty))
        body += [MOV_IMM(dst=R(12), value=dst, ty=U32), MOV_IMM(dst=R(13), value=size, ty=U32),
                 MUL(dst=R(13), lhs=R(13), rhs=R(GID), ty=U32)]
        body.append(STG(dst=Address.RegisterIndirectComputed(R(12), R(13)), src=R(11), ty=ty))
    got = assert_matches_reference(gpu_driver, program(body), CONFIG, buffers, types=types)
    assert not compare_buffers(TYPES, buffers[0::2], got.buffers[1::2], 0, flushed=True)   # each a copy


def test_static_addresses_boundary_memory_and_signed_offsets(gpu_driver):
    body = [
        LDG(dst=R(1), src=Address.BufferOffset(handle=2, offset=4), ty=Type.I16),
        STG(dst=Address.Class(class_id=95, offset=12286), src=R(1), ty=Type.I16),
        LDG(dst=R(2), src=Address.Class(class_id=95, offset=12286), ty=Type.U16),
        *lane_pointer(10, 3, 8),
        STG(dst=Address.RegisterIndirect(R(10), 8), src=R(2), ty=Type.U16),
        MOV_IMM(dst=R(3), value=make_pointer(BOUNDARY_HANDLE, 12288 * 3 + 16), ty=U64),
        LDG(dst=R(5), src=Address.BufferOffset(handle=2, offset=7), ty=Type.I8),
        STG(dst=Address.RegisterIndirect(R(3), -8), src=R(5), ty=Type.I8),
        LDG(dst=R(4), src=Address.RegisterIndirect(R(3), -8), ty=Type.U8),
        STG(dst=Address.RegisterIndirect(R(10), 10), src=R(4), ty=Type.U8),
    ]
    assert_matches_reference(gpu_driver, program(body), CONFIG, [bytes(range(16)), bytes(8 * LANES + 16)])


@pytest.mark.parametrize("ty", [Type.U8, Type.I16, Type.F16, Type.BF16, Type.F32, Type.U64, Type.I256])
def test_shared_memory_round_trip_between_lanes(gpu_driver, ty):
    size = ty.size_bytes()
    config = LaunchConfig(grid=(3, 1, 1), block=(8, 1, 1), shared_memory=9 * size)
    body = [
        *lane_pointer(10, 2, size), LDG(dst=R(1), src=Address.RegisterIndirect(R(10), 0), ty=ty),
        MOV_IMM(dst=R(2), value=size, ty=U32), MUL(dst=R(3), lhs=R(252), rhs=R(2), ty=U32),
        STS(dst=Address.RegisterIndirect(R(3), 0), src=R(1), ty=ty), BarSync(id=0),
        MOV_IMM(dst=R(4), value=7 * size, ty=U32), ADD(dst=R(5), lhs=R(4), rhs=R(2), ty=U32),
        MOV_IMM(dst=R(6), value=0, ty=U32),
        LDS(dst=R(7), src=Address.RegisterIndirect(R(4), 0), ty=ty),
        *lane_pointer(11, 3, size), STG(dst=Address.RegisterIndirect(R(11), 0), src=R(7), ty=ty),
        LDS(dst=R(8), src=Address.Shared(offset=0), ty=ty),
        STS(dst=Address.Shared(offset=8 * size), src=R(8), ty=ty),
    ]
    assert_matches_reference(gpu_driver, program(body), config, [values_of(ty, 24, 5), bytes(24 * size)],
                             types=[ty, ty])


def test_pools_from_the_program_and_from_the_host(gpu_driver):
    body = [
        PoolAlloc(dst=R(1), size=4 * 64),
        MOV_IMM(dst=R(2), value=4, ty=U32), MUL(dst=R(3), lhs=R(GID), rhs=R(2), ty=U32),
        PoolStore(pool=R(1), offset=R(3), src=R(GID), ty=U32),
        BarSync(id=0),
        PoolLoad(dst=R(4), pool=R(1), offset=R(3), ty=U32),
        ADD(dst=R(4), lhs=R(4), rhs=R(1), ty=U32),
        *lane_pointer(10, 2, 4), STG(dst=Address.RegisterIndirect(R(10), 0), src=R(4), ty=U32),
        PoolFree(handle=R(1)),
        MOV_IMM(dst=R(5), value=3, ty=U32),
        PoolLoad(dst=R(6), pool=R(5), offset=R(3), ty=Type.U16),
        STG(dst=Address.RegisterIndirect(R(10), 2), src=R(6), ty=Type.U16),
    ]
    from webgpu_backend import WebGpuBackend
    from atlas_web.reference import CpuBackend
    from .harness import run_on
    results = []
    for backend in (CpuBackend(), WebGpuBackend(driver=gpu_driver)):
        pool = backend.allocate_pool(4 * LANES)
        assert pool == 2
        backend.copy_to_pool(pool, 0, bytes(range(4 * LANES)))
        results.append(run_on(backend, _rehandled(body), CONFIG, [bytes(4 * LANES)]))
    assert results[0] == results[1]


def _rehandled(body):
    """The body with the output buffer at handle 3 (the host pool took handle 2)."""
    out = []
    for instr in body:
        if isinstance(instr, MOV_IMM) and instr.ty is U64 and instr.value == 2 << 32:
            instr = MOV_IMM(dst=instr.dst, value=3 << 32, ty=U64)
        elif isinstance(instr, MOV_IMM) and instr.ty is U32 and instr.value == 3 and instr.dst == R(5):
            instr = MOV_IMM(dst=instr.dst, value=2, ty=U32)
        out.append(instr)
    return program(out)


@pytest.mark.parametrize("reduction", [ReduceAdd, ReduceMin, ReduceMax, ReduceMul])
def test_per_lane_reductions_for_every_scalar_type(gpu_driver, reduction):
    types = sorted((t for t in SCALARS if t is not Type.F64), key=lambda t: t.code)
    buffers, body, buffer_types = [], [], []
    for k, ty in enumerate(types):
        size = ty.size_bytes()
        count = 5
        buffers += [values_of(ty, LANES * count, 31 + k), bytes(size * LANES)]
        buffer_types += [ty, ty]
        body += lane_pointer(10, 2 + 2 * k, size * count)
        body.append(reduction(dst=R(11), src_array=Address.RegisterIndirect(R(10), 0), count=count, ty=ty))
        body.append(reduction(dst=R(12), src_array=Address.RegisterIndirect(R(10), 0), count=0, ty=ty))
        body += lane_pointer(13, 3 + 2 * k, size)
        body.append(STG(dst=Address.RegisterIndirect(R(13), 0), src=R(11), ty=ty))
        if k % 2 == 0:
            body.append(STG(dst=Address.RegisterIndirect(R(13), 0), src=R(12), ty=ty))
    assert_matches_reference(gpu_driver, program(body), CONFIG, buffers, types=buffer_types)


def test_pointers_into_several_chunks(gpu_driver):
    from webgpu_backend import WebGpuBackend
    from atlas_web.reference import CpuBackend
    from .harness import run_on
    size = 1 << 20
    rng = random.Random(3)
    data = [bytes(rng.getrandbits(8) for _ in range(256)) for _ in range(3)]
    body = []
    for k in range(3):
        body += lane_pointer(10, 2 + k, 4, scratch=201)
        body.append(LDG(dst=R(20 + k), src=Address.RegisterIndirect(R(10), 0), ty=U32))
    body += [ADD(dst=R(30), lhs=R(20), rhs=R(21), ty=U32), ADD(dst=R(30), lhs=R(30), rhs=R(22), ty=U32)]
    body += lane_pointer(11, 4, 4, scratch=201) + [STG(dst=Address.RegisterIndirect(R(11), size - 4 * 64), src=R(30),
                                                       ty=U32)]
    buffers = [d + bytes(size - 256) for d in data]
    outcomes = []
    for backend in (CpuBackend(), WebGpuBackend(driver=gpu_driver, chunk_capacity=(2 << 20) + 4096, max_chunks=3)):
        outcomes.append(run_on(backend, program(body), LaunchConfig.linear(64), buffers))
        if isinstance(backend, WebGpuBackend):
            assert len(backend._memory.chunks) >= 2
            backend.close()
    assert outcomes[0] == outcomes[1]


def test_a_grid_of_more_blocks_than_one_dispatch_dimension_holds(gpu_driver):
    config = LaunchConfig(grid=(70_000, 1, 1), block=(1, 1, 1))
    body = lane_pointer(10, 2, 4) + [STG(dst=Address.RegisterIndirect(R(10), 0), src=R(253), ty=U32)]
    got = assert_matches_reference(gpu_driver, program(body), config, [bytes(4 * 70_000)])
    assert got.buffers[0][-4:] == (69_999).to_bytes(4, "little")
