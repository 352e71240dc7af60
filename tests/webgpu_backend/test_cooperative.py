"""ParallelMap, ParallelMapBinary and ParallelReduce kernels on WebGpuBackend against the reference,
for every operation and type they accept: integers bit for bit, floats within the backend's
documented ulp tolerance, float sums and products within count * eps (the contract's rule); NaNs and
subnormals as the conformance suite compares them (harness.value_problems)."""

from __future__ import annotations

import math

import pytest

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import (
    COOPERATIVE_OPERATION_TYPES, STG, Address, BinaryMapOperation, MapOperation, ParallelMap, ParallelMapBinary,
    ParallelReduce, ReduceOperation, Register, Type,
)
from atlas_web.isa.floats import round_float
from tests.conformance.harness import flushes_subnormals, subnormals_flushed
from tests.conformance.values import decode, encode, float_values, int_values

from .harness import run_on, value_problems

CONFIG = LaunchConfig.linear(4)


def _values(ty: Type, n: int, seed: int) -> list:
    return float_values(ty, n, seed) if ty.is_float() else int_values(ty, n, seed)


def _cases(kind):
    for op in kind:
        for ty in sorted(COOPERATIVE_OPERATION_TYPES[op], key=lambda t: t.code):
            if ty is not Type.F64:
                yield pytest.param(op, ty, id=f"{op.name}-{ty.suffix}")


def _compare(both, op, ty: Type, k: int) -> None:
    """Buffer k of the reference's and webgpu's runs of ``_both``: integers bit for bit, floats within
    the backend's tolerance for ``op`` (NaN-ness, subnormals per device_info, as the conformance suite)."""
    backend, expected, got, flushes, flushed_expected = both
    problems = value_problems(flushes, [ty], [expected.buffers[k]], [got.buffers[k]],
                              backend.ulp_tolerance(op, ty) if ty.is_float() else 0,
                              lambda: [flushed_expected()[k]])
    assert not problems, problems[0]


def _both(gpu_driver, build, buffers, types=None):
    """(backend, reference outcome, webgpu outcome, whether the device flushes subnormals, the reference's
    buffers from the ``types``' inputs with subnormals flushed)."""
    from atlas_web.reference import CpuBackend
    from webgpu_backend import WebGpuBackend
    expected = run_on(CpuBackend(), build, CONFIG, buffers)
    backend = WebGpuBackend(driver=gpu_driver)
    try:
        got = run_on(backend, build, CONFIG, buffers)
        flushes = flushes_subnormals(backend)
    finally:
        backend.close()
    assert got.trap == expected.trap

    def flushed_expected() -> list[bytes]:
        inputs = [subnormals_flushed(ty, data) for ty, data in zip(types or [None] * len(buffers), buffers)]
        return run_on(CpuBackend(), build, CONFIG, inputs).buffers
    return backend, expected, got, flushes, flushed_expected


@pytest.mark.parametrize("op, ty", list(_cases(MapOperation)))
def test_parallel_map(gpu_driver, op, ty):
    count, size = 37, ty.size_bytes()
    offset = size if size < 4 else 0     # 8- and 16-bit arrays that start inside a word
    program = ProgramBuilder().add(ParallelMap(
        dst_array=Address.BufferOffset(handle=3, offset=offset), src_array=Address.BufferOffset(handle=2, offset=0),
        count=count, operation=op, ty=ty)).build()
    buffers = [encode(ty, _values(ty, count, 11)), encode(ty, _values(ty, count + 2, 12))]
    _compare(_both(gpu_driver, program, buffers, [ty, ty]), op, ty, 1)


@pytest.mark.parametrize("op, ty", list(_cases(BinaryMapOperation)))
def test_parallel_map_binary(gpu_driver, op, ty):
    count = 4099 if ty in (Type.F32, Type.I32) else 41     # a vec4 body and a tail where the types allow it
    program = ProgramBuilder().add(ParallelMapBinary(
        dst_array=Address.BufferOffset(handle=4, offset=0), src_a=Address.BufferOffset(handle=2, offset=0),
        src_b=Address.BufferOffset(handle=3, offset=0), count=count, operation=op, ty=ty)).build()
    buffers = [encode(ty, _values(ty, count, 21)), encode(ty, _values(ty, count, 22)), bytes(ty.size_bytes() * count)]
    _compare(_both(gpu_driver, program, buffers, [ty, ty, ty]), op, ty, 2)


@pytest.mark.parametrize("op, ty", list(_cases(ReduceOperation)))
def test_parallel_reduce(gpu_driver, op, ty):
    count = 100_003 if ty is Type.F32 and op is ReduceOperation.Sum else 301
    values = _values(ty, count, 31)
    if ty.is_float() and op in (ReduceOperation.Sum, ReduceOperation.Product):
        values = [v for v in values if math.isfinite(v)]
        if op is ReduceOperation.Product:     # magnitudes in [0.5, 1.5]: the product stays finite
            values = [math.copysign(0.5 + min(abs(v), 1.0), v) for v in values]
        values = [round_float(v, ty) for v in values]
    program = ProgramBuilder().add(
        ParallelReduce(dst=Register(1), src_array=Address.BufferOffset(handle=2, offset=0), count=len(values),
                       operation=op, ty=ty)).add(
        STG(dst=Address.BufferOffset(handle=3, offset=0), src=Register(1), ty=ty)).build()
    buffers = [encode(ty, values), bytes(ty.size_bytes())]
    both = _both(gpu_driver, program, buffers, [ty, ty])
    if ty.is_float() and op in (ReduceOperation.Sum, ReduceOperation.Product):
        want, have = decode(ty, both[1].buffers[1])[0], decode(ty, both[2].buffers[1])[0]
        eps = {Type.F16: 2 ** -11, Type.BF16: 2 ** -8, Type.F32: 2 ** -24}[ty]
        assert math.isclose(want, have, rel_tol=len(values) * eps, abs_tol=1e-30)
    else:
        _compare(both, op, ty, 1)


def test_reduce_result_feeds_later_lanes_and_empty_arrays_give_the_identity(gpu_driver):
    program = ProgramBuilder().add(
        ParallelReduce(dst=Register(1), src_array=Address.BufferOffset(handle=2, offset=0), count=0,
                       operation=ReduceOperation.Max, ty=Type.I32)).add(
        ParallelReduce(dst=Register(2), src_array=Address.BufferOffset(handle=2, offset=0), count=3,
                       operation=ReduceOperation.Sum, ty=Type.U64)).add(
        STG(dst=Address.BufferOffset(handle=3, offset=0), src=Register(1), ty=Type.I32)).add(
        STG(dst=Address.BufferOffset(handle=3, offset=8), src=Register(2), ty=Type.U64)).build()
    buffers = [encode(Type.U64, [1, 2, 2 ** 64 - 1]), bytes(16)]
    _, expected, got, _, _ = _both(gpu_driver, program, buffers)
    assert got.buffers == expected.buffers
    assert decode(Type.I32, got.buffers[1][:4]) == [-2 ** 31]


def test_binding_variants_in_one_submission(gpu_driver):
    """Kernels chained in one submission (the later ones guarded), with arrays at offsets the
    device can bind (0, 64), at 16-byte offsets it cannot (a run-time base), at word offsets (no
    vec4 body), counts with and without a tail and below one vec4; then the same launch again
    (replayed from its record) and with different data."""
    # (dst, a, b) byte offsets, count
    cases = [((0, 0, 0), 4099), ((16, 48, 80), 4101), ((4, 8, 12), 1001), ((64, 128, 192), 3),
             ((0, 1024, 2048), 4096)]
    builder = ProgramBuilder()
    for (dst, a, b), count in cases:
        builder.add(ParallelMapBinary(
            dst_array=Address.BufferOffset(handle=4, offset=dst), src_a=Address.BufferOffset(handle=2, offset=a),
            src_b=Address.BufferOffset(handle=3, offset=b), count=count, operation=BinaryMapOperation.Add,
            ty=Type.F32))
    program = builder.build()
    from atlas_web.reference import CpuBackend
    from webgpu_backend import WebGpuBackend
    backend = WebGpuBackend(driver=gpu_driver)
    try:
        handles = [backend.allocate_buffer(4 * 5000) for _ in range(3)]
        assert handles == [2, 3, 4]
        for seed in (41, 41, 43):
            buffers = [encode(Type.F32, _values(Type.F32, 5000, seed)),
                       encode(Type.F32, _values(Type.F32, 5000, seed + 1)),
                       bytes(4 * 5000)]
            expected = run_on(CpuBackend(), program, CONFIG, buffers)
            for handle, data in zip(handles, buffers):
                backend.copy_to_buffer(handle, data)
            backend.execute_program(program, CONFIG)
            flushed = [subnormals_flushed(Type.F32, data) for data in buffers]
            problems = value_problems(flushes_subnormals(backend), [Type.F32], [expected.buffers[2]],
                                      [bytes(backend.copy_from_buffer(handles[2]))], 0,
                                      lambda: [run_on(CpuBackend(), program, CONFIG, flushed).buffers[2]])
            assert not problems, problems[0]
        assert len(backend._launcher._records) == 1      # recorded once, replayed twice
    finally:
        backend.close()


def test_overlapping_arrays_read_before_written(gpu_driver):
    """Sources overlapping the destination at another offset are read as they were before the
    instruction (the reference's order), for a small then a larger step in one submission (the
    scratch copy grows between them), twice."""
    program = ProgramBuilder().add(ParallelMap(
        dst_array=Address.BufferOffset(handle=2, offset=12), src_array=Address.BufferOffset(handle=2, offset=0),
        count=10, operation=MapOperation.Neg, ty=Type.I32)).add(ParallelMapBinary(
            dst_array=Address.BufferOffset(handle=2, offset=12), src_a=Address.BufferOffset(handle=2, offset=0),
            src_b=Address.BufferOffset(handle=2, offset=20), count=3000, operation=BinaryMapOperation.Sub,
            ty=Type.I32)).add(ParallelMap(
                dst_array=Address.BufferOffset(handle=2, offset=0), src_array=Address.BufferOffset(handle=2, offset=6),
                count=7001, operation=MapOperation.Neg, ty=Type.I16)).build()
    from atlas_web.reference import CpuBackend
    from webgpu_backend import WebGpuBackend
    data = encode(Type.I32, _values(Type.I32, 4000, 51))
    expected = run_on(CpuBackend(), program, CONFIG, [data])
    backend = WebGpuBackend(driver=gpu_driver)
    try:
        handle = backend.allocate_buffer(len(data))
        for _ in range(2):
            backend.copy_to_buffer(handle, data)
            backend.execute_program(program, CONFIG)
            assert bytes(backend.copy_from_buffer(handle)) == expected.buffers[0]
    finally:
        backend.close()
