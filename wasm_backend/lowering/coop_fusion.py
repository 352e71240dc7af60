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

from atlas_web.opt.fusion import map_chains, map_reductions

from ..encoding.types import ValType
from .coop_context import COOP_OK, CoopContext
from .coop_map import MAP_ARRAYS, KernelContext, chunk_writer, element_writer, map_kernel_name, operation_emitters
from .coop_reduce import build_reduce, reduce_chunked
from .coop_ops import SHAPES
from .module_context import GLOBALS

__all__ = ["fused_chains", "build_fused", "absorbed_maps", "build_absorbed"]

I32 = ValType.I32
# the last map of the chain a fused pass ran (its later maps return at once), else -1
GLOBALS.setdefault("fused_until", (I32, -1))
#: a deferred map's array addresses (destination, sources), for the reduction that absorbs it
_DEFERRED = ("fused_dst", "fused_src_a", "fused_src_b")
for _name in _DEFERRED:
    GLOBALS.setdefault(_name, (I32, 0))


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


def absorbed_maps(program, parallel_maps: dict, parallel_reduces: dict) -> tuple[tuple[int, int], ...]:
    """The (map, reduction) pairs of ``program`` to absorb (``map_reductions``; no threads, chunked)."""
    return tuple((m_index, r_index) for m_index, r_index in map_reductions(program)
                 if m_index not in parallel_maps and r_index not in parallel_reduces
                 and reduce_chunked(program.instructions[r_index].operation, program.instructions[r_index].ty))


def _map_arrays(m, state, launch, config, index: int, function, on_fail=None) -> list[int]:
    cc = CoopContext(m, state, launch, config, index, function=function, on_fail=on_fail)
    return [cc.array(field, cc.instr.ty, cc.instr.count) for field in MAP_ARRAYS[cc.instr.INFO.name]]


def build_absorbed(m, state, launch, config, pair: tuple[int, int], coops: dict[int, int]) -> dict[int, int]:
    """The functions the launch calls for the map and the reduction of ``pair`` (see the docstring)."""
    map_index, reduce_index = pair
    until = m.global_index("fused_until")
    fb, e = m.define(f"fused_{map_index}", (), (I32,))
    with e.block("separate"):
        arrays = _map_arrays(m, state, launch, config, map_index, (fb, e), lambda: e.br("separate"))
        cc = CoopContext(m, state, launch, config, reduce_index, function=(fb, e), on_fail=lambda: e.br("separate"))
        source = cc.array("src_array", cc.instr.ty, cc.instr.count)
        nbytes = cc.instr.count * cc.instr.ty.size_bytes()
        dst = arrays[0]
        e.get(source).get(dst).op("i32.ne").br_if("separate")
        for src in arrays[1:]:  # the map's chunks in order give its bits: sources the destination or apart
            e.get(dst).get(src).op("i32.eq")
            e.get(dst).get(src).op("i32.sub").i32(nbytes).op("i32.ge_u")
            e.get(src).get(dst).op("i32.sub").i32(nbytes).op("i32.ge_u").op("i32.and").op("i32.or")
            e.op("i32.eqz").br_if("separate")
        for name, address in zip(_DEFERRED, (*arrays, arrays[-1])):
            e.get(address).op("global.set", m.global_index(name))
        e.i32(reduce_index).op("global.set", until).i32(COOP_OK).op("return")
    e.i32(-1).op("global.set", until).call(coops[map_index])
    functions = {map_index: fb.index}
    fb, e = m.define(f"fused_{reduce_index}", (), (I32,))
    e.op("global.get", until).i32(reduce_index).op("i32.ne")
    with e.if_():
        e.call(coops[reduce_index]).op("return")
    e.i32(-1).op("global.set", until)
    kernel = m.functions[map_kernel_name(map_index)]

    def run_map(lo: int, hi: int) -> None:
        for name in _DEFERRED:
            e.op("global.get", m.global_index(name))
        e.get(lo).get(hi).call(kernel)

    build_reduce(CoopContext(m, state, launch, config, reduce_index, function=(fb, e)), run_map)
    functions[reduce_index] = fb.index
    return functions
