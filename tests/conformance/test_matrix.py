"""The matrix kernels (rows of category "matrix") on every compiled backend, cases generated from each row
(tests/conformance/matrix_cases.py), compared with the reference within the contract's bound
(docs/semantics.md, Matrix kernels); traps (code, instruction index, lane -1, C unchanged) as the reference's.
Backends are asked supports(): a backend without a kernel for a row must refuse it with UnsupportedOperation."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web.isa import Type

from .backends import compiled_backends, refuses_unsupported
from .matrix_cases import MATRIX_ROWS, Output, compare, encode_array, matrix_cases, run_matrix, trap_cases

BACKENDS = compiled_backends()
CASES = matrix_cases()


def test_the_cases_cover_every_matrix_row_and_type():
    assert {info.name for info in MATRIX_ROWS} >= {"GEMM", "BatchedGEMM", "MixedPrecisionGEMM", "QuantizedGEMM"}
    assert {(c.info.name, c.ty) for c in CASES} == {(info.name, ty) for info in MATRIX_ROWS for ty in info.types}


@pytest.mark.parametrize("case", [c for c in CASES if c.fill != "random"], ids=str)
def test_the_special_cases_mean_what_they_say_on_the_reference(reference, case):
    inputs, out, trap = run_matrix(reference, case)
    c = out.values
    assert trap is None
    if case.fill == "nan_c":   # beta == 0: the NaN in C never reaches the written elements
        assert not np.isnan(c).all() or case.fields["m"] * case.fields["n"] == 0
        written = ~np.isnan(c)
        assert written.sum() == case.fields["m"] * case.fields["n"] * case.fields.get("batch", 1)
    else:                      # NaN and an infinity reach the output
        assert np.isnan(c).any() and np.isinf(c).any()


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", CASES, ids=str)
def test_matrix_kernel_matches_the_reference_within_the_bound(reference, backend_name, case):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: run_matrix(b, case)):
        return
    inputs, want, _ = run_matrix(reference, case)
    again, got, trap = run_matrix(backend, case)
    assert trap is None, f"{backend_name} {case}: {trap}"
    assert all(np.array_equal(inputs[n], again[n], equal_nan=True) for n in inputs)
    bad = compare(case, inputs, want, got)
    assert not bad, f"{backend_name} {case}: {len(bad)} elements off; first (index, reference, got, bound) {bad[:3]}"


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", trap_cases(), ids=str)
def test_matrix_kernel_traps_like_the_reference(reference, backend_name, case):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: run_matrix(b, case)):
        return
    inputs, _, want = run_matrix(reference, case)
    _, c, got = run_matrix(backend, case)
    assert want is not None and got is not None
    assert (got.code, got.instruction_index, got.lane) == (want.code, want.instruction_index, -1)
    assert case.info.mnemonic + "." in str(got)   # the instruction's text
    expected_c = inputs["c"][:len(c.values)]
    assert np.array_equal(c.values, expected_c, equal_nan=True), "a trapped launch wrote C"


def test_compare_catches_an_element_outside_the_bound_and_changed_padding(reference):
    """The comparison itself: a result one bound off, a NaN lost, padding written, all caught."""
    case = next(c for c in CASES if c.name == "GEMM.F32.3x3x3.ld")
    inputs, want, _ = run_matrix(reference, case)
    assert compare(case, inputs, want, Output(want.ty, want.raw)) == []
    off = want.values
    off[0] = off[0] + abs(off[0]) * 1e-5
    assert [b[0] for b in compare(case, inputs, want, Output(want.ty, encode_array(want.ty, off)))] == [0]
    padded = want.values
    padded[3] += 1     # ldc = 6: element 3 is padding after row 0
    assert [b[0] for b in compare(case, inputs, want, Output(want.ty, encode_array(want.ty, padded)))] == [3]
    exact = next(c for c in CASES if c.name == "QuantizedGEMM.I8.3x3x3.NN")
    inputs, want, _ = run_matrix(reference, exact)
    changed = want.values
    changed[4] += 1 if changed[4] < 127 else -1
    assert [b[0] for b in compare(exact, inputs, want, Output(want.ty, encode_array(want.ty, changed)))] == [4]


def _numpy_in_the_type(case, inputs: dict) -> Output:
    """C as a kernel accumulating in C's type computes it: NumPy's matmul on float32 (BLAS sgemm: f32 sums,
    fused multiply-adds, blocked; f16 and bf16 inputs are exact in f32) or float64 arrays, item by item,
    padding untouched."""
    f, probe = case.fields, case.probe()
    m, n, k = f["m"], f["n"], f["k"]
    c_ty = case.arrays()["c"].ty
    dtype = np.float64 if c_ty is Type.F64 else np.float32
    inputs = {name: values.astype(dtype) for name, values in inputs.items()}
    lda = f.get("lda", 0) or (m if probe.trans_a else k)
    ldb = f.get("ldb", 0) or (k if probe.trans_b else n)
    ldc = f.get("ldc", 0) or n
    a_rows, b_rows = (k if probe.trans_a else m), (n if probe.trans_b else k)
    strides = (f.get("stride_a", 0) or a_rows * lda, f.get("stride_b", 0) or b_rows * ldb, f.get("stride_c", 0) or m * ldc)
    c = inputs["c"].copy()
    for item in range(f.get("batch", 1)):
        def stored(flat, start, rows, cols, ld):
            return np.lib.stride_tricks.as_strided(flat[start:], (rows, cols), (ld * flat.itemsize, flat.itemsize))
        a = stored(inputs["a"], item * strides[0], a_rows, m + k - a_rows, lda)
        b = stored(inputs["b"], item * strides[1], b_rows, n + k - b_rows, ldb)
        view = stored(c, item * strides[2], m, n, ldc)
        product = (a.T if probe.trans_a else a) @ (b.T if probe.trans_b else b)
        view[...] = dtype(probe.alpha) * product + (dtype(probe.beta) * view if probe.beta != 0 else dtype(0))
    return Output(c_ty, encode_array(c_ty, c))


@pytest.mark.parametrize("case", [c for c in CASES if c.fill == "random" and not c.exact and c.fields["m"]
                                  * c.fields["n"] * c.fields["k"] * c.fields.get("batch", 1)], ids=str)
def test_a_gemm_computed_in_the_element_type_meets_the_bound(reference, case):
    """The bound is not tighter than a real kernel needs: NumPy's own matmul in the element type meets it."""
    inputs, want, _ = run_matrix(reference, case)
    assert compare(case, inputs, want, _numpy_in_the_type(case, inputs)) == []
