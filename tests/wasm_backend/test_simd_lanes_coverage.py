"""SIMD lane mode beyond the first rules: SETcc/SEL with lane masks, the remaining integer operations,
FMA/FMS and the transcendentals. Every program here must compile to SIMD lane mode (asserted) and give
the reference's results (integers and exact float operations bit for bit, transcendentals within the
backend's documented ulp tolerance) and the scalar wasm path's results bit for bit; lane counts leave
tails (lanes not a multiple of four, and guarded spare lanes)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from atlas_web import AtlasTrap, LaunchConfig, Program
from atlas_web.isa import Type
from atlas_web.isa.floats import bits_to_float, float_to_bits
from atlas_web.reference import CpuBackend
from wasm_backend import WasmBackend
from wasm_backend.lowering import compile_program
from wasm_backend.lowering.math_seam import LANE_MATH_OPS, math_function_for
from wasm_backend.lowering.simd_function import scalar_lanes_only
from wasm_backend.tolerances import ulp_tolerance_of

from ..conformance.values import float_values, int_values, ulp_distance

#: host arrays: BF16 values travel as their u16 bit patterns
_DTYPES = {Type.F32: np.float32, Type.F64: np.float64, Type.I32: np.int32, Type.U32: np.uint32,
           Type.I64: np.int64, Type.U64: np.uint64, Type.BF16: np.uint16}
_HOST_TYPE = {Type.BF16: Type.U16}
_BITS = {4: np.uint32, 8: np.uint64}
INTS = (Type.I32, Type.U32, Type.I64, Type.U64)
FLOATS = (Type.F32, Type.F64)
#: plain launches of 37 lanes (a tail of one), and 1003 lanes of LaunchConfig.linear (1024 lanes: 21 spare
#: lanes sent to the end by a guard, SIMD over 1000, a tail of three)
SHAPES = [(37, False), (1003, True)]


def program_text(inputs: list[Type], body: list[str], out_ty: Type, result: str, guard: int | None) -> str:
    """A program: input k loaded into r(10+k) from buffer k, ``body``, ``result`` stored to the last buffer.
    Buffer pointers are ``{b0}``, ``{b1}``, ... (the handles shifted left by 32)."""
    lines = []
    if guard is not None:
        lines += [f"    mov_imm.u32 r90, {guard}", "    set.ge.u32 p15, r255, r90", "    bra.p15 @done"]
    lines += ["    cvt.u64.u32 r1, r255", "    mov_imm.u64 r2, 4", "    mul.u64 r3, r1, r2",
              "    mov_imm.u64 r2, 8", "    mul.u64 r4, r1, r2", "    mov_imm.u64 r2, 2", "    mul.u64 r85, r1, r2"]
    for k, ty in enumerate(inputs + [out_ty]):
        offset = {2: "r85", 4: "r3", 8: "r4"}[ty.size_bytes()]
        lines += [f"    mov_imm.u64 r{60 + k}, {{b{k}}}", f"    or.u64 r{70 + k}, {offset}, r{60 + k}"]
    lines += [f"    ldg.{ty.suffix} r{10 + k}, [r{70 + k} + 0]" for k, ty in enumerate(inputs)]
    lines += [f"    {line}" for line in body]
    lines.append(f"    stg.{out_ty.suffix} [r{70 + len(inputs)} + 0], {result}")
    if guard is not None:
        lines += ["done:", "    exit"]
    return "\n".join(lines)


def _program(text: str, handles) -> Program:
    return Program.from_text(text.format(**{f"b{k}": h << 32 for k, h in enumerate(handles)}))


def _execute(backend, text: str, config, arrays: list[np.ndarray], out_ty: Type) -> np.ndarray:
    handles = [backend.allocate_typed(x) for x in arrays]
    handles.append(backend.allocate_typed(np.zeros(arrays[0].size, dtype=_DTYPES[out_ty])))
    try:
        backend.execute_program(_program(text, handles), config)
        return np.asarray(backend.copy_typed_from(handles[-1], _HOST_TYPE.get(out_ty, out_ty)))
    finally:
        for h in handles:
            backend.free_buffer(h)


def _config(lanes: int, guarded: bool) -> LaunchConfig:
    return LaunchConfig.linear(lanes) if guarded else LaunchConfig(grid=(1, 1, 1), block=(lanes, 1, 1))


def uses_simd(text: str, inputs: list[Type], config) -> bool:
    program = _program(text, range(2, 3 + len(inputs)))
    return compile_program(program, program.verify(), config).simd


def _same_bits(a: np.ndarray, b: np.ndarray, ty: Type) -> bool:
    """Equal bit patterns, any NaN equal to any NaN (payloads are not specified)."""
    if ty is Type.BF16:
        nan = ((a & 0x7FFF) > 0x7F80) & ((b & 0x7FFF) > 0x7F80)
        return bool(np.all(nan | (a == b)))
    if ty.is_float():
        nan = np.isnan(a) & np.isnan(b)
        return bool(np.all(nan | (a.view(_BITS[a.itemsize]) == b.view(_BITS[b.itemsize]))))
    return bool(np.array_equal(a, b))


def run_three(text: str, inputs: list[Type], arrays: list[np.ndarray], out_ty: Type, lanes: int, guarded: bool):
    """(reference, SIMD wasm, scalar wasm) results; asserts the SIMD mode was used and the two wasm
    paths agree bit for bit."""
    config = _config(lanes, guarded)
    assert uses_simd(text, inputs, config), "the program did not compile to SIMD lane mode"
    want = _execute(CpuBackend(), text, config, arrays, out_ty)
    simd = _execute(WasmBackend(), text, config, arrays, out_ty)
    with scalar_lanes_only():
        assert not uses_simd(text, inputs, config)
        scalar = _execute(WasmBackend(), text, config, arrays, out_ty)
    assert _same_bits(simd, scalar, out_ty), _first_difference(simd, scalar)
    return want, simd


def _first_difference(a: np.ndarray, b: np.ndarray) -> str:
    bad = np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))) if a.dtype.kind == "f" else a != b)
    return f"lane {bad[0]}: {a[bad[0]]!r} vs {b[bad[0]]!r}" if bad.size else "bit patterns (signed zeros)"


def check_exact(text, inputs, arrays, out_ty, lanes, guarded) -> None:
    want, got = run_three(text, inputs, arrays, out_ty, lanes, guarded)
    assert _same_bits(got, want, out_ty), _first_difference(got, want)


def values_of(ty: Type, n: int, seed: int) -> np.ndarray:
    if ty is Type.BF16:
        return np.array([float_to_bits(v, ty) for v in float_values(ty, n, seed)], dtype=np.uint16)
    raw = float_values(ty, n, seed) if ty.is_float() else int_values(ty, n, seed)
    return np.array(raw, dtype=_DTYPES[ty])


# ---- SETcc and SEL ----------------------------------------------------------------------------------------

CONDITIONS = ("eq", "ne", "lt", "le", "gt", "ge", "ltu", "leu", "gtu", "geu")


@pytest.mark.parametrize("ty", INTS + FLOATS)
@pytest.mark.parametrize("lanes, guarded", SHAPES)
def test_every_condition_of_every_type_selects_like_the_reference(ty, lanes, guarded):
    """Bit k of the u32 result: condition k of (a, b), through SEL of two uniform integers."""
    body = ["mov_imm.u32 r30, 0"]
    for k, cond in enumerate(CONDITIONS):
        body += [f"set.{cond}.{ty.suffix} p{k}, r10, r11", f"mov_imm.u32 r31, {1 << k}",
                 f"sel.u32 r32, p{k}, r31, r30", "or.u32 r30, r30, r32"]
    a = values_of(ty, lanes, 1)
    b = values_of(ty, lanes, 2)
    b[::3] = a[::3]  # equal operands too
    text = program_text([ty, ty], body, Type.U32, "r30", lanes if guarded else None)
    check_exact(text, [ty, ty], [a, b], Type.U32, lanes, guarded)


SELECTS = {
    # name: (input types, body, output type, result)
    "f32 by f32 compare": ([Type.F32, Type.F32], ["set.lt.f32 p1, r10, r11", "sel.f32 r20, p1, r10, r11"],
                           Type.F32, "r20"),
    "f64 by i32 compare": ([Type.I32, Type.F64, Type.F64], ["set.gt.i32 p1, r10, r10",
                                                            "set.ltu.i32 p2, r10, r10",
                                                            "mov_imm.i32 r5, 7", "set.le.i32 p3, r10, r5",
                                                            "sel.f64 r20, p3, r11, r12"], Type.F64, "r20"),
    "i32 by f64 compare": ([Type.F64, Type.I32, Type.I32], ["set.geu.f64 p1, r10, r10",
                                                            "mov_imm.f64 r5, 0.5", "set.ge.f64 p2, r10, r5",
                                                            "sel.i32 r20, p2, r11, r12"], Type.I32, "r20"),
    "u64 by u64 compare, a uniform operand": ([Type.U64, Type.U64], ["set.gtu.u64 p1, r10, r11",
                                                                     "mov_imm.u64 r5, 12345678901234",
                                                                     "sel.u64 r20, p1, r5, r11"], Type.U64, "r20"),
    "f32 by i64 compare, both uniform": ([Type.I64, Type.F32], ["mov_imm.i64 r5, -3", "set.lt.i64 p1, r10, r5",
                                                                "mov_imm.f32 r6, 1.5", "mov_imm.f32 r7, -0.0",
                                                                "sel.f32 r20, p1, r6, r7"], Type.F32, "r20"),
    "i64 by a lane-id range": ([Type.I64], ["mov_imm.u32 r5, 10", "set.lt.u32 p1, r255, r5",
                                            "cvt.i64.u32 r6, r255", "sel.i64 r20, p1, r10, r6"], Type.I64, "r20"),
    "f64 by a uniform predicate": ([Type.F64], ["mov_imm.f64 r5, 2.0", "mov_imm.f64 r6, 3.0",
                                                "set.lt.f64 p1, r5, r6", "sel.f64 r20, p1, r10, r6"],
                                   Type.F64, "r20"),
    "u32 by a predicate never written": ([Type.U32], ["mov_imm.u32 r5, 9", "sel.u32 r20, p4, r10, r5"],
                                         Type.U32, "r20"),
    "i32 by a constant comparison": ([Type.I32], ["mov_imm.i32 r5, -9", "mov_imm.i32 r6, 4",
                                                  "set.ltu.i32 p1, r5, r6", "sel.i32 r20, p1, r10, r6"],
                                     Type.I32, "r20"),
}


@pytest.mark.parametrize("name", list(SELECTS))
@pytest.mark.parametrize("lanes, guarded", SHAPES)
def test_selects(name, lanes, guarded):
    inputs, body, out_ty, result = SELECTS[name]
    arrays = [values_of(ty, lanes, 10 + k) for k, ty in enumerate(inputs)]
    text = program_text(inputs, body, out_ty, result, lanes if guarded else None)
    check_exact(text, inputs, arrays, out_ty, lanes, guarded)


# ---- integer operations -----------------------------------------------------------------------------------

INT_OPS = {
    "not": ["not.{t} r20, r10"], "neg": ["neg.{t} r20, r10"], "abs": ["abs.{t} r20, r10"],
    "min": ["min.{t} r20, r10, r11"], "max": ["max.{t} r20, r10, r11"],
    "shr by a constant": ["mov_imm.u32 r5, 3", "shr.{t} r20, r10, r5"],
    "shr by a constant past the width": ["mov_imm.u32 r5, 67", "shr.{t} r20, r10, r5"],
    "shr by a uniform amount": ["ldg.u32 r5, [r79 + 0]", "shr.{t} r20, r10, r5"],
    "shl by a uniform amount": ["ldg.u32 r5, [r79 + 0]", "shl.{t} r20, r10, r5"],
    "uniform operands": ["mov_imm.{t} r5, -77", "mov_imm.u32 r6, 5", "shr.{t} r7, r5, r6", "not.{t} r8, r7",
                         "neg.{t} r9, r8", "abs.{t} r12, r9", "min.{t} r13, r12, r5", "max.{t} r14, r13, r7",
                         "ldg.{t} r15, [r79 + 0]", "abs.{t} r16, r15", "min.{t} r17, r16, r15",
                         "shr.{t} r18, r15, r6", "shl.{t} r19, r17, r6", "xor.{t} r21, r18, r19",
                         "add.{t} r22, r21, r14", "add.{t} r20, r22, r10"],
}


def _with_uniform_amount(text: str, amount_handle_slot: int) -> str:
    """Point r79 at the first element of buffer ``amount_handle_slot`` (a uniform load)."""
    return text.replace("    cvt.u64.u32 r1, r255", f"    mov_imm.u64 r79, {{b{amount_handle_slot}}}\n"
                        "    cvt.u64.u32 r1, r255", 1)


@pytest.mark.parametrize("ty", INTS)
@pytest.mark.parametrize("op", list(INT_OPS))
@pytest.mark.parametrize("lanes, guarded", SHAPES)
def test_integer_operations(op, ty, lanes, guarded):
    body = [line.format(t=ty.suffix) for line in INT_OPS[op]]
    a, b = values_of(ty, lanes, 3), values_of(ty, lanes, 4)
    text = program_text([ty, ty], body, ty, "r20", lanes if guarded else None)
    arrays = [a, b]
    if "r79" in text:  # buffer 0 element 0 is the amount (u32 view of the low bits of a[0])
        text = _with_uniform_amount(text, 0)
        arrays[0][0] = 45
    check_exact(text, [ty, ty], arrays, ty, lanes, guarded)


def test_shl_by_a_constant_keeps_lane_ids_affine():
    """shl of the lane id by a constant builds the byte offset (it used to read a missing operand)."""
    lanes = 37
    body = ["mov_imm.u32 r5, 2", "shl.u32 r6, r255, r5", "add.u32 r20, r6, r10"]
    text = program_text([Type.U32], body, Type.U32, "r20", None)
    check_exact(text, [Type.U32], [values_of(Type.U32, lanes, 5)], Type.U32, lanes, False)


# ---- FMA / FMS --------------------------------------------------------------------------------------------

def _fma_inputs(ty: Type, lanes: int, seed: int) -> list[np.ndarray]:
    """Products that nearly cancel the addend (where one rounding differs from two), and edge values."""
    rng = np.random.default_rng(seed)
    dtype = _DTYPES[ty]
    a = (rng.standard_normal(lanes) * 3).astype(dtype)
    b = (rng.standard_normal(lanes) * 3).astype(dtype)
    c = -(a.astype(np.float64) * b.astype(np.float64)).astype(dtype)
    c[1::4] = (rng.standard_normal(lanes)[1::4] * 1e3).astype(dtype)
    edges = values_of(ty, lanes, seed)
    a[2::5], c[3::5] = edges[2::5], edges[3::5]
    # a*b = 64 - tiny, c = 2**k + 2*64 with an ulp of 128: the exact sum lies just below a tie, so one
    # rounding gives c while a*b rounded first gives the tie, rounded to even (c + 128)
    ulp_bits, k = (23, 30) if ty is Type.F32 else (52, 59)
    for lane, sign in ((0, 1.0), (4, -1.0)):
        a[lane], b[lane] = 8 * (1 + 2.0 ** -ulp_bits), sign * 8 * (1 - 2.0 ** -ulp_bits)
        c[lane] = sign * (2.0 ** k + 128)
    return [a, b, c]


@pytest.mark.parametrize("ty", FLOATS)
@pytest.mark.parametrize("op", ["fma", "fms"])
@pytest.mark.parametrize("lanes, guarded", SHAPES)
def test_fused_multiply_add_rounds_once(ty, op, lanes, guarded):
    arrays = _fma_inputs(ty, lanes, 6)
    text = program_text([ty] * 3, [f"{op}.{ty.suffix} r20, r10, r11, r12"], ty, "r20", lanes if guarded else None)
    check_exact(text, [ty] * 3, arrays, ty, lanes, guarded)


# ---- transcendentals --------------------------------------------------------------------------------------

_MATH = sorted(LANE_MATH_OPS)


def _within_tolerance(got: np.ndarray, want: np.ndarray, ty: Type, ulps: float) -> None:
    if ty is Type.BF16:
        got, want = ([bits_to_float(int(v), ty) for v in x] for x in (got, want))
    worst = max(ulp_distance(float(w), float(g), ty) for w, g in zip(want, got))
    assert worst <= ulps, f"{worst} ulp > {ulps}"


@pytest.mark.parametrize("ty", FLOATS + (Type.BF16,))
@pytest.mark.parametrize("op", _MATH)
def test_transcendentals_on_vectors_and_uniforms(op, ty):
    if math_function_for(op, ty) is None:
        pytest.fail(f"the math library registers no {op} for {ty.name}")
    lanes = 1003
    x = values_of(ty, lanes, 7)
    body = [f"{op.lower()}.{ty.suffix} r20, r10", f"mov_imm.{ty.suffix} r5, 0.75",
            f"{op.lower()}.{ty.suffix} r6, r5", f"set.gt.{ty.suffix} p1, r10, r5", f"sel.{ty.suffix} r21, p1, r20, r6"]
    text = program_text([ty], body, ty, "r21", lanes)
    want, got = run_three(text, [ty], [x], ty, lanes, True)
    _within_tolerance(got, want, ty, ulp_tolerance_of(op, ty))


# ---- random programs --------------------------------------------------------------------------------------

_RANDOM_INT_OPS = ("add", "sub", "mul", "and", "or", "xor", "not", "neg", "abs", "min", "max", "shl", "shr",
                   "sel", "mad")
_RANDOM_FLOAT_OPS = ("add", "sub", "mul", "min", "max", "abs", "neg", "sel", "fma", "fms", "floor")


def random_body(rng: random.Random, ty: Type, steps: int) -> tuple[list[str], str]:
    t = ty.suffix
    ops = _RANDOM_INT_OPS if ty.is_integer() else _RANDOM_FLOAT_OPS + ("div", "mad", "sqrt") * (ty is Type.BF16)
    live = ["r10", "r11", "r12"]
    constant = rng.choice([-3, 0, 2, 7])
    body = ["mov_imm.u32 r5, " + str(rng.randrange(0, 130)),
            f"mov_imm.{t} r6, {float(constant) if ty.is_float() else constant}"]
    live.append("r6")
    inputs = tuple(live)
    for k in range(steps):
        op = rng.choice(ops)
        dst = f"r{20 + k}"
        x, y, z = (rng.choice(live) for _ in range(3))
        if op in ("not", "neg", "abs", "floor", "sqrt"):
            body.append(f"{op}.{t} {dst}, {x}")
        elif op in ("shl", "shr"):
            body.append(f"{op}.{t} {dst}, {x}, r5")
        elif op in ("fma", "fms"):  # on inputs only: inside fma64's exponent window, where it rounds once
            x, y, z = (rng.choice(inputs) for _ in range(3))
            body.append(f"{op}.{t} {dst}, {x}, {y}, {z}")
        elif op == "mad":
            body.append(f"{op}.{t} {dst}, {x}, {y}, {z}")
        elif op == "sel":
            cond = rng.choice(CONDITIONS)
            p = rng.randrange(0, 8)
            body += [f"set.{cond}.{t} p{p}, {x}, {y}", f"sel.{t} {dst}, p{p}, {z}, {x}"]
        else:
            body.append(f"{op}.{t} {dst}, {x}, {y}")
        live.append(dst)
    return body, live[-1]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 1 << 30), st.sampled_from(INTS + FLOATS + (Type.BF16,)), st.integers(5, 70), st.integers(1, 10))
def test_random_straight_line_programs_over_the_new_rules(seed, ty, lanes, steps):
    rng = random.Random(seed)
    body, result = random_body(rng, ty, steps)
    inputs = [ty] * 3
    arrays = [values_of(ty, lanes, seed + k) for k in range(3)]
    if ty.is_float() and ty is not Type.BF16:  # keep fma's operands where fma64 rounds exactly once
        arrays = [np.where(np.isfinite(x), np.clip(x, -1e6, 1e6), x).astype(x.dtype) for x in arrays]
    text = program_text(inputs, body, ty, result, None)
    check_exact(text, inputs, arrays, ty, lanes, False)


def test_a_trap_in_the_tail_still_reports_the_lowest_lane():
    """Masks and selects in SIMD, then a lane of the tail reads past its buffer: the trap is the reference's."""
    lanes = 39
    text = program_text([Type.F32], ["mov_imm.f32 r5, 0.0", "set.lt.f32 p1, r10, r5", "sel.f32 r20, p1, r5, r10",
                                    "exp.f32 r21, r20"], Type.F32, "r21", None)
    config = _config(lanes, False)
    assert uses_simd(text, [Type.F32], config)
    outcomes = []
    for backend in (CpuBackend(), WasmBackend()):
        short = backend.allocate_typed(np.ones(lanes - 1, dtype=np.float32))
        out = backend.allocate_typed(np.zeros(lanes, dtype=np.float32))
        with pytest.raises(AtlasTrap) as trap:
            backend.execute_program(_program(text, [short, out]), config)
        outcomes.append((trap.value.code, trap.value.instruction_index, trap.value.lane))
    assert outcomes[0] == outcomes[1] and outcomes[0][2] == lanes - 1


# ---- BF16 -------------------------------------------------------------------------------------------------

BF16_OPS = {
    "add": ["add.bf16 r20, r10, r11"], "sub": ["sub.bf16 r20, r10, r11"], "mul": ["mul.bf16 r20, r10, r11"],
    "div": ["div.bf16 r20, r10, r11"], "sqrt": ["sqrt.bf16 r20, r10"], "mad": ["mad.bf16 r20, r10, r11, r12"],
    "fma": ["fma.bf16 r20, r10, r11, r12"], "fms": ["fms.bf16 r20, r10, r11, r12"],
    "min/max/abs/neg/floor": ["min.bf16 r13, r10, r11", "max.bf16 r14, r13, r12", "abs.bf16 r15, r14",
                              "neg.bf16 r16, r15", "floor.bf16 r20, r16"],
    "compare and select": ["set.ltu.bf16 p1, r10, r11", "sel.bf16 r20, p1, r12, r10"],
    "uniform load and immediate": ["mov_imm.u64 r79, {b0}", "ldg.bf16 r13, [r79 + 0]", "mov_imm.bf16 r14, 1.5",
                                   "mul.bf16 r15, r13, r14", "add.bf16 r20, r15, r11"],
    "copy": ["mov.bf16 r20, r10"],
}


@pytest.mark.parametrize("op", list(BF16_OPS))
@pytest.mark.parametrize("lanes, guarded", SHAPES)
def test_bf16_loads_stores_and_arithmetic_round_like_the_scalar_rules(op, lanes, guarded):
    inputs = [Type.BF16] * 3
    arrays = [values_of(Type.BF16, lanes, 20 + k) for k in range(3)]
    text = program_text(inputs, BF16_OPS[op], Type.BF16, "r20", lanes if guarded else None)
    check_exact(text, inputs, arrays, Type.BF16, lanes, guarded)


def test_f16_stays_scalar():
    """F16 has no SIMD rule (its conversions have three regimes each): the scalar path runs it."""
    text = program_text([Type.F16], ["add.f16 r20, r10, r10"], Type.F16, "r20", None)
    assert not uses_simd(text, [Type.F16], _config(37, False))
