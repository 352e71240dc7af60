"""Reference executor: loads and stores of every type, every address mode, shared memory, pools, per-lane reductions."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import LaunchConfig
from atlas_web.isa import (
    ALL, AND, BRA, CLASS_STRIDE, CVT, EXIT, LDG, LDS, MOV_IMM, MUL, SCALARS, STG, STS, SUB, XOR, Address, BarSync,
    Condition, MemFence, MemoryScope, PoolLoad, PoolStore, Predicate, ReduceAdd, ReduceMax, ReduceMin, ReduceMul,
    SETcc, Type,
)
from atlas_web.reference import CpuBackend

from .executor_helpers import decode, lane_pointer, pointer, prog, r, run, typed_bytes

ALL_TYPES = sorted(ALL, key=lambda t: t.code)
SCALAR_TYPES = sorted(SCALARS, key=lambda t: t.code)
REDUCTIONS = {"add": ReduceAdd, "min": ReduceMin, "max": ReduceMax, "mul": ReduceMul}

COVERS = (
    [(name, ty) for name in ("LDG", "STG", "LDS", "STS", "PoolLoad", "PoolStore") for ty in ALL_TYPES]
    + [(cls.__name__, ty) for cls in REDUCTIONS.values() for ty in SCALAR_TYPES]
    + [(f"LANEREDUCE:{kind}", ty) for kind in REDUCTIONS for ty in SCALAR_TYPES]
    + [("BarSync", None), ("MemFence", None)]
)

LANES = 12
U64 = Type.U64


def _random_bytes(n: int, seed: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


@pytest.fixture
def backend():
    return CpuBackend()


@pytest.mark.parametrize("ty", ALL_TYPES, ids=lambda t: t.name)
def test_ldg_stg_round_trip_every_type(backend, ty):
    size = ty.size_bytes()
    data = _random_bytes(LANES * size, ty.code)
    src, out = backend.allocate_buffer(len(data)), backend.allocate_buffer(len(data))
    backend.copy_to_buffer(src, data)
    program = prog(
        *lane_pointer(r(12), r(10), size, r(13)), *lane_pointer(r(14), r(11), size, r(13)),
        LDG(dst=r(1), src=Address.RegisterIndirect(r(12)), ty=ty),
        STG(dst=Address.RegisterIndirect(r(14)), src=r(1), ty=ty),
    )
    run(backend, program, LaunchConfig.linear(LANES, 4),
        registers={r(10): (U64, pointer(src)), r(11): (U64, pointer(out))})
    assert backend.copy_from_buffer(out) == data


@pytest.mark.parametrize("ty", ALL_TYPES, ids=lambda t: t.name)
def test_block_wide_reversal_through_shared_memory(backend, ty):
    size, block, blocks = ty.size_bytes(), 8, 3
    data = _random_bytes(block * blocks * size, 100 + ty.code)
    src, out = backend.allocate_buffer(len(data)), backend.allocate_buffer(len(data))
    backend.copy_to_buffer(src, data)
    program = prog(
        *lane_pointer(r(12), r(10), size, r(13)),
        LDG(dst=r(1), src=Address.RegisterIndirect(r(12)), ty=ty),
        CVT(dst=r(20), src=r(252), src_ty=Type.U32, dst_ty=U64),         # lane index in the block
        MOV_IMM(dst=r(21), value=size, ty=U64),
        MUL(dst=r(22), lhs=r(20), rhs=r(21), ty=U64),
        STS(dst=Address.RegisterIndirect(r(22)), src=r(1), ty=ty),
        BarSync(id=0),
        MemFence(scope=MemoryScope.Block),
        MOV_IMM(dst=r(24), value=block - 1, ty=U64),
        SUB(dst=r(25), lhs=r(24), rhs=r(20), ty=U64),
        MUL(dst=r(26), lhs=r(25), rhs=r(21), ty=U64),
        LDS(dst=r(2), src=Address.RegisterIndirect(r(26)), ty=ty),
        *lane_pointer(r(14), r(11), size, r(13)),
        STG(dst=Address.RegisterIndirect(r(14)), src=r(2), ty=ty),
    )
    config = LaunchConfig(grid=(blocks, 1, 1), block=(block, 1, 1), shared_memory=block * size)
    run(backend, program, config, registers={r(10): (U64, pointer(src)), r(11): (U64, pointer(out))})
    got = backend.copy_from_buffer(out)
    for b in range(blocks):
        for j in range(block):
            lane, mirror = b * block + j, b * block + block - 1 - j
            assert got[lane * size:(lane + 1) * size] == data[mirror * size:(mirror + 1) * size]


def test_barrier_holds_early_lanes_until_their_block_has_arrived(backend):
    # odd lanes store their lane index to shared memory and reach the barrier first; even lanes run a
    # later path, store there, and jump back to it. After the barrier each lane reads its neighbour's.
    out = backend.allocate_buffer(4 * 16)
    program = prog(MOV_IMM(dst=r(1), value=1, ty=Type.U32),                                   # 0
                   AND(dst=r(2), lhs=r(252), rhs=r(1), ty=Type.U32),                          # 1
                   MOV_IMM(dst=r(3), value=4, ty=Type.U32),                                   # 2
                   MUL(dst=r(4), lhs=r(252), rhs=r(3), ty=Type.U32),                          # 3: lane * 4
                   SETcc(pred=Predicate(0), lhs=r(2), rhs=r(1), cond=Condition.NE, ty=Type.U32),  # 4: even
                   BRA(target="even", pred=Predicate(0)),                                      # 5
                   STS(dst=Address.RegisterIndirect(r(4)), src=r(252), ty=Type.U32),          # 6
                   BarSync(id=0),                                                             # 7: join
                   XOR(dst=r(5), lhs=r(4), rhs=r(3), ty=Type.U32),                            # 8: (lane ^ 1) * 4
                   LDS(dst=r(6), src=Address.RegisterIndirect(r(5)), ty=Type.U32),            # 9
                   *_store_per_lane(10, 6, Type.U32),                                         # 10 … 14
                   EXIT(),                                                                    # 15
                   STS(dst=Address.RegisterIndirect(r(4)), src=r(252), ty=Type.U32),          # 16: even
                   BRA(target="join"),                                                        # 17
                   even=16, join=7)
    config = LaunchConfig(grid=(2, 1, 1), block=(8, 1, 1), shared_memory=32)
    run(backend, program, config, registers={r(10): (U64, pointer(out))})
    assert _read_out(backend, out, Type.U32, 16) == [lane ^ 1 for lane in range(8)] * 2


@pytest.mark.parametrize("ty", ALL_TYPES, ids=lambda t: t.name)
def test_pool_load_store_every_type(backend, ty):
    size = ty.size_bytes()
    data = _random_bytes(LANES * size, 200 + ty.code)
    source, target = backend.allocate_pool(len(data)), backend.allocate_pool(len(data))
    backend.copy_to_pool(source, 0, data)
    program = prog(
        CVT(dst=r(12), src=r(255), src_ty=Type.U32, dst_ty=U64),
        MOV_IMM(dst=r(13), value=size, ty=U64),
        MUL(dst=r(12), lhs=r(12), rhs=r(13), ty=U64),
        PoolLoad(dst=r(1), pool=r(10), offset=r(12), ty=ty),
        PoolStore(pool=r(11), offset=r(12), src=r(1), ty=ty),
    )
    run(backend, program, LANES, registers={r(10): (Type.U32, int(source)), r(11): (Type.U32, int(target))})
    assert backend.copy_from_pool(target, 0, len(data)) == data


def _store_per_lane(out_reg: int, value_reg: int, ty: Type) -> list:
    """STG of ``value_reg`` to the u64 pointer in ``out_reg`` + lane * size."""
    return [*lane_pointer(r(40), r(out_reg), ty.size_bytes(), r(41)),
            STG(dst=Address.RegisterIndirect(r(40)), src=r(value_reg), ty=ty)]


def _read_out(backend, out, ty, lanes=LANES):
    return decode(ty, backend.copy_from_buffer(out, bytearray(lanes * ty.size_bytes())))


def test_buffer_offset_is_the_same_address_in_every_lane(backend):
    src = backend.allocate_buffer(16)
    backend.copy_to_buffer(src, typed_bytes(Type.I32, [5, 6, 7, 8]))
    out = backend.allocate_buffer(4 * LANES)
    program = prog(LDG(dst=r(1), src=Address.BufferOffset(handle=src, offset=8), ty=Type.I32),
                   *_store_per_lane(11, 1, Type.I32))
    run(backend, program, LANES, registers={r(11): (U64, pointer(out))})
    assert _read_out(backend, out, Type.I32) == [7] * LANES


def test_pool_offset_and_static_store(backend):
    pool = backend.allocate_pool(8)
    backend.copy_to_pool(pool, 0, typed_bytes(Type.U16, [1, 2, 3, 4]))
    out = backend.allocate_buffer(2 * LANES)
    program = prog(LDG(dst=r(1), src=Address.PoolOffset(handle=pool, offset=6), ty=Type.U16),
                   *_store_per_lane(11, 1, Type.U16),
                   MOV_IMM(dst=r(2), value=9, ty=Type.U16),
                   STG(dst=Address.PoolOffset(handle=pool, offset=2), src=r(2), ty=Type.U16))
    run(backend, program, LANES, registers={r(11): (U64, pointer(out))})
    assert _read_out(backend, out, Type.U16) == [4] * LANES
    assert decode(Type.U16, backend.copy_from_pool(pool, 0, 8)) == [1, 9, 3, 4]


def test_class_addresses_the_boundary_memory(backend):
    boundary = backend.boundary_buffer
    assert int(boundary) == 1 and backend.buffer_size(boundary) == 96 * CLASS_STRIDE
    backend.copy_to_buffer(boundary, typed_bytes(Type.F32, [2.5]), 7 * CLASS_STRIDE + 12)
    out = backend.allocate_buffer(4 * LANES)
    program = prog(LDG(dst=r(1), src=Address.Class(class_id=7, offset=12), ty=Type.F32),
                   *_store_per_lane(11, 1, Type.F32),
                   STG(dst=Address.Class(class_id=95, offset=CLASS_STRIDE - 4), src=r(1), ty=Type.F32))
    run(backend, program, LANES, registers={r(11): (U64, pointer(out))})
    assert _read_out(backend, out, Type.F32) == [2.5] * LANES
    last = bytearray(4)
    backend.copy_from_buffer(boundary, last, 96 * CLASS_STRIDE - 4)
    assert decode(Type.F32, last) == [2.5]


def test_register_indirect_with_a_negative_static_offset(backend):
    src = backend.allocate_buffer(4 * (LANES + 2))
    backend.copy_to_buffer(src, typed_bytes(Type.I32, list(range(100, 100 + LANES + 2))))
    out = backend.allocate_buffer(4 * LANES)
    program = prog(*lane_pointer(r(12), r(10), 4, r(13)),
                   LDG(dst=r(1), src=Address.RegisterIndirect(r(12), -8), ty=Type.I32),
                   *_store_per_lane(11, 1, Type.I32))
    run(backend, program, LANES, registers={r(10): (U64, pointer(src, 8)), r(11): (U64, pointer(out))})
    assert _read_out(backend, out, Type.I32) == list(range(100, 100 + LANES))


@pytest.mark.parametrize("offset_ty", [Type.U64, Type.I32, Type.U16], ids=lambda t: t.name)
def test_register_indirect_computed(backend, offset_ty):
    src = backend.allocate_buffer(8 * LANES)
    backend.copy_to_buffer(src, typed_bytes(Type.F64, [i / 4 for i in range(LANES)]))
    out = backend.allocate_buffer(8 * LANES)
    program = prog(CVT(dst=r(12), src=r(255), src_ty=Type.U32, dst_ty=offset_ty),
                   MOV_IMM(dst=r(13), value=8, ty=offset_ty),
                   MUL(dst=r(12), lhs=r(12), rhs=r(13), ty=offset_ty),
                   LDG(dst=r(1), src=Address.RegisterIndirectComputed(r(10), r(12)), ty=Type.F64),
                   STG(dst=Address.RegisterIndirectComputed(r(11), r(12)), src=r(1), ty=Type.F64))
    run(backend, program, LANES, registers={r(10): (Type.U32, int(src)), r(11): (Type.I32, int(out))})
    assert _read_out(backend, out, Type.F64) == [i / 4 for i in range(LANES)]


def test_shared_static_offsets_are_per_block_and_zero_at_launch(backend):
    before, after = backend.allocate_buffer(4 * 8), backend.allocate_buffer(4 * 8)
    program = prog(LDS(dst=r(1), src=Address.Shared(4), ty=Type.U32),
                   BarSync(id=0),
                   STS(dst=Address.Shared(4), src=r(253), ty=Type.U32),    # BLOCK_IDX_X
                   BarSync(id=1),
                   LDS(dst=r(3), src=Address.Shared(4), ty=Type.U32),
                   *_store_per_lane(10, 1, Type.U32), *_store_per_lane(11, 3, Type.U32))
    config = LaunchConfig(grid=(2, 1, 1), block=(4, 1, 1), shared_memory=8)
    registers = {r(10): (U64, pointer(before)), r(11): (U64, pointer(after))}
    for _ in range(2):  # the second launch starts from zeroed shared memory again
        run(backend, program, config, registers=registers)
        assert _read_out(backend, before, Type.U32, 8) == [0] * 8
        assert _read_out(backend, after, Type.U32, 8) == [0, 0, 0, 0, 1, 1, 1, 1]


# ---- per-lane reductions ------------------------------------------------------------

def _run_values(ty: Type) -> list:
    if ty.is_unsigned():
        return [1, 2, 3, 4, 2, 3, 4, 4, 1, 3, 2, 4, 3, 4, 1, 2]
    return [1, -2, 3, 4, -1, 2, 3, -4, 2, 1, -3, 4, 2, -2, 3, 1]


def _fold(kind: str, ty: Type, values: list):
    if kind == "add":
        result = sum(values)
    elif kind == "mul":
        result = 1
        for v in values:
            result *= v
    else:
        result = (min if kind == "min" else max)(values)
    return result if ty.is_float() else ty.wrap(result)


@pytest.fixture(params=["whole", "chunked"])
def reduce_chunks(request, monkeypatch):
    """Per-lane reductions read in one piece, or (a tiny chunk limit) one column at a time."""
    if request.param == "chunked":
        from atlas_web.reference import exec_memory
        monkeypatch.setattr(exec_memory, "REDUCE_CHUNK_VALUES", 3)


@pytest.mark.parametrize("kind", list(REDUCTIONS))
@pytest.mark.parametrize("ty", SCALAR_TYPES, ids=lambda t: t.name)
def test_per_lane_reduction(backend, reduce_chunks, kind, ty):
    size, count, lanes = ty.size_bytes(), 5, 8
    values = _run_values(ty)
    src = backend.allocate_buffer(len(values) * size)
    backend.copy_to_buffer(src, typed_bytes(ty, values))
    out = backend.allocate_buffer(lanes * size)
    program = prog(*lane_pointer(r(12), r(10), size, r(13)),
                   REDUCTIONS[kind](dst=r(1), src_array=Address.RegisterIndirect(r(12)), count=count, ty=ty),
                   *_store_per_lane(11, 1, ty))
    run(backend, program, lanes, registers={r(10): (U64, pointer(src)), r(11): (U64, pointer(out))})
    expected = [_fold(kind, ty, values[i:i + count]) for i in range(lanes)]
    assert _read_out(backend, out, ty, lanes) == expected


@pytest.mark.parametrize("kind", list(REDUCTIONS))
@pytest.mark.parametrize("ty", SCALAR_TYPES, ids=lambda t: t.name)
def test_per_lane_reduction_of_nothing_is_the_identity(backend, reduce_chunks, kind, ty):
    src = backend.allocate_buffer(8)
    out = backend.allocate_buffer(4 * ty.size_bytes())
    program = prog(REDUCTIONS[kind](dst=r(1), src_array=Address.BufferOffset(handle=src, offset=0), count=0, ty=ty),
                   *_store_per_lane(11, 1, ty))
    run(backend, program, 4, registers={r(11): (U64, pointer(out))})
    if ty.is_float():
        identity = {"add": 0.0, "mul": 1.0, "min": float("inf"), "max": float("-inf")}[kind]
    else:
        low, high = ty.int_range()
        identity = {"add": 0, "mul": 1, "min": high, "max": low}[kind]
    assert _read_out(backend, out, ty, 4) == [identity] * 4
