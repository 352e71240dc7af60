"""The reference's matrix kernels against plain Python loops written here: GEMM and BatchedGEMM (transposes,
leading dimensions with padding that must stay unchanged, batch strides, alpha/beta, beta == 0 not reading C,
k == 0, IEEE NaN/inf), MixedPrecisionGEMM, QuantizedGEMM (integer sums, ties to even, saturation), SparseGEMM
(CSR with empty rows, repeated columns, unused leading entries; bad CSR traps); and the array checks (all before
any write, lane -1)."""

from __future__ import annotations

import math
import random
import struct

import pytest

from atlas_web import AtlasTrap, TrapCode
from atlas_web.isa import Address, Type, array_operands
from atlas_web.isa.instructions import GEMM, BatchedGEMM, MixedPrecisionGEMM, QuantizedGEMM, SparseGEMM
from atlas_web.reference import CpuBackend

from .executor_helpers import pointer, prog, r, run, trap_of

COVERS = [(name, ty) for name in ("GEMM", "BatchedGEMM") for ty in (Type.F32, Type.F64)] + [
    ("MixedPrecisionGEMM", Type.F16), ("MixedPrecisionGEMM", Type.BF16), ("QuantizedGEMM", Type.I8),
    ("QuantizedGEMM", Type.F32), ("SparseGEMM", Type.F32), ("SparseGEMM", Type.F64)]

_FORMAT = {Type.F32: "f", Type.F64: "d", Type.F16: "e", Type.I8: "b", Type.U32: "I"}


def _pack(ty: Type, values) -> bytes:
    if ty is Type.BF16:   # the high half of the f32 (the values are bf16 already)
        return b"".join(struct.pack("<f", v)[2:] for v in values)
    return struct.pack(f"<{len(values)}{_FORMAT[ty]}", *values)


def _unpack(ty: Type, data) -> list[float]:
    data = bytes(data)
    return list(struct.unpack(f"<{len(data) // ty.size_bytes()}{_FORMAT[ty]}", data))


def _bf16(value: float) -> float:
    """``value`` cut to bf16 (its f32's high half: exact for the small values made here)."""
    return struct.unpack("<f", b"\0\0" + struct.pack("<f", value)[2:])[0]


def _round(ty: Type, value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0] if ty is Type.F32 else value


def _loop_gemm(ty, a, b, c, m, n, k, alpha, beta, trans_a, trans_b, lda, ldb, ldc, sa=0, sb=0, sc=0):
    """C (a list, changed in place) = alpha * op(A) @ op(B) + beta * C, element by element: math.fsum of the
    exact products (Python floats hold every f32 product exactly), times alpha, plus beta * C, rounded once.
    beta == 0 leaves C unread; k == 0 gives beta * C."""
    lda = lda or (m if trans_a else k)
    ldb = ldb or (k if trans_b else n)
    ldc = ldc or n
    for i in range(m):
        for j in range(n):
            products = [a[sa + (l * lda + i if trans_a else i * lda + l)] * b[sb + (j * ldb + l if trans_b else l * ldb + j)]
                        for l in range(k)]
            if any(math.isnan(p) for p in products) or (any(p == math.inf for p in products)
                                                         and any(p == -math.inf for p in products)):
                total = math.nan
            elif any(math.isinf(p) for p in products):
                total = next(p for p in products if math.isinf(p))
            else:
                total = math.fsum(products)
            value = alpha * total if k else 0.0
            if beta != 0:
                value = value + beta * c[sc + i * ldc + j]
            c[sc + i * ldc + j] = _round(ty, value)


def _buffer(backend, ty, values) -> int:
    handle = int(backend.allocate_buffer(max(1, len(values) * ty.size_bytes())))
    backend.copy_to_buffer(handle, _pack(ty, values))
    return handle


def _values(ty, count, rng) -> list[float]:
    return [_round(ty, rng.uniform(-4, 4)) for _ in range(count)]


CASES = [  # m, n, k, trans_a, trans_b, lda, ldb, ldc, alpha, beta
    (1, 1, 1, False, False, 0, 0, 0, 1.0, 0.0),
    (3, 5, 4, False, False, 0, 0, 0, 1.0, 0.0),
    (5, 3, 7, True, False, 0, 0, 0, 0.5, -1.25),
    (4, 6, 3, False, True, 5, 0, 9, -2.0, 1.0),
    (17, 3, 9, True, True, 20, 11, 4, 1.5, 0.75),
    (3, 4, 0, False, False, 0, 0, 6, math.inf, 0.5),     # k == 0: beta * C, alpha never multiplies
]


@pytest.mark.parametrize("ty", [Type.F32, Type.F64], ids=lambda t: t.name)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:3])) + "".join("T" if t else "N" for t in c[3:5]))
def test_gemm_matches_the_triple_loop(ty, case):
    m, n, k, trans_a, trans_b, lda, ldb, ldc, alpha, beta = case
    rng = random.Random(hash(case) & 0xFFFF)
    backend = CpuBackend()
    instr_fields = dict(m=m, n=n, k=k, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, lda=lda, ldb=ldb,
                        ldc=ldc, ty=ty)
    probe = GEMM(c=Address.BufferOffset(2), a=Address.BufferOffset(2), b=Address.BufferOffset(2), **instr_fields)
    sizes = {arr.name: arr.elements for arr in array_operands(probe)}
    a, b, c = (_values(ty, sizes[name], rng) for name in "abc")
    handles = {name: _buffer(backend, ty, values) for name, values in zip("abc", (a, b, c))}
    run(backend, prog(GEMM(**{name: Address.BufferOffset(h) for name, h in handles.items()}, **instr_fields)), 1)
    want = list(c)
    _loop_gemm(ty, a, b, want, m, n, k, probe.alpha, probe.beta, trans_a, trans_b, lda, ldb, ldc)
    got = _unpack(ty, backend.copy_from_buffer(handles["c"]))[:len(want)]
    if ty is Type.F64:   # the reference sums in f64: within the contract's bound of the exact sum
        bound = [(k + 2) * 2.0 ** -53 * (abs(probe.alpha) * 64 * max(k, 1) + abs(probe.beta) * 4) for _ in want]
        assert all(abs(g - w) <= e for g, w, e in zip(got, want, bound)), (got, want)
    else:   # f32: f64 sums rounded once equal the exact sum rounded once (far from a tie at these sizes)
        assert got == want


@pytest.mark.parametrize("ty", [Type.F32, Type.F64], ids=lambda t: t.name)
def test_batched_gemm_matches_the_triple_loop_per_item(ty):
    rng = random.Random(5)
    backend = CpuBackend()
    fields = dict(batch=3, m=4, n=3, k=5, alpha=1.5, beta=-0.5, trans_a=False, trans_b=True, lda=7, ldb=0, ldc=4,
                  stride_a=30, stride_b=0, stride_c=17, ty=ty)
    probe = BatchedGEMM(c=Address.BufferOffset(2), a=Address.BufferOffset(2), b=Address.BufferOffset(2), **fields)
    sizes = {arr.name: arr.elements for arr in array_operands(probe)}
    assert sizes == {"a": 2 * 30 + 3 * 7 + 5, "b": 3 * 15, "c": 2 * 17 + 3 * 4 + 3}
    a, b, c = (_values(ty, sizes[name], rng) for name in "abc")
    handles = {name: _buffer(backend, ty, values) for name, values in zip("abc", (a, b, c))}
    run(backend, prog(BatchedGEMM(**{name: Address.BufferOffset(h) for name, h in handles.items()}, **fields)), 1)
    want = list(c)
    for item in range(3):
        _loop_gemm(ty, a, b, want, 4, 3, 5, 1.5, -0.5, False, True, 7, 0, 4, sa=30 * item, sb=15 * item,
                   sc=17 * item)
    got = _unpack(ty, backend.copy_from_buffer(handles["c"]))
    assert all(abs(g - w) <= 1e-12 * 64 for g, w in zip(got, want)) and (ty is Type.F64 or got == want)


def test_beta_zero_does_not_read_c_and_nan_inf_propagate():
    backend, ty, inf, nan = CpuBackend(), Type.F32, math.inf, math.nan
    # a 2 x 2 times b 2 x 2; c starts as NaN everywhere (beta == 0: not read)
    a = [inf, 1.0, 0.0, 2.0]
    b = [1.0, 0.0, -1.0, nan]
    handles = [_buffer(backend, ty, values) for values in (4 * [nan], a, b)]
    run(backend, prog(GEMM(c=Address.BufferOffset(handles[0]), a=Address.BufferOffset(handles[1]),
                           b=Address.BufferOffset(handles[2]), m=2, n=2, k=2, beta=0.0)), 1)
    got = _unpack(ty, backend.copy_from_buffer(handles[0]))
    # row 0: inf*1 + 1*-1 = inf; inf*0 + 1*nan = nan. row 1: 0*1 + 2*-1 = -2; 0*0 + 2*nan = nan
    assert got[0] == inf and math.isnan(got[1]) and got[2] == -2.0 and math.isnan(got[3])


def test_a_short_array_traps_before_anything_is_written():
    backend, ty = CpuBackend(), Type.F32
    c = _buffer(backend, ty, [7.0] * 6)
    a = _buffer(backend, ty, [1.0] * 6)
    b = _buffer(backend, ty, [1.0] * 8)       # b needs k x n = 3 x 3 = 9 elements
    addresses = {name: Address.RegisterIndirect(r(1 + k), 0) for k, name in enumerate("cab")}
    program = prog(GEMM(**addresses, m=2, n=3, k=3))
    registers = {r(1 + k): (Type.U64, pointer(h)) for k, h in enumerate((c, a, b))}
    assert trap_of(backend, program, 1, registers=registers) == (TrapCode.OUT_OF_BOUNDS, 0, -1)
    assert _unpack(ty, backend.copy_from_buffer(c)) == [7.0] * 6


@pytest.mark.parametrize("ty", [Type.F16, Type.BF16], ids=lambda t: t.name)
def test_mixed_precision_gemm_matches_the_triple_loop_in_f32(ty):
    rng = random.Random(9)
    backend = CpuBackend()
    m, n, k = 5, 3, 7
    cut = _bf16 if ty is Type.BF16 else (lambda v: struct.unpack("<e", struct.pack("<e", v))[0])
    a = [cut(rng.uniform(-4, 4)) for _ in range(k * m)]     # stored k x m (trans_a)
    b = [cut(rng.uniform(-4, 4)) for _ in range(k * n)]
    c = _values(Type.F32, m * n, rng)
    handles = [_buffer(backend, t, values) for t, values in ((Type.F32, c), (ty, a), (ty, b))]
    run(backend, prog(MixedPrecisionGEMM(c=Address.BufferOffset(handles[0]), a=Address.BufferOffset(handles[1]),
                                         b=Address.BufferOffset(handles[2]), m=m, n=n, k=k, alpha=0.5, beta=2.0,
                                         trans_a=True, ty=ty)), 1)
    want = list(c)
    _loop_gemm(Type.F32, a, b, want, m, n, k, 0.5, 2.0, True, False, 0, 0, 0)
    assert _unpack(Type.F32, backend.copy_from_buffer(handles[0])) == want


def _requantized(acc: int, a_scale: float, b_scale: float, c_scale: float | None) -> float:
    """docs/semantics.md's QuantizedGEMM steps, one by one in Python: acc wrapped to i32, each step rounded to
    f32; an i8 C rounds half to even (Python's round) and saturates, NaN giving 0."""
    f32 = lambda v: _round(Type.F32, v)  # noqa: E731
    acc = (acc + 2 ** 31) % 2 ** 32 - 2 ** 31
    scale = f32(f32(a_scale) * f32(b_scale))
    if c_scale is None:
        return f32(f32(float(acc)) * scale)
    try:
        multiplier = f32(scale / f32(c_scale))
    except ZeroDivisionError:
        multiplier = math.copysign(math.inf, scale) if scale else math.nan
    value = f32(f32(float(acc)) * multiplier)
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return 127 if value > 0 else -128
    return max(-128, min(127, round(value)))


@pytest.mark.parametrize("ty", [Type.I8, Type.F32], ids=lambda t: t.name)
@pytest.mark.parametrize("scales", [(0.5, 1.0, 1.0), (0.02, 0.03, 0.011), (1.0, 1.0, 0.0), (1e-3, 3e-3, 7.0)])
def test_quantized_gemm_matches_the_integer_triple_loop(ty, scales):
    rng = random.Random(13)
    backend = CpuBackend()
    m, n, k, ldb = 4, 5, 9, 11
    a = [rng.randint(-128, 127) for _ in range(m * k)]
    b = [rng.randint(-128, 127) for _ in range((n - 1) * ldb + k)]   # stored n x k (trans_b), rows 11 apart
    a[0:k] = [-128] * k                                               # a row of large sums
    c = [0] * (m * n) if ty is Type.I8 else [0.0] * (m * n)
    handles = [_buffer(backend, t, values) for t, values in ((ty, c), (Type.I8, a), (Type.I8, b))]
    run(backend, prog(QuantizedGEMM(c=Address.BufferOffset(handles[0]), a=Address.BufferOffset(handles[1]),
                                    b=Address.BufferOffset(handles[2]), a_scale=scales[0], b_scale=scales[1],
                                    c_scale=scales[2], m=m, n=n, k=k, trans_b=True, ldb=ldb, ty=ty)), 1)
    sums = [sum(a[i * k + l] * b[j * ldb + l] for l in range(k)) for i in range(m) for j in range(n)]
    want = [_requantized(acc, scales[0], scales[1], scales[2] if ty is Type.I8 else None) for acc in sums]
    assert _unpack(ty, backend.copy_from_buffer(handles[0])) == want
    if scales == (0.5, 1.0, 1.0):   # odd sums halve to ties (to even), large ones saturate
        assert any(acc % 2 for acc in sums) and any(abs(acc) > 256 for acc in sums)


def _csr(rng, m, k, density, first=0):
    """A random CSR matrix: (a_ptr, a_indices, a_values) with empty rows, repeated and unsorted columns, and
    ``first`` unused entries before a_ptr[0]."""
    ptr, indices = [first], [rng.randrange(k) for _ in range(first)] if k else []
    for _ in range(m):
        count = 0 if rng.random() < 0.3 or k == 0 else rng.randint(0, max(1, int(density * k) + 2))
        indices += [rng.randrange(k) for _ in range(count)]
        ptr.append(ptr[-1] + count)
    return ptr, indices, [_round(Type.F32, rng.uniform(-4, 4)) for _ in indices]


@pytest.mark.parametrize("ty", [Type.F32, Type.F64], ids=lambda t: t.name)
@pytest.mark.parametrize("m, n, k, first, ldb, ldc, alpha, beta", [
    (5, 3, 7, 0, 0, 0, 1.0, 0.0), (9, 4, 6, 3, 6, 5, -1.5, 0.5), (1, 1, 1, 0, 0, 0, 2.0, 1.0), (3, 2, 0, 0, 0, 0, 9.0, 0.5)])
def test_sparse_gemm_matches_the_triple_loop_over_its_rows(ty, m, n, k, first, ldb, ldc, alpha, beta):
    rng = random.Random(m * 100 + k)
    backend = CpuBackend()
    ptr, indices, values = _csr(rng, m, k, 0.4, first)
    b = _values(ty, (k - 1) * (ldb or n) + n if k else 0, rng)
    c = _values(ty, (m - 1) * (ldc or n) + n, rng)
    handles = [_buffer(backend, t, v) for t, v in ((ty, c), (ty, values), (Type.U32, indices), (Type.U32, ptr), (ty, b))]
    names = ("c", "a_values", "a_indices", "a_ptr", "b")
    run(backend, prog(SparseGEMM(**{n_: Address.BufferOffset(h) for n_, h in zip(names, handles)}, m=m, n=n, k=k,
                                 alpha=alpha, beta=beta, ldb=ldb, ldc=ldc, ty=ty)), 1)
    want = list(c)
    for i in range(m):
        for j in range(n):
            entries = range(ptr[i], ptr[i + 1])
            total = math.fsum(values[e] * b[indices[e] * (ldb or n) + j] for e in entries)
            value = alpha * total if entries else 0.0
            if beta != 0:
                value += beta * c[i * (ldc or n) + j]
            want[i * (ldc or n) + j] = _round(ty, value)
    got = _unpack(ty, backend.copy_from_buffer(handles[0]))
    assert all(abs(g - w) <= 1e-12 * (1 + abs(w)) for g, w in zip(got, want)) and (ty is Type.F64 or got == want)


@pytest.mark.parametrize("ptr, indices, want", [
    ([0, 2, 1, 3], [0, 1, 2], (TrapCode.INVALID_SPARSE, "a_ptr[2] = 1 is below a_ptr[1] = 2")),
    ([0, 1, 2, 3], [0, 4, 9], (TrapCode.INVALID_SPARSE, "a_indices[1] = 4 is not below k = 4")),
    ([0, 1, 2, 5], [0, 1, 2], (TrapCode.OUT_OF_BOUNDS, "a_values: 20 bytes at offset 0 of handle")),
    ([0, 1, 2], [0, 1, 2], (TrapCode.OUT_OF_BOUNDS, "a_ptr: 16 bytes at offset 0 of handle")),
])
def test_bad_csr_traps_naming_its_first_bad_element_and_leaves_c_unchanged(ptr, indices, want):
    backend, ty = CpuBackend(), Type.F32
    c = _buffer(backend, ty, [7.0] * 6)
    arrays = (c, _buffer(backend, ty, [1.0, 2.0, 3.0, 4.0]), _buffer(backend, Type.U32, indices),
              _buffer(backend, Type.U32, ptr), _buffer(backend, ty, [1.0] * 8))
    names = ("c", "a_values", "a_indices", "a_ptr", "b")
    addresses = {name: Address.RegisterIndirect(r(1 + k), 0) for k, name in enumerate(names)}
    registers = {r(1 + k): (Type.U64, pointer(h)) for k, h in enumerate(arrays)}
    with pytest.raises(AtlasTrap) as caught:
        run(backend, prog(SparseGEMM(**addresses, m=3, n=2, k=4, beta=1.0)), 1, registers=registers)
    assert (caught.value.code, caught.value.lane) == (want[0], -1) and want[1] in str(caught.value)
    assert _unpack(ty, backend.copy_from_buffer(c)) == [7.0] * 6


def test_zero_times_infinity_is_nan_even_where_nothing_else_is():
    backend, ty = CpuBackend(), Type.F64
    handles = [_buffer(backend, ty, values) for values in ([5.0, 5.0], [math.inf, 1.0], [0.0, 2.0, 1.0, 3.0])]
    run(backend, prog(GEMM(c=Address.BufferOffset(handles[0]), a=Address.BufferOffset(handles[1]),
                           b=Address.BufferOffset(handles[2]), m=1, n=2, k=2, ty=ty)), 1)
    got = _unpack(ty, backend.copy_from_buffer(handles[0]))
    assert math.isnan(got[0]) and got[1] == math.inf   # inf*0 + 1*1 (IEEE: NaN, no BLAS zero skipping); inf*2 + 3
