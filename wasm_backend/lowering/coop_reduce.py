"""ParallelReduce: Sum, Product, Min and Max over ``count`` values, as SIMD loops with scalar tails.

Every reduction but the float Product works in FIXED chunks of ``thread_policy.REDUCE_CHUNK_ELEMENTS`` values (a
size that depends neither on the thread count nor on the host): a function of its own,
``reduce_chunk_<index>(src, lo, hi) -> partial``, reduces elements ``lo .. hi`` to a partial, and the
partials are combined in chunk order, from the identity, with the operation's scalar step. The
result is therefore the same bits whether the chunks ran one after the other on one thread (the
browser, ``threads=1``, counts under the threshold) or on several:

* in one thread the cooperative function calls the chunk function chunk by chunk and folds as it goes;
* a module compiled for several threads imports ``env.parallel_reduce(instruction, src, count,
  partials)``: for at least ``thread_policy.PARALLEL_REDUCE_THRESHOLD`` elements the host runs the exported,
  global-free ``reduce_kernel_<index>(src, first_chunk, end_chunk, count, partials)`` over groups of chunks
  on its threads, each writing the partial of chunk ``c`` to ``partials + 8 * c`` (the cooperative scratch
  of the per-launch area, sized at compile time: ``reduce_partials_bytes``), and the module folds the
  partials in chunk order. The import's arguments are all the host needs, so a host may keep its cut of
  the chunks for the same arguments (the browser's does, in JS).

Partials, by kind:

* float Sum: F32 in blocks of four f32x4 accumulators (each lane adds F32_BLOCK values) flushed exactly
  into four f64x2 accumulators; F64, F16 and BF16 widened exactly to f64 and added in f64x2
  accumulators. Accumulators start at -0 (a sum of negative zeros stays -0). The partial is the chunk's
  f64 sum; partials are added in f64 from -0 and the total rounded once to the type (F16/BF16 through
  f32, as the reference's ``round_to``): well within the contract's ``count * eps`` of the exact sum;
* float Min/Max: vector ``min``/``max`` (NaN propagates, -0 < +0), exact; the partial is the chunk's
  extreme (f32 for F32/F16/BF16, f64 for F64), combined with the same scalar min/max;
* integers: vector accumulators that wrap at the type's width (8-bit products through 16-bit lanes,
  whose low bytes are the wrapped products), folded lane by lane; wrapping sums and products and
  minima/maxima are associative, so the chunked result is the exact one;
* float Product: NOT chunked: binary64 in index order with the partial kept in range by exact powers of
  two counted apart, then rounded once (the reference's order and roundings, bit for bit while no F64
  partial is subnormal), always in one thread.

``count = 0`` gives the identity (float Sum: -0). The result goes to the instruction's result slot,
from which the resuming lanes load their destination register.
"""

from __future__ import annotations

import math

from atlas_web.isa.enums import ReduceOperation
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES, ELEMENT_FUNCTIONS
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from ..thread_policy import PARALLEL_REDUCE_THRESHOLD, REDUCE_CHUNK_ELEMENTS, reduce_chunk_count
from .coop_context import COOP_OK, CoopContext
from .coop_map import KernelContext
from .coop_ops import SCALAR_OPS, SHAPES, VECTOR_OPS, decode_halves, load_scalar, splat_constant
from .module_context import HOST_IMPORTS
from .rules import cooperative_rule
from .typemap import type_info

__all__ = ["REDUCE_KINDS", "PARTIAL_BYTES", "reduce_kernel_name", "reduce_chunked", "parallel_reduce_wanted",
           "reduce_partials_bytes", "build_reduce"]

I32, I64, F32, F64, V128 = ValType.I32, ValType.I64, ValType.F32, ValType.F64, ValType.V128

#: operation -> element operation of coop_ops (the instruction it folds with)
REDUCE_KINDS = {op: ELEMENT_FUNCTIONS[op].lower() for op in ReduceOperation}

#: bytes per partial in the partials area
PARTIAL_BYTES = 8
# env.parallel_reduce(instruction, src, count, partials): every chunk's partial written at partials
HOST_IMPORTS.setdefault("parallel_reduce", ((I32, I32, I32, I32), ()))



def reduce_operation_supported(operation: object, ty: Type) -> bool:
    """Whether ParallelReduce ``operation`` compiles for ``ty``: every type the operation accepts."""
    return ty in COOPERATIVE_OPERATION_TYPES.get(operation, ())


_EXTRACT = {"i8x16": ("i8x16.extract_lane_u", 16), "i16x8": ("i16x8.extract_lane_u", 8),
            "i32x4": ("i32x4.extract_lane", 4), "i64x2": ("i64x2.extract_lane", 2),
            "f32x4": ("f32x4.extract_lane", 4), "f64x2": ("f64x2.extract_lane", 2)}
_LOADS = {I32: "i32.load", I64: "i64.load", F32: "f32.load", F64: "f64.load"}
_STORES = {I32: "i32.store", I64: "i64.store", F32: "f32.store", F64: "f64.store"}


def reduce_kernel_name(index: int) -> str:
    """The export name of the chunk kernel of the reduction at instruction ``index``."""
    return f"reduce_kernel_{index}"


def reduce_chunked(operation: ReduceOperation, ty: Type) -> bool:
    """Whether ParallelReduce ``operation`` on ``ty`` works in fixed chunks (all but the float Product)."""
    return not (ty.is_float() and REDUCE_KINDS[operation] == "mul")


def parallel_reduce_wanted(operation: ReduceOperation, ty: Type, count: int) -> bool:
    """Whether a reduction of ``count`` elements may hand its chunks to ``env.parallel_reduce``."""
    return reduce_chunked(operation, ty) and count >= PARALLEL_REDUCE_THRESHOLD


def _identity(kind: str, ty: Type):
    if ty.is_float():
        return {"add": 0.0, "mul": 1.0, "min": math.inf, "max": -math.inf}[kind]
    lo, hi = ty.int_range()
    return ty.wrap({"add": 0, "mul": 1, "min": hi, "max": lo}[kind])


class _Plan:
    """How ``kind`` on ``ty`` is reduced: the partial's value type and the scalar step combining two."""

    def __init__(self, ty: Type, kind: str) -> None:
        self.ty, self.kind = ty, kind
        shape = SHAPES[ty]
        self.widened = shape.lanes == "i8x16" and kind == "mul"
        if ty.is_float() and kind == "add":
            self.valtype, self.fold_type = F64, Type.F64
        elif ty.is_float():
            self.fold_type = Type.F64 if ty is Type.F64 else Type.F32
            self.valtype = type_info(self.fold_type).valtype
        else:
            self.fold_type = Type.U16 if self.widened else ty
            self.valtype = type_info(self.fold_type).valtype

    def push_identity(self, e) -> None:
        if self.ty.is_float() and self.kind == "add":
            e.f64(-0.0)
            return
        ident = _identity(self.kind, self.ty)
        {F64: e.f64, F32: e.f32, I64: e.i64, I32: e.i32}[self.valtype](ident)

    def fold(self, e, total: int, value: int) -> None:
        """total := total (op) value (both locals of ``valtype``)."""
        if self.ty.is_float() and self.kind == "add":
            e.get(total).get(value).op("f64.add").set(total)
            return
        SCALAR_OPS[self.kind](e, self.fold_type, [total, value], None)
        e.set(total)


def _loop(kc, i: int, end: int, step: int, body) -> None:
    """while (i < end) { body(i); i += step } (``end`` a local)."""
    kc.e.while_below(i, end, step, lambda: body(i))


#: f32 values each f32x4 accumulator lane adds before its block is flushed into the f64 accumulators
F32_BLOCK = 32


def _float_sum(kc: KernelContext, ty: Type, base: int, total_bytes: int, chunk_bytes: int) -> None:
    """Push the f64 sum of the ``total_bytes`` at ``base`` (``chunk_bytes`` of them in whole vectors)."""
    e = kc.e
    shape = SHAPES[ty]
    size = ty.size_bytes()
    accs = [kc.local(V128) for _ in range(4)]
    for acc in accs:
        e.f64(-0.0).op("f64x2.splat").set(acc)
    i, v = kc.local(I32), kc.local(V128)
    low, high = kc.local(V128), kc.local(V128)
    scratch = (kc.local(V128), kc.local(V128))

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
        _f32_blocks(kc, base, i, chunk_bytes, promote_f32x4)
    elif ty is Type.F64:
        _f64_unrolled(kc, base, i, chunk_bytes, accs)

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

    _loop(kc, i, chunk_bytes, 16, chunk)
    total = kc.local(F64)
    e.get(accs[0]).get(accs[1]).op("f64x2.add").get(accs[2]).get(accs[3]).op("f64x2.add").op("f64x2.add").set(v)
    e.get(v).op("f64x2.extract_lane", 0).get(v).op("f64x2.extract_lane", 1).op("f64.add").set(total)

    def element(at: int) -> None:
        e.get(total)
        _load_f64(kc.m, e, ty, base, at)
        e.op("f64.add").set(total)

    _loop(kc, i, total_bytes, size, element)
    e.get(total)


def _load_f64(m, e, ty: Type, base: int, at: int) -> None:
    """Push the float of type ``ty`` at byte address ``base + at`` (locals) as an f64 (exact)."""
    e.get(base).get(at).op("i32.add")
    load_scalar(m, e, ty)
    if ty is not Type.F64:
        e.op("f64.promote_f32")


def _f32_blocks(kc: KernelContext, base: int, i: int, chunk_bytes: int, flush_into) -> None:
    """Whole blocks of f32: four f32x4 accumulators (one chunk each per step) summed F32_BLOCK values per
    lane deep, then flushed exactly into the f64 accumulators; ``i`` ends at the first chunk not summed."""
    e = kc.e
    block_bytes = 64 * F32_BLOCK
    blocks_end = kc.local(I32)
    e.get(chunk_bytes).i32(-block_bytes).op("i32.and").set(blocks_end)
    sums = [kc.local(V128) for _ in range(4)]
    end = kc.local(I32)
    with e.block("blocks_done"):
        with e.loop("blocks"):
            e.get(i).get(blocks_end).op("i32.ge_u").br_if("blocks_done")
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


def _f64_unrolled(kc: KernelContext, base: int, i: int, chunk_bytes: int, accs: list[int]) -> None:
    """Four chunks per step into the four f64x2 accumulators; ``i`` ends at the first chunk not summed."""
    e = kc.e
    unrolled_end = kc.local(I32)
    e.get(chunk_bytes).i32(-64).op("i32.and").set(unrolled_end)
    with e.block("unrolled_done"):
        with e.loop("unrolled"):
            e.get(i).get(unrolled_end).op("i32.ge_u").br_if("unrolled_done")
            for k, acc in enumerate(accs):
                e.get(acc).get(base).get(i).op("i32.add").op("v128.load", 16 * k).op("f64x2.add").set(acc)
            e.get(i).i32(64).op("i32.add").set(i)
            e.br("unrolled")


#: float sums keep values of at least SCALE_THRESHOLD in magnitude, times 1 / SCALE_THRESHOLD, apart (exact)
SCALE_THRESHOLD = 2.0 ** 512


def _unless_finite(e, total: int, body) -> None:
    """Run ``body`` when the f64 local ``total`` is an infinity or NaN (``x - x`` is NaN exactly then)."""
    e.get(total).get(total).op("f64.sub").get(total).get(total).op("f64.sub").op("f64.ne")
    with e.if_():
        body()


def _scaled_sum(cc, ty: Type, base: int, count: int, total: int) -> None:
    """total := the sum of the ``count`` values at ``base`` in index order, in binary64 accumulators that
    no finite values can overflow: magnitudes below SCALE_THRESHOLD in one, the others scaled by its
    inverse (exact) in another, joined at the end. Only a non-finite fast sum comes here (an infinity or
    NaN among the values, or partial sums past the f64 range, or an f32 block past the f32 range), so an
    infinity or NaN in the result comes only from one among the values (the contract, docs/semantics.md)."""
    e = cc.e
    small, big, x, i, end = cc.local(F64), cc.local(F64), cc.local(F64), cc.local(I32), cc.local(I32)
    size = ty.size_bytes()
    e.f64(0.0).set(small)
    e.f64(0.0).set(big)
    e.i32(0).set(i)
    e.i32(count * size).set(end)

    def element(at: int) -> None:
        _load_f64(cc.m, e, ty, base, at)
        e.set(x)
        big_enough = lambda: e.get(x).op("f64.abs").f64(SCALE_THRESHOLD).op("f64.ge")  # noqa: E731 (NaN: small)
        e.get(big).get(x).f64(1.0 / SCALE_THRESHOLD).op("f64.mul").f64(0.0)
        big_enough()
        e.op("select").op("f64.add").set(big)
        e.get(small).f64(0.0).get(x)
        big_enough()
        e.op("select").op("f64.add").set(small)

    _loop(cc, i, end, size, element)
    e.get(big).f64(SCALE_THRESHOLD).op("f64.mul").get(small).op("f64.add").set(total)


def _round_f64_result(m, e, ty: Type) -> None:
    """An f64 result rounded to ``ty`` (F16/BF16 through f32)."""
    if ty is Type.F64:
        return
    e.op("f32.demote_f64")
    if ty is Type.F16:
        e.call(m.helper("round_f16"))
    elif ty is Type.BF16:
        e.call(m.helper("round_bf16"))


#: a float product keeps its partial (and F64 values) within 2**+-PRODUCT_RANGE, the rest in an exponent
PRODUCT_RANGE = 512


def _keep_in_range(e, value: int, exponent: int) -> None:
    """value := value scaled by 2**-+PRODUCT_RANGE (exact) while out of [2**-PRODUCT_RANGE, 2**PRODUCT_RANGE)
    (one step each way), exponent (i64) counting the scaling; zeros, infinities and NaN keep their value."""
    for limit, scale, shift in ((2.0 ** PRODUCT_RANGE, 2.0 ** -PRODUCT_RANGE, PRODUCT_RANGE),
                                (2.0 ** -PRODUCT_RANGE, 2.0 ** PRODUCT_RANGE, -PRODUCT_RANGE)):
        e.get(value).op("f64.abs").f64(limit).op("f64.ge" if shift > 0 else "f64.lt")
        with e.if_():
            e.get(value).f64(scale).op("f64.mul").set(value)
            e.get(exponent).i64(shift).op("i64.add").set(exponent)


def _float_product(cc: CoopContext, ty: Type, base: int, count: int) -> None:
    """Push the product: binary64 in index order (the reference's order) with no partial over- or
    underflowing: the partial stays within 2**+-PRODUCT_RANGE (F64 values are brought there first), its
    scaling counted in an exponent, and one scale64 at the end rounds (docs/semantics.md, Reductions)."""
    e = cc.e
    size = ty.size_bytes()
    total, x, i, end, exponent = cc.local(F64), cc.local(F64), cc.local(I32), cc.local(I32), cc.local(I64)
    e.f64(1.0).set(total)
    e.i64(0).set(exponent)
    e.i32(0).set(i)
    e.i32(count * size).set(end)

    def element(at: int) -> None:
        _load_f64(cc.m, e, ty, base, at)
        if ty is not Type.F64:  # |x| in [2**-149, 2**128]: the partial times x stays normal
            e.get(total).op("f64.mul").set(total)
        else:
            e.set(x)
            for _ in range(2):  # a subnormal needs two steps up
                _keep_in_range(e, x, exponent)
            e.get(total).get(x).op("f64.mul").set(total)
        _keep_in_range(e, total, exponent)

    _loop(cc, i, end, size, element)
    e.get(total).get(exponent).i64(-3000).get(exponent).i64(-3000).op("i64.gt_s").op("select")
    e.tee(exponent).i64(3000).get(exponent).i64(3000).op("i64.lt_s").op("select").op("i32.wrap_i64")
    e.call(cc.m.helper("scale64"))
    _round_f64_result(cc.m, e, ty)


def _lanes_reduce(kc: KernelContext, plan: _Plan, base: int, total_bytes: int, chunk_bytes: int) -> None:
    """Push the Min/Max of floats or any integer reduction of the bytes at ``base``: vector accumulators,
    lane fold, scalar tail (in ``plan.valtype``)."""
    e = kc.e
    ty, kind = plan.ty, plan.kind
    shape = SHAPES[ty]
    size = ty.size_bytes()
    ident = _identity(kind, ty)
    widened = plan.widened
    lanes = "i16x8" if widened else shape.lanes
    accs = [kc.local(V128) for _ in range(2)]
    for acc in accs:
        splat_constant(e, lanes, ident)
        e.set(acc)
    i, v = kc.local(I32), kc.local(V128)
    low, high = kc.local(V128), kc.local(V128)
    scratch = (kc.local(V128), kc.local(V128))
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

    e.i32(0).set(i)
    _loop(kc, i, chunk_bytes, 16, chunk)
    total, value = kc.local(plan.valtype), kc.local(plan.valtype)
    plan.push_identity(e)
    e.set(total)
    extract, count_lanes = _EXTRACT[lanes]
    for acc in accs:
        for lane in range(count_lanes):
            e.get(acc).op(extract, lane)
            if not ty.is_float() and not widened and ty.bits < 32:
                _normalize(e, ty)
            e.set(value)
            plan.fold(e, total, value)

    def element(at: int) -> None:
        e.get(base).get(at).op("i32.add")
        load_scalar(kc.m, e, ty)
        e.set(value)
        plan.fold(e, total, value)

    _loop(kc, i, total_bytes, size, element)
    e.get(total)


def _normalize(e, ty: Type) -> None:
    """An extracted (zero-extended) narrow lane made canonical for ``ty``."""
    if ty.is_signed():
        e.op("i32.extend8_s" if ty.bits == 8 else "i32.extend16_s")


def _build_chunk_function(m, index: int, plan: _Plan, name: str = "reduce_chunk") -> int:
    """``reduce_chunk_<index>(src, lo, hi) -> partial``: the partial of elements ``lo .. hi`` of the array at
    byte address ``src`` (no globals, no imports, no traps)."""
    fb, e = m.define(f"{name}_{index}", (I32, I32, I32), (plan.valtype,))
    kc = KernelContext(m, fb, e)
    size = plan.ty.size_bytes()
    src, lo, hi = 0, 1, 2
    base, total_bytes, chunk_bytes = kc.local(I32), kc.local(I32), kc.local(I32)
    e.get(src).get(lo).i32(size).op("i32.mul").op("i32.add").set(base)
    e.get(hi).get(lo).op("i32.sub").i32(size).op("i32.mul").tee(total_bytes).i32(-16).op("i32.and").set(chunk_bytes)
    if plan.ty.is_float() and plan.kind == "add":
        _float_sum(kc, plan.ty, base, total_bytes, chunk_bytes)
    else:
        _lanes_reduce(kc, plan, base, total_bytes, chunk_bytes)
    return fb.index


def _chunk_bounds(e, chunk: int, count, lo: int, hi: int) -> None:
    """lo := chunk * REDUCE_CHUNK_ELEMENTS; hi := min(lo + REDUCE_CHUNK_ELEMENTS, count) (``count``: a local
    index, or an int constant when given as ``("const", n)``)."""
    e.get(chunk).i32(REDUCE_CHUNK_ELEMENTS).op("i32.mul").tee(lo).i32(REDUCE_CHUNK_ELEMENTS).op("i32.add").set(hi)
    kind, value = count
    push = (lambda: e.i32(value)) if kind == "const" else (lambda: e.get(value))
    e.get(hi)
    push()
    e.get(hi)
    push()
    e.op("i32.lt_u").op("select").set(hi)


def _build_kernel(m, index: int, plan: _Plan, chunk_function: int) -> None:
    """Export ``reduce_kernel_<index>(src, first, end, count, partials)``: for chunks ``first .. end`` store
    the chunk's partial at ``partials + PARTIAL_BYTES * chunk`` (no globals, no imports, no traps)."""
    fb, e = m.define(reduce_kernel_name(index), (I32,) * 5, (), export=True)
    kc = KernelContext(m, fb, e)
    src, first, end, count, partials = range(5)
    lo, hi = kc.local(I32), kc.local(I32)
    with e.block("done"):
        with e.loop("chunks"):
            e.get(first).get(end).op("i32.ge_u").br_if("done")
            _chunk_bounds(e, first, ("local", count), lo, hi)
            e.get(partials).get(first).i32(PARTIAL_BYTES).op("i32.mul").op("i32.add")
            e.get(src).get(lo).get(hi).call(chunk_function)
            e.op(_STORES[plan.valtype], 0)
            e.get(first).i32(1).op("i32.add").set(first)
            e.br("chunks")


def _chunked_reduce(cc: CoopContext, plan: _Plan, base: int, count: int, before_chunk=None) -> None:
    """Push the chunked reduction's result (in ``plan.valtype``): the partials folded in chunk order;
    ``before_chunk(lo, hi)`` writes code run before each chunk is reduced (then in one thread)."""
    e, m = cc.e, cc.m
    chunk_function = _build_chunk_function(m, cc.index, plan, "reduce_chunk" if before_chunk is None
                                           else "absorbed_chunk")
    total, value, chunk = cc.local(plan.valtype), cc.local(plan.valtype), cc.local(I32)
    lo, hi = cc.local(I32), cc.local(I32)
    chunks = reduce_chunk_count(count)
    plan.push_identity(e)
    e.set(total)
    e.i32(0).set(chunk)
    with e.block("folded"):
        if (before_chunk is None and "parallel_reduce" in m.imports
                and parallel_reduce_wanted(cc.instr.operation, plan.ty, count)):
            _build_kernel(m, cc.index, plan, chunk_function)
            partials = cc.local(I32)
            cc.launch_base()
            e.i32(cc.launch.coop_scratch).op("i32.add").set(partials)
            e.i32(cc.index).get(base).i32(count).get(partials).call(m.host("parallel_reduce"))
            with e.loop("partials"):
                e.get(partials).get(chunk).i32(PARTIAL_BYTES).op("i32.mul").op("i32.add")
                e.op(_LOADS[plan.valtype], 0).set(value)
                plan.fold(e, total, value)
                e.get(chunk).i32(1).op("i32.add").tee(chunk).i32(chunks).op("i32.lt_u").br_if("partials")
            e.br("folded")
        with e.loop("chunks"):
            e.get(chunk).i32(chunks).op("i32.ge_u").br_if("folded")
            _chunk_bounds(e, chunk, ("const", count), lo, hi)
            if before_chunk is not None:
                before_chunk(lo, hi)
            e.get(base).get(lo).get(hi).call(chunk_function).set(value)
            plan.fold(e, total, value)
            e.get(chunk).i32(1).op("i32.add").set(chunk)
            e.br("chunks")
    if plan.ty.is_float() and plan.kind == "add":
        _unless_finite(e, total, lambda: _scaled_sum(cc, plan.ty, base, count, total))
        e.get(total)
        _round_f64_result(m, e, plan.ty)
    else:
        e.get(total)


def reduce_partials_bytes(instr) -> int:
    """The per-launch scratch of a ParallelReduce: one partial per chunk where its chunks may go to the
    threads (``parallel_reduce_wanted``), else none. It is sized from the instruction alone, so a module that
    does not import ``env.parallel_reduce`` (compiled for one thread) reserves it unused. Its contents live
    from the import's call to the fold right after it, within the one step."""
    if parallel_reduce_wanted(instr.operation, instr.ty, instr.count):
        return reduce_chunk_count(instr.count) * PARTIAL_BYTES
    return 0


@cooperative_rule("ParallelReduce", operations=reduce_operation_supported, scratch=reduce_partials_bytes)
def build_parallel_reduce(cc: CoopContext) -> None:
    build_reduce(cc)


def build_reduce(cc: CoopContext, before_chunk=None) -> None:
    """ParallelReduce's function body (``cc``): check the source, reduce, store the result, return COOP_OK;
    ``before_chunk(lo, hi)`` (a chunked reduction only, then in one thread: ``coop_fusion``) writes code
    run before each chunk of elements ``lo .. hi`` (i32 locals) is reduced."""
    instr = cc.instr
    ty, count, kind = instr.ty, instr.count, REDUCE_KINDS[instr.operation]
    base = cc.array("src_array", ty, count)
    if reduce_chunked(instr.operation, ty):
        _chunked_reduce(cc, _Plan(ty, kind), base, count, before_chunk)
    else:
        _float_product(cc, ty, base, count)
    cc.store_result(ty)
    cc.e.i32(COOP_OK)
