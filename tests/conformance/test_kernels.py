"""The kernel instructions (rows of category "kernel") on every backend, cases generated from each row
(tests/conformance/kernel_cases.py): outputs against NumPy written there, traps (code, instruction index,
lane -1) against the reference, for every launch shape the cases make. Backends are asked supports()."""

from __future__ import annotations

import pytest

from atlas_web import UnsupportedOperation
from atlas_web.isa import Type
from atlas_web.reference import CpuBackend

from .backends import compiled_backends
from .kernel_cases import KERNEL_ROWS, NUMPY, kernel_cases, numpy_of, run_kernel, trap_cases
from .values import ulp_distance

BACKENDS = {"cpu": CpuBackend(), **compiled_backends()}


def test_every_kernel_row_has_cases_and_numpy():
    assert KERNEL_ROWS, "no kernel row in the opcode table"
    assert {info.name for info in KERNEL_ROWS} == set(NUMPY)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", kernel_cases(), ids=str)
def test_kernel_matches_numpy(backend_name, case):
    backend = BACKENDS[backend_name]
    if not backend.supports(case.info.name, case.ty):
        with pytest.raises(UnsupportedOperation):
            run_kernel(backend, case)
        return
    inputs, outputs, trap = run_kernel(backend, case)
    assert trap is None, f"{backend_name} {case}: {trap}"
    expected = numpy_of(case, inputs)
    assert set(expected) == set(outputs)
    for name, want in expected.items():
        got = outputs[name]
        bad = [(i, w, g) for i, (w, g) in enumerate(zip(want, got)) if ulp_distance(w, g, case.ty) > 0]
        assert len(got) == len(want) and not bad, f"{backend_name} {case} {name}: first (index, numpy, got) {bad[:3]}"


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", trap_cases(), ids=str)
def test_kernel_traps_like_the_reference(backend_name, case):
    backend = BACKENDS[backend_name]
    if not backend.supports(case.info.name, case.ty):
        with pytest.raises(UnsupportedOperation):
            run_kernel(backend, case)
        return
    _, _, want = run_kernel(BACKENDS["cpu"], case)
    _, _, got = run_kernel(backend, case)
    assert want is not None and got is not None
    assert (got.code, got.instruction_index, got.lane) == (want.code, want.instruction_index, -1)
    assert case.info.name.lower() in str(got).lower()


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
def test_every_kernel_row_runs_in_f32_everywhere(backend_name):
    """A row with a reference rule and a default expansion runs on every backend (F32: every backend has
    the cooperative maps and reductions an expansion uses)."""
    assert all(BACKENDS[backend_name].supports(info.name, Type.F32) for info in KERNEL_ROWS)
