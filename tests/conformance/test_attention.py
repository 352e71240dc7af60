"""The attention kernels (rows of category "attention") on every backend, cases generated from each row
(tests/conformance/attention_cases.py): outputs against NumPy within the contract's bound (NaN and infinities
where NumPy has them; KVCacheUpdate bit for bit), traps (code, instruction index, lane -1, output unchanged)
against the reference. Backends are asked supports()."""

from __future__ import annotations

import pytest

from atlas_web.reference import CpuBackend

from .attention_cases import ATTENTION_ROWS, BOUNDS, NUMPY, WRITTEN, attention_cases, compare, run_attention, \
    trap_cases
from .backends import compiled_backends, refuses_unsupported
from .matrix_cases import encode_array

BACKENDS = {"cpu": CpuBackend(), **compiled_backends()}


def test_every_attention_row_has_cases_numpy_and_a_bound():
    names = {"RoPE", "KVCacheUpdate", "Attention", "FlashAttention"}
    assert {info.name for info in ATTENTION_ROWS} == set(NUMPY) == set(BOUNDS) == set(WRITTEN) == names
    assert {case.info.name for case in attention_cases()} == names


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", attention_cases(), ids=str)
def test_attention_within_the_contract(backend_name, case):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: run_attention(b, case)):
        return
    inputs, raw, trap = run_attention(backend, case)
    assert trap is None, f"{backend_name} {case}: {trap}"
    bad = compare(case, inputs, raw)
    assert not bad, f"{backend_name} {case}: {len(bad)} outside the bound; first (index, numpy, got, allowed) {bad[:3]}"


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("case", trap_cases(), ids=str)
def test_attention_traps_like_the_reference(backend_name, case):
    backend = BACKENDS[backend_name]
    if refuses_unsupported(backend, case.info.name, case.ty, lambda b: run_attention(b, case)):
        return
    _, _, want = run_attention(BACKENDS["cpu"], case)
    inputs, raw, got = run_attention(backend, case)
    assert want is not None and got is not None
    assert (got.code, got.instruction_index, got.lane) == (want.code, want.instruction_index, -1)
    assert case.info.mnemonic in str(got) and str(got).split(": ")[-1].split(" of handle")[0] == \
        str(want).split(": ")[-1].split(" of handle")[0]
    written = WRITTEN[case.info.name]
    if case.short != written:
        assert raw == encode_array(case.arrays()[written].ty, inputs[written]), "a trapped launch wrote its output"
