"""SparseGEMM (the matrix rows whose extents are read at launch) on every compiled backend, cases generated from
the row: odd sizes 1, 3, 17, 63, CSR matrices with empty rows, repeated and unsorted columns and unused leading
entries, ldb/ldc past packed, alpha/beta, beta == 0 over NaN in C, NaN/inf among the values, zero dimensions;
compared with the reference within the contract's bound (docs/semantics.md, Matrix kernels: r, a row's entry
count, in place of k); bad CSR (a decreasing pointer, a column index >= k, a count past the values) traps as the
reference does, C unchanged. Backends are asked supports(): without a kernel they refuse with
UnsupportedOperation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from atlas_web import AtlasTrap, LaunchConfig, ProgramBuilder
from atlas_web.isa import MOV_IMM, OPCODE_TABLE, Address, Register, Type
from atlas_web.isa.extents import reads_at_launch
from atlas_web.isa.instructions import INSTRUCTION_CLASSES

from .backends import compiled_backends, refuses_unsupported
from .matrix_cases import Output, decode_array, encode_array

BACKENDS = compiled_backends()
SPARSE_ROWS = tuple(info for info in OPCODE_TABLE if info.category == "matrix"
                    and any(reads_at_launch(op) for op in info.address_operands))
_U = {Type.F32: 2.0 ** -24, Type.F64: 2.0 ** -53}
_ETA = {Type.F32: 2.0 ** -149, Type.F64: 2.0 ** -1074}


@dataclass(frozen=True)
class SparseCase:
    name: str
    info: object
    ty: Type
    fields: dict
    density: float = 0.3
    first: int = 0
    #: "nan_c", "specials", "decreasing", "column", "count" or None
    special: str | None = None

    def __str__(self) -> str:
        return self.name


def _cases() -> list[SparseCase]:
    out = []
    for info in SPARSE_ROWS:
        for ty in sorted(info.types, key=lambda t: t.code):
            def case(tag, density=0.3, first=0, special=None, **fields):
                out.append(SparseCase(f"{info.name}.{ty.name}.{tag}", info, ty, fields, density, first, special))
            for m, n, k in ((1, 1, 1), (3, 3, 3), (17, 3, 63), (63, 17, 3)):
                case(f"{m}x{n}x{k}", m=m, n=n, k=k)
                case(f"{m}x{n}x{k}.dense_ld_alpha_beta", 0.9, 2, m=m, n=n, k=k, ldb=n + 2, ldc=n + 3, alpha=-1.5,
                     beta=0.75)
            case("beta0_nan_in_c", special="nan_c", m=5, n=4, k=6, alpha=2.0)
            case("nan_inf", special="specials", m=6, n=3, k=5, beta=0.5)
            case("m0", m=0, n=3, k=4)
            case("n0", m=3, n=0, k=4, beta=0.5)
            case("k0", m=3, n=4, k=0, alpha=7.0, beta=0.5)
    return out


def _trap_cases() -> list[SparseCase]:
    return [SparseCase(f"{info.name}.F32.{special}", info, Type.F32, dict(m=4, n=3, k=5, beta=1.0), 0.5, 0, special)
            for info in SPARSE_ROWS for special in ("decreasing", "column", "count")]


def _inputs(case: SparseCase, seed: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    f = case.fields
    m, n, k = f["m"], f["n"], f["k"]
    counts = rng.integers(0, max(1, int(case.density * k)) + 2, m) * (rng.random(m) > 0.25) if k else np.zeros(m, int)
    if case.special in ("decreasing", "column", "count"):   # the trap cases: rows of 2, 1, 2, 1 entries
        counts = np.array([2, 1, 2, 1])
    ptr = np.concatenate([[0], np.cumsum(counts)]) + case.first
    nnz = int(ptr[-1])
    indices = rng.integers(0, max(k, 1), nnz)
    if case.special == "decreasing":
        ptr[2] = 1                  # 0, 2, 1, ...
    if case.special == "column":
        indices[2] = k + 2          # row 1's entry
    def floats(count):
        return decode_array(case.ty, encode_array(case.ty, rng.uniform(-4, 4, count)))
    arrays = {"c": floats((m - 1) * (f.get("ldc") or n) + n if m and n else 0), "a_values": floats(nnz),
              "a_indices": indices.astype(np.float64), "a_ptr": ptr.astype(np.float64),
              "b": floats((k - 1) * (f.get("ldb") or n) + n if k and n else 0)}
    if case.special == "nan_c":
        arrays["c"][:] = np.nan
    if case.special == "specials" and nnz > 3:
        arrays["a_values"][[0, nnz // 2]] = [np.nan, np.inf]
        arrays["b"][-1] = -np.inf
    if case.special == "count":   # the count passes the values and indices held
        arrays["a_values"], arrays["a_indices"] = arrays["a_values"][:-1], arrays["a_indices"][:-1]
    return arrays


_TYPES = {"a_indices": Type.U32, "a_ptr": Type.U32}


def _run(backend, case: SparseCase):
    inputs = _inputs(case)
    handles = {}
    for name, values in inputs.items():
        data = encode_array(_TYPES.get(name, case.ty), values) if name not in _TYPES else \
            values.astype("<u4").tobytes()
        handles[name] = int(backend.allocate_buffer(max(1, len(data))))
        backend.copy_to_buffer(handles[name], data)
    b = ProgramBuilder()
    addresses = {}
    for k, op in enumerate(case.info.address_operands):
        register = Register(10 + k)
        b.add(MOV_IMM(dst=register, value=handles[op.name] << 32, ty=Type.U64))
        addresses[op.name] = Address.RegisterIndirect(register, 0)
    b.add(INSTRUCTION_CLASSES[case.info.name](**addresses, **case.fields, ty=case.ty))
    trap = None
    try:
        backend.execute_program(b.build(), LaunchConfig())
    except AtlasTrap as caught:
        trap = caught
    c = Output(case.ty, bytes(backend.copy_from_buffer(handles["c"]))[:len(inputs["c"]) * case.ty.size_bytes()])
    for handle in handles.values():
        backend.free_buffer(handle)
    return inputs, c, trap


def _bad(case: SparseCase, inputs: dict, want: Output, got: Output) -> list:
    """Elements of C off the contract: NaN/inf as the reference, finite within the bound, the rest unchanged."""
    f = case.fields
    m, n = f["m"], f["n"]
    ldb, ldc = f.get("ldb") or n, f.get("ldc") or n
    alpha, beta = f.get("alpha", 1.0), f.get("beta", 0.0)
    ptr, columns = inputs["a_ptr"].astype(int), inputs["a_indices"].astype(int)
    tolerance = np.zeros(len(inputs["c"]))
    for i in range(m):
        entries = range(ptr[i], ptr[i + 1])
        r = len(entries)
        gamma = (r + 3) * _U[case.ty] / (1 - (r + 3) * _U[case.ty])
        for j in range(n):
            magnitude = sum(abs(inputs["a_values"][e] * inputs["b"][columns[e] * ldb + j]) for e in entries)
            c_term = abs(beta * inputs["c"][i * ldc + j]) if beta != 0 else 0.0
            tolerance[i * ldc + j] = gamma * (abs(alpha) * magnitude + c_term) + (r + 3) * _ETA[case.ty]
    w, g = want.values, got.values
    with np.errstate(invalid="ignore"):
        ok = np.where(np.isnan(w) | np.isinf(w), (np.isnan(w) & np.isnan(g)) | (w == g), np.abs(g - w) <= tolerance)
        ok = np.where(tolerance == 0, (w == g) | (np.isnan(w) & np.isnan(g)), ok)
    return [(int(i), w[i], g[i], tolerance[i]) for i in np.flatnonzero(~ok)]


CASES = _cases()


def test_the_cases_cover_every_sparse_row_and_type():
    assert {info.name for info in SPARSE_ROWS} == {"SparseGEMM"}
    assert {(c.info.name, c.ty) for c in CASES} == {(info.name, ty) for info in SPARSE_ROWS for ty in info.types}


@pytest.mark.parametrize("case", [c for c in CASES if c.special], ids=str)
def test_the_special_cases_mean_what_they_say_on_the_reference(reference, case):
    inputs, c, trap = _run(reference, case)
    assert trap is None
    if case.special == "nan_c":   # beta == 0: no NaN reaches the written elements
        assert not np.isnan(c.values).any()
    else:
        assert np.isnan(c.values).any() and np.isinf(c.values).any()


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", CASES, ids=str)
def test_sparse_kernel_matches_the_reference_within_the_bound(reference, backend_name, case):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: _run(b, case)):
        return
    inputs, want, _ = _run(reference, case)
    _, got, trap = _run(backend, case)
    assert trap is None, f"{backend_name} {case}: {trap}"
    bad = _bad(case, inputs, want, got)
    assert not bad, f"{backend_name} {case}: first (index, reference, got, bound) {bad[:3]}"


@pytest.mark.parametrize("backend_name", ["cpu", *sorted(BACKENDS)])
@pytest.mark.parametrize("case", _trap_cases(), ids=str)
def test_bad_csr_traps_as_the_reference_with_c_unchanged(reference, backend_name, case):
    backend = reference if backend_name == "cpu" else BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: _run(b, case)):
        return
    inputs, c, got = _run(backend, case)
    _, _, want = _run(reference, case)
    code = {"decreasing": "INVALID_SPARSE", "column": "INVALID_SPARSE", "count": "OUT_OF_BOUNDS"}[case.special]
    assert got is not None and got.code.name == code and (got.code, got.instruction_index, got.lane) == (
        want.code, want.instruction_index, -1)
    assert np.array_equal(c.values, inputs["c"])


def test_the_comparison_catches_a_result_off_the_bound(reference):
    case = next(c for c in CASES if c.name == "SparseGEMM.F32.17x3x63.dense_ld_alpha_beta")
    inputs, want, _ = _run(reference, case)
    assert _bad(case, inputs, want, want) == []
    off = want.values
    off[0] += abs(off[0]) * 1e-4 + 1e-3
    padded = want.values
    padded[3] += 1                       # ldc = n + 3 = 6: element 3 is padding after row 0
    assert [b[0] for b in _bad(case, inputs, want, Output(case.ty, encode_array(case.ty, off)))] == [0]
    assert [b[0] for b in _bad(case, inputs, want, Output(case.ty, encode_array(case.ty, padded)))] == [3]
