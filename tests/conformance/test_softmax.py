"""The softmax kernels (rows of category "softmax") on every backend, cases generated from each row
(tests/conformance/softmax_cases.py): outputs against NumPy within the contract's bound (NaN and infinities where
NumPy has them), traps (code, instruction index, lane -1, output unchanged) against the reference. Backends are
asked supports()."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web.reference import CpuBackend

from .backends import compiled_backends, refuses_unsupported
from .softmax_cases import NUMPY, SOFTMAX_ROWS, compare, run_softmax, softmax_cases, trap_cases

BACKENDS = {"cpu": CpuBackend(), **compiled_backends()}


def test_every_softmax_row_has_cases_and_numpy():
    assert {info.name for info in SOFTMAX_ROWS} == set(NUMPY) == {"Softmax", "LogSoftmax"}


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", softmax_cases(), ids=str)
def test_softmax_within_the_contract(backend_name, case):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: run_softmax(b, case)):
        return
    inputs, got, trap = run_softmax(backend, case)
    assert trap is None, f"{backend_name} {case}: {trap}"
    bad = compare(case, inputs, got)
    assert not bad, f"{backend_name} {case}: {len(bad)} outside the bound; first (index, numpy, got, allowed) {bad[:3]}"


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", trap_cases(), ids=str)
def test_softmax_traps_like_the_reference(backend_name, case):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: run_softmax(b, case)):
        return
    _, _, want = run_softmax(BACKENDS["cpu"], case)
    inputs, output, got = run_softmax(backend, case)
    assert want is not None and got is not None
    assert (got.code, got.instruction_index, got.lane) == (want.code, want.instruction_index, -1)
    assert case.info.name.lower() in str(got).lower()
    if case.short != "output":
        assert np.array_equal(output, inputs["output"]), "a trapped launch wrote its output"
