"""copy_from_buffer_async / copy_typed_from_async: the same bytes as the synchronous copies, on every
backend that starts here, awaited inside a running event loop (as a notebook cell in the browser does)."""

from __future__ import annotations

import array
import asyncio

import numpy as np
import pytest

from atlas_web import (Address, BinaryMapOperation, InvalidBuffer, LaunchConfig, ParallelMapBinary,
                       ProgramBuilder, Type)


def test_async_reads_match_the_synchronous_ones(available_backend):
    backend = available_backend
    a = backend.allocate_typed(np.arange(100, dtype=np.float32))
    b = backend.allocate_typed(np.full(100, 0.25, dtype=np.float32))
    out = backend.allocate_typed(100, Type.F32)
    program = ProgramBuilder().add(ParallelMapBinary(Address.BufferOffset(out), Address.BufferOffset(a),
                                                     Address.BufferOffset(b), 100, BinaryMapOperation.Add)).build()

    async def cell():
        await backend.execute_async(program, LaunchConfig())
        whole = await backend.copy_from_buffer_async(out)
        part = await backend.copy_from_buffer_async(out, bytearray(8), 4 * 10)
        typed = await backend.copy_typed_from_async(out, Type.F32, 5, 4 * 95)
        return whole, part, typed

    whole, part, typed = asyncio.run(cell())
    expected = np.arange(100, dtype=np.float32) + np.float32(0.25)
    assert isinstance(whole, bytes) and whole == expected.tobytes() == backend.copy_from_buffer(out)
    assert bytes(part) == expected[10:12].tobytes()
    assert typed.tolist() == expected[95:].tolist() == backend.copy_typed_from(out, Type.F32, 5, 4 * 95).tolist()


def test_async_reads_refuse_what_the_synchronous_ones_refuse(available_backend):
    backend = available_backend
    handle = backend.allocate_buffer(16)
    backend.copy_to_buffer(handle, array.array("I", [1, 2, 3, 4]))
    for call in (lambda: backend.copy_from_buffer_async(handle, bytearray(8), 12),
                 lambda: backend.copy_from_buffer_async(999),
                 lambda: backend.copy_typed_from_async(handle, Type.U32, 5),
                 lambda: backend.copy_typed_from_async(handle, Type.U32, offset=-4)):
        with pytest.raises(InvalidBuffer):
            asyncio.run(call())
    assert backend.copy_typed_from(handle, Type.U32).tolist() == [1, 2, 3, 4]
