"""ParallelReduce Sum of floats at the edges of the range, on every backend (the reference included), against
the contract in docs/semantics.md: a NaN among the values or both infinities give NaN; otherwise an infinity
among them gives that infinity; otherwise the result is the rounding of a number within
``count * eps * sum(|x|)`` of the exact sum: never NaN, and an infinity only where that number is beyond
the type's range, however the partial sums overflow. Lengths reach the vector loops and blocks of the
compiled backends (wasm: 32-value f32 blocks, f64x2 accumulators; webgpu: vec4 first pass)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from atlas_web import LaunchConfig, ProgramBuilder, UnsupportedOperation
from atlas_web.isa import STG, Address, ParallelReduce, ReduceOperation, Register, Type
from atlas_web.isa.floats import round_float
from atlas_web.reference import CpuBackend

from .backends import compiled_backends
from .values import decode, encode

BACKENDS = {"cpu": CpuBackend(), **compiled_backends()}
#: type -> (its largest finite value, its eps)
FORMATS = {Type.F16: (65504.0, 2.0 ** -10), Type.BF16: ((2 - 2.0 ** -7) * 2.0 ** 127, 2.0 ** -7),
           Type.F32: ((2 - 2.0 ** -23) * 2.0 ** 127, 2.0 ** -23), Type.F64: (1.7976931348623157e308, 2.0 ** -52)}
INF, NAN = math.inf, math.nan


def _values(big: float) -> dict[str, list[float]]:
    """name -> values; ``big`` is the type's largest finite value (partials of two of them overflow)."""
    return {
        "cancel-4": [big, big, -big, -big],
        "cancel-plus-one": [big] * 8 + [-big] * 8 + [1.0],
        "cancel-80": [big] * 40 + [-big] * 40,
        "cancel-2048": [big] * 1024 + [-big] * 1024,
        "interleaved-cancel-301": [big if k % 2 else -big for k in range(300)] + [0.5],
        "overflows-then-minus-inf": [big] * 600 + [-INF] + [1.0] * 9,
        "inf-among-cancelling": [big] * 600 + [INF] + [-big] * 700,
        "issue-17": [0.0, big, 0.0, -INF, big, 0.0, 0.0, 0.0, 0.0, 0.0, big / 16, 0.0],
        "nan-among-large": [big, big, NAN, -big],
        "both-infinities": [INF, big, big, -INF],
        "beyond-the-range": [big] * 20,
        "below-the-range": [-big] * 33,
    }


def _check(ty: Type, values: list[float], got: float) -> None:
    big, eps = FORMATS[ty]
    if any(math.isnan(v) for v in values) or (INF in values and -INF in values):
        assert math.isnan(got), f"want NaN, got {got!r}"
        return
    if INF in values or -INF in values:
        assert got == (INF if INF in values else -INF), f"want the infinity of the values, got {got!r}"
        return
    assert not math.isnan(got), "a sum of finite values gave NaN"
    exact = sum((Fraction(v) for v in values), Fraction(0))
    bound = len(values) * Fraction(eps) * sum((abs(Fraction(v)) for v in values), Fraction(0))
    if math.isinf(got):
        assert abs(exact) + bound > big and (got > 0) == (exact > 0), f"{got!r} for an exact sum of {float(exact)!r}"
        return
    assert abs(Fraction(got) - exact) <= bound + Fraction(math.ulp(got)), f"{got!r} vs exact {float(exact)!r}"


def _sum_on(backend, ty: Type, values: list[float]) -> float:
    return reduce_on(backend, ty, values, lambda fields: ParallelReduce(**fields, operation=ReduceOperation.Sum))


def reduce_on(backend, ty: Type, values: list[float], reduction) -> float:
    """``values`` (of ``ty``) reduced on ``backend`` by ``reduction(fields)`` (an instruction made from dst r1,
    the source array, count and ty), stored and read back."""
    data = encode(ty, values)
    src, out = backend.allocate_buffer(len(data)), backend.allocate_buffer(ty.size_bytes())
    backend.copy_to_buffer(src, data)
    fields = dict(dst=Register(1), src_array=Address.BufferOffset(int(src)), count=len(values), ty=ty)
    program = ProgramBuilder().add(reduction(fields)) \
        .add(STG(dst=Address.BufferOffset(int(out)), src=Register(1), ty=ty)).build()
    try:
        backend.execute_program(program, LaunchConfig())
        return decode(ty, bytes(backend.copy_from_buffer(out))[:ty.size_bytes()])[0]
    finally:
        backend.free_buffer(src)
        backend.free_buffer(out)


CASES = [(ty, name) for ty in FORMATS for name in _values(1.0)]


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("ty, name", CASES, ids=[f"{ty.suffix}-{name}" for ty, name in CASES])
def test_float_sum_meets_the_contract_at_the_edges_of_the_range(backend_name, ty, name):
    backend = BACKENDS[backend_name]
    values = [round_float(v, ty) for v in _values(FORMATS[ty][0])[name]]
    ask = getattr(backend, "supports_operation", None)
    if not (ask(ReduceOperation.Sum, ty) if ask else backend.supports("ParallelReduce", ty)):
        with pytest.raises(UnsupportedOperation):
            _sum_on(backend, ty, values)
        return
    _check(ty, values, _sum_on(backend, ty, values))
