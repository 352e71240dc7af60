"""The seed's vector-add example, translated line by line: two f32 inputs added by one ParallelMapBinary,
on every backend that can start here (the reference at least; WasmBackend and WebGpuBackend where they
start, each made by its class as the seed makes CpuBackend)."""

from __future__ import annotations

import array

from atlas_web import Address, BinaryMapOperation, LaunchConfig, ParallelMapBinary, ProgramBuilder


def test_seed_vector_add(available_backend):
    backend = available_backend

    # three buffers of 256 f32 each (1024 bytes)
    buffer_a = backend.allocate_buffer(1024)
    buffer_b = backend.allocate_buffer(1024)
    buffer_c = backend.allocate_buffer(1024)
    assert (buffer_a, buffer_b, buffer_c) == (2, 3, 4)  # deterministic handles from 2 on a fresh backend

    # a = 0, 1, 2, ...; b = 0, 2, 4, ...
    data_a = array.array("f", (float(i) for i in range(256)))
    data_b = array.array("f", (float(i * 2) for i in range(256)))
    backend.copy_to_buffer(buffer_a, data_a)
    backend.copy_to_buffer(buffer_b, data_b)

    # c[i] = a[i] + b[i], one cooperative instruction over 256 elements
    program = ProgramBuilder().add(ParallelMapBinary(
        dst_array=Address.BufferOffset(handle=buffer_c, offset=0),
        src_a=Address.BufferOffset(handle=buffer_a, offset=0),
        src_b=Address.BufferOffset(handle=buffer_b, offset=0),
        count=256,
        operation=BinaryMapOperation.Add,
    )).build()

    backend.execute_program(program, LaunchConfig.linear(256))

    result = array.array("f", bytes(1024))
    backend.copy_from_buffer(buffer_c, result)
    assert list(result[:4]) == [0.0, 3.0, 6.0, 9.0]
    assert list(result) == [float(i * 3) for i in range(256)]
