"""The reference's flush mode, ``CpuBackend(subnormals="flushed")`` (docs/semantics.md, Numbers), against
NumPy and Python: the may-flush rows of the opcode table read F32/BF16 subnormal operands and write subnormal
results of every step as zeros of their sign; the other rows and types keep the bits, as the exact reference.

``ftz`` below is the rule written out in Python; the exact values are NumPy's float32 (or math's, rounded
once) arithmetic."""

from __future__ import annotations

import math
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from atlas_web import ExecutionFailed
from atlas_web.isa import (
    ABS, ADD, CEIL, CVT, DIV, EXP, FLOOR, FMA, LOG2, MAD, MIN, MOV_IMM, MUL, OPCODE_TABLE, SEL, SIN, SQRT, STG,
    SUB, Address, Condition, LERP, Predicate, ReduceAdd, ReduceMin, ReduceMul, SETcc, Type,
)
from atlas_web.isa.opcodes import SUBNORMAL_FLUSHED_TYPES
from atlas_web.reference import CpuBackend
from atlas_web.reference.executor import FLUSHING_RULES, RULES

from .executor_helpers import decode, pointer, prog, r, run, typed_bytes

F32, BF16, F16, F64 = Type.F32, Type.BF16, Type.F16, Type.F64
S = 2.0 ** -140            # an f32 subnormal
TINY = 2.0 ** -126         # the smallest normal f32


def ftz(x: float) -> float:
    """What a flushing device reads or writes for the f32 value ``x``: a subnormal becomes a zero of its sign."""
    return math.copysign(0.0, x) if x != 0.0 and abs(x) < TINY else x


def f32(x: float) -> float:
    return float(np.float32(x))


def same(a: float, b: float) -> bool:
    """Equal bits as doubles (so -0.0 differs from 0.0)."""
    return struct.pack("<d", a) == struct.pack("<d", b)


def result(mode: str, build, ty: Type, operands: list[float], out_ty: Type | None = None) -> float:
    """One lane: registers r1, r2 … hold ``operands`` (of ``ty``), ``build()`` the instructions writing r10
    (of ``out_ty``, default ``ty``), stored and read back."""
    out_ty = out_ty or ty
    backend = CpuBackend(subnormals=mode)
    out = backend.allocate_buffer(out_ty.size_bytes())
    program = prog(*build(), MOV_IMM(dst=r(20), value=pointer(out), ty=Type.U64),
                   STG(dst=Address.RegisterIndirect(r(20), 0), src=r(10), ty=out_ty))
    run(backend, program, 1, registers={r(k + 1): (ty, v) for k, v in enumerate(operands)})
    return decode(out_ty, backend.copy_from_buffer(out))[0]


def both(build, ty: Type, operands: list[float], out_ty: Type | None = None) -> tuple[float, float]:
    """(the exact reference's result, the flush mode's)."""
    return tuple(result(mode, build, ty, operands, out_ty) for mode in ("preserved", "flushed"))


def _binary(cls, ty=F32):
    return lambda: [cls(dst=r(10), lhs=r(1), rhs=r(2), ty=ty)]


def _unary(cls, ty=F32):
    return lambda: [cls(dst=r(10), src=r(1), ty=ty)]


def _ternary(cls, names=("a", "b", "c"), ty=F32):
    return lambda: [cls(dst=r(10), **{n: r(k + 1) for k, n in enumerate(names)}, ty=ty)]


#: (label, instructions, type, operands, exact result, flushed result), both written with NumPy / Python
FLUSHING_CASES = [
    ("ADD of two subnormals", _binary(ADD), F32, [S, S], f32(S + S), ftz(ftz(S) + ftz(S))),
    ("ADD to a subnormal sum", _binary(ADD), F32, [1.5 * TINY, -TINY], 0.5 * TINY, 0.0),
    ("SUB to a negative subnormal", _binary(SUB), F32, [TINY, 1.5 * TINY], -0.5 * TINY, -0.0),
    ("MUL of a negative subnormal", _binary(MUL), F32, [-S, 2.0 ** 30], -(2.0 ** -110), -0.0),
    ("MUL to a subnormal", _binary(MUL), F32, [2.0 ** -70, 2.0 ** -70], 2.0 ** -140, 0.0),
    # the product is the intermediate that goes subnormal
    ("MAD's product", _ternary(MAD), F32, [2.0 ** -70, 2.0 ** -70, TINY], f32(f32(2.0 ** -140) + TINY), TINY),
    ("LERP's product", _ternary(LERP, ("a", "b", "t")), F32, [0.0, 2.0 ** -120, 2.0 ** -10], 2.0 ** -130, 0.0),
    ("CEIL of a subnormal", _unary(CEIL), F32, [S], math.ceil(S), 0.0),
    ("FLOOR of a negative subnormal", _unary(FLOOR), F32, [-S], float(math.floor(-S)), -0.0),
    ("EXP to a subnormal", _unary(EXP), F32, [-100.0], f32(math.exp(-100.0)), ftz(f32(math.exp(-100.0)))),
    ("SIN of a subnormal", _unary(SIN), F32, [S], S, 0.0),
    ("BF16 ADD of two subnormals", _binary(ADD, BF16), BF16, [2.0 ** -130, 2.0 ** -130], 2.0 ** -129, 0.0),
    # the f32 product (1 - 2^-12.2) * 2^-126 is subnormal: flushed before its rounding to BF16 (which gives 2^-126),
    # as webgpu multiplies on the float unit and rounds to BF16 in integer code (and as MAD's product)
    ("BF16 MUL to an f32 subnormal that rounds to a normal", _binary(MUL, BF16), BF16,
     [181 / 128 * 2.0 ** -63, 181 / 128 * 2.0 ** -64], TINY, 0.0),
    ("BF16 MAD's product likewise", _ternary(MAD, ty=BF16), BF16,
     [181 / 128 * 2.0 ** -63, 181 / 128 * 2.0 ** -64, 0.0], TINY, 0.0),
    # the chain x * 1e-30 * 1e30 with x = 1e-10: the partial 1e-40 is subnormal
    ("a MUL chain through a subnormal", lambda: [MUL(dst=r(9), lhs=r(1), rhs=r(2), ty=F32),
                                               MUL(dst=r(10), lhs=r(9), rhs=r(3), ty=F32)],
     F32, [1e-10, 1e-30, 1e30], float(np.float32(1e-10) * np.float32(1e-30) * np.float32(1e30)), 0.0),
]

#: (label, instructions, type, operands, result in both modes, result type): rows and types that keep the bits
KEEPING_CASES = [
    ("DIV of a subnormal", _binary(DIV), F32, [S, 2.0 ** -20], 2.0 ** -120, None),
    ("SQRT of a subnormal", _unary(SQRT), F32, [S], 2.0 ** -70, None),
    ("LOG2 of a subnormal", _unary(LOG2), F32, [S], -140.0, None),
    ("FMA rounds once, keeping the product", _ternary(FMA), F32, [2.0 ** -70, 2.0 ** -70, TINY],
     TINY + 2.0 ** -140, None),
    ("ABS of a negative subnormal", _unary(ABS), F32, [-S], S, None),
    ("MIN of a subnormal and +0", _binary(MIN), F32, [S, 0.0], 0.0, None),
    ("MIN of a subnormal and a larger one", _binary(MIN), F32, [S, 2 * S], S, None),
    ("CVT f32 -> f64 of a subnormal", lambda: [CVT(dst=r(10), src=r(1), src_ty=F32, dst_ty=F64)], F32, [S], S, F64),
    ("CVT f32 -> bf16 of a subnormal", lambda: [CVT(dst=r(10), src=r(1), src_ty=F32, dst_ty=BF16)], F32,
     [2.0 ** -130], 2.0 ** -130, BF16),
    ("F16 MUL (f16 subnormals are normal f32)", _binary(MUL, F16), F16, [2.0 ** -20, 2.0 ** -4], 2.0 ** -24, None),
    ("F64 MUL to an f64 subnormal", _binary(MUL, F64), F64, [2.0 ** -600, 2.0 ** -460], 2.0 ** -1060, None),
    ("F64 MUL of a value f32 could not hold", _binary(MUL, F64), F64, [S, 2.0 ** 30], 2.0 ** -110, None),
]

COVERS = [(name, F32) for name in ("ADD", "SUB", "MUL", "MAD", "LERP", "CEIL", "FLOOR", "EXP", "SIN", "DIV", "SQRT",
                                    "LOG2", "FMA", "ABS", "MIN", "SETcc", "ReduceMul", "ReduceAdd", "ReduceMin")] + [
    ("ADD", BF16), ("ReduceMul", BF16), ("MUL", F16), ("MUL", F64), ("CVT", F32), ("CVT", F64), ("CVT", BF16),
    ("SEL", Type.U32), ("MOV_IMM", Type.U32), ("MOV_IMM", Type.U64), ("STG", F32)]


@pytest.mark.parametrize("label, build, ty, operands, exact, flushed", FLUSHING_CASES,
                         ids=[case[0] for case in FLUSHING_CASES])
def test_a_may_flush_row_flushes_its_operands_and_every_step(label, build, ty, operands, exact, flushed):
    got_exact, got_flushed = both(build, ty, operands)
    assert same(got_exact, exact), (label, got_exact, exact)
    assert same(got_flushed, flushed), (label, got_flushed, flushed)
    assert not same(exact, flushed)   # each case tells the modes apart


@pytest.mark.parametrize("label, build, ty, operands, value, out_ty", KEEPING_CASES,
                         ids=[case[0] for case in KEEPING_CASES])
def test_other_rows_and_types_keep_subnormals(label, build, ty, operands, value, out_ty):
    got_exact, got_flushed = both(build, ty, operands, out_ty)
    assert same(got_exact, value) and same(got_flushed, value), (label, got_exact, got_flushed, value)


@pytest.mark.parametrize("cond, lhs, rhs, holds", [(Condition.LT, 0.0, S, True), (Condition.EQ, S, 0.0, False),
                                                   (Condition.GT, -S, -2 * S, True)])
def test_comparisons_see_the_subnormal(cond, lhs, rhs, holds):
    def build():
        return [SETcc(pred=Predicate(1), lhs=r(1), rhs=r(2), cond=cond, ty=F32),
                MOV_IMM(dst=r(3), value=1, ty=Type.U32), MOV_IMM(dst=r(4), value=0, ty=Type.U32),
                SEL(dst=r(10), pred=Predicate(1), true_val=r(3), false_val=r(4), ty=Type.U32)]
    assert both(build, F32, [lhs, rhs], Type.U32) == (int(holds), int(holds))


def _reduced(mode: str, cls, ty: Type, values: list[float]) -> float:
    backend = CpuBackend(subnormals=mode)
    src, out = backend.allocate_buffer(len(values) * ty.size_bytes()), backend.allocate_buffer(ty.size_bytes())
    backend.copy_to_buffer(src, typed_bytes(ty, values))
    program = prog(MOV_IMM(dst=r(1), value=pointer(src), ty=Type.U64),
                   cls(dst=r(10), src_array=Address.RegisterIndirect(r(1), 0), count=len(values), ty=ty),
                   MOV_IMM(dst=r(20), value=pointer(out), ty=Type.U64),
                   STG(dst=Address.RegisterIndirect(r(20), 0), src=r(10), ty=ty))
    run(backend, program, 1)
    return decode(ty, backend.copy_from_buffer(out))[0]


def _fold(step, values: list[float], flushed: bool) -> float:
    """The per-lane fold in index order in float32 (each step flushed when ``flushed``; the first value read)."""
    acc = values[0]
    for v in values[1:]:
        acc = ftz(f32(step(ftz(acc), ftz(v)))) if flushed else f32(step(acc, v))
    return acc


@pytest.mark.parametrize("cls, step, ty, values", [
    (ReduceMul, lambda a, b: a * b, F32, [2.0 ** -70, 2.0 ** -70, 2.0 ** 60]),        # partial 2^-140
    (ReduceMul, lambda a, b: a * b, F32, [-(2.0 ** -70), 2.0 ** -70, 2.0 ** 20]),    # partial -2^-140: -0.0
    (ReduceMul, lambda a, b: a * b, BF16, [-(2.0 ** -63), 2.0 ** -64, 1.5 * 2.0 ** 10]),  # partial -2^-127
    (ReduceAdd, lambda a, b: a + b, F32, [S, S, 1.5 * TINY, -1.5 * TINY]),
])
def test_per_lane_reductions_flush_every_step(cls, step, ty, values):
    exact, flushed = _fold(step, values, False), _fold(step, values, True)
    assert not same(exact, flushed)
    assert same(_reduced("preserved", cls, ty, values), exact)
    assert same(_reduced("flushed", cls, ty, values), flushed)


def test_a_single_value_is_read_not_computed_and_min_keeps_the_bits():
    for mode in ("preserved", "flushed"):
        assert same(_reduced(mode, ReduceMul, F32, [S]), S)
        assert same(_reduced(mode, ReduceMin, F32, [1.0, S, 2 * S]), S)


def test_the_mode_is_a_device_property_and_checked():
    assert CpuBackend().device_info()["subnormals"] == "preserved"
    assert CpuBackend(subnormals="flushed").device_info()["subnormals"] == "flushed"
    with pytest.raises(ExecutionFailed, match="subnormals"):
        CpuBackend(subnormals="ftz")


def test_the_flush_mode_changes_exactly_the_may_flush_rows():
    flushing = {row.name for row in OPCODE_TABLE if row.may_flush_subnormals}
    assert {name for name in RULES if FLUSHING_RULES[name] is not RULES[name]} == flushing
    assert SUBNORMAL_FLUSHED_TYPES == {F32, BF16}


def test_docs_semantics_lists_the_may_flush_rows():
    """docs/semantics.md names the rows of the column (the sentence that starts "The rows that may flush")."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "semantics.md").read_text(encoding="utf-8")
    sentence = re.search(r"The rows that may flush(.*?)\.\s", text, re.S)
    assert sentence, "docs/semantics.md: the sentence listing the rows that may flush is missing"
    listed = set(re.findall(r"`([A-Za-z]+)`", sentence.group(1))) - {"may_flush_subnormals"}
    assert listed == {row.name for row in OPCODE_TABLE if row.may_flush_subnormals}
