"""SIMD lane-mode launches on several threads (WasmBackend(threads=N)): ranges of lanes run the exported
``simd_chunk`` when no lane can see another's effects, bit-identical to one thread and equal to the
reference, with lane tails; kernels whose stores overlap other lanes' accesses keep the single call."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from atlas_web import AtlasTrap, LaunchConfig, Program
from atlas_web.errors import TrapCode
from atlas_web.isa import Type
from atlas_web.verify import verify
from wasm_backend.lowering import compile_program
from wasm_backend.lowering.simd_function import LANES_PER_RANGE_STEP, scalar_lanes_only
from wasm_backend.thread_policy import PARALLEL_LANES_THRESHOLD
from tests.wasm_backend.thread_counts import THREAD_COUNTS

#: 67651 blocks of 31 lanes: over the threshold; the SIMD range ends 4 lanes past a whole unrolled step
#: (the last range ends with a single step) and the scalar segment runs the last lane
ODD = LaunchConfig(grid=(67651, 1, 1), block=(31, 1, 1))
LANES = ODD.total_threads
assert LANES >= PARALLEL_LANES_THRESHOLD and LANES % 4 == 1 and (LANES - 1) % LANES_PER_RANGE_STEP == 4
_DTYPES = {Type.F32: np.float32, Type.F64: np.float64, Type.I32: np.int32, Type.U32: np.uint32}


def _pointers(ty: Type, *names_and_handles: tuple[str, int]) -> list[str]:
    lines = ["    cvt.u64.u32 r1, r255", f"    mov_imm.u64 r2, {ty.size_bytes()}", "    mul.u64 r3, r1, r2"]
    for k, (name, handle) in enumerate(names_and_handles):
        lines += [f"    mov_imm.u64 r{40 + k}, {handle << 32}", f"    or.u64 {name}, r3, r{40 + k}"]
    return lines


def _add_program(handles: list[int]) -> Program:
    """c[i] = a[i] + b[i] (f32)."""
    a, b, c = handles
    return Program.from_text("\n".join(_pointers(Type.F32, ("r5", a), ("r6", b), ("r7", c)) + [
        "    ldg.f32 r10, [r5 + 0]", "    ldg.f32 r11, [r6 + 0]", "    add.f32 r12, r10, r11",
        "    stg.f32 [r7 + 0], r12", "    exit"]))


def _in_place_exp_program(handles: list[int]) -> Program:
    """a[i] = exp(a[i]) * 0.5 (f32, in place: a lane meets only its own element; the math library in the
    worker instances)."""
    (a,) = handles
    return Program.from_text("\n".join(_pointers(Type.F32, ("r5", a)) + [
        "    ldg.f32 r10, [r5 + 0]", "    exp.f32 r11, r10", "    mov_imm.f32 r12, 0.5", "    mul.f32 r13, r11, r12",
        "    stg.f32 [r5 + 0], r13", "    exit"]))


def _two_outputs_f64_program(handles: list[int]) -> Program:
    """b[i] = a[i] * a[i], c[i] = sqrt(|a[i]|) (f64, two stores to disjoint buffers)."""
    a, b, c = handles
    return Program.from_text("\n".join(_pointers(Type.F64, ("r5", a), ("r6", b), ("r7", c)) + [
        "    ldg.f64 r10, [r5 + 0]", "    mul.f64 r11, r10, r10", "    stg.f64 [r6 + 0], r11",
        "    abs.f64 r12, r10", "    sqrt.f64 r13, r12", "    stg.f64 [r7 + 0], r13", "    exit"]))


def _integer_program(handles: list[int]) -> Program:
    """b[i] = (a[i] << 3) ^ gid (u32)."""
    a, b = handles
    return Program.from_text("\n".join(_pointers(Type.U32, ("r5", a), ("r6", b)) + [
        "    ldg.u32 r10, [r5 + 0]", "    mov_imm.u32 r14, 3", "    shl.u32 r11, r10, r14",
        "    xor.u32 r12, r11, r255", "    stg.u32 [r6 + 0], r12", "    exit"]))


def _values(ty: Type, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if ty.is_float():
        return rng.uniform(-8.0, 8.0, count).astype(_DTYPES[ty])
    return rng.integers(0, 1 << 32, count, dtype=np.uint64).astype(_DTYPES[ty])


def _run(backend, program_of, arrays: list[tuple[Type, np.ndarray]], config=ODD) -> tuple[list[np.ndarray], int]:
    """The arrays after the launch and the parallel dispatches it made (0 for backends without the counter)."""
    handles = [backend.allocate_typed(values, ty) for ty, values in arrays]
    before = backend.device_info().get("parallel_dispatches", 0)
    try:
        backend.execute_program(program_of(handles), config)
        dispatched = backend.device_info().get("parallel_dispatches", 0) - before
        return [np.asarray(backend.copy_typed_from(h, ty)) for h, (ty, _) in zip(handles, arrays)], dispatched
    finally:
        for handle in handles:
            backend.free_buffer(handle)


def _bits(array: np.ndarray) -> np.ndarray:
    return array.view(f"u{array.dtype.itemsize}")


def _same_on_every_thread_count(backends, program_of, arrays, parallel: bool, config=ODD, dealt: bool = False
                               ) -> list[np.ndarray]:
    """The arrays after the launch, the same bits for every thread count; dispatched exactly when ``parallel``
    (and, ``dealt``, every worker ran a range of lanes at least)."""
    results = {}
    for threads, backend in backends.items():
        ranges = backend.device_info()["parallel_worker_chunks"]
        results[threads], dispatched = _run(backend, program_of, arrays, config)
        assert dispatched == (parallel and threads > 1), f"threads={threads}: {dispatched} dispatches"
        if dealt and parallel:
            assert backend.device_info()["parallel_worker_chunks"] >= ranges + threads - 1
    for threads in THREAD_COUNTS[1:]:
        for got, want in zip(results[threads], results[1]):
            assert np.array_equal(_bits(got), _bits(want)), f"threads={threads} differs from threads=1"
    return results[1]


def _matches_reference(reference, program_of, arrays, got: list[np.ndarray], ulps: int = 0, config=ODD) -> None:
    want, _ = _run(reference, program_of, arrays, config)
    for g, w in zip(got, want):
        if ulps == 0:
            assert np.array_equal(_bits(g), _bits(w))
        else:
            spacing = np.spacing(np.abs(w)).astype(np.float64)
            assert np.all(np.abs(g.astype(np.float64) - w.astype(np.float64)) <= ulps * spacing)


F32, F64, U32 = Type.F32, Type.F64, Type.U32
CASES = {
    "add-f32": (_add_program, [(F32, 0), (F32, 1), (F32, None)], 0),
    "in-place-exp-f32": (_in_place_exp_program, [(F32, 2)], 4),
    "two-outputs-f64": (_two_outputs_f64_program, [(F64, 3), (F64, None), (F64, None)], 0),
    "shift-xor-u32": (_integer_program, [(U32, 4), (U32, None)], 0),
}


def _arrays(spec, count: int = LANES) -> list[tuple[Type, np.ndarray]]:
    return [(ty, np.zeros(count, _DTYPES[ty]) if seed is None else _values(ty, count, seed)) for ty, seed in spec]


@pytest.mark.parametrize("name", list(CASES))
def test_lanes_run_on_threads_bit_identical_to_one_thread_and_match_the_reference(backends, reference, dealt, name):
    program_of, spec, ulps = CASES[name]
    arrays = _arrays(spec)
    got = _same_on_every_thread_count(backends, program_of, arrays, parallel=True, dealt=True)
    _matches_reference(reference, program_of, arrays, got, ulps)


def test_a_guarded_launch_splits_the_guarded_lanes(backends, reference):
    """``if gid >= n: exit`` with n not a multiple of 4: the SIMD function covers the lanes below n (less a
    lane tail the scalar segment runs), the spare lanes of the last block do nothing."""
    n = PARALLEL_LANES_THRESHOLD + 13

    def program_of(handles):
        a, b, c = handles
        return Program.from_text("\n".join([f"    mov_imm.u32 r90, {n}", "    set.ge.u32 p15, r255, r90",
                                            "    bra.p15 @done"] + _pointers(F32, ("r5", a), ("r6", b), ("r7", c)) + [
            "    ldg.f32 r10, [r5 + 0]", "    ldg.f32 r11, [r6 + 0]", "    max.f32 r12, r10, r11",
            "    stg.f32 [r7 + 0], r12", "done:", "    exit"]))

    config = LaunchConfig.linear(n, 64)
    arrays = _arrays([(F32, 5), (F32, 6), (F32, None)], config.total_threads)
    got = _same_on_every_thread_count(backends, program_of, arrays, parallel=True, config=config)
    _matches_reference(reference, program_of, arrays, got, config=config)
    assert np.all(got[2][n:] == 0)


def _shifted_program(handles: list[int]) -> Program:
    """a[i] = a[i + 1] + 1: every lane's store hits the element the lane before read (one buffer)."""
    (a,) = handles
    return Program.from_text("\n".join(_pointers(F32, ("r5", a)) + [
        "    ldg.f32 r10, [r5 + 4]", "    mov_imm.f32 r11, 1.0", "    add.f32 r12, r10, r11",
        "    stg.f32 [r5 + 0], r12", "    exit"]))


def _uniform_load_program(handles: list[int]) -> Program:
    """a[i] = a[i] * a[0]: the load of a[0] (read once, before any store) lies in the stored range."""
    (a,) = handles
    return Program.from_text("\n".join(_pointers(F32, ("r5", a)) + [
        f"    mov_imm.u64 r20, {a << 32}", "    ldg.f32 r9, [r20 + 0]", "    ldg.f32 r10, [r5 + 0]",
        "    mul.f32 r12, r10, r9", "    stg.f32 [r5 + 0], r12", "    exit"]))


def _two_stores_program(handles: list[int]) -> Program:
    """a[i] = 1 and a[i + 1] = 2 (a lane's second store is the next lane's first)."""
    (a,) = handles
    return Program.from_text("\n".join(_pointers(F32, ("r5", a)) + [
        "    mov_imm.f32 r10, 1.0", "    mov_imm.f32 r11, 2.0", "    stg.f32 [r5 + 0], r10",
        "    stg.f32 [r5 + 4], r11", "    exit"]))


#: a launch without a lane tail (the scalar segment's tail lanes would read a[0] after lane 0 stored it)
EVEN = LaunchConfig.linear(PARALLEL_LANES_THRESHOLD + 64, 64)
#: name -> (program, launch). Each is a data race between lanes of one stage, whose values the contract
#: leaves unspecified (docs/semantics.md, "Data races"); the run-time check keeps it on the single call, so
#: the backend gives the same bits on every thread count
SERIAL = {"shifted-overlap": (_shifted_program, ODD),
          "uniform-load-in-stored-range": (_uniform_load_program, EVEN),
          "overlapping-stores": (_two_stores_program, ODD)}


@pytest.mark.parametrize("name", list(SERIAL))
def test_racy_kernels_keep_the_single_call(backends, name):
    program_of, config = SERIAL[name]
    arrays = [(F32, _values(F32, config.total_threads + 1, 7))]
    _same_on_every_thread_count(backends, program_of, arrays, parallel=False, config=config)
    compiled = compile_program(program_of([2]), verify(program_of([2])), config, shared_memory=True, parallel=True)
    assert compiled.simd and compiled.parallel_lanes  # it is the run-time check that keeps the single call


def test_a_launch_whose_lanes_would_trap_falls_back_to_the_scalar_lanes_and_traps(backends):
    """The output five elements short (lanes the SIMD range covers): the prologue's check fails, nothing is
    dispatched, the scalar lanes run and the first lane past the output traps out of bounds."""
    backend = backends[2]
    short = LANES - 5
    a, out = backend.allocate_typed(_values(F32, LANES, 8)), backend.allocate_typed(short, F32)
    before = backend.device_info()["parallel_dispatches"]
    with pytest.raises(AtlasTrap) as trapped:
        backend.execute_program(Program.from_text("\n".join(
            _pointers(F32, ("r5", a), ("r6", out)) + ["    ldg.f32 r10, [r5 + 0]", "    stg.f32 [r6 + 0], r10",
                                                       "    exit"])), ODD)
    assert trapped.value.code is TrapCode.OUT_OF_BOUNDS and trapped.value.lane == short
    assert backend.device_info()["parallel_dispatches"] == before
    assert np.array_equal(np.asarray(backend.copy_typed_from(out, F32)), np.asarray(
        backend.copy_typed_from(a, F32))[:short])
    backend.free_buffer(a)
    backend.free_buffer(out)


def test_only_large_simd_launches_of_parallel_modules_import_parallel_lanes():
    program = _add_program([2, 3, 4])
    info = verify(program)
    big = compile_program(program, info, ODD, shared_memory=True, parallel=True)
    assert big.simd and big.parallel_lanes and "parallel_lanes" in big.host_imports
    assert not compile_program(program, info, ODD).parallel_lanes
    small = compile_program(program, info, LaunchConfig.linear(PARALLEL_LANES_THRESHOLD - 64, 64), shared_memory=True,
                            parallel=True)
    assert small.simd and not small.parallel_lanes and "parallel_lanes" not in small.host_imports
    with scalar_lanes_only():
        assert not compile_program(program, info, ODD, shared_memory=True, parallel=True).parallel_lanes


def test_device_info_reports_the_lanes_threshold(backends):
    assert backends[2].device_info()["parallel_lanes_threshold"] == PARALLEL_LANES_THRESHOLD


def _fma_f64_program(handles: list[int]) -> Program:
    """d[i] = fma(a[i], b[i], c[i]) (f64; each lane calls the fma64 helper in SIMD lane mode)."""
    a, b, c, d = handles
    return Program.from_text("\n".join(_pointers(Type.F64, ("r5", a), ("r6", b), ("r7", c), ("r8", d)) + [
        "    ldg.f64 r10, [r5 + 0]", "    ldg.f64 r11, [r6 + 0]", "    ldg.f64 r12, [r7 + 0]",
        "    fma.f64 r13, r10, r11, r12", "    stg.f64 [r8 + 0], r13", "    exit"]))


def test_fma_f64_at_the_exponent_extremes_on_threads_rounds_once(backends):
    """Issue 16: on threads in SIMD lane mode FMA F64 was 3-13 ulp off (and once inf) at extreme exponents."""
    from atlas_web.reference.numeric_fma import fma_exact_scalar
    from tests.wasm_backend.test_runtime_helpers import (FMA64_EDGES, FMA64_SPECIALS, extreme_triples,
                                                         fraction_fma)
    triples = [t for t in [*FMA64_EDGES, *extreme_triples(1021, 17)] if all(map(math.isfinite, t))]
    wanted = [fraction_fma(*t) for t in triples]
    specials = list(itertools.product(FMA64_SPECIALS, repeat=3))  # inf, NaN, signed zeros on threads too
    triples, wanted = triples + specials, wanted + [fma_exact_scalar(*t) for t in specials]
    columns = [np.resize(np.array(column, dtype=np.float64), LANES) for column in zip(*triples)]
    want = np.resize(np.array(wanted, dtype=np.float64), LANES)
    arrays = [(F64, column) for column in columns] + [(F64, np.zeros(LANES))]
    got = _same_on_every_thread_count(backends, _fma_f64_program, arrays, parallel=True)[3]
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan) and np.array_equal(_bits(got[~nan]), _bits(want[~nan]))
