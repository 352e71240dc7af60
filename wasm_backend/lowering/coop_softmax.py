"""Softmax and LogSoftmax (F32, F64; F16 and BF16 computed in f32): the cooperative rules and their row kernel.

The cooperative function checks output and input over their extents (``rows * n`` elements, in operand order:
handle, bounds, alignment; a trap writes nothing) and runs the driver ``gemm_kernel_<index>(input, 0, output,
scratch, lo, hi)`` over rows ``lo .. hi`` (the name and signature of GEMM's drivers, so that natively a launch
of at least ``PARALLEL_MAP_THRESHOLDS["math library"]`` elements is cut into ranges of rows run on the host's
threads through ``env.parallel_gemm``: ``coop_gemm.THREADED_ROWS``). Each row is computed by the same code on
any thread, so the bits do not depend on the thread count.

One row of n elements (``softmax_row_<f32|f64>_<exp|log>(src, dst, n)``), SIMD128 over the row, as
docs/semantics.md (Softmax kernels) allows:

1. ``m = max(x)``: four v128 accumulators (wasm's ``max`` propagates NaN), then the lanes, then the scalar tail;
   A row whose m is not finite (it holds a NaN or +inf, or only -inf) is written NaN and left; otherwise
2. ``d = x - m`` (one rounding, <= 0 or -inf), ``exp(d)``: F32 by ``_exp_nonpositive_f32x4`` (XNNPACK's
   rr2-p5 for d <= 0, 3.1 u; results below f32's smallest normal flushed to 0, as the contract allows; its
   constants held in locals), F64 by the math library's vector routine written inline, the tail by the
   library's scalar function; summed in four v128 accumulators, then the lanes and the tail; Softmax stores
   ``exp(d)`` in the output as it goes;
3. Softmax: ``output *= 1/s``; LogSoftmax: ``output = (x - m) - log(s)`` (the row is read again).

The output may be the input itself (each element is read before it is written). F16 and BF16 rows are
converted to f32 (exactly) into the per-thread scratch, computed there by the F32 row kernel in place and
rounded once to the type on the way out.
"""

from __future__ import annotations

import struct

from atlas_web.isa.enums import MapOperation
from atlas_web.isa.extents import array_operands
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from ..thread_policy import PARALLEL_MAP_THRESHOLDS
from .coop_context import COOP_OK, CoopContext
from .coop_gemm import THREADED_ROWS, call_driver, gemm_kernel_name
from .coop_gemm_kernel import ELEMENTS, Element, cached_function
from .coop_ops import load_scalar, store_scalar
from .math_seam import math_function_for
from .rules import cooperative_rule

__all__ = ["SOFTMAX_TYPES", "softmax_parallel", "softmax_scratch", "build_softmax_driver", "UNROLL"]

I32, V128 = ValType.I32, ValType.V128
SOFTMAX_TYPES = frozenset({Type.F16, Type.BF16, Type.F32, Type.F64})
#: v128 accumulators (and vectors per loop turn) of the max and exp-sum passes
UNROLL = 4
_HALVES = (Type.F16, Type.BF16)


def _f32x4(value: float) -> bytes:
    return struct.pack("<4f", value, value, value, value)


#: exp(d) for d <= 0 in f32 (XNNPACK's rr2-p5: Cody-Waite reduction by ln2 in two parts, a degree-5 polynomial,
#: the scale 2^n from the magic-number sum's bits; within 2.3 ulps, 3.1 u relative, measured against float64 over
#: [-87.33, 0]), and 0 below -87.34 (where the result leaves f32's normal range: the contract lets it flush)
_EXP_LOG2E, _EXP_MAGIC = float.fromhex("0x1.715476p+0"), float.fromhex("0x1.8000FEp23")   # magic: 1.5*2^23 + 127
_EXP_LN2_HI, _EXP_LN2_LO = float.fromhex("0x1.62E400p-1"), float.fromhex("0x1.7F7D1Cp-20")
_EXP_POLY = tuple(float.fromhex(c) for c in ("0x1.0F9F9Cp-7", "0x1.573A1Ap-5", "0x1.555A80p-3", "0x1.FFFDC6p-2",
                                               "0x1.FFFFF6p-1"))
_EXP_CUTOFF = float.fromhex("-0x1.5D589Ep6")


_EXP_CONSTANTS = (_EXP_LOG2E, _EXP_MAGIC, -_EXP_LN2_HI, -_EXP_LN2_LO, *_EXP_POLY, _EXP_CUTOFF)


def _exp_constants(fb, e) -> dict:
    """v128 locals holding the splatted constants of ``_exp_nonpositive_f32x4`` (set once per row function)."""
    out = {}
    for value in _EXP_CONSTANTS:
        out[value] = fb.add_local(V128)
        e.op("v128.const", _f32x4(value)).set(out[value])
    return out


def _exp_nonpositive_f32x4(e, k: dict, d: int, n: int, scale: int, t: int) -> None:
    """Push exp of the f32x4 local ``d`` (lanes <= 0 or -inf; no NaN: the row's maximum is finite) with the v128
    locals ``n``, ``scale``, ``t`` as temporaries and ``k`` the constants' locals (plain multiplies and adds: the
    same bits on every engine)."""
    e.get(d).get(k[_EXP_LOG2E]).op("f32x4.mul").get(k[_EXP_MAGIC])
    e.op("f32x4.add").tee(n).i32(23).op("i32x4.shl").set(scale)
    e.get(n).get(k[_EXP_MAGIC]).op("f32x4.sub").tee(n)
    e.get(k[-_EXP_LN2_HI]).op("f32x4.mul").get(d).op("f32x4.add")
    e.get(n).get(k[-_EXP_LN2_LO]).op("f32x4.mul").op("f32x4.add").tee(t)
    e.get(k[_EXP_POLY[0]]).op("f32x4.mul").get(k[_EXP_POLY[1]]).op("f32x4.add")
    for c in _EXP_POLY[2:]:
        e.get(t).op("f32x4.mul").get(k[c]).op("f32x4.add")
    e.set(n)   # p(t)
    e.get(t).get(scale).op("f32x4.mul").get(n).op("f32x4.mul").get(scale).op("f32x4.add")
    e.get(d).get(k[_EXP_CUTOFF]).op("f32x4.ge").op("v128.and")


def _compute(ty: Type) -> Type:
    return Type.F64 if ty is Type.F64 else Type.F32


def softmax_parallel(instr) -> tuple[str, int, int] | None:
    """``("rows", rows, 1)`` when the launch has enough elements for the threads, else None."""
    if instr.rows > 1 and instr.rows * instr.n >= PARALLEL_MAP_THRESHOLDS["math library"]:
        return "rows", instr.rows, 1
    return None


def softmax_scratch(instr) -> int:
    """Scratch bytes per thread: one row in f32 for F16/BF16, else none (16: never an empty slot)."""
    return max(16, 4 * instr.n) if instr.ty in _HALVES else 16


class _Row:
    """The emitter of one row function: ``e``, its element ``el`` and the helpers of its loops."""

    def __init__(self, m, fb, e, el: Element) -> None:
        self.m, self.fb, self.e, self.el = m, fb, e, el
        self.shift = el.size.bit_length() - 1
        self.i = fb.add_local(I32)

    def address(self, base: int) -> None:
        """Push ``base + i * size``."""
        self.e.get(base).get(self.i).i32(self.shift).op("i32.shl").op("i32.add")

    def loop(self, n: int, elements: int, body, label: str) -> None:
        """``while i + elements <= n: body(); i += elements`` (``i`` kept from the loop before)."""
        e = self.e
        with e.block(f"{label}_done"):
            with e.loop(label):
                e.get(self.i).i32(elements).op("i32.add").get(n).op("i32.gt_u").br_if(f"{label}_done")
                body()
                e.get(self.i).i32(elements).op("i32.add").set(self.i)
                e.br(label)

    def splat(self, value: float) -> None:
        self.e.op(f"{self.el.scalar}.const", value).op(f"{self.el.prefix}.splat")

    def fold(self, accumulators: list[int], operation: str, scalar: int) -> None:
        """``scalar`` := operation over the accumulators' lanes (accumulator by accumulator, lane by lane)."""
        e, p, s = self.e, self.el.prefix, self.el.scalar
        for acc in accumulators[1:]:
            e.get(accumulators[0]).get(acc).op(f"{p}.{operation}").set(accumulators[0])
        e.get(accumulators[0]).op(f"{p}.extract_lane", 0).set(scalar)
        for lane in range(1, self.el.lanes):
            e.get(scalar).get(accumulators[0]).op(f"{p}.extract_lane", lane).op(f"{s}.{operation}").set(scalar)


def softmax_row(m, el: Element, log: bool) -> int:
    """``softmax_row_<f32|f64>_<exp|log>(src, dst, n)``: one row of n >= 1 elements (see the module docstring)."""
    compute = Type.F64 if el.scalar == "f64" else Type.F32
    exp, ln = math_function_for(MapOperation.Exp, compute), math_function_for(MapOperation.Log, compute)
    p, s = el.prefix, el.scalar

    def build(fb, e) -> None:
        src, dst, n = range(3)
        r = _Row(m, fb, e, el)
        acc = [fb.add_local(V128) for _ in range(UNROLL)]
        shift_v, vec, scale_v = fb.add_local(V128), fb.add_local(V128), fb.add_local(V128)
        big, total, tail, x = (fb.add_local(el.valtype) for _ in range(4))
        temps = [fb.add_local(V128) for _ in range(3)]
        constants = _exp_constants(fb, e) if compute is Type.F32 else {}

        def vectors(count: int, each) -> callable:
            return lambda: [each(j) for j in range(count)]

        # 1: the maximum
        for a in acc:
            r.splat(float("-inf"))
            e.set(a)
        e.i32(0).set(r.i)

        def max_step(j: int, into: int) -> None:
            r.address(src)
            e.op("v128.load", 16 * j).get(into).op(f"{p}.max").set(into)

        r.loop(n, UNROLL * el.lanes, vectors(UNROLL, lambda j: max_step(j, acc[j])), "max_blocks")
        r.loop(n, el.lanes, lambda: max_step(0, acc[0]), "max_vectors")
        r.fold(acc, "max", big)

        def max_tail() -> None:
            e.get(big)
            r.address(src)
            e.op(f"{s}.load", 0).op(f"{s}.max").set(big)

        r.loop(n, 1, max_tail, "max_tail")
        # a NaN, +inf or only -inf: m is not finite, and every output of the row is NaN
        e.get(big).get(big).op(f"{s}.sub").op(f"{s}.const", 0.0).op(f"{s}.ne")
        with e.if_():
            r.splat(float("nan"))
            e.set(scale_v)
            e.i32(0).set(r.i)

            def nan_step(j: int) -> None:
                r.address(dst)
                e.get(scale_v).op("v128.store", 16 * j)

            def nan_tail() -> None:
                r.address(dst)
                e.op(f"{s}.const", float("nan")).op(f"{s}.store", 0)

            r.loop(n, el.lanes, lambda: nan_step(0), "nan_vectors")
            r.loop(n, 1, nan_tail, "nan_tail")
            e.op("return")
        # 2: exp(x - m), stored (Softmax) and summed
        e.get(big).op(f"{p}.splat").set(shift_v)
        for a in acc:
            r.splat(0.0)
            e.set(a)
        e.i32(0).set(r.i)

        def exp_step(j: int, into: int) -> None:
            r.address(src)
            e.op("v128.load", 16 * j).get(shift_v).op(f"{p}.sub").set(vec)
            if compute is Type.F32:
                _exp_nonpositive_f32x4(e, constants, vec, *temps)
            elif not exp.inline(m, fb, compute, [vec]):
                e.get(vec)
                exp.vector(m, e, compute)
            e.set(vec)
            if not log:
                r.address(dst)
                e.get(vec).op("v128.store", 16 * j)
            e.get(into).get(vec).op(f"{p}.add").set(into)

        r.loop(n, UNROLL * el.lanes, vectors(UNROLL, lambda j: exp_step(j, acc[j])), "exp_blocks")
        r.loop(n, el.lanes, lambda: exp_step(0, acc[0]), "exp_vectors")
        r.fold(acc, "add", total)

        def exp_tail() -> None:
            r.address(src)
            e.op(f"{s}.load", 0).get(big).op(f"{s}.sub")
            exp.scalar(m, e, compute)
            e.set(x)
            if not log:
                r.address(dst)
                e.get(x).op(f"{s}.store", 0)
            e.get(total).get(x).op(f"{s}.add").set(total)

        r.loop(n, 1, exp_tail, "exp_tail")
        # 3: scale (Softmax) or shift (LogSoftmax)
        if log:
            e.get(total)
            ln.scalar(m, e, compute)
        else:
            e.op(f"{s}.const", 1.0).get(total).op(f"{s}.div")
        e.tee(tail).op(f"{p}.splat").set(scale_v)
        e.i32(0).set(r.i)

        def finish_step(j: int) -> None:
            r.address(dst)
            if log:
                r.address(src)
                e.op("v128.load", 16 * j).get(shift_v).op(f"{p}.sub").get(scale_v).op(f"{p}.sub")
            else:
                r.address(dst)
                e.op("v128.load", 16 * j).get(scale_v).op(f"{p}.mul")
            e.op("v128.store", 16 * j)

        def finish_tail() -> None:
            r.address(dst)
            if log:
                r.address(src)
                e.op(f"{s}.load", 0).get(big).op(f"{s}.sub").get(tail).op(f"{s}.sub")
            else:
                r.address(dst)
                e.op(f"{s}.load", 0).get(tail).op(f"{s}.mul")
            e.op(f"{s}.store", 0)

        r.loop(n, UNROLL * el.lanes, vectors(UNROLL, finish_step), "finish_blocks")
        r.loop(n, el.lanes, lambda: finish_step(0), "finish_vectors")
        r.loop(n, 1, finish_tail, "finish_tail")

    return cached_function(m, f"softmax_row_{s}_{'log' if log else 'exp'}", (I32,) * 3, build)


def build_softmax_driver(m, name: str, instr, export: bool = False) -> int:
    """Define ``name(src, unused, dst, scratch, lo, hi)``: rows lo .. hi of Softmax/LogSoftmax ``instr`` (its arrays
    checked; byte addresses; ``scratch``: softmax_scratch(instr) bytes); returns its index."""
    ty, n = instr.ty, instr.n
    row = softmax_row(m, ELEMENTS[_compute(ty)], instr.INFO.name == "LogSoftmax")
    size = ty.size_bytes()
    fb, e = m.define(name, (I32,) * 6, (), export=export)
    src, _, dst, scratch, lo, hi = range(6)
    r, at, i, end = (fb.add_local(I32) for _ in range(4))
    value = fb.add_local(ValType.F32)
    e.get(lo).set(r)
    e.i32(n).set(end)

    def convert(into_scratch: bool) -> None:
        e.i32(0).set(i)

        def one() -> None:
            if into_scratch:
                e.get(scratch).get(i).i32(2).op("i32.shl").op("i32.add")
                e.get(src).get(at).op("i32.add").get(i).i32(1).op("i32.shl").op("i32.add")
                load_scalar(m, e, ty)
                e.op("f32.store", 0)
            else:
                e.get(scratch).get(i).i32(2).op("i32.shl").op("i32.add").op("f32.load", 0).set(value)
                e.get(dst).get(at).op("i32.add").get(i).i32(1).op("i32.shl").op("i32.add")
                store_scalar(m, e, ty, value)

        e.while_below(i, end, 1, one, labels=(f"convert_{into_scratch}_done", f"convert_{into_scratch}"))

    def one_row() -> None:
        e.get(r).i32(n * size).op("i32.mul").set(at)
        if ty in _HALVES:
            convert(True)
            e.get(scratch).get(scratch).i32(n).call(row)
            convert(False)
        else:
            e.get(src).get(at).op("i32.add").get(dst).get(at).op("i32.add").i32(n).call(row)

    e.while_below(r, hi, 1, one_row, labels=("rows_done", "rows"))
    return fb.index


def _build(cc: CoopContext) -> None:
    instr, m, e = cc.instr, cc.m, cc.e
    threaded = "parallel_gemm" in m.imports and softmax_parallel(instr) is not None
    driver = build_softmax_driver(m, gemm_kernel_name(cc.index), instr, threaded)
    # checked in operand order (output, input), as the reference checks them: the first bad one traps
    checked = {array.name: cc.array(array.name, array.ty, array.elements) for array in array_operands(instr)}
    if instr.rows * instr.n == 0:
        e.i32(COOP_OK)
        return
    src, dst = checked["input"], checked["output"]
    scratch = cc.local(I32)
    cc.launch_base()
    e.i32(cc.launch.coop_scratch).op("i32.add").set(scratch)
    zero = cc.local(I32)
    e.i32(0).set(zero)
    call_driver(cc, driver, (src, zero, dst), scratch, instr.rows, threaded)


for _name in ("Softmax", "LogSoftmax"):
    cooperative_rule(_name, SOFTMAX_TYPES, scratch=softmax_scratch)(_build)
    THREADED_ROWS[_name] = (softmax_parallel, softmax_scratch)
