"""SIMD lane mode: which programs qualify, results equal to the reference, the lanes left over, and the
scalar fallback when a lane of the SIMD range would trap."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from atlas_web import AtlasTrap, LaunchConfig, Program
from atlas_web.isa import Type
from atlas_web.reference import CpuBackend
from wasm_backend import WasmBackend
from wasm_backend.lowering import compile_program

PROGRAM = """
    cvt.u64.u32 r1, r255
    mov_imm.u64 r2, {size}
    mul.u64 r3, r1, r2
    mov_imm.u64 r4, {a}
    or.u64 r5, r3, r4
    mov_imm.u64 r6, {b}
    or.u64 r7, r3, r6
    ldg.{ty} r10, [r5 + 0]
    ldg.{ty} r11, [r7 + 0]
    {op}.{ty} r12, r10, r11
    stg.{ty} [r7 + 0], r12
"""


def _program(ty: Type, op: str, a: int, b: int) -> Program:
    return Program.from_text(PROGRAM.format(size=ty.size_bytes(), a=a << 32, b=b << 32, ty=ty.suffix, op=op))


def _run(backend, program, config, arrays):
    handles = [backend.allocate_typed(x) for x in arrays]
    trap = None
    try:
        backend.execute_program(program(handles), config)
    except AtlasTrap as t:
        trap = (t.code, t.instruction_index, t.lane)
    out = [backend.copy_typed_from(h, Type.F64 if x.dtype == np.float64 else _TYPE[x.dtype.name]) for h, x in
           zip(handles, arrays)]
    for h in handles:
        backend.free_buffer(h)
    return out, trap


_TYPE = {"float32": Type.F32, "float64": Type.F64, "int32": Type.I32, "uint32": Type.U32, "int64": Type.I64,
         "uint64": Type.U64}


@pytest.mark.parametrize("ty", [Type.F32, Type.F64, Type.I32, Type.U32, Type.I64, Type.U64])
@pytest.mark.parametrize("lanes", [4, 37, 1000])
def test_program_uses_simd_and_matches_reference(ty, lanes):
    op = "mul" if ty.is_integer() else "div"
    program = _program(ty, op, 2, 3)
    config = LaunchConfig.linear(lanes, 64)
    assert compile_program(program, program.verify(), config).simd
    rng = np.random.default_rng(lanes)
    dtype = {Type.F32: np.float32, Type.F64: np.float64, Type.I32: np.int32, Type.U32: np.uint32,
             Type.I64: np.int64, Type.U64: np.uint64}[ty]
    a = (rng.standard_normal(lanes) * 1000).astype(dtype)
    b = (rng.standard_normal(lanes) * 1000).astype(dtype)
    want, _ = _run(CpuBackend(), lambda h: _program(ty, op, h[0], h[1]), config, [a, b])
    got, _ = _run(WasmBackend(), lambda h: _program(ty, op, h[0], h[1]), config, [a, b])
    np.testing.assert_array_equal(got[1], want[1])


def test_a_lane_that_would_trap_falls_back_to_exact_scalar_traps():
    """Buffer b is one element short: the SIMD prologue sees the last lane out of bounds, the scalar
    lane code reports OUT_OF_BOUNDS at the lowest such lane."""
    config = LaunchConfig.linear(64)
    a = np.arange(64, dtype=np.float32)
    b = np.arange(63, dtype=np.float32)
    _, want = _run(CpuBackend(), lambda h: _program(Type.F32, "add", h[0], h[1]), config, [a, b])
    _, got = _run(WasmBackend(), lambda h: _program(Type.F32, "add", h[0], h[1]), config, [a, b])
    assert want is not None and got == want


def test_a_trap_in_the_lanes_after_the_simd_range():
    """37 lanes: the SIMD range is lanes 0-35 (fits), lane 36 traps in the scalar tail."""
    config = LaunchConfig.linear(37)
    a = np.arange(37, dtype=np.int32)
    b = np.arange(36, dtype=np.int32)
    _, want = _run(CpuBackend(), lambda h: _program(Type.I32, "add", h[0], h[1]), config, [a, b])
    _, got = _run(WasmBackend(), lambda h: _program(Type.I32, "add", h[0], h[1]), config, [a, b])
    assert want == got and got[2] == 36


@pytest.mark.parametrize("text", [
    "    cvt.u64.u32 r1, r255\n    ldg.f16 r2, [r1 + 0]",               # F16 has no SIMD rule
    "    mov_imm.u32 r1, 0\n    bar.sync 0",                             # lanes stop
    "    mov_imm.u32 r1, 0\n    div.u32 r2, r1, r1",                     # may trap
    "    mov_imm.u32 r1, 3\n    add.u32 r2, r252, r1",                   # LANE_IDX_X
])
def test_programs_without_simd_rules_use_the_scalar_path(text):
    program = Program.from_text(text)
    assert not compile_program(program, program.verify(), LaunchConfig.linear(64)).simd


_OPS = {
    "f32": ("add", "sub", "mul", "div", "min", "max", "mad"), "f64": ("add", "sub", "mul", "div", "min", "max"),
    "i32": ("add", "sub", "mul", "and", "or", "xor", "mad"), "u64": ("add", "sub", "mul", "and", "xor"),
}
_DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "u64": np.uint64}


@settings(max_examples=25)
@given(st.integers(0, 1 << 30), st.integers(5, 70))
def test_random_straight_line_programs_match_reference(seed, lanes):
    """Random SIMD-eligible programs (loads, typed ops, conversions, stores) on both backends."""
    rng = random.Random(seed)
    suffix = rng.choice(list(_OPS))
    size = np.dtype(_DTYPES[suffix]).itemsize
    lines = ["    cvt.u64.u32 r1, r255", f"    mov_imm.u64 r2, {size}", "    mul.u64 r3, r1, r2",
             "    mov_imm.u64 r4, {a}", "    or.u64 r5, r3, r4", "    mov_imm.u64 r6, {b}", "    or.u64 r7, r3, r6",
             f"    ldg.{suffix} r10, [r5 + 0]", f"    ldg.{suffix} r11, [r7 + 0]"]
    registers = [10, 11]
    for k in range(rng.randint(1, 8)):
        op = rng.choice(_OPS[suffix])
        dst = 20 + k
        srcs = [rng.choice(registers) for _ in range(3 if op == "mad" else 2)]
        lines.append(f"    {op}.{suffix} r{dst}, " + ", ".join(f"r{x}" for x in srcs))
        registers.append(dst)
    lines.append(f"    stg.{suffix} [r7 + 0], r{registers[-1]}")
    text = "\n".join(lines)

    def program(handles):
        return Program.from_text(text.format(a=handles[0] << 32, b=handles[1] << 32))

    config = LaunchConfig(grid=(1, 1, 1), block=(lanes, 1, 1))
    compiled = compile_program(program([2, 3]), program([2, 3]).verify(), config)
    assert compiled.simd
    data = np.random.default_rng(seed)
    dtype = _DTYPES[suffix]
    a = (data.standard_normal(lanes) * 100).astype(dtype)
    b = (data.standard_normal(lanes) * 100).astype(dtype)
    want, want_trap = _run(CpuBackend(), program, config, [a, b])
    got, got_trap = _run(WasmBackend(), program, config, [a, b])
    assert want_trap is None and got_trap is None
    np.testing.assert_array_equal(got[1], want[1])


GUARDED = """
    mov_imm.u32 r20, {n}
    set.{cond}.u32 p0, r255, r20
    bra.{pred} @done
    cvt.u64.u32 r1, r255
    mov_imm.u64 r2, 4
    mul.u64 r3, r1, r2
    mov_imm.u64 r4, {a}
    or.u64 r5, r3, r4
    ldg.f32 r6, [r5 + 0]
    add.f32 r6, r6, r6
    stg.f32 [r5 + 0], r6
done:
    exit
"""


@pytest.mark.parametrize("cond, pred", [("ge", "p0"), ("lt", "!p0")])
@pytest.mark.parametrize("n", [0, 3, 10, 61, 64, 1000])
def test_programs_guarding_their_spare_lanes_run_in_simd(cond, pred, n):
    """LaunchConfig.linear leaves spare lanes; the guard sends them to the end and SIMD covers the rest."""
    config = LaunchConfig.linear(64, 24)  # 72 lanes, 8 spare
    data = np.arange(min(n, 72), dtype=np.float32) + 0.5

    def program(handles):
        return Program.from_text(GUARDED.format(n=n, cond=cond, pred=pred, a=handles[0] << 32))

    compiled = compile_program(program([2]), program([2]).verify(), config)
    assert compiled.simd == (n >= 4)
    if data.size == 0:
        data = np.zeros(1, dtype=np.float32)
    want, want_trap = _run(CpuBackend(), program, config, [data])
    got, got_trap = _run(WasmBackend(), program, config, [data])
    assert got_trap == want_trap
    np.testing.assert_array_equal(got[0], want[0])


PRESET_PROGRAM = """
    mov_imm.u32 r3, {lanes}
    set.ge.u32 p0, r255, r3
    bra.p0 @done
    mov_imm.u32 r10, 4
    mul.u32 r11, r255, r10
    add.u32 r11, r11, r6
    ldg.f32 r12, [r1 + r11]
    mul.f32 r13, r12, r4
    add.f32 r13, r13, r5
    sub.u32 r11, r11, r6
    stg.f32 [r2 + r11], r13
done:
    exit
"""


@pytest.mark.parametrize("lanes", [5, 64, 1001])
def test_preset_registers_are_uniform_values_of_the_simd_mode(lanes):
    """Handles, an offset and float scalars given as launch presets: SIMD mode, the reference's values."""
    from atlas_web import ExecutionParams
    from atlas_web.isa.registers import Register
    program = Program.from_text(PRESET_PROGRAM.format(lanes=lanes))
    presets = {Register(1): Type.U32, Register(2): Type.U32, Register(6): Type.U32, Register(4): Type.F32,
               Register(5): Type.F32}
    config = LaunchConfig.linear(lanes, 64)
    assert compile_program(program, program.verify(preset_types=presets), config).simd
    data = np.linspace(-3, 3, lanes, dtype=np.float32)
    results = []
    for backend in (CpuBackend(), WasmBackend()):
        src = backend.allocate_typed(np.concatenate([np.float32([9, 9]), data]))
        dst = backend.allocate_typed(np.zeros(lanes, np.float32))
        values = {Register(1): src, Register(2): dst, Register(6): 8, Register(4): 1.5, Register(5): -0.25}
        registers = {reg: (presets[reg], value) for reg, value in values.items()}
        backend.execute_program_with_params(program, ExecutionParams(config, registers))
        results.append(backend.copy_typed_from(dst, Type.F32))
        backend.close()
    np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_array_equal(results[0], data * np.float32(1.5) + np.float32(-0.25))
