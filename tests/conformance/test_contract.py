"""TensorContract (rows of category "contraction") on every backend, cases generated from the row
(tests/conformance/contract_cases.py): outputs against NumPy's einsum within the contract's bound (docs/semantics.md,
Tensor contraction), traps (code, instruction index, lane -1, output unchanged) against the reference, and the
verifier's refusal of pairs that name an axis past a rank, an axis twice, or axes of different sizes. Backends
are asked supports()."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import ProgramBuilder, ProgramError
from atlas_web.isa import Address, Type
from atlas_web.isa.instructions import INSTRUCTION_CLASSES
from atlas_web.reference import CpuBackend
from atlas_web.verify import verify

from .backends import compiled_backends, refuses_unsupported
from .contract_cases import CONTRACT_ROWS, compare, contract_cases, run_contract, trap_cases
from .matrix_cases import decode_array

BACKENDS = {"cpu": CpuBackend(), **compiled_backends()}
CASES = contract_cases()


def test_the_cases_cover_every_contraction_row_and_type():
    assert {info.name for info in CONTRACT_ROWS} == {"TensorContract"}
    assert {(c.info.name, c.ty) for c in CASES} == {(info.name, ty) for info in CONTRACT_ROWS for ty in info.types}


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", CASES, ids=str)
def test_contraction_within_the_bound(backend_name, case):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: run_contract(b, case)):
        return
    inputs, raw, trap = run_contract(backend, case)
    assert trap is None, f"{backend_name} {case}: {trap}"
    bad = compare(case, inputs, raw)
    assert not bad, f"{backend_name} {case}: {len(bad)} elements off; first (index, numpy, got, bound) {bad[:3]}"
    if case.fill == "nan_c" and len(raw):   # beta == 0: the old NaN never reaches the output
        assert not np.isnan(decode_array(case.ty, raw)).any()


def test_compare_catches_an_element_outside_the_bound():
    case = next(c for c in CASES if c.name == "TensorContract.F32.two_pairs_crossed")
    inputs, raw, _ = run_contract(BACKENDS["cpu"], case)
    assert compare(case, inputs, raw) == []
    values = decode_array(case.ty, raw).astype(np.float32)
    values[2] += abs(values[2]) * 1e-5 + 1e-6
    assert [bad[0] for bad in compare(case, inputs, values.tobytes())] == [2]


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", trap_cases(), ids=str)
def test_contraction_traps_like_the_reference(backend_name, case):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: run_contract(b, case)):
        return
    _, _, want = run_contract(BACKENDS["cpu"], case)
    inputs, raw, got = run_contract(backend, case)
    assert want is not None and got is not None
    assert (got.code, got.instruction_index, got.lane) == (want.code, want.instruction_index, -1)
    assert "tcontract." in str(got)
    if case.short != "output":
        assert np.array_equal(decode_array(case.ty, raw), inputs["output"], equal_nan=True), \
            "a trapped launch wrote its output"


@pytest.mark.parametrize("pairs, why", [(((2, 0),), "past its rank"), (((0, 0), (0, 1)), "two pairs"),
                                        (((1, 0),), "differ in size")])
def test_the_verifier_refuses_bad_pairs(pairs, why):
    instr = INSTRUCTION_CLASSES["TensorContract"](
        output=Address.BufferOffset(1), a=Address.BufferOffset(2), b=Address.BufferOffset(3), shape_a=(3, 4),
        shape_b=(3, 3), contract_dims=pairs, ty=Type.F32)
    b = ProgramBuilder()
    b.add(instr)
    with pytest.raises(ProgramError, match=f"contract_dims.*{why}"):
        verify(b.build())


@pytest.mark.parametrize("value", [(1, 2, 3, 4, 5, 6, 7, 8, 9), (-1,), (1 << 32,), ("3",), (True,)])
def test_a_shape_must_be_at_most_eight_unsigned_32_bit_ints(value):
    with pytest.raises(ProgramError, match="shape_a"):
        INSTRUCTION_CLASSES["TensorContract"](output=Address.BufferOffset(1), a=Address.BufferOffset(2),
                                              b=Address.BufferOffset(3), shape_a=value, shape_b=(3,),
                                              contract_dims=())
