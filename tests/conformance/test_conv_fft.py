"""Conv2D and FFT (rows of category "convolution") on every backend, cases generated from each row
(tests/conformance/conv_fft_cases.py): outputs against NumPy (Conv2D: a direct loop over the taps; FFT: np.fft)
within the contract's bound, traps (code, instruction index, lane -1, output unchanged) against the reference.
Backends are asked supports()."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web.reference import CpuBackend

from .backends import compiled_backends, refuses_unsupported
from .conv_fft_cases import CONV_ROWS, compare, conv_cases, run_case, trap_cases

BACKENDS = {"cpu": CpuBackend(), **compiled_backends()}


def test_the_convolution_rows_have_cases():
    assert {info.name for info in CONV_ROWS} == {"Conv2D", "FFT"}
    assert {case.info.name for case in conv_cases()} == {"Conv2D", "FFT"}


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", conv_cases(), ids=str)
def test_conv_fft_within_the_contract(backend_name, case):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: run_case(b, case)):
        return
    inputs, got, trap = run_case(backend, case)
    assert trap is None, f"{backend_name} {case}: {trap}"
    bad = compare(case, inputs, got)
    assert not bad, f"{backend_name} {case}: {len(bad)} outside the bound; first (index, numpy, got, allowed) {bad[:3]}"


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", trap_cases(), ids=str)
def test_conv_fft_traps_like_the_reference(backend_name, case):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: run_case(b, case)):
        return
    _, _, want = run_case(BACKENDS["cpu"], case)
    inputs, output, got = run_case(backend, case)
    assert want is not None and got is not None
    assert (got.code, got.instruction_index, got.lane) == (want.code, want.instruction_index, -1)
    assert case.info.name.lower() in str(got).lower()
    if case.short != "output":
        assert np.array_equal(output, inputs["output"]), "a trapped launch wrote its output"
