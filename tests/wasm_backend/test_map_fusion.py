"""Adjacent ParallelMap / ParallelMapBinary chains run as one pass on wasm (``coop_fusion``) at optimization
level 1 and above: bit for bit the reference's results and level 0's (the maps one by one), with arrays in
place, distinct, or overlapping (then the maps run one by one), and a later map's trap is its own with the
earlier maps' results written."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import AtlasTrap, ExecutionParams, LaunchConfig, Program
from atlas_web.isa import Type
from atlas_web.reference import CpuBackend
from wasm_backend import WasmBackend
from wasm_backend.lowering import compile_program

ONE = LaunchConfig(grid=(1, 1, 1), block=(1, 1, 1))
#: exp(a) into t, t + b into u, -u into u (in place), |t| into v; {t}, {u}, {v} are the arrays' pointers
CHAIN = """
    mov_imm.u64 r1, {a}
    mov_imm.u64 r2, {b}
    mov_imm.u64 r3, {t}
    mov_imm.u64 r4, {u}
    mov_imm.u64 r5, {v}
    pmap.exp.{ty} [r3 + 0], [r1 + 0], {n}
    pmap2.add.{ty} [r4 + 0], [r3 + 0], [r2 + 0], {n}
    pmap.neg.{ty} [r4 + 0], [r4 + 0], {n}
    pmap.abs.{ty} [r5 + 0], [r3 + 0], {n}
"""


def _run(backend, ty: Type, n: int, layout: str, level: int, short: bool = False):
    """Buffers a, b and one buffer ``w`` holding t, u, v (``layout``: "apart" at 0, n, 2n elements;
    "overlap": u starts one element into t); ``short``: u's buffer too short (a trap at the second map)."""
    rng = np.random.default_rng(n)
    dtype = np.float32 if ty is Type.F32 else np.float64
    a = (rng.standard_normal(n) * 3).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    handles = [backend.allocate_typed(x) for x in (a, b, np.zeros(3 * n + 1, dtype))]
    size = ty.size_bytes()
    w = handles[2] << 32
    starts = {"apart": (0, n, 2 * n), "overlap": (0, 1, 2 * n + 1)}[layout]
    t, u, v = (w + k * size for k in starts)
    if short:
        handles.append(backend.allocate_typed(np.zeros(n - 1, dtype)))
        u = handles[3] << 32
    program = Program.from_text(CHAIN.format(a=handles[0] << 32, b=handles[1] << 32, t=t, u=u, v=v, n=n,
                                             ty=ty.suffix))
    trap = None
    try:
        backend.execute_program_with_params(program, ExecutionParams(ONE, optimize=level))
    except AtlasTrap as error:
        trap = (error.code, error.instruction_index, error.lane)
    out = np.asarray(backend.copy_typed_from(handles[2], ty)).view(np.uint32 if size == 4 else np.uint64).copy()
    for h in handles:
        backend.free_buffer(h)
    return out, trap, program


@pytest.mark.parametrize("ty", [Type.F32, Type.F64])
@pytest.mark.parametrize("n", [1, 7, 64, 1001])
@pytest.mark.parametrize("layout", ["apart", "overlap"])
def test_a_chain_gives_the_references_bits_and_level_zeros(ty, n, layout):
    want, _, program = _run(CpuBackend(), ty, n, layout, 1)
    fused, trap, _ = _run(WasmBackend(), ty, n, layout, 1)
    separate, _, _ = _run(WasmBackend(), ty, n, layout, 0)
    assert trap is None
    assert np.array_equal(fused, separate)
    if ty is Type.F32 or layout == "apart":  # exp's bits: wasm's are the same fused or not; the reference's
        close = np.isclose(fused.view(want.dtype.str.replace("u", "f")), want.view(want.dtype.str.replace("u", "f")),
                           rtol=1e-6, atol=0)
        assert close.all()
    chains = compile_program(program, program.verify(), ONE, fuse=True).fused
    assert chains == ((5, 6, 7, 8),)


def test_a_trap_in_a_later_map_is_its_own_after_the_earlier_maps_wrote():
    _, want_trap, _ = _run(CpuBackend(), Type.F32, 64, "apart", 1, short=True)
    got, got_trap, _ = _run(WasmBackend(), Type.F32, 64, "apart", 1, short=True)
    separate, separate_trap, _ = _run(WasmBackend(), Type.F32, 64, "apart", 0, short=True)
    assert got_trap == want_trap == separate_trap and got_trap[1] == 6
    assert np.array_equal(got, separate) and got[:64].any()  # exp(a) into t written before the second map trapped


def test_level_zero_does_not_fuse():
    program = Program.from_text(CHAIN.format(a=2 << 32, b=3 << 32, t=4 << 32, u=5 << 32, v=6 << 32, n=8, ty="f32"))
    assert compile_program(program, program.verify(), ONE).fused == ()


#: t = op(a) (or a + b), then the reduction of {src} (t itself, or b), stored to out
MAP_REDUCE = """
    mov_imm.u64 r1, {a}
    mov_imm.u64 r2, {b}
    mov_imm.u64 r3, {t}
    mov_imm.u64 r4, {src}
    mov_imm.u64 r5, {out}
    {map}
    preduce.{reduce}.{ty} r9, [r4 + 0], {n}
    stg.{ty} [r5 + 0], r9
"""


def _map_reduce(backend, ty: Type, n: int, map_text: str, reduce: str, from_map: bool, level: int):
    rng = np.random.default_rng(n)
    dtype = {Type.F32: np.float32, Type.F64: np.float64, Type.I32: np.int32}[ty]
    if ty.is_float():
        a, b = (rng.standard_normal(n).astype(dtype) for _ in range(2))
    else:
        a, b = (rng.integers(-1000, 1000, n).astype(dtype) for _ in range(2))
    handles = [backend.allocate_typed(x) for x in (a, b, np.zeros(n, dtype), np.zeros(1, dtype))]
    a_h, b_h, t_h, out_h = (h << 32 for h in handles)
    program = Program.from_text(MAP_REDUCE.format(a=a_h, b=b_h, t=t_h, src=t_h if from_map else b_h, out=out_h, n=n,
                                                  ty=ty.suffix, reduce=reduce,
                                                  map=map_text.format(ty=ty.suffix, n=n)))
    backend.execute_program_with_params(program, ExecutionParams(ONE, optimize=level))
    bits = np.uint64 if ty.size_bytes() == 8 else np.uint32
    out = [np.asarray(backend.copy_typed_from(h, ty)).view(bits).copy() for h in handles[2:]]
    for h in handles:
        backend.free_buffer(h)
    return out, program


UNARY = "pmap.neg.{ty} [r3 + 0], [r1 + 0], {n}"
BINARY = "pmap2.mul.{ty} [r3 + 0], [r1 + 0], [r2 + 0], {n}"


@pytest.mark.parametrize("ty, map_text, reduce", [(Type.F32, UNARY, "sum"), (Type.F64, BINARY, "sum"),
                                                  (Type.F32, BINARY, "max"), (Type.I32, BINARY, "sum"),
                                                  (Type.I32, UNARY, "min")])
@pytest.mark.parametrize("n", [5, 1000, 70000])
@pytest.mark.parametrize("from_map", [True, False])
def test_a_map_absorbed_into_its_reduction_gives_level_zeros_bits(ty, map_text, reduce, n, from_map):
    fused, program = _map_reduce(WasmBackend(), ty, n, map_text, reduce, from_map, 1)
    separate, _ = _map_reduce(WasmBackend(), ty, n, map_text, reduce, from_map, 0)
    assert all(np.array_equal(x, y) for x, y in zip(fused, separate))
    want, _ = _map_reduce(CpuBackend(), ty, n, map_text, reduce, from_map, 1)
    assert np.array_equal(fused[0], want[0])  # the map's output: neg and mul are exact
    if not (ty.is_float() and reduce == "sum"):
        assert np.array_equal(fused[1], want[1])
    assert compile_program(program, program.verify(), ONE, fuse=True).absorbed == ((5, 6),)
