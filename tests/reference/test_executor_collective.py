"""The reference's collectives on one device (rows of category "collective"): AllReduce and Broadcast leave the
buffer as it was, AllGather and ReduceScatter copy input to output bit for bit (NaN payloads, -0), every type; arrays
out of bounds are refused before anything is written; the verifier refuses a group of several devices on one backend."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import ProgramError
from atlas_web.isa import Address, AllGather, AllReduce, Broadcast, ReduceOperation, ReduceScatter, Type
from atlas_web.reference import CpuBackend

from .executor_helpers import decode, load_arrays, prog, run

TYPES = [Type.I8, Type.U8, Type.I16, Type.U16, Type.I32, Type.U32, Type.I64, Type.U64, Type.F16, Type.BF16, Type.F32,
         Type.F64]
NAMES = ["AllReduce", "AllGather", "Broadcast", "ReduceScatter"]
COVERS = [(name, ty) for name in NAMES for ty in TYPES]
N = 7


def _values(ty: Type) -> list:
    if ty.is_float():
        return [1.5, -0.0, 3.25, -2.0, 0.5, 7.0, -1.0]
    return list(range(1, N + 1))


def _collective(name: str, handles: dict, ty: Type, n: int = N, **extra):
    buf = {k: Address.BufferOffset(h) for k, h in handles.items()}
    if name == "AllGather":
        return AllGather(output=buf["output"], input=buf["input"], n=n, ty=ty, **extra)
    if name == "ReduceScatter":
        return ReduceScatter(output=buf["output"], input=buf["input"], n=n, reduction=ReduceOperation.Max, ty=ty,
                             **extra)
    if name == "AllReduce":
        return AllReduce(buffer=buf["input"], n=n, reduction=ReduceOperation.Sum, ty=ty, **extra)
    return Broadcast(buffer=buf["input"], n=n, ty=ty, **extra)


@pytest.mark.parametrize("ty", TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("devices", [0, 1])
def test_one_device_collective_is_the_identity(name, ty, devices):
    backend = CpuBackend()
    handles = load_arrays(backend, ty, {"input": _values(ty), "output": [0] * N})
    before = bytes(backend.copy_from_buffer(handles["input"]))
    run(backend, prog(_collective(name, handles, ty, devices=devices)), 3)
    assert bytes(backend.copy_from_buffer(handles["input"])) == before
    expected_output = before if name in ("AllGather", "ReduceScatter") else bytes(N * ty.size_bytes())
    assert bytes(backend.copy_from_buffer(handles["output"])) == expected_output
    assert decode(ty, before) == pytest.approx(_values(ty))


def test_all_gather_copies_nan_payloads_bit_for_bit():
    backend = CpuBackend()
    payload = np.array([0x7FC01234, 0xFFA00001, 0x80000000], dtype=np.uint32)
    src, dst = int(backend.allocate_buffer(12)), int(backend.allocate_buffer(12))
    backend.copy_to_buffer(src, payload.tobytes())
    run(backend, prog(AllGather(output=Address.BufferOffset(dst), input=Address.BufferOffset(src), n=3,
                                ty=Type.F32)), 1)
    assert bytes(backend.copy_from_buffer(dst)) == payload.tobytes()


@pytest.mark.parametrize("name", NAMES)
def test_out_of_bounds_is_refused_before_any_write(name):
    backend = CpuBackend()
    handles = load_arrays(backend, Type.F32, {"input": [1.0] * N, "output": [9.0] * N})
    before = {k: bytes(backend.copy_from_buffer(h)) for k, h in handles.items()}
    with pytest.raises(ProgramError, match="lie outside"):
        run(backend, prog(_collective(name, handles, Type.F32, n=N + 1)), 2)
    assert {k: bytes(backend.copy_from_buffer(h)) for k, h in handles.items()} == before


@pytest.mark.parametrize("name", NAMES)
def test_a_group_of_several_devices_is_refused_on_one_backend(name):
    backend = CpuBackend()
    handles = load_arrays(backend, Type.F32, {"input": [1.0] * N, "output": [0.0] * 2 * N})
    with pytest.raises(ProgramError, match="MultiDeviceExecutor"):
        run(backend, prog(_collective(name, handles, Type.F32, devices=2)), 1)


def test_broadcast_root_must_be_in_the_group():
    backend = CpuBackend()
    handles = load_arrays(backend, Type.F32, {"input": [1.0] * N})
    with pytest.raises(ProgramError, match="root"):
        run(backend, prog(Broadcast(buffer=Address.BufferOffset(handles["input"]), n=N, root=1, ty=Type.F32)), 1)
