"""Runs of adjacent ParallelMap / ParallelMapBinary as one pass over the elements (``atlas_web.opt.fusion``).

For a chain ``k1 … kn`` (``map_chains``; not for maps that may run on threads) the launch calls, instead of
``coop_k1``, ``fused_k1()``: it checks every map's arrays in order (handle, bounds, alignment, as each
map's own function does), and when all pass and every array a map writes is, to every other array of the
chain, the same array or disjoint from it, runs ``fused_kernel_k1``: one forward loop over 16-byte chunks,
then over the tail's elements, each through every map in order (loads, operation, store: an element
written by a map is read back by the next from the cache). It then sets the ``fused_until`` global to
``kn``: ``fused_k2 … fused_kn`` return at once (``fused_kn`` clearing it). When a check fails or arrays
overlap otherwise, ``fused_k1`` runs ``coop_k1`` and every later map runs its own function: the maps one by
one, with their own traps. The results are the maps' one after another, bit for bit (each element goes
through the same vector or scalar code of the same operations).
"""

from __future__ import annotations

from atlas_web.opt.fusion import map_chains

from ..encoding.types import ValType
from .coop_context import COOP_OK, CoopContext
from .coop_map import MAP_ARRAYS, KernelContext, chunk_writer, element_writer, operation_emitters
from .coop_ops import SHAPES
from .module_context import GLOBALS

__all__ = ["fused_chains", "build_fused"]

I32 = ValType.I32
# the last map of the chain a fused pass ran (its later maps return at once), else -1
GLOBALS.setdefault("fused_until", (I32, -1))


def fused_chains(program, parallel_maps: dict) -> tuple[tuple[int, ...], ...]:
    """The chains of ``program`` to fuse: ``map_chains`` without maps that may run on threads."""
    return tuple(chain for chain in map_chains(program) if not any(index in parallel_maps for index in chain))


def _build_kernel(m, chain: tuple[int, ...], instrs) -> int:
    """``fused_kernel_<k1>(pointers…)``: the maps' arrays (each map's destination, then its sources)."""
    ty, count = instrs[0].ty, instrs[0].count
    pointers = sum(len(MAP_ARRAYS[instr.INFO.name]) for instr in instrs)
    fb, e = m.define(f"fused_kernel_{chain[0]}", (I32,) * pointers, ())
    kc = KernelContext(m, fb, e)
    chunks, elements = [], []
    position = 0
    for instr in instrs:
        arity = len(MAP_ARRAYS[instr.INFO.name]) - 1
        dst, sources = position, list(range(position + 1, position + 1 + arity))
        position += 1 + arity
        vector, scalar = operation_emitters(instr.operation, ty, m, fb)
        chunks.append(chunk_writer(kc, SHAPES[ty], dst, sources, vector))
        elements.append(element_writer(kc, ty, dst, sources, scalar))
    i, chunk_end, total = kc.local(I32), kc.local(I32), kc.local(I32)
    nbytes = count * ty.size_bytes()
    e.i32(nbytes & -16).set(chunk_end).i32(nbytes).set(total).i32(0).set(i)
    e.while_below(i, chunk_end, 16, lambda: [chunk(i) for chunk in chunks])
    e.while_below(i, total, ty.size_bytes(), lambda: [element(i) for element in elements],
                  labels=("tail_done", "tail"))
    return fb.index


def build_fused(m, state, launch, config, chain: tuple[int, ...], coops: dict[int, int]) -> dict[int, int]:
    """The functions the launch calls for the maps of ``chain`` instead of ``coops`` (see the docstring)."""
    program = state.plan.info.program
    instrs = [program.instructions[index] for index in chain]
    ty, count = instrs[0].ty, instrs[0].count
    nbytes = count * ty.size_bytes()
    kernel = _build_kernel(m, chain, instrs)
    until = m.global_index("fused_until")
    fb, e = m.define(f"fused_{chain[0]}", (), (I32,))
    arrays: list[tuple[int, bool]] = []
    with e.block("separate"):
        for index in chain:
            cc = CoopContext(m, state, launch, config, index, function=(fb, e), on_fail=lambda: e.br("separate"))
            for field in MAP_ARRAYS[cc.instr.INFO.name]:
                arrays.append((cc.array(field, ty, count), field == "dst_array"))
        for k, (x, x_written) in enumerate(arrays):
            for y, y_written in arrays[k + 1:]:
                if not (x_written or y_written):
                    continue
                # the same start, or disjoint (differences modulo 2**32: exact for ranges inside memory)
                e.get(x).get(y).op("i32.eq")
                e.get(x).get(y).op("i32.sub").i32(nbytes).op("i32.ge_u")
                e.get(y).get(x).op("i32.sub").i32(nbytes).op("i32.ge_u").op("i32.and").op("i32.or")
                e.op("i32.eqz").br_if("separate")
        for x, _ in arrays:
            e.get(x)
        e.call(kernel).i32(chain[-1]).op("global.set", until).i32(COOP_OK).op("return")
    e.i32(-1).op("global.set", until).call(coops[chain[0]])
    functions = {chain[0]: fb.index}
    for index in chain[1:]:
        fb, e = m.define(f"fused_{index}", (), (I32,))
        e.op("global.get", until).i32(index).op("i32.ge_s")
        with e.if_():
            if index == chain[-1]:
                e.i32(-1).op("global.set", until)
            e.i32(COOP_OK).op("return")
        e.call(coops[index])
        functions[index] = fb.index
    return functions
