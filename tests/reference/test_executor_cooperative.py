"""Reference executor cooperative instructions: every map / binary map / reduction and type against
independent oracles, register-based addresses read from lane 0, traps with lane -1, stages, pools."""

from __future__ import annotations

import math
from functools import partial

import pytest

from atlas_web import InvalidBuffer, TrapCode
from atlas_web.isa import (
    ADD, COOPERATIVE_OPERATION_TYPES, CVT, LDG, MOV_IMM, MUL, SHL, STG, Address, BinaryMapOperation,
    MapOperation, ParallelMap, ParallelMapBinary, ParallelReduce, PoolAlloc, PoolFree, PoolStore,
    ReduceOperation, Type,
)
from atlas_web.isa.floats import float_to_bits, round_float
from atlas_web.reference import CpuBackend

from .executor_helpers import decode, lane_pointer, pointer, prog, r, run, trap_of, typed_bytes
from .test_numeric_activations_f64 import exact_activation


def _types(op) -> list[Type]:
    return sorted(COOPERATIVE_OPERATION_TYPES[op], key=lambda t: t.code)


MAP_CASES = [(op, ty) for op in MapOperation for ty in _types(op)]
BINARY_CASES = [(op, ty) for op in BinaryMapOperation for ty in _types(op)]
REDUCE_CASES = [(op, ty) for op in ReduceOperation for ty in _types(op)]

COVERS = (
    [("ParallelMap", ty) for _, ty in MAP_CASES] + [(f"MAP:{op.name}", ty) for op, ty in MAP_CASES]
    + [("ParallelMapBinary", ty) for _, ty in BINARY_CASES] + [(f"BINMAP:{op.name}", ty) for op, ty in BINARY_CASES]
    + [("ParallelReduce", ty) for _, ty in REDUCE_CASES] + [(f"REDUCE:{op.name}", ty) for op, ty in REDUCE_CASES]
    + [("PoolAlloc", None), ("PoolFree", None), ("PoolStore", Type.U32)]
)

U32, U64 = Type.U32, Type.U64
COUNT = 16


MAP_ORACLES = {
    MapOperation.Abs: abs, MapOperation.Neg: lambda x: -x, MapOperation.Sqrt: math.sqrt, MapOperation.Exp: math.exp,
    MapOperation.Log: math.log, MapOperation.Sin: math.sin, MapOperation.Cos: math.cos, MapOperation.Tan: math.tan,
    MapOperation.Relu: lambda x: max(x, 0), MapOperation.Tanh: math.tanh,
    # correctly rounded (mpmath): the binary64 formulas are several ulp off in F64
    MapOperation.Sigmoid: partial(exact_activation, "SIGMOID"), MapOperation.Gelu: partial(exact_activation, "GELU"),
    MapOperation.Swish: partial(exact_activation, "SWISH"),
}
BINARY_ORACLES = {
    BinaryMapOperation.Add: lambda a, b: a + b, BinaryMapOperation.Sub: lambda a, b: a - b,
    BinaryMapOperation.Mul: lambda a, b: a * b, BinaryMapOperation.Div: lambda a, b: a / b,
    BinaryMapOperation.Pow: math.pow, BinaryMapOperation.Min: min, BinaryMapOperation.Max: max,
    BinaryMapOperation.Atan2: math.atan2,
}
#: maps whose domain is the positive numbers
POSITIVE = {MapOperation.Sqrt, MapOperation.Log, BinaryMapOperation.Pow}


def _inputs(op, ty: Type, seed: int) -> list:
    """COUNT inputs of ``ty``: small integers, or floats in [-3, 3] ([0.25, 3] where the op needs it)."""
    if ty.is_integer():
        low, high = ty.int_range()  # the edges: Neg, Abs, Add and Mul wrap there
        return [ty.wrap((seed * 7 + 11 * i) % 19 - 9) for i in range(COUNT - 2)] + [low, high]
    if op in POSITIVE:
        return [round_float(0.25 + (seed + 5 * i) % 12 * 0.25, ty) for i in range(COUNT)]
    return [round_float(-3 + ((seed + 7 * i) % 25) * 0.25, ty) for i in range(COUNT)]


def _ulps(a: float, b: float, ty: Type) -> float:
    if math.isnan(a) or math.isnan(b):
        return 0 if math.isnan(a) and math.isnan(b) else math.inf

    def ordered(x: float) -> int:
        bits = float_to_bits(x, ty)
        sign = 1 << (ty.bits - 1)
        return -(bits & ~sign) if bits & sign else bits

    return abs(ordered(a) - ordered(b))


def _expect(values: list, expected: list, ty: Type) -> None:
    """Integers exactly; floats within 1 ulp of the f64 oracle rounded to ``ty`` (F64: 4 ulps, since
    the oracle's own f64 steps round differently from the reference's)."""
    if ty.is_integer():
        assert values == [ty.wrap(int(e)) for e in expected]
        return
    tolerance = 4 if ty is Type.F64 else 1
    for i, (got, want) in enumerate(zip(values, expected)):
        want = round_float(want, ty)
        assert _ulps(got, want, ty) <= tolerance, f"element {i}: {got!r} != {want!r}"


@pytest.fixture
def backend():
    return CpuBackend()


def _filled(backend, ty: Type, values: list) -> int:
    handle = backend.allocate_buffer(len(values) * ty.size_bytes())
    backend.copy_to_buffer(handle, typed_bytes(ty, values))
    return handle


@pytest.mark.parametrize("op,ty", MAP_CASES, ids=lambda v: getattr(v, "name", None))
def test_parallel_map(backend, op, ty):
    source = _inputs(op, ty, op.code)
    src = _filled(backend, ty, source)
    dst = backend.allocate_buffer(COUNT * ty.size_bytes())
    program = prog(ParallelMap(dst_array=Address.BufferOffset(handle=dst), src_array=Address.BufferOffset(handle=src),
                               count=COUNT, operation=op, ty=ty))
    run(backend, program, 4)
    _expect(decode(ty, backend.copy_from_buffer(dst)), [MAP_ORACLES[op](x) for x in source], ty)


@pytest.mark.parametrize("op,ty", BINARY_CASES, ids=lambda v: getattr(v, "name", None))
def test_parallel_map_binary(backend, op, ty):
    a_values, b_values = _inputs(op, ty, 3), _inputs(op, ty, 8)
    if op is BinaryMapOperation.Div:
        b_values = [b if b != 0 else 0.5 for b in b_values]
    a, b = _filled(backend, ty, a_values), _filled(backend, ty, b_values)
    dst = backend.allocate_buffer(COUNT * ty.size_bytes())
    program = prog(ParallelMapBinary(dst_array=Address.BufferOffset(handle=dst), src_a=Address.BufferOffset(handle=a),
                                     src_b=Address.BufferOffset(handle=b), count=COUNT, operation=op, ty=ty))
    run(backend, program, 4)
    expected = [BINARY_ORACLES[op](x, y) for x, y in zip(a_values, b_values)]
    _expect(decode(ty, backend.copy_from_buffer(dst)), expected, ty)


REDUCE_ORACLES = {ReduceOperation.Sum: sum, ReduceOperation.Product: math.prod,
                  ReduceOperation.Min: min, ReduceOperation.Max: max}


@pytest.mark.parametrize("op,ty", REDUCE_CASES, ids=lambda v: getattr(v, "name", None))
def test_parallel_reduce_is_uniform(backend, op, ty):
    # small integers: every float sum and product here is exact
    values = [(-1) ** i * (1 + i % 3) if ty.is_signed() else 1 + i % 3 for i in range(10)]
    src = _filled(backend, ty, values)
    out = backend.allocate_buffer(8 * ty.size_bytes())
    program = prog(ParallelReduce(dst=r(1), src_array=Address.BufferOffset(handle=src), count=10, operation=op, ty=ty),
                   *lane_pointer(r(12), r(11), ty.size_bytes(), r(13)),
                   STG(dst=Address.RegisterIndirect(r(12)), src=r(1), ty=ty))
    run(backend, program, 8, registers={r(11): (U64, pointer(out))})
    _expect(decode(ty, backend.copy_from_buffer(out)), [REDUCE_ORACLES[op](values)] * 8, ty)


def test_register_addresses_are_read_from_lane_zero(backend):
    a = _filled(backend, Type.F32, [float(i) for i in range(COUNT)])
    b = _filled(backend, Type.F32, [10.0] * COUNT)
    c = backend.allocate_buffer(4 * COUNT)
    # lane k's pointers are offset by k * 4096 bytes: only lane 0's lie inside the buffers
    program = prog(*lane_pointer(r(20), r(10), 4096, r(30)), *lane_pointer(r(21), r(11), 4096, r(30)),
                   CVT(dst=r(22), src=r(255), src_ty=U32, dst_ty=U64),
                   ParallelMapBinary(dst_array=Address.RegisterIndirect(r(20)),
                                     src_a=Address.RegisterIndirectComputed(r(12), r(22)),
                                     src_b=Address.RegisterIndirect(r(21)), count=COUNT,
                                     operation=BinaryMapOperation.Mul))
    run(backend, program, 8, registers={r(10): (U64, pointer(c)), r(11): (U64, pointer(b)), r(12): (U32, int(a))})
    assert decode(Type.F32, backend.copy_from_buffer(c)) == [10.0 * i for i in range(COUNT)]


def test_cooperative_steps_see_every_lane_before_and_lanes_see_the_step_after(backend):
    lanes = 8
    values = backend.allocate_buffer(4 * lanes)
    doubled = backend.allocate_buffer(4 * lanes)
    out = backend.allocate_buffer(4 * lanes)
    program = prog(*lane_pointer(r(20), r(10), 4, r(30)),
                   ADD(dst=r(1), lhs=r(255), rhs=r(255), ty=U32),
                   STG(dst=Address.RegisterIndirect(r(20)), src=r(1), ty=U32),               # values[k] = 2k
                   ParallelMapBinary(dst_array=Address.BufferOffset(handle=doubled),
                                     src_a=Address.BufferOffset(handle=values),
                                     src_b=Address.BufferOffset(handle=values),
                                     count=lanes, operation=BinaryMapOperation.Add, ty=U32),  # doubled[k] = 4k
                   *lane_pointer(r(21), r(11), 4, r(30)),
                   MOV_IMM(dst=r(2), value=(lanes - 1) * 4, ty=U64),
                   ADD(dst=r(2), lhs=r(2), rhs=r(11), ty=U64),
                   LDG(dst=r(3), src=Address.RegisterIndirect(r(2)), ty=U32),                  # doubled[last]
                   *lane_pointer(r(22), r(12), 4, r(30)),
                   STG(dst=Address.RegisterIndirect(r(22)), src=r(3), ty=U32))
    run(backend, program, lanes, registers={r(10): (U64, pointer(values)), r(11): (U64, pointer(doubled)),
                                            r(12): (U64, pointer(out))})
    assert decode(U32, backend.copy_from_buffer(doubled)) == [4 * k for k in range(lanes)]
    assert decode(U32, backend.copy_from_buffer(out)) == [4 * (lanes - 1)] * lanes


def _map_at(dst: Address, src: Address, count: int = COUNT, ty: Type = Type.F32):
    return ParallelMap(dst_array=dst, src_array=src, count=count, operation=MapOperation.Neg, ty=ty)


def test_cooperative_traps_have_lane_minus_one(backend):
    small = backend.allocate_buffer(32)
    big = backend.allocate_buffer(256)
    registers = {r(10): (U64, pointer(small)), r(11): (U64, pointer(big)), r(12): (U64, pointer(big, 2)),
                 r(13): (U64, pointer(404))}
    static = Address.BufferOffset(handle=big)
    past_end = prog(MOV_IMM(dst=r(1), value=0, ty=U32), _map_at(static, Address.RegisterIndirect(r(10))))
    assert trap_of(backend, past_end, 4, registers=registers) == (TrapCode.OUT_OF_BOUNDS, 1, -1)
    no_buffer = prog(_map_at(Address.RegisterIndirect(r(13)), static))
    assert trap_of(backend, no_buffer, 4, registers=registers) == (TrapCode.INVALID_HANDLE, 0, -1)
    crooked = prog(_map_at(static, Address.RegisterIndirect(r(12)), count=4))
    assert trap_of(backend, crooked, 4, registers=registers) == (TrapCode.MISALIGNED, 0, -1)
    negative = prog(_map_at(static, Address.RegisterIndirect(r(11), -4), count=4))
    assert trap_of(backend, negative, 4, registers=registers) == (TrapCode.OUT_OF_BOUNDS, 0, -1)
    reduce_past_end = prog(ParallelReduce(dst=r(1), src_array=Address.RegisterIndirect(r(10)), count=9,
                                          operation=ReduceOperation.Sum, ty=Type.F32))
    assert trap_of(backend, reduce_past_end, 4, registers=registers) == (TrapCode.OUT_OF_BOUNDS, 0, -1)


def test_pool_alloc_store_reduce_free_in_one_program(backend):
    backend.allocate_buffer(4)  # handle 2; out is 3, the pool will be 4
    lanes = 8
    out = backend.allocate_buffer(4 * lanes)
    program = prog(PoolAlloc(dst=r(1), size=4 * lanes),                                        # 0
                   CVT(dst=r(2), src=r(255), src_ty=U32, dst_ty=U64),
                   MOV_IMM(dst=r(3), value=4, ty=U64),
                   MUL(dst=r(2), lhs=r(2), rhs=r(3), ty=U64),
                   PoolStore(pool=r(1), offset=r(2), src=r(255), ty=U32),                       # pool[k] = k
                   CVT(dst=r(4), src=r(1), src_ty=U32, dst_ty=U64),
                   MOV_IMM(dst=r(5), value=32, ty=U32),
                   SHL(dst=r(4), src=r(4), amount=r(5), ty=U64),                                 # pointer to the pool
                   ParallelReduce(dst=r(6), src_array=Address.RegisterIndirect(r(4)), count=lanes,
                                  operation=ReduceOperation.Sum, ty=U32),
                   PoolFree(handle=r(1)),
                   ADD(dst=r(7), lhs=r(6), rhs=r(1), ty=U32),                                 # sum + handle
                   *lane_pointer(r(20), r(10), 4, r(30)),
                   STG(dst=Address.RegisterIndirect(r(20)), src=r(7), ty=U32))
    run(backend, program, lanes, registers={r(10): (U64, pointer(out))})
    assert decode(U32, backend.copy_from_buffer(out)) == [sum(range(lanes)) + 4] * lanes
    with pytest.raises(InvalidBuffer, match="handle 4"):
        backend.pool_size(4)
    assert backend.allocate_pool(8) == 5  # handles are never reused


def test_pool_exhausted_and_pool_free_of_a_non_pool(backend):
    limited = CpuBackend(memory_limit=1024)
    limited.allocate_buffer(1000)
    program = prog(PoolAlloc(dst=r(1), size=100))
    assert trap_of(limited, program, 4) == (TrapCode.POOL_EXHAUSTED, 0, -1)
    run(limited, prog(PoolAlloc(dst=r(1), size=24)), 4)   # still usable, and 24 bytes fit
    buf = backend.allocate_buffer(8)
    free_buffer = prog(PoolFree(handle=r(1)))
    assert trap_of(backend, free_buffer, 4, registers={r(1): (U32, int(buf))}) == (TrapCode.INVALID_HANDLE, 0, -1)
    assert backend.buffer_size(buf) == 8  # not freed
