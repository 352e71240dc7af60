"""SparseGEMM launched on the wasm backend, against the reference: the CSR checks (the trap's code, index, lane
and whole message, the index scan's vector groups and its scalar tail, counts far past the arrays, bad
entries before a_ptr[0] that are never used), C unchanged after a trap, and rows whose columns take every
chunk width of the kernel (CHUNK vectors, single vectors, scalars) for F32 and F64. The conformance suite
checks the row's cases within the bound."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import Address
from atlas_web.isa import Type
from atlas_web.isa.instructions import SparseGEMM
from wasm_backend.lowering.coop_sparse import CHUNK

from tests.conformance.case_tools import launch_alone

_DTYPE = {Type.F32: np.float32, Type.F64: np.float64}


def spgemm(backend, ty, ptr, idx, vals, b, c, m, n, k, **fields):
    """(C after, the AtlasTrap or None) of one SparseGEMM over buffers holding the arrays."""
    handles = {}
    for name, data in (("c", c.tobytes()), ("a_values", vals.tobytes()), ("a_indices", idx.astype("<u4").tobytes()),
                       ("a_ptr", ptr.astype("<u4").tobytes()), ("b", b.tobytes())):
        handles[name] = int(backend.allocate_buffer(max(4, len(data))))
        backend.copy_to_buffer(handles[name], data)
    trap = launch_alone(backend, SparseGEMM(**{name: Address.BufferOffset(h) for name, h in handles.items()}, m=m, n=n,
                                            k=k, ty=ty, **fields))
    out = np.frombuffer(bytes(backend.copy_from_buffer(handles["c"]))[:c.nbytes], c.dtype).copy()
    for handle in handles.values():
        backend.free_buffer(handle)
    return out, trap


def _csr(rng, m, k, density, first=0):
    counts = rng.binomial(k, density, m)
    ptr = np.concatenate([[0], np.cumsum(counts)]) + first
    return ptr, rng.integers(0, k, int(ptr[-1])), ptr[-1]


@pytest.mark.parametrize("ty", [Type.F32, Type.F64])
def test_rows_through_every_chunk_width(backends, reference, ty):
    lanes = 16 // ty.size_bytes()
    m, n, k = 23, CHUNK * lanes + lanes + 3, 40
    rng = np.random.default_rng(5)
    ptr, idx, nnz = _csr(rng, m, k, 0.2, first=3)
    ptr[5] = ptr[4]            # an empty row (the next pointers are not below it)
    vals = rng.standard_normal(nnz).astype(_DTYPE[ty])
    b = rng.standard_normal(k * (n + 2)).astype(_DTYPE[ty])
    c = rng.standard_normal(m * (n + 1)).astype(_DTYPE[ty])
    fields = dict(m=m, n=n, k=k, ldb=n + 2, ldc=n + 1, alpha=-1.5, beta=0.5)
    got, trap = spgemm(backends[1], ty, ptr, idx, vals, b, c, **fields)
    want, _ = spgemm(reference, ty, ptr, idx, vals, b, c, **fields)
    assert trap is None
    eps = float(np.finfo(_DTYPE[ty]).eps)
    assert np.allclose(got, want, rtol=50 * eps, atol=50 * eps)
    pad = np.arange(len(c)) % (n + 1) == n
    assert got[pad].tobytes() == c[pad].tobytes()
    empty = slice(4 * (n + 1), 4 * (n + 1) + n)
    assert np.array_equal(got[empty], (c[empty] * _DTYPE[ty](0.5)))


def _bad(kind: str, rng):
    m, n, k = 6, 5, 7
    ptr, idx, nnz = _csr(rng, m, k, 0.6, first=2)
    idx = np.concatenate([[k + 9, k + 9], idx[2:]])      # entries before a_ptr[0] are never used
    vals = rng.standard_normal(nnz).astype(np.float32)
    if kind == "pointer":
        ptr[4] = ptr[3] - 1
    elif kind.startswith("index"):
        at = {"index_group": 6, "index_tail": nnz - 1, "index_huge": 3}[kind]
        idx[at] = 0xFFFFFFFF if kind == "index_huge" else k
    elif kind == "count":
        ptr[m] = 0xFFFFFFF0      # far past a_values: OUT_OF_BOUNDS, nothing read there
    return ptr, idx, vals, dict(m=m, n=n, k=k, beta=1.0)


@pytest.mark.parametrize("kind", ["pointer", "index_group", "index_tail", "index_huge", "count"])
def test_bad_csr_traps_with_the_reference_message_and_writes_nothing(backends, reference, kind):
    ptr, idx, vals, fields = _bad(kind, np.random.default_rng(8))
    rng = np.random.default_rng(9)
    b = rng.standard_normal(fields["k"] * fields["n"]).astype(np.float32)
    c = rng.standard_normal(fields["m"] * fields["n"]).astype(np.float32)
    got_c, got = spgemm(backends[1], Type.F32, ptr, idx, vals, b, c, **fields)
    _, want = spgemm(reference, Type.F32, ptr, idx, vals, b, c, **fields)
    assert want is not None and got is not None
    assert (got.code, got.instruction_index, got.lane, str(got)) == (want.code, want.instruction_index, -1, str(want))
    assert got_c.tobytes() == c.tobytes()


def test_unused_bad_entries_do_not_trap(backends, reference):
    ptr, idx, vals, fields = _bad("none", np.random.default_rng(8))
    b = np.ones(fields["k"] * fields["n"], np.float32)
    c = np.zeros(fields["m"] * fields["n"], np.float32)
    got, trap = spgemm(backends[1], Type.F32, ptr, idx, vals, b, c, **fields)
    want, _ = spgemm(reference, Type.F32, ptr, idx, vals, b, c, **fields)
    assert trap is None and np.allclose(got, want, rtol=1e-6, atol=1e-6)
