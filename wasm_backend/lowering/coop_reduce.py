"""ParallelReduce: Sum, Product, Min and Max over ``count`` values, as SIMD loops with scalar tails.

* float Sum: F32 in blocks of four f32x4 accumulators (each lane adds F32_BLOCK values) flushed exactly
  into four f64x2 accumulators; F64, F16 and BF16 widened exactly to f64 and added in f64x2
  accumulators. Accumulators start at -0 (a sum of negative zeros stays -0); the result is rounded
  once to the type (F16/BF16 through f32, as the reference's ``round_to``): well within the
  contract's ``count * eps`` of the exact sum;
* float Product: binary64 in index order, then rounded once (the reference's order, bit for bit);
* float Min/Max: vector ``min``/``max`` (NaN propagates, -0 < +0), exact;
* integers: vector accumulators that wrap at the type's width (8-bit products through 16-bit
  lanes, whose low bytes are the wrapped products), folded lane by lane.

``count = 0`` gives the identity. The result goes to the instruction's result slot, from which the
resuming lanes load their destination register.
"""

from __future__ import annotations

import math

from atlas_web.isa.enums import ReduceOperation
from atlas_web.isa.opcodes import COOPERATIVE_OPERATION_TYPES
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .coop_context import COOP_OK, CoopContext
from .coop_ops import SCALAR_OPS, SHAPES, VECTOR_OPS, decode_halves, load_scalar, splat_constant
from .rules import cooperative_rule, support_operation
from .typemap import type_info

__all__ = ["REDUCE_KINDS"]

I32, I64, F64, V128 = ValType.I32, ValType.I64, ValType.F64, ValType.V128

#: operation -> element operation of coop_ops
REDUCE_KINDS = {ReduceOperation.Sum: "add", ReduceOperation.Product: "mul", ReduceOperation.Min: "min",
                ReduceOperation.Max: "max"}

for _op in REDUCE_KINDS:
    support_operation(_op, COOPERATIVE_OPERATION_TYPES[_op])

_EXTRACT = {"i8x16": ("i8x16.extract_lane_u", 16), "i16x8": ("i16x8.extract_lane_u", 8),
            "i32x4": ("i32x4.extract_lane", 4), "i64x2": ("i64x2.extract_lane", 2),
            "f32x4": ("f32x4.extract_lane", 4), "f64x2": ("f64x2.extract_lane", 2)}


def _identity(kind: str, ty: Type):
    if ty.is_float():
        return {"add": 0.0, "mul": 1.0, "min": math.inf, "max": -math.inf}[kind]
    lo, hi = ty.int_range()
    return ty.wrap({"add": 0, "mul": 1, "min": hi, "max": lo}[kind])


def _loop(cc: CoopContext, i: int, start: int | None, end: int, step: int, body) -> None:
    """for (i = start; i < end; i += step) body(i); ``start`` None keeps i."""
    e = cc.e
    if start is not None:
        e.i32(start).set(i)
    with e.block("done"):
        with e.loop("next"):
            e.get(i).i32(end).op("i32.ge_u").br_if("done")
            body(i)
            e.get(i).i32(step).op("i32.add").set(i)
            e.br("next")


#: f32 values each f32x4 accumulator lane adds before its block is flushed into the f64 accumulators
F32_BLOCK = 32


def _float_sum(cc: CoopContext, ty: Type, base: int, count: int) -> None:
    e = cc.e
    shape = SHAPES[ty]
    size = ty.size_bytes()
    accs = [cc.local(V128) for _ in range(4)]
    for acc in accs:
        e.f64(-0.0).op("f64x2.splat").set(acc)
    chunk_bytes = (count // shape.per_chunk) * 16
    i, v = cc.local(I32), cc.local(V128)
    low, high = cc.local(V128), cc.local(V128)
    scratch = (cc.local(V128), cc.local(V128))

    def add(acc: int, value_code) -> None:
        e.get(acc)
        value_code()
        e.op("f64x2.add").set(acc)

    def promote_f32x4(vec: int, first: int) -> None:
        add(accs[first], lambda: e.get(vec).op("f64x2.promote_low_f32x4"))
        add(accs[first + 1], lambda: e.get(vec).get(vec).op("i8x16.shuffle", (8, 9, 10, 11, 12, 13, 14, 15) * 2)
            .op("f64x2.promote_low_f32x4"))

    e.i32(0).set(i)
    if ty is Type.F32:
        _f32_blocks(cc, base, i, chunk_bytes, promote_f32x4)
    elif ty is Type.F64:
        _f64_unrolled(cc, base, i, chunk_bytes, accs)

    def chunk(at: int) -> None:
        e.get(base).get(at).op("i32.add").op("v128.load", 0).set(v)
        if ty is Type.F64:
            add(accs[0], lambda: e.get(v))
        elif ty is Type.F32:
            promote_f32x4(v, 0)
        else:
            decode_halves(e, shape, v, low, high, scratch)
            promote_f32x4(low, 0)
            promote_f32x4(high, 2)

    _loop(cc, i, None, chunk_bytes, 16, chunk)
    total = cc.local(F64)
    e.get(accs[0]).get(accs[1]).op("f64x2.add").get(accs[2]).get(accs[3]).op("f64x2.add").op("f64x2.add").set(v)
    e.get(v).op("f64x2.extract_lane", 0).get(v).op("f64x2.extract_lane", 1).op("f64.add").set(total)

    def element(at: int) -> None:
        e.get(total).get(base).get(at).op("i32.add")
        load_scalar(cc.m, e, ty)
        if ty is not Type.F64:
            e.op("f64.promote_f32")
        e.op("f64.add").set(total)

    _loop(cc, i, None, count * size, size, element)
    e.get(total)
    _round_f64_result(cc, ty)


def _f32_blocks(cc: CoopContext, base: int, i: int, chunk_bytes: int, flush_into) -> None:
    """Whole blocks of f32: four f32x4 accumulators (one chunk each per step) summed F32_BLOCK values per
    lane deep, then flushed exactly into the f64 accumulators; ``i`` ends at the first chunk not summed."""
    e = cc.e
    block_bytes = 64 * F32_BLOCK
    blocks_end = chunk_bytes - chunk_bytes % block_bytes
    if not blocks_end:
        return
    sums = [cc.local(V128) for _ in range(4)]
    end = cc.local(I32)
    with e.block("blocks_done"):
        with e.loop("blocks"):
            e.get(i).i32(blocks_end).op("i32.ge_u").br_if("blocks_done")
            for acc in sums:
                e.f32(-0.0).op("f32x4.splat").set(acc)
            e.get(i).i32(block_bytes).op("i32.add").set(end)
            with e.loop("steps"):
                for k, acc in enumerate(sums):
                    e.get(acc).get(base).get(i).op("i32.add").op("v128.load", 16 * k).op("f32x4.add").set(acc)
                e.get(i).i32(64).op("i32.add").tee(i).get(end).op("i32.lt_u").br_if("steps")
            for acc in sums:
                flush_into(acc, 0)
            e.br("blocks")


def _f64_unrolled(cc: CoopContext, base: int, i: int, chunk_bytes: int, accs: list[int]) -> None:
    """Four chunks per step into the four f64x2 accumulators; ``i`` ends at the first chunk not summed."""
    e = cc.e
    unrolled_end = chunk_bytes - chunk_bytes % 64
    if not unrolled_end:
        return
    with e.block("unrolled_done"):
        with e.loop("unrolled"):
            e.get(i).i32(unrolled_end).op("i32.ge_u").br_if("unrolled_done")
            for k, acc in enumerate(accs):
                e.get(acc).get(base).get(i).op("i32.add").op("v128.load", 16 * k).op("f64x2.add").set(acc)
            e.get(i).i32(64).op("i32.add").set(i)
            e.br("unrolled")


def _round_f64_result(cc: CoopContext, ty: Type) -> None:
    """An f64 result rounded to ``ty`` (F16/BF16 through f32)."""
    e = cc.e
    if ty is Type.F64:
        return
    e.op("f32.demote_f64")
    if ty is Type.F16:
        e.call(cc.m.helper("round_f16"))
    elif ty is Type.BF16:
        e.call(cc.m.helper("round_bf16"))


def _float_product(cc: CoopContext, ty: Type, base: int, count: int) -> None:
    e = cc.e
    size = ty.size_bytes()
    total, i = cc.local(F64), cc.local(I32)
    e.f64(1.0).set(total)

    def element(at: int) -> None:
        e.get(total).get(base).get(at).op("i32.add")
        load_scalar(cc.m, e, ty)
        if ty is not Type.F64:
            e.op("f64.promote_f32")
        e.op("f64.mul").set(total)

    _loop(cc, i, 0, count * size, size, element)
    e.get(total)
    _round_f64_result(cc, ty)


def _lanes_reduce(cc: CoopContext, ty: Type, kind: str, base: int, count: int) -> None:
    """Min/Max of floats and every integer reduction: vector accumulator, lane fold, scalar tail."""
    e = cc.e
    shape = SHAPES[ty]
    size = ty.size_bytes()
    ident = _identity(kind, ty)
    widened = shape.lanes == "i8x16" and kind == "mul"
    lanes = "i16x8" if widened else shape.lanes
    accs = [cc.local(V128) for _ in range(2)]
    for acc in accs:
        splat_constant(e, lanes, ident)
        e.set(acc)
    chunk_bytes = (count // shape.per_chunk) * 16
    i, v = cc.local(I32), cc.local(V128)
    low, high = cc.local(V128), cc.local(V128)
    scratch = (cc.local(V128), cc.local(V128))
    vector = VECTOR_OPS[kind]
    acc_shape = SHAPES[Type.U16] if widened else shape

    def fold(acc: int, value: int) -> None:
        vector(e, acc_shape, [acc, value])
        e.set(acc)

    def chunk(at: int) -> None:
        e.get(base).get(at).op("i32.add").op("v128.load", 0).set(v)
        if shape.half is not None:
            decode_halves(e, shape, v, low, high, scratch)
            fold(accs[0], low)
            fold(accs[1], high)
        elif widened:
            e.get(v).op("i16x8.extend_low_i8x16_u").set(low)
            e.get(v).op("i16x8.extend_high_i8x16_u").set(high)
            fold(accs[0], low)
            fold(accs[1], high)
        else:
            fold(accs[0], v)

    _loop(cc, i, 0, chunk_bytes, 16, chunk)
    compute = Type.F32 if shape.half is not None else (Type.U16 if widened else ty)
    vt = type_info(compute).valtype
    total, value = cc.local(vt), cc.local(vt)
    scalar = SCALAR_OPS[kind]
    if ty.is_float():
        e.f64(ident) if vt is F64 else e.f32(ident)
    elif vt is I64:
        e.i64(ident)
    else:
        e.i32(ident)
    e.set(total)
    extract, count_lanes = _EXTRACT[lanes]
    for acc in accs:
        for lane in range(count_lanes):
            e.get(acc).op(extract, lane)
            if not ty.is_float() and not widened and ty.bits < 32:
                _normalize(e, ty)
            e.set(value)
            scalar(e, compute if widened else (ty if not ty.is_float() else compute), [total, value], None)
            e.set(total)

    def element(at: int) -> None:
        e.get(base).get(at).op("i32.add")
        load_scalar(cc.m, e, ty)
        e.set(value)
        scalar(e, compute if widened else (ty if not ty.is_float() else compute), [total, value], None)
        e.set(total)

    _loop(cc, i, None, count * size, size, element)
    e.get(total)


def _normalize(e, ty: Type) -> None:
    """An extracted (zero-extended) narrow lane made canonical for ``ty``."""
    if ty.is_signed():
        e.op("i32.extend8_s" if ty.bits == 8 else "i32.extend16_s")


@cooperative_rule("ParallelReduce")
def build_parallel_reduce(cc: CoopContext) -> None:
    instr = cc.instr
    ty, count, kind = instr.ty, instr.count, REDUCE_KINDS[instr.operation]
    base = cc.array("src_array", ty, count)
    if ty.is_float() and kind == "add":
        _float_sum(cc, ty, base, count)
    elif ty.is_float() and kind == "mul":
        _float_product(cc, ty, base, count)
    else:
        _lanes_reduce(cc, ty, kind, base, count)
    cc.store_result(ty)
    cc.e.i32(COOP_OK)
