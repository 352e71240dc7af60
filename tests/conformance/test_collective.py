"""The collectives (rows of category "collective") on every backend, one device: AllReduce and Broadcast leave the
buffer as the reference does, AllGather's and ReduceScatter's output equals the reference's bit for bit (values
without NaN); an
out-of-bounds array is refused before anything is written. Backends are asked supports()."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import LaunchConfig, ProgramError
from atlas_web.isa import (OPCODE_TABLE, Address, AllGather, AllReduce, Broadcast, ReduceOperation, ReduceScatter,
                           Type)
from atlas_web.program import Program
from atlas_web.reference import CpuBackend

from tests.reference.executor_helpers import typed_bytes

from .backends import compiled_backends, refuses_unsupported

BACKENDS = {"cpu": CpuBackend(), **compiled_backends()}
ROWS = [info for info in OPCODE_TABLE if info.category == "collective"]
TYPES = [Type.I8, Type.U16, Type.I32, Type.I64, Type.F16, Type.BF16, Type.F32, Type.F64]
N = 37
NAMES = ["AllReduce", "AllGather", "Broadcast", "ReduceScatter"]


def _run(backend, name: str, ty: Type, n: int = N) -> tuple[bytes, bytes]:
    """(buffer, output) bytes after ``name`` over N values of ``ty`` (a launch of 5 lanes)."""
    rng = np.random.default_rng(5)
    raw = rng.integers(0, 256, N * ty.size_bytes(), dtype=np.uint8)
    if ty.is_float():   # finite values only: a compiled copy may change a NaN's payload
        values = rng.integers(-100, 100, N).astype(np.float64) / 4   # exact in every float type
        raw = np.frombuffer(typed_bytes(ty, list(values)), dtype=np.uint8)
    buf, out = int(backend.allocate_buffer(raw.size)), int(backend.allocate_buffer(raw.size))
    backend.copy_to_buffer(buf, raw.tobytes())
    backend.copy_to_buffer(out, bytes(raw.size))
    a, b = Address.BufferOffset(buf), Address.BufferOffset(out)
    instr = {"AllReduce": lambda: AllReduce(buffer=a, n=n, reduction=ReduceOperation.Max, ty=ty),
             "Broadcast": lambda: Broadcast(buffer=a, n=n, ty=ty),
             "AllGather": lambda: AllGather(output=b, input=a, n=n, ty=ty),
             "ReduceScatter": lambda: ReduceScatter(output=b, input=a, n=n, reduction=ReduceOperation.Sum,
                                                    ty=ty)}[name]()
    try:
        backend.execute_program(Program([instr], {}), LaunchConfig.linear(5))
    finally:
        result = bytes(backend.copy_from_buffer(buf)), bytes(backend.copy_from_buffer(out))
        backend.free_buffer(buf)
        backend.free_buffer(out)
    return result


def test_the_collective_rows():
    assert {info.name for info in ROWS} == set(NAMES)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("ty", TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("name", NAMES)
def test_one_device_collective_like_the_reference(backend_name, name, ty):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, name, ty, lambda b: _run(b, name, ty)):
        return
    assert _run(backend, name, ty) == _run(BACKENDS["cpu"], name, ty)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("name", NAMES)
def test_out_of_bounds_refused(backend_name, name):
    with pytest.raises(ProgramError, match="outside"):
        _run(BACKENDS[backend_name], name, Type.F32, n=N + 1)
