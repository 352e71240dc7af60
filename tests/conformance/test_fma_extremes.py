"""FMA and FMS on F64 round once at the exponent extremes on every backend that runs them (issue 16:
wasm returned 0.0 where two roundings cancelled a huge product, and missed subnormal results), as the
issue's programs wrote them: one lane, immediates, one store."""

from __future__ import annotations

import math

import pytest

from atlas_web import LaunchConfig, Program, Type, UnsupportedOperation
from tests.wasm_backend.test_runtime_helpers import FMA64_EDGES, f64_bits, fraction_fma


def _program(op: str, a: float, b: float, c: float, handle: int) -> Program:
    return Program.from_text(f"""
        mov_imm.f64 r1, {a!r}
        mov_imm.f64 r2, {b!r}
        mov_imm.f64 r3, {c!r}
        {op}.f64 r4, r1, r2, r3
        stg.f64 [buf{handle} + 0], r4
    """)


@pytest.mark.parametrize("op", ["fma", "fms"])
def test_fused_f64_at_the_extremes_matches_exact_rounding(available_backend, reference, op):
    backend = available_backend
    handle = backend.allocate_typed(1, Type.F64)
    reference_handle = reference.allocate_typed(1, Type.F64)
    for a, b, c in FMA64_EDGES:
        addend = c if op == "fma" else -c
        want = fraction_fma(a, b, addend)  # fms: a*b - c is a*b + (-c), also for the sign of an exact zero
        program = _program(op, a, b, c, handle)
        if not backend.supports(op.upper(), Type.F64):
            with pytest.raises(UnsupportedOperation):
                backend.execute_program(program, LaunchConfig())
            return
        backend.execute_program(program, LaunchConfig())
        got = backend.copy_typed_from(handle, Type.F64)[0]
        reference.execute_program(_program(op, a, b, c, reference_handle), LaunchConfig())
        oracle = reference.copy_typed_from(reference_handle, Type.F64)[0]
        assert f64_bits(float(got)) == f64_bits(want) == f64_bits(float(oracle)), (op, a, b, c, got, want)
        assert not math.isnan(got)
