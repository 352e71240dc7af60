"""ParallelMap and ParallelMapBinary: element-wise SIMD loops over ``count`` values.

Each is a v128 loop over whole 16-byte chunks followed by a scalar loop over the tail (the
element operations are in ``coop_ops``; the transcendental operations come from the math-library
seam). The result equals reading every source first and writing the destination after, as the
reference does, also when arrays overlap: a destination that starts inside a source runs the loops
backward (from the end), one that starts before a source forward; when a binary map has sources on
both sides of its destination, the source behind it is first copied to scratch memory from the
host (``env.scratch``).
"""

from __future__ import annotations

from atlas_web.isa.enums import BinaryMapOperation, MapOperation
from atlas_web.isa.opcodes import COOPERATIVE_OPERATION_TYPES
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .coop_context import COOP_OK, CoopContext
from .coop_ops import SCALAR_OPS, SHAPES, VECTOR_OPS, decode_halves, encode_halves, load_scalar, store_scalar
from .math_seam import math_function_for
from .rules import cooperative_rule, support_operation
from .typemap import type_info

__all__ = ["MAP_OPERATIONS", "BINARY_OPERATIONS", "map_operation_supported", "elementwise_loop"]

I32, V128 = ValType.I32, ValType.V128

#: ParallelMap operations computed by ``coop_ops`` (the others need the math library)
MAP_OPERATIONS = {MapOperation.Abs: "abs", MapOperation.Neg: "neg", MapOperation.Sqrt: "sqrt",
                  MapOperation.Relu: "relu"}
#: ParallelMapBinary operations computed by ``coop_ops``
BINARY_OPERATIONS = {BinaryMapOperation.Add: "add", BinaryMapOperation.Sub: "sub", BinaryMapOperation.Mul: "mul",
                     BinaryMapOperation.Div: "div", BinaryMapOperation.Min: "min", BinaryMapOperation.Max: "max"}

for _op in (*MAP_OPERATIONS, *BINARY_OPERATIONS):
    support_operation(_op, COOPERATIVE_OPERATION_TYPES[_op])


def map_operation_supported(operation: object, ty: Type) -> bool:
    """Whether ParallelMap/ParallelMapBinary ``operation`` compiles for ``ty`` now."""
    if operation in MAP_OPERATIONS or operation in BINARY_OPERATIONS:
        return ty in COOPERATIVE_OPERATION_TYPES[operation]
    return ty in COOPERATIVE_OPERATION_TYPES.get(operation, ()) and math_function_for(operation, ty) is not None


def _operation(operation: object, ty: Type, m, fb):
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


def elementwise_loop(cc: CoopContext, ty: Type, count: int, dst: int, sources: list[int], vector, scalar) -> None:
    """Write dst[i] = op(sources[k][i]) for i < count (addresses in i32 locals), overlap-safe."""
    e = cc.e
    shape = SHAPES[ty]
    size = ty.size_bytes()
    total = count * size
    chunk_bytes = (count // shape.per_chunk) * 16
    i = cc.local(I32)
    backward = cc.local(I32)
    e.i32(0).set(backward)
    for src in sources:
        e.get(backward).get(src).get(dst).op("i32.lt_u").get(dst).get(src).i32(total).op("i32.add").op("i32.lt_u")
        e.op("i32.and").op("i32.or").set(backward)
    if len(sources) > 1:
        ahead = cc.local(I32)
        e.i32(0).set(ahead)
        for src in sources:
            e.get(ahead).get(dst).get(src).op("i32.lt_u").get(src).get(dst).i32(total).op("i32.add").op("i32.lt_u")
            e.op("i32.and").op("i32.or").set(ahead)
        e.get(backward).get(ahead).op("i32.and")
        with e.if_():  # sources on both sides: copy the ones behind dst away, then run forward
            for src in sources:
                e.get(src).get(dst).op("i32.lt_u").get(dst).get(src).i32(total).op("i32.add").op("i32.lt_u")
                e.op("i32.and")
                with e.if_():
                    copy = cc.local(I32)
                    e.i32(total).call(cc.m.host("scratch")).tee(copy).get(src).i32(total).op("memory.copy", 0, 0)
                    e.get(copy).set(src)
            e.i32(0).set(backward)
    chunk = _chunk_writer(cc, shape, dst, sources, vector)
    element = _element_writer(cc, ty, dst, sources, scalar)
    e.get(backward)
    with e.if_():
        e.i32(total).set(i)
        with e.block("tail_done"):
            with e.loop("tail"):
                e.get(i).i32(chunk_bytes).op("i32.le_u").br_if("tail_done")
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
        with e.block("done"):
            with e.loop("next"):
                e.get(i).i32(chunk_bytes).op("i32.ge_u").br_if("done")
                chunk(i)
                e.get(i).i32(16).op("i32.add").set(i)
                e.br("next")
        with e.block("tail_done"):
            with e.loop("tail"):
                e.get(i).i32(total).op("i32.ge_u").br_if("tail_done")
                element(i)
                e.get(i).i32(size).op("i32.add").set(i)
                e.br("tail")


def _chunk_writer(cc: CoopContext, shape, dst: int, sources: list[int], vector):
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


def _element_writer(cc: CoopContext, ty: Type, dst: int, sources: list[int], scalar):
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
    vector, scalar = _operation(instr.operation, ty, cc.m, cc.fb)
    dst = cc.array("dst_array", ty, count)
    sources = [cc.array(name, ty, count) for name in (("src_a", "src_b") if binary else ("src_array",))]
    elementwise_loop(cc, ty, count, dst, sources, vector, scalar)
    cc.e.i32(COOP_OK)


@cooperative_rule("ParallelMap")
def build_parallel_map(cc: CoopContext) -> None:
    _build_map(cc, False)


@cooperative_rule("ParallelMapBinary")
def build_parallel_map_binary(cc: CoopContext) -> None:
    _build_map(cc, True)
