"""CpuBackend host API: buffers, pools, copies, limits, errors, capabilities, launch checks."""

from __future__ import annotations

import array

import numpy as np
import pytest

from atlas_web import (
    AllocationFailed, ExecutionFailed, ExecutionParams, InvalidBuffer, LaunchConfig, ProgramError,
)
from atlas_web.isa import (
    ADD, INSTRUCTION_CLASSES, LDG, MOV_IMM, OPCODE_TABLE, Address, Type,
)
from atlas_web.reference import CpuBackend
from atlas_web.reference.backend import MAX_REFERENCE_LANES

from .executor_helpers import prog, r, run

COVERS = [("LDG", Type.F32), ("ADD", Type.F32), ("MOV_IMM", Type.U32)]


@pytest.fixture
def backend():
    return CpuBackend()


def test_handles_start_at_two_are_shared_by_buffers_and_pools_and_never_reused(backend):
    a = backend.allocate_buffer(16)
    p = backend.allocate_pool(8)
    assert (int(a), int(p)) == (2, 3)
    backend.free_buffer(a)
    backend.free_pool(p)
    assert backend.allocate_buffer(4) == 4
    with pytest.raises(InvalidBuffer, match="names no live buffer"):
        backend.buffer_size(a)


def test_buffers_start_zeroed_and_copies_round_trip_at_offsets(backend):
    h = backend.allocate_buffer(16)
    assert backend.copy_from_buffer(h) == bytes(16)
    backend.copy_to_buffer(h, b"\x01\x02\x03", 5)
    backend.copy_to_buffer(h, np.array([7, 8], dtype=np.uint16), 10)
    out = bytearray(6)
    assert backend.copy_from_buffer(h, out, 4) is out
    assert bytes(out) == b"\x00\x01\x02\x03\x00\x00"
    assert backend.copy_from_buffer(h, offset=10) == b"\x07\x00\x08\x00\x00\x00"
    assert backend.copy_from_buffer(h, offset=16) == b""
    typed = np.zeros(2, dtype=np.uint16)
    backend.copy_from_buffer(h, typed, 10)
    assert typed.tolist() == [7, 8]
    strided = np.arange(8, dtype=np.uint8)[::2]  # not contiguous: still copied right
    backend.copy_to_buffer(h, strided, 0)
    assert backend.copy_from_buffer(h, bytearray(4)) == bytearray([0, 2, 4, 6])


def test_typed_helpers(backend):
    h = backend.allocate_typed(np.array([1.5, -2.0], dtype=np.float32))
    assert backend.copy_typed_from(h, Type.F32).tolist() == [1.5, -2.0]
    backend.copy_typed_to(h, array.array("f", [3.0]), offset=4)
    assert backend.copy_typed_from(h, Type.F32).tolist() == [1.5, 3.0]


def test_copies_outside_a_buffer_or_to_a_bad_handle_raise_invalid_buffer(backend):
    h = backend.allocate_buffer(8)
    with pytest.raises(InvalidBuffer, match=r"bytes 6\.\.10 are outside buffer 2 of 8 bytes"):
        backend.copy_to_buffer(h, b"1234", 6)
    with pytest.raises(InvalidBuffer, match="outside"):
        backend.copy_from_buffer(h, bytearray(4), 6)
    with pytest.raises(InvalidBuffer, match="outside"):
        backend.copy_from_buffer(h, offset=9)
    with pytest.raises(InvalidBuffer, match="non-negative"):
        backend.copy_to_buffer(h, b"1", -1)
    with pytest.raises(InvalidBuffer, match="names no live"):
        backend.copy_to_buffer(99, b"1")
    with pytest.raises(InvalidBuffer, match="buffer protocol"):
        backend.copy_to_buffer(h, "text")
    with pytest.raises(InvalidBuffer, match="writable"):
        backend.copy_from_buffer(h, b"read-only")
    with pytest.raises(InvalidBuffer):
        backend.free_buffer(h + 100)


def test_buffers_and_pools_are_not_interchangeable_on_the_host(backend):
    b, p = backend.allocate_buffer(8), backend.allocate_pool(8)
    with pytest.raises(InvalidBuffer, match="is a pool, not a buffer"):
        backend.free_buffer(p)
    with pytest.raises(InvalidBuffer, match="is a buffer, not a pool"):
        backend.free_pool(b)
    with pytest.raises(InvalidBuffer, match="is a buffer, not a pool"):
        backend.copy_to_pool(b, 0, b"1")


def test_pool_copies(backend):
    p = backend.allocate_pool(8)
    assert backend.pool_size(p) == 8
    backend.copy_to_pool(p, 2, b"\x09\x08")
    assert backend.copy_from_pool(p, 1, 4) == b"\x00\x09\x08\x00"
    out = bytearray(2)
    assert backend.copy_from_pool(p, 2, out) is out and bytes(out) == b"\x09\x08"
    with pytest.raises(InvalidBuffer, match="outside pool"):
        backend.copy_from_pool(p, 6, 4)
    with pytest.raises(InvalidBuffer, match="non-negative"):
        backend.copy_from_pool(p, 0, -1)


def test_the_boundary_memory_is_handle_one_and_cannot_be_freed(backend):
    assert backend.buffer_size(backend.boundary_buffer) == 96 * 12288
    with pytest.raises(InvalidBuffer, match="boundary"):
        backend.free_buffer(1)


def test_memory_limit_and_bad_sizes_raise_allocation_failed():
    backend = CpuBackend(memory_limit=100)
    backend.allocate_buffer(60)
    with pytest.raises(AllocationFailed, match=r"pool of 50 bytes asked; 40 of .* 100 bytes are free"):
        backend.allocate_pool(50)
    backend.allocate_pool(40)
    with pytest.raises(AllocationFailed, match="non-negative"):
        backend.allocate_buffer(-1)
    with pytest.raises(AllocationFailed, match="limit is 4294967296"):
        CpuBackend().allocate_buffer(1 << 33)
    with pytest.raises(AllocationFailed, match="memory_limit"):
        CpuBackend(memory_limit=-5)
    assert backend.device_info()["memory_used"] == 100


def test_capabilities_cover_every_row_and_type():
    backend = CpuBackend()
    for row in OPCODE_TABLE:
        for ty in (row.types or {None}):
            assert backend.supports_op(row, ty), (row.name, ty)
            assert backend.supports(row.name, ty)
    assert not backend.supports("FMA", Type.I32)   # not a type FMA accepts
    assert backend.supports(INSTRUCTION_CLASSES["BRA"])
    with pytest.raises(KeyError, match="unknown instruction 'NOPE'"):
        backend.supports("NOPE")
    with pytest.raises(KeyError, match="ty must be a Type or None, got 'f32'"):
        backend.supports("ADD", "f32")
    info = backend.device_info()
    assert info["name"] == "cpu" and "NumPy" in info["engine"] and info["device"]
    assert backend.resonance_accumulator() == [0.0] * 96


def test_launch_argument_errors(backend):
    program = prog(MOV_IMM(dst=r(1), value=1, ty=Type.U32))
    with pytest.raises(ExecutionFailed, match="ExecutionParams"):
        backend.execute_program_with_params(program, LaunchConfig.linear(4))
    with pytest.raises(ProgramError, match="Program"):
        backend.execute_program([MOV_IMM(dst=r(1), value=1, ty=Type.U32)], LaunchConfig.linear(4))
    with pytest.raises(ExecutionFailed, match="budget"):
        backend.execute_program_with_params(program, ExecutionParams(LaunchConfig.linear(4), budget=-1))
    with pytest.raises(ExecutionFailed, match="budget"):
        CpuBackend(budget=1.5)
    with pytest.raises(ExecutionFailed, match=f"at most {MAX_REFERENCE_LANES} lanes"):
        backend.execute_program(program, LaunchConfig(grid=(1 << 20, 1, 1), block=(128, 1, 1)))
    with pytest.raises(ExecutionFailed, match="shared memory"):
        backend.execute_program(program, LaunchConfig(grid=(1 << 16, 1, 1), block=(1, 1, 1), shared_memory=1 << 16))


def test_programs_are_verified_and_static_addresses_checked_before_running(backend):
    mistyped = prog(MOV_IMM(dst=r(1), value=1, ty=Type.U32), ADD(dst=r(2), lhs=r(1), rhs=r(1), ty=Type.F32))
    with pytest.raises(ProgramError):
        run(backend, mistyped, 4)
    small = backend.allocate_buffer(4)
    outside = prog(LDG(dst=r(1), src=Address.BufferOffset(handle=small, offset=4), ty=Type.F32))
    with pytest.raises(ProgramError, match="outside"):
        run(backend, outside, 4)
    run(backend, prog(LDG(dst=r(1), src=Address.BufferOffset(handle=small, offset=0), ty=Type.F32)), 4)


def test_preset_registers_are_checked_like_immediates(backend):
    program = prog(ADD(dst=r(2), lhs=r(1), rhs=r(1), ty=Type.U32))
    for registers, message in (({r(1): (Type.U32, 1.5)}, r"registers\[r1\]: operand 'value' must be an int"),
                               ({r(1): (Type.U8, 300)}, "does not fit in 8 bits"),
                               ({r(1): 5}, r"must be a \(Type, value\) pair"),
                               ({1: (Type.U32, 1)}, "is not a Register"),
                               ({r(250): (Type.U32, 1)}, "special register")):
        with pytest.raises(ProgramError, match=message):
            run(backend, program, 2, registers=registers)


def test_max_memory_is_the_memory_limit_or_the_host_memory():
    from atlas_web.reference.backend import host_memory_bytes
    host = host_memory_bytes()
    assert host is None or host > 0
    assert CpuBackend(memory_limit=1 << 20).device_info()["max_memory"] == min(1 << 20, host or 1 << 20)
    assert CpuBackend().device_info()["max_memory"] == host


def test_memory_check_does_not_promise_more_than_the_host_has():
    from atlas_web import init_backend_with_memory_check
    from atlas_web.reference.backend import host_memory_bytes
    host = host_memory_bytes()
    assert host is not None, "this test needs a host that reports its memory (Linux does)"
    with pytest.raises(AllocationFailed, match="max_memory"):
        init_backend_with_memory_check("cpu", 2 * host)  # NumPy's lazy zeros would have accepted it
    assert isinstance(init_backend_with_memory_check("cpu", 1 << 20), CpuBackend)
