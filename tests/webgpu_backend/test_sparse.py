"""SparseGEMM's WGSL kernel (F32) on what the conformance suite's cases do not reach: the device's CSR check over
more entries and rows than its 256 checkers (the first bad pointer or index wins wherever it falls among them),
counts past a_values and past a_indices with buffer addresses (which the launch's static bounds cannot see),
B and C in one buffer (B read through C's binding), an empty row, ldb/ldc padding kept; traps give the
reference's code, index, lane -1 and message, leave C unchanged and the backend usable."""

from __future__ import annotations

import re

import numpy as np
import pytest

from atlas_web import Address
from atlas_web.isa import Type
from atlas_web.isa.instructions import SparseGEMM
from atlas_web.reference import CpuBackend

from tests.conformance.case_tools import launch_alone


def _spgemm(backend, arrays: dict, one_buffer: tuple = (), **fields):
    """(C's values after, the AtlasTrap or None): each array in a buffer of its own, or those named in
    ``one_buffer`` packed into one buffer (16-byte aligned) in that order."""
    handles, offsets = {}, {}
    packed = b""
    for name in one_buffer:
        offsets[name] = len(packed)
        packed += arrays[name].tobytes() + b"\0" * (-arrays[name].nbytes % 16)
    if one_buffer:
        shared = int(backend.allocate_buffer(len(packed)))
        backend.copy_to_buffer(shared, packed)
        handles.update({name: shared for name in one_buffer})
    for name, data in arrays.items():
        if name not in handles:
            handles[name] = int(backend.allocate_buffer(max(4, data.nbytes)))
            backend.copy_to_buffer(handles[name], data.tobytes())
            offsets[name] = 0
    trap = launch_alone(backend, SparseGEMM(**{n: Address.BufferOffset(handles[n], offsets[n]) for n in arrays},
                                            ty=Type.F32, **fields))
    c = arrays["c"]
    raw = bytes(backend.copy_from_buffer(handles["c"]))[offsets["c"]:offsets["c"] + c.nbytes]
    for handle in set(handles.values()):
        backend.free_buffer(handle)
    return np.frombuffer(raw, np.float32), trap


def _text(trap) -> str:
    """The trap's message with buffer handles (each backend numbers its own) left out."""
    return re.sub(r"(buf|buffer |handle )\d+", r"\1#", str(trap))


def _arrays(rng, m, n, k, density, ldb=0, ldc=0):
    counts = rng.binomial(k, density, m)
    counts[1] = 0
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype("<u4")
    idx = rng.integers(0, k, int(ptr[-1])).astype("<u4")
    return {"c": rng.standard_normal(m * (ldc or n)).astype("<f4"), "a_values": rng.standard_normal(len(idx)).astype("<f4"),
            "a_indices": idx, "a_ptr": ptr, "b": rng.standard_normal(k * (ldb or n)).astype("<f4")}


@pytest.mark.parametrize("one_buffer", [(), ("c", "b", "a_ptr")])
def test_many_rows_and_entries_match_the_reference(webgpu, one_buffer):
    rng = np.random.default_rng(3)
    m, n, k = 300, 70, 90
    arrays = _arrays(rng, m, n, k, 0.1, ldb=n + 3, ldc=n + 1)
    fields = dict(m=m, n=n, k=k, ldb=n + 3, ldc=n + 1, alpha=-0.75, beta=0.5)
    got, trap = _spgemm(webgpu, arrays, one_buffer, **fields)
    want, _ = _spgemm(CpuBackend(), arrays, **fields)
    assert trap is None
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5)
    pad = np.arange(len(got)) % (n + 1) == n
    assert got[pad].tobytes() == arrays["c"][pad].tobytes()
    assert np.array_equal(got[n + 1:2 * n + 1], arrays["c"][n + 1:2 * n + 1] * np.float32(0.5))   # the empty row


@pytest.mark.parametrize("kind", ["pointer_late", "pointer_two", "index_late", "index_two", "count_values",
                                  "count_indices"])
def test_bad_csr_traps_as_the_reference_and_writes_nothing(webgpu, kind):
    rng = np.random.default_rng(5)
    m, n, k = 700, 3, 20
    arrays = _arrays(rng, m, n, k, 0.2)
    ptr, idx = arrays["a_ptr"], arrays["a_indices"]
    if kind == "pointer_late":
        ptr[600] = ptr[599] - 1
    elif kind == "pointer_two":
        ptr[513], ptr[258] = ptr[512] - 1, ptr[257] - 1       # 258 is first; 258 and 513 are other checkers'
    elif kind == "index_late":
        idx[len(idx) - 2] = k
    elif kind == "index_two":
        idx[900], idx[257] = k + 5, 0xFFFFFFFF
    elif kind == "count_values":
        arrays["a_values"] = arrays["a_values"][:-1]          # one value short of a_ptr[m]
    else:
        arrays["a_indices"] = arrays["a_indices"][:-3]
    fields = dict(m=m, n=n, k=k, beta=1.0)
    c, got = _spgemm(webgpu, arrays, **fields)
    _, want = _spgemm(CpuBackend(), arrays, **fields)
    assert want is not None and got is not None
    assert (got.code, got.instruction_index, got.lane, _text(got)) == (want.code, want.instruction_index, -1,
                                                                        _text(want))
    assert c.tobytes() == arrays["c"].tobytes()
    ok = _arrays(np.random.default_rng(6), 5, 4, 6, 0.5)        # the backend is usable after the trap
    again, trap = _spgemm(webgpu, ok, m=5, n=4, k=6)
    assert trap is None and np.allclose(again, _spgemm(CpuBackend(), ok, m=5, n=4, k=6)[0], rtol=1e-6, atol=1e-6)
