"""ParallelMap and ParallelMapBinary: element-wise SIMD loops over ``count`` values.

Each is a v128 loop over whole 16-byte chunks followed by a scalar loop over the tail (the
element operations are in ``coop_ops``; the transcendental operations come from the math-library
seam). The result equals reading every source first and writing the destination after, as the
reference does, also when arrays overlap: a destination that starts inside a source runs the loops
backward (from the end), one that starts before a source forward; when a binary map has sources on
both sides of its destination, the source behind it is first copied to scratch memory from the
host (``env.scratch``).

The loops are a kernel of their own, ``map_kernel_<index>(dst, src_a, src_b, lo, hi)`` (exported; no
globals, no imports), which the cooperative function calls over the whole range after the handle,
bounds and alignment checks. A module compiled for several threads imports ``env.parallel_map``: a
map of at least ``thread_policy.parallel_map_threshold(operation)`` elements whose sources are each the destination
itself or disjoint from it calls it instead, and the host runs the kernel over chunks on its
threads, each thread taking the next chunk when done (chunk starts are multiples of the elements per
16-byte vector, so results are bit-identical to one call).
Overlapping arrays always take the single call. No map operation traps once its operands passed
the checks, so a chunk cannot trap either.
"""

from __future__ import annotations

from atlas_web.isa.enums import BinaryMapOperation, MapOperation
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES, ELEMENT_FUNCTIONS
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from ..thread_policy import parallel_map_threshold
from .coop_context import COOP_OK, CoopContext
from .coop_ops import SCALAR_OPS, SHAPES, VECTOR_OPS, decode_halves, encode_halves, load_scalar, store_scalar
from .math_seam import math_function_for
from .rules import cooperative_rule
from .typemap import type_info

__all__ = ["MAP_OPERATIONS", "BINARY_OPERATIONS", "map_operation_supported", "build_map_kernel", "KernelContext",
           "map_kernel_name", "parallel_map_wanted", "map_kernel_elements_per_chunk", "operation_emitters",
           "chunk_writer", "element_writer", "MAP_ARRAYS"]

I32, V128 = ValType.I32, ValType.V128

#: ParallelMap operations computed by ``coop_ops`` -> its name of their lane function (the others need the
#: math library)
MAP_OPERATIONS, BINARY_OPERATIONS = (
    {op: ELEMENT_FUNCTIONS[op].lower() for op in enum if ELEMENT_FUNCTIONS[op].lower() in SCALAR_OPS}
    for enum in (MapOperation, BinaryMapOperation))

#: the array operands of each map instruction, destination first
MAP_ARRAYS = {"ParallelMap": ("dst_array", "src_array"), "ParallelMapBinary": ("dst_array", "src_a", "src_b")}


def map_kernel_name(index: int) -> str:
    """The export name of the element-wise kernel of the map at instruction ``index``."""
    return f"map_kernel_{index}"


def map_kernel_elements_per_chunk(ty: Type) -> int:
    """Elements of ``ty`` per 16-byte vector chunk: chunk boundaries of a parallel map are multiples of it."""
    return SHAPES[ty].per_chunk


def parallel_map_wanted(m, count: int, operation: object) -> bool:
    """Whether a map of ``operation`` over ``count`` elements in module ``m`` may go to ``env.parallel_map``."""
    return "parallel_map" in m.imports and count >= parallel_map_threshold(operation)


def map_operation_supported(operation: object, ty: Type) -> bool:
    """Whether ParallelMap/ParallelMapBinary ``operation`` compiles for ``ty`` now."""
    if operation in MAP_OPERATIONS or operation in BINARY_OPERATIONS:
        return ty in COOPERATIVE_OPERATION_TYPES[operation]
    return ty in COOPERATIVE_OPERATION_TYPES.get(operation, ()) and math_function_for(operation, ty) is not None


def operation_emitters(operation: object, ty: Type, m, fb):
    """(vector emitter, scalar emitter) of ``operation`` on ``ty`` (see coop_ops for the shapes);
    ``m`` is the ModuleContext the math-library emitters write into, ``fb`` the function (math functions
    that can be written inline are, sparing a call per chunk)."""
    name = MAP_OPERATIONS.get(operation) or BINARY_OPERATIONS.get(operation)
    if name is not None:
        return VECTOR_OPS[name], SCALAR_OPS[name]
    function = math_function_for(operation, ty)
    compute = Type.F64 if ty is Type.F64 else Type.F32

    def vector(e, shape, args):
        if function.inline is not None and function.inline(m, fb, compute, list(args)):
            return
        for a in args:
            e.get(a)
        function.vector(m, e, compute)

    def scalar(e, ty_, args, temp):
        for a in args:
            e.get(a)
        function.scalar(m, e, compute)

    return vector, scalar


class KernelContext:
    """The function of one element-wise kernel being written: ``m`` (ModuleContext), ``fb``, ``e``."""

    def __init__(self, m, fb, e) -> None:
        self.m, self.fb, self.e = m, fb, e

    def local(self, valtype: ValType, name: str | None = None) -> int:
        return self.fb.add_local(valtype, name)


def build_map_kernel(m, name: str, ty: Type, arity: int, operation: object) -> int:
    """Define and export ``name(dst, src_a, src_b, lo, hi)``: dst[i] = op(src_a[i] (, src_b[i])) for
    ``lo <= i < hi`` (byte addresses of element 0, element indices; ``src_b`` unused by unary maps).

    The kernel uses no globals and calls no imports, so worker instances may run it on chunks. With
    ``lo`` a multiple of the elements per 16-byte chunk, every element goes through the same (vector or
    scalar) code as in one call over the whole range, so chunked results are bit-identical. The loop
    order is overlap-safe within the range (backward when the destination starts inside a source);
    a binary map with sources on both sides of its destination must have one copied away first.
    Returns the function index.
    """
    fb, e = m.define(name, (I32,) * 5, (), export=True)
    kc = KernelContext(m, fb, e)
    size = ty.size_bytes()
    dst, lo, hi = 0, 3, 4
    sources = [1, 2][:arity]
    start = kc.local(I32)
    e.get(lo).i32(size).op("i32.mul").set(start)
    for pointer in (dst, *sources):
        e.get(pointer).get(start).op("i32.add").set(pointer)
    total = kc.local(I32)
    e.get(hi).get(lo).op("i32.sub").i32(size).op("i32.mul").set(total)
    vector, scalar = operation_emitters(operation, ty, m, fb)
    _elementwise_loop(kc, ty, total, dst, sources, vector, scalar)
    return fb.index


def _elementwise_loop(kc: KernelContext, ty: Type, total: int, dst: int, sources: list[int], vector, scalar
                      ) -> None:
    """Write dst[i] = op(sources[k][i]) over ``total`` bytes (addresses and total in i32 locals); backward
    when the destination starts inside a source, else forward."""
    e = kc.e
    shape = SHAPES[ty]
    size = ty.size_bytes()
    chunk_bytes = kc.local(I32)
    e.get(total).i32(-16).op("i32.and").set(chunk_bytes)  # whole 16-byte chunks (per_chunk * size == 16)
    i = kc.local(I32)
    backward = kc.local(I32)
    e.i32(0).set(backward)
    for src in sources:
        e.get(backward).get(src).get(dst).op("i32.lt_u").get(dst).get(src).get(total).op("i32.add").op("i32.lt_u")
        e.op("i32.and").op("i32.or").set(backward)
    chunk = chunk_writer(kc, shape, dst, sources, vector)
    element = element_writer(kc, ty, dst, sources, scalar)
    e.get(backward)
    with e.if_():
        e.get(total).set(i)
        with e.block("tail_done"):
            with e.loop("tail"):
                e.get(i).get(chunk_bytes).op("i32.le_u").br_if("tail_done")
                e.get(i).i32(size).op("i32.sub").set(i)
                element(i)
                e.br("tail")
        with e.block("done"):
            with e.loop("next"):
                e.get(i).op("i32.eqz").br_if("done")
                e.get(i).i32(16).op("i32.sub").set(i)
                chunk(i)
                e.br("next")
        e.else_()
        e.i32(0).set(i)
        e.while_below(i, chunk_bytes, 16, lambda: chunk(i))
        e.while_below(i, total, size, lambda: element(i), labels=("tail_done", "tail"))


def _copy_sources_behind(cc: CoopContext, total: int, dst: int, sources: list[int]) -> None:
    """When a binary map has sources on both sides of its destination, copy the ones behind it (the
    destination starts inside them) to scratch memory from the host (``env.scratch``)."""
    e = cc.e
    behind, ahead = cc.local(I32), cc.local(I32)
    e.i32(0).set(behind)
    e.i32(0).set(ahead)
    for src in sources:
        e.get(behind).get(src).get(dst).op("i32.lt_u").get(dst).get(src).i32(total).op("i32.add").op("i32.lt_u")
        e.op("i32.and").op("i32.or").set(behind)
        e.get(ahead).get(dst).get(src).op("i32.lt_u").get(src).get(dst).i32(total).op("i32.add").op("i32.lt_u")
        e.op("i32.and").op("i32.or").set(ahead)
    e.get(behind).get(ahead).op("i32.and")
    with e.if_():
        for src in sources:
            e.get(src).get(dst).op("i32.lt_u").get(dst).get(src).i32(total).op("i32.add").op("i32.lt_u")
            e.op("i32.and")
            with e.if_():
                copy = cc.local(I32)
                e.i32(total).call(cc.m.host("scratch")).tee(copy).get(src).i32(total).op("memory.copy", 0, 0)
                e.get(copy).set(src)


def _push_chunkable(cc: CoopContext, total: int, dst: int, sources: list[int]) -> None:
    """Push 1 when every source is the destination itself or disjoint from it (chunks may then run in
    any order), else 0. Differences are taken modulo 2**32, which is exact for ranges inside memory."""
    e = cc.e
    e.i32(1)
    for src in sources:
        e.get(dst).get(src).op("i32.eq")
        e.get(dst).get(src).op("i32.sub").i32(total).op("i32.ge_u")
        e.get(src).get(dst).op("i32.sub").i32(total).op("i32.ge_u").op("i32.and")
        e.op("i32.or").op("i32.and")


def chunk_writer(cc: KernelContext, shape, dst: int, sources: list[int], vector):
    e = cc.e
    loaded = [cc.local(V128) for _ in sources]
    if shape.half is None:
        def chunk(i: int) -> None:
            for src, value in zip(sources, loaded):
                e.get(src).get(i).op("i32.add").op("v128.load", 0).set(value)
            e.get(dst).get(i).op("i32.add")
            vector(e, shape, loaded)
            e.op("v128.store", 0)
        return chunk
    low = [cc.local(V128) for _ in sources]
    high = [cc.local(V128) for _ in sources]
    scratch = (cc.local(V128), cc.local(V128), cc.local(V128))
    out_low, out_high = cc.local(V128), cc.local(V128)

    def chunk(i: int) -> None:
        for k, src in enumerate(sources):
            e.get(src).get(i).op("i32.add").op("v128.load", 0).set(loaded[k])
            decode_halves(e, shape, loaded[k], low[k], high[k], scratch[:2])
        vector(e, shape, low)
        e.set(out_low)
        vector(e, shape, high)
        e.set(out_high)
        e.get(dst).get(i).op("i32.add")
        encode_halves(e, shape, out_low, out_high, scratch)
        e.op("v128.store", 0)
    return chunk


def element_writer(cc: KernelContext, ty: Type, dst: int, sources: list[int], scalar):
    e = cc.e
    valtype = type_info(ty).valtype
    values = [cc.local(valtype) for _ in sources]
    result = cc.local(valtype)

    def element(i: int) -> None:
        for src, value in zip(sources, values):
            e.get(src).get(i).op("i32.add")
            load_scalar(cc.m, e, ty)
            e.set(value)
        scalar(e, ty, values, None)
        e.set(result)
        e.get(dst).get(i).op("i32.add")
        store_scalar(cc.m, e, ty, result)
    return element


def _build_map(cc: CoopContext, binary: bool) -> None:
    instr = cc.instr
    ty, count = instr.ty, instr.count
    m = cc.m
    kernel_name = map_kernel_name(cc.index)
    kernel = build_map_kernel(m, kernel_name, ty, 2 if binary else 1, instr.operation)
    dst = cc.array("dst_array", ty, count)
    sources = [cc.array(name, ty, count) for name in (("src_a", "src_b") if binary else ("src_array",))]
    total = count * ty.size_bytes()
    e = cc.e
    if binary:
        _copy_sources_behind(cc, total, dst, sources)
    operands = [dst, sources[0], sources[-1]]
    if parallel_map_wanted(m, count, instr.operation):
        _push_chunkable(cc, total, dst, sources)
        with e.if_():
            e.i32(cc.index)
            for operand in operands:
                e.get(operand)
            e.i32(count).call(m.host("parallel_map"))
            e.i32(COOP_OK).op("return")
    for operand in operands:
        e.get(operand)
    e.i32(0).i32(count).call(kernel)
    e.i32(COOP_OK)


_MATH_MISSING = "needs a function of the math library (wasm_backend.mathlib), which is not registered"


@cooperative_rule("ParallelMap", operations=map_operation_supported, why=_MATH_MISSING)
def build_parallel_map(cc: CoopContext) -> None:
    _build_map(cc, False)


@cooperative_rule("ParallelMapBinary", operations=map_operation_supported, why=_MATH_MISSING)
def build_parallel_map_binary(cc: CoopContext) -> None:
    _build_map(cc, True)
