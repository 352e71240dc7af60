"""SIMD lane mode across loops and branches that are uniform in the lanes of a step (``simd_control``):
programs with LOOP over a uniform count, counted loops over uniform bounds and uniform branches compile
to SIMD lane mode (asserted) and give the reference's results bit for bit and the scalar wasm path's;
an access that would trap inside the loop, or a budget exceeded there, stops the SIMD function at a step
and the launch traps exactly as the reference does (code, instruction index, lane); divergent loops
keep the scalar path."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from atlas_web import AtlasTrap, ExecutionParams, LaunchConfig, Program
from atlas_web.isa import Type
from atlas_web.reference import CpuBackend
from wasm_backend import WasmBackend
from wasm_backend.lowering import compile_program
from wasm_backend.lowering.simd_function import scalar_lanes_only

from benchmarks.perlane_matmul import program_text as matmul_text

from .test_simd_lanes_coverage import INTS, random_body, check_exact, program_text, uses_simd, values_of

def _matmul(m: int, k: int, n: int, handles) -> Program:
    """One lane per element of C = A @ B (benchmarks/perlane_matmul.py: f32, row gid / n and column gid % n,
    a guard for the spare lanes, LOOP over k with LDG (A: the same in a step), LDG (B: contiguous in a step),
    FMA); n a multiple of four."""
    return Program.from_text(matmul_text(m, k, n, *handles, split="divide"))


def _run_matmul(backend, m, k, n, a, b, params=None):
    handles = [backend.allocate_typed(x) for x in (a, b, np.zeros(m * n, np.float32))]
    program = _matmul(m, k, n, handles)
    trap = None
    try:
        backend.execute_program_with_params(program, params or ExecutionParams(LaunchConfig.linear(m * n, 64)))
    except AtlasTrap as t:
        trap = (t.code, t.instruction_index, t.lane)
    out = np.asarray(backend.copy_typed_from(handles[2], Type.F32))
    for h in handles:
        backend.free_buffer(h)
    return out, trap


def _inputs(m, k, n, seed=0, a_rows=None, b_rows=None):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((a_rows if a_rows is not None else m) * k).astype(np.float32)
    b = rng.standard_normal((b_rows if b_rows is not None else k) * n).astype(np.float32)
    return a, b


@pytest.mark.parametrize("m, k, n", [(1, 1, 4), (5, 3, 8), (7, 17, 12), (3, 0, 4), (16, 33, 64)])
def test_per_lane_matmul_runs_in_simd_and_matches_the_reference_bit_for_bit(m, k, n):
    program = _matmul(m, k, n, (2, 3, 4))
    assert compile_program(program, program.verify(), LaunchConfig.linear(m * n, 64)).simd
    a, b = _inputs(m, max(k, 1), n)
    want, _ = _run_matmul(CpuBackend(), m, k, n, a, b)
    got, trap = _run_matmul(WasmBackend(), m, k, n, a, b)
    assert trap is None
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    with scalar_lanes_only():
        scalar, _ = _run_matmul(WasmBackend(), m, k, n, a, b)
    assert np.array_equal(got.view(np.uint32), scalar.view(np.uint32))


@pytest.mark.parametrize("a_rows, b_rows", [(5, 9), (9, 6), (0, 9)])
def test_an_access_that_traps_inside_the_loop_reports_the_references_trap(a_rows, b_rows):
    """A too short: the lanes of its missing rows trap at their first LDG (a step in the middle stops);
    B too short: every lane traps at the iteration past its rows (the first step stops)."""
    m, k, n = 9, 9, 8
    a, b = _inputs(m, k, n, a_rows=a_rows, b_rows=b_rows)
    _, want = _run_matmul(CpuBackend(), m, k, n, a, b)
    _, got = _run_matmul(WasmBackend(), m, k, n, a, b)
    assert want is not None and got == want


@pytest.mark.parametrize("budget", [3, 4, 5])
def test_a_budget_exceeded_inside_the_loop_traps_like_the_reference(budget):
    m, k, n = 4, 6, 8  # five backward jumps per lane
    a, b = _inputs(m, k, n)
    params = ExecutionParams(LaunchConfig.linear(m * n, 64), budget=budget)
    want, want_trap = _run_matmul(CpuBackend(), m, k, n, a, b, params)
    got, got_trap = _run_matmul(WasmBackend(), m, k, n, a, b, params)
    assert got_trap == want_trap
    if want_trap is None:
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def _loop_body(rng: random.Random, ty: Type, steps: int, kind: str, count: int) -> tuple[list[str], str]:
    """A random body (``test_simd_lanes_coverage``) inside a loop of ``count`` iterations that folds its
    result into r41 (which the body reads too): LOOP, or a counter compared with a bound and a BRA; with
    ``kind`` "branch" also a uniform branch skipping part of some iterations."""
    body, result = random_body(rng, ty, steps)
    t = ty.suffix
    body = [line.replace("r12", "r41") for line in body]  # the body reads the loop-carried value
    fold = "xor" if ty.is_integer() else "add"
    lines = [f"mov_imm.{t} r41, {0 if ty.is_integer() else 0.0}"]
    if kind == "loop":
        lines += [f"mov_imm.u32 r40, {count}", "top:", *body, f"{fold}.{t} r41, r41, {result}", "loop r40, @top"]
    else:
        lines += ["mov_imm.u32 r40, 0", f"mov_imm.u32 r42, {count}", "mov_imm.u32 r43, 1", "top:", *body]
        if kind == "branch":
            lines += ["and.u32 r44, r40, r43", "set.eq.u32 p9, r44, r43", "bra.p9 @skip"]
        lines += [f"{fold}.{t} r41, r41, {result}", "skip:", "add.u32 r40, r40, r43", "set.lt.u32 p10, r40, r42",
                  "bra.p10 @top"]
    return lines, "r41"


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 1 << 30), st.sampled_from(INTS + (Type.F32, Type.F64)), st.integers(5, 40),
       st.integers(1, 6), st.sampled_from(["loop", "counted", "branch"]), st.integers(0, 5))
def test_random_loops_and_uniform_branches_match_the_reference_and_the_scalar_path(seed, ty, lanes, steps, kind,
                                                                                      count):
    rng = random.Random(seed)
    body, result = _loop_body(rng, ty, steps, kind, count)
    inputs = [ty] * 3
    arrays = [values_of(ty, lanes, seed + k) for k in range(3)]
    if ty.is_float():  # keep fma's operands where fma64 rounds exactly once
        arrays = [np.where(np.isfinite(x), np.clip(x, -1e6, 1e6), x).astype(x.dtype) for x in arrays]
    check_exact(program_text(inputs, body, ty, result, None), inputs, arrays, ty, lanes, False)


def test_a_loop_whose_count_varies_between_lanes_keeps_the_scalar_path():
    text = program_text([Type.U32], ["and.u32 r40, r10, r10", "mov_imm.u32 r41, 0", "mov_imm.u32 r43, 1", "top:",
                                     "add.u32 r41, r41, r43", "loop r40, @top"], Type.U32, "r41", None)
    assert not uses_simd(text, [Type.U32], LaunchConfig(grid=(1, 1, 1), block=(16, 1, 1)))


def _divergent_body(rng: random.Random, ty: Type, steps: int, kind: str) -> tuple[list[str], str]:
    """r41 := r10, then a branch on a lane mask (a comparison of loaded values) around short random
    regions of pure code (``test_simd_lanes_coverage``) that write r41: ``skip`` (if-then by a BRA over
    the region) or ``else`` (if-then-else); optionally inside a uniform loop."""
    t = ty.suffix
    then, then_result = random_body(rng, ty, steps)
    other, other_result = random_body(random.Random(rng.random()), ty, steps)
    cond = rng.choice(["lt", "ge", "ne", "gtu"])
    lines = [f"mov.{t} r41, r10", f"set.{cond}.{t} p3, r10, r11"]
    if kind == "skip":
        lines += ["bra.p3 @join", *then, f"mov.{t} r41, {then_result}", "join:"]
    else:
        lines += ["bra.!p3 @other", *then, f"mov.{t} r41, {then_result}", "bra @join", "other:", *other,
                  f"mov.{t} r41, {other_result}", "join:"]
    return lines, "r41"


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 1 << 30), st.sampled_from(INTS + (Type.F32, Type.F64)), st.integers(5, 40),
       st.integers(1, 5), st.sampled_from(["skip", "else"]), st.booleans())
def test_short_divergent_regions_run_masked_like_the_reference_and_the_scalar_path(seed, ty, lanes, steps, kind,
                                                                                     looped):
    rng = random.Random(seed)
    body, result = _divergent_body(rng, ty, steps, kind)
    if looped:  # three iterations, each starting from the last one's r41
        t = ty.suffix
        body = ["mov_imm.u32 r40, 3", "top:", *body, f"mov.{t} r10, r41", "loop r40, @top"]
    inputs = [ty] * 3
    arrays = [values_of(ty, lanes, seed + k) for k in range(3)]
    if ty.is_float():  # keep fma's operands where fma64 rounds exactly once
        arrays = [np.where(np.isfinite(x), np.clip(x, -1e6, 1e6), x).astype(x.dtype) for x in arrays]
    check_exact(program_text(inputs, body, ty, result, None), inputs, arrays, ty, lanes, False)


def test_a_divergent_branch_around_a_load_keeps_the_scalar_path():
    """A load may trap in the lanes that skip it: no masked execution."""
    text = program_text([Type.F32, Type.F32], ["mov.f32 r41, r10", "set.lt.f32 p3, r10, r11", "bra.p3 @join",
                                               "ldg.f32 r41, [r71 + 0]", "join:"], Type.F32, "r41", None)
    assert not uses_simd(text, [Type.F32, Type.F32], LaunchConfig(grid=(1, 1, 1), block=(16, 1, 1)))
