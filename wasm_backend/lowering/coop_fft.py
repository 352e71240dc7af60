"""FFT (F32, F64): the cooperative rule, an iterative radix-2 FFT (decimation in time) on SIMD128.

The cooperative function checks output and input over their extents (``2*n*batch`` values, in operand order:
handle, bounds, alignment; a trap writes nothing), then per launch builds the twiddle table in the per-launch
scratch and per batch item runs

1. the bit-reversal permutation from the input into the output (``fft_reverse_<c64|c128>``: a gather
   ``dst[j] = src[rev(j)]``, or, when the output is the input itself, swaps; ``rev`` by a bit-reversed counter);
2. the stages h = 1, 2, 4, ..., n/2 (butterflies ``x[j] +- w^(j*n/(2h)) * x[j+h]``), the stages with h below
   ``BLOCK`` run block by block (each block of BLOCK complex values stays in cache through all of them), the
   others over the whole item; in both, two stages a pass where both fit (``fft_pass2_<ty>``: stages h and 2h on each
   block of 4h values read and written once, the same butterflies in the same order as two ``fft_pass_<ty>(x,
   count, h, ts, tw)``, so the same bits), an odd one alone; F32: two complex values per f32x4, the first stage
   without twiddles, ``fft_pass1_f32``; F64: one per f64x2. A complex product is ``b*wr +
   swap(b)*wi*(-1, +1)``: two roundings per component, no fused multiply-add (the same bits on every engine);
3. inverse: every value times 1/n (a power of two: exact unless it underflows).

The twiddles ``w[j] = exp(-+2*pi*i*j/n)`` (j < n/2; the sign + for inverse) are computed in binary64 from two
short tables made with the math library's f64 sin and cos, ``w[k*L + j] = T2[k] * T1[j]`` (T1[j] = w_n^j for j < L,
T2[k] = w_n^(k*L); L about sqrt(n/2)), each within a few binary64 ulps, and rounded once to the type: so the
transform meets docs/semantics.md's normwise bound (8*log2(n) + 2)*u*||y||. n is a power of two (the row
requires it). One thread.
"""

from __future__ import annotations

import math
import struct

from atlas_web.isa.enums import MapOperation
from atlas_web.isa.extents import array_operands, power_of_two
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .coop_context import COOP_OK, CoopContext
from .coop_gemm_kernel import cached_function, round16
from .math_seam import math_function_for
from .rules import cooperative_rule

__all__ = ["FFT_TYPES", "BLOCK", "fft_scratch_bytes", "twiddle_split", "twiddle_bytes", "twiddle_table", "emit_transform",
           "scale_function", "push_product"]

I32, F64, V128 = ValType.I32, ValType.F64, ValType.V128
FFT_TYPES = frozenset({Type.F32, Type.F64})
#: complex values per cache block of the first stages (128 KB of f32 complex, 256 KB of f64)
BLOCK = 1 << 14


def _lanes(*pieces: range) -> bytes:
    return bytes(b for piece in pieces for b in piece)


#: shuffles of f32x4 holding two complex values (re0, im0, re1, im1)
_RE_RE = _lanes(range(0, 4), range(0, 4), range(8, 12), range(8, 12))        # (re0, re0, re1, re1)
_IM_IM = _lanes(range(4, 8), range(4, 8), range(12, 16), range(12, 16))      # (im0, im0, im1, im1)
_SWAP32 = _lanes(range(4, 8), range(0, 4), range(12, 16), range(8, 12))       # (im0, re0, im1, re1)
_LOW2, _HIGH2 = _lanes(range(0, 8), range(0, 8)), _lanes(range(8, 16), range(8, 16))
#: of f64x2 holding one complex value
_SWAP64 = _lanes(range(8, 16), range(0, 8))
_SIGN32 = struct.pack("<4f", -1.0, 1.0, -1.0, 1.0)
_SIGN64 = struct.pack("<2d", -1.0, 1.0)
_PLUS_MINUS32 = struct.pack("<4f", 1.0, 1.0, -1.0, -1.0)


def twiddle_split(n: int) -> tuple[int, int]:
    """(L, M): the twiddles' two tables, T1 of L and T2 of M entries, L*M = n/2 (both powers of two)."""
    half = n // 2
    bits = half.bit_length() - 1
    low = 1 << ((bits + 1) // 2)
    return low, half // low


def twiddle_bytes(ty: Type, n: int) -> int:
    """The scratch of a size-n transform's twiddles (n a power of two, at least 2): the table (n/2 complex values
    of ty), then T1 and T2 (binary64 complex)."""
    low, high = twiddle_split(n)
    return round16(n * ty.size_bytes()) + 16 * (low + high)


def fft_scratch_bytes(instr) -> int:
    """The per-launch scratch of ``instr``: a power-of-two n's twiddles; Bluestein's (coop_fft_bluestein)."""
    if not power_of_two(instr.n):
        from .coop_fft_bluestein import bluestein_scratch_bytes   # (it builds on this module's functions)
        return bluestein_scratch_bytes(instr.ty, instr.n)
    return twiddle_bytes(instr.ty, instr.n) if instr.n >= 2 else 16


def _pass1_f32(m) -> int:
    """``fft_pass1_f32(x, count)``: the first stage (h = 1, w = 1) over ``count`` complex f32 values."""
    def build(fb, e) -> None:
        x, count = range(2)
        end, v = fb.add_local(I32), fb.add_local(V128)
        e.get(x).get(count).i32(3).op("i32.shl").op("i32.add").set(end)
        with e.block("done"):
            with e.loop("next"):
                e.get(x).get(end).op("i32.ge_u").br_if("done")
                e.get(x)
                e.get(x).op("v128.load", 0).tee(v).get(v).op("i8x16.shuffle", _LOW2)
                e.get(v).get(v).op("i8x16.shuffle", _HIGH2).op("v128.const", _PLUS_MINUS32).op("f32x4.mul")
                e.op("f32x4.add").op("v128.store", 0)
                e.get(x).i32(16).op("i32.add").set(x)
                e.br("next")
    return cached_function(m, "fft_pass1_f32", (I32, I32), build)


def push_product(e, ty: Type, b: int, w: int) -> None:
    """Push the complex products of the v128 locals ``b`` and ``w`` (F32: two complex values each, F64: one):
    ``b * (wr, wr) + swap(b) * (-wi, wi)``, two roundings per component, no fused multiply-add."""
    f32 = ty is Type.F32
    p = "f32x4" if f32 else "f64x2"
    re_re, im_im, swap, sign = (_RE_RE, _IM_IM, _SWAP32, _SIGN32) if f32 else (_LOW2, _HIGH2, _SWAP64, _SIGN64)
    e.get(b).get(w).get(w).op("i8x16.shuffle", re_re).op(f"{p}.mul")
    e.get(b).get(b).op("i8x16.shuffle", swap)
    e.get(w).get(w).op("i8x16.shuffle", im_im).op("v128.const", sign).op(f"{p}.mul")
    e.op(f"{p}.mul").op(f"{p}.add")


class _Butterflies:
    """The emitter of one pass function's butterflies: twiddle loads and complex products for ``ty`` (F32: two
    complex values per f32x4, twiddles j and j + 1; F64: one per f64x2)."""

    def __init__(self, fb, e, ty: Type) -> None:
        self.e, self.f32 = e, ty is Type.F32
        self.p = "f32x4" if self.f32 else "f64x2"
        self.csize = 8 if self.f32 else 16
        self.wv, self.t = fb.add_local(V128), fb.add_local(V128)

    def twiddles(self, w: int, lane_step: int) -> None:
        """wv := the twiddle at address local ``w`` (F32: and the one ``lane_step`` bytes after it)."""
        e = self.e
        if self.f32:
            e.get(w).get(lane_step).op("i32.add")
            e.get(w).op("v128.load64_zero", 0)
            e.op("v128.load64_lane", 0, 1).set(self.wv)
        else:
            e.get(w).op("v128.load", 0).set(self.wv)

    def butterfly(self, a: int, b: int, out_a, out_b) -> None:
        """t = b * wv (b * (wr, wr) + swap(b) * (-wi, wi)); then ``out_a()`` takes a + t and ``out_b()`` a - t
        (each pushes what comes before the value, then stores or sets it)."""
        e, p = self.e, self.p
        push_product(e, Type.F32 if self.f32 else Type.F64, b, self.wv)
        e.set(self.t)
        out_a(lambda: e.get(a).get(self.t).op(f"{p}.add"))
        out_b(lambda: e.get(a).get(self.t).op(f"{p}.sub"))


def _pass(m, ty: Type) -> int:
    """``fft_pass_<ty>(x, count, h, ts, tw)``: one stage of half-size h (F32: h >= 2) over ``count`` complex values
    at x (a multiple of 2h), twiddle j of the stage at ``tw + j*ts`` complex values."""
    def build(fb, e) -> None:
        x, count, h, ts, tw = range(5)
        bf = _Butterflies(fb, e, ty)
        end, block_end, pa, pb, hb, w, tsb, wstep = (fb.add_local(I32) for _ in range(8))
        a, b = fb.add_local(V128), fb.add_local(V128)
        e.get(x).get(count).i32(bf.csize).op("i32.mul").op("i32.add").set(end)
        e.get(h).i32(bf.csize).op("i32.mul").set(hb)
        e.get(ts).i32(bf.csize).op("i32.mul").tee(tsb)
        if bf.f32:
            e.i32(1).op("i32.shl")   # two twiddles per vector
        e.set(wstep)

        def store(at: int):
            return lambda value: (e.get(at), value(), e.op("v128.store", 0))

        with e.block("blocks_done"):
            with e.loop("blocks"):
                e.get(x).get(end).op("i32.ge_u").br_if("blocks_done")
                e.get(x).set(pa)
                e.get(x).get(hb).op("i32.add").set(block_end)
                e.get(tw).set(w)
                with e.block("pairs_done"):
                    with e.loop("pairs"):
                        e.get(pa).get(block_end).op("i32.ge_u").br_if("pairs_done")
                        e.get(pa).op("v128.load", 0).set(a)
                        e.get(pa).get(hb).op("i32.add").tee(pb).op("v128.load", 0).set(b)
                        bf.twiddles(w, tsb)
                        bf.butterfly(a, b, store(pa), store(pb))
                        e.get(pa).i32(16).op("i32.add").set(pa)
                        e.get(w).get(wstep).op("i32.add").set(w)
                        e.br("pairs")
                e.get(x).get(hb).i32(1).op("i32.shl").op("i32.add").set(x)
                e.br("blocks")
    return cached_function(m, f"fft_pass_{ty.name.lower()}", (I32,) * 5, build)


def _pass2(m, ty: Type) -> int:
    """``fft_pass2_<ty>(x, count, h, ts, tw)``: the stages of half-sizes h and 2h in one pass over ``count`` complex
    values (a multiple of 4h; ts the stride of stage h's twiddles, stage 2h's is ts/2): each block of 4h values is
    read once, the same butterflies as the two passes in the same order (the same bits), written once."""
    def build(fb, e) -> None:
        x, count, h, ts, tw = range(5)
        bf = _Butterflies(fb, e, ty)
        end, block_end, pa, hb, wa, wb, wc, tsa, tsh, step_a, step_b = (fb.add_local(I32) for _ in range(11))
        v = [fb.add_local(V128) for _ in range(4)]
        y = [fb.add_local(V128) for _ in range(4)]
        per = 2 if bf.f32 else 1
        e.get(x).get(count).i32(bf.csize).op("i32.mul").op("i32.add").set(end)
        e.get(h).i32(bf.csize).op("i32.mul").set(hb)
        e.get(ts).i32(bf.csize).op("i32.mul").tee(tsa).i32(per).op("i32.mul").set(step_a)
        e.get(tsa).i32(1).op("i32.shr_u").tee(tsh).i32(per).op("i32.mul").set(step_b)

        def keep(local: int):
            return lambda value: (value(), e.set(local))

        def at(k: int) -> None:   # the address of quarter k of the current position
            e.get(pa)
            if k:
                e.get(hb).i32(k).op("i32.mul").op("i32.add")

        def store(k: int):
            return lambda value: (at(k), value(), e.op("v128.store", 0))

        with e.block("blocks_done"):
            with e.loop("blocks"):
                e.get(x).get(end).op("i32.ge_u").br_if("blocks_done")
                e.get(x).set(pa)
                e.get(x).get(hb).op("i32.add").set(block_end)
                e.get(tw).set(wa)
                e.get(tw).set(wb)
                e.get(tw).get(h).get(tsh).op("i32.mul").op("i32.add").set(wc)   # twiddle h of stage 2h
                with e.block("quads_done"):
                    with e.loop("quads"):
                        e.get(pa).get(block_end).op("i32.ge_u").br_if("quads_done")
                        for k in range(4):
                            at(k)
                            e.op("v128.load", 0).set(v[k])
                        bf.twiddles(wa, tsa)                      # stage h: (0, 1) and (2, 3)
                        bf.butterfly(v[0], v[1], keep(y[0]), keep(y[1]))
                        bf.butterfly(v[2], v[3], keep(y[2]), keep(y[3]))
                        bf.twiddles(wb, tsh)                      # stage 2h: (0, 2) with twiddle j
                        bf.butterfly(y[0], y[2], store(0), store(2))
                        bf.twiddles(wc, tsh)                      # and (1, 3) with twiddle j + h
                        bf.butterfly(y[1], y[3], store(1), store(3))
                        e.get(pa).i32(16).op("i32.add").set(pa)
                        e.get(wa).get(step_a).op("i32.add").set(wa)
                        e.get(wb).get(step_b).op("i32.add").set(wb)
                        e.get(wc).get(step_b).op("i32.add").set(wc)
                        e.br("quads")
                e.get(x).get(hb).i32(2).op("i32.shl").op("i32.add").set(x)
                e.br("blocks")
    return cached_function(m, f"fft_pass2_{ty.name.lower()}", (I32,) * 5, build)


def _reverse(m, csize: int) -> int:
    """``fft_reverse_<c64|c128>(src, dst, n)``: dst[j] = src[rev(j)] over n complex values (``csize`` bytes each);
    when dst is src, the same permutation by swaps."""
    load, store = ("i64.load", "i64.store") if csize == 8 else ("v128.load", "v128.store")
    valtype = ValType.I64 if csize == 8 else V128
    shift = csize.bit_length() - 1

    def build(fb, e) -> None:
        src, dst, n = range(3)
        j, rev, bit = (fb.add_local(I32) for _ in range(3))
        u, v = fb.add_local(valtype), fb.add_local(valtype)

        def at(base: int, index: int) -> None:
            e.get(base).get(index).i32(shift).op("i32.shl").op("i32.add")

        def advance() -> None:   # rev := the bit-reversed successor of rev (n a power of two)
            e.get(n).i32(1).op("i32.shr_u").set(bit)
            with e.block("carry_done"):
                with e.loop("carry"):
                    e.get(rev).get(bit).op("i32.and").op("i32.eqz").br_if("carry_done")
                    e.get(rev).get(bit).op("i32.xor").set(rev)
                    e.get(bit).i32(1).op("i32.shr_u").set(bit)
                    e.br("carry")
            e.get(rev).get(bit).op("i32.or").set(rev)

        def gather() -> None:
            at(dst, j)
            at(src, rev)
            e.op(load, 0).op(store, 0)
            advance()

        def swap() -> None:
            e.get(j).get(rev).op("i32.lt_u")
            with e.if_():
                at(dst, j)
                e.op(load, 0).set(u)
                at(dst, rev)
                e.op(load, 0).set(v)
                at(dst, j)
                e.get(v).op(store, 0)
                at(dst, rev)
                e.get(u).op(store, 0)
            advance()

        e.i32(0).set(j)
        e.i32(0).set(rev)
        e.get(src).get(dst).op("i32.eq")
        with e.if_():
            e.while_below(j, n, 1, swap, labels=("swaps_done", "swaps"))
            e.else_()
            e.while_below(j, n, 1, gather, labels=("gather_done", "gather"))
    return cached_function(m, f"fft_reverse_c{csize * 8}", (I32,) * 3, build)


def _twiddles(m, name: str, ty: Type, n: int, inverse: bool) -> int:
    """``name(tw, t1, t2)``: T1 and T2 (binary64 complex, by the math library's f64 sin and cos), then the n/2
    twiddles w[k*L + j] = T2[k] * T1[j] at tw, rounded once to ``ty``."""
    low, high = twiddle_split(n)
    sign = 1.0 if inverse else -1.0
    sin, cos = math_function_for(MapOperation.Sin, Type.F64), math_function_for(MapOperation.Cos, Type.F64)

    def build(fb, e) -> None:
        tw, t1, t2 = range(3)
        j, k, end, row, at = (fb.add_local(I32) for _ in range(5))
        angle = fb.add_local(F64)
        w, re_v, im_v = (fb.add_local(V128) for _ in range(3))

        def table(base: int, count: int, step: float, label: str) -> None:
            e.i32(0).set(j)
            e.i32(count).set(end)

            def one() -> None:
                e.get(j).op("f64.convert_i32_u").op("f64.const", step).op("f64.mul").set(angle)
                e.get(base).get(j).i32(4).op("i32.shl").op("i32.add")
                e.get(angle)
                cos.scalar(m, e, Type.F64)
                e.op("f64.store", 0)
                e.get(base).get(j).i32(4).op("i32.shl").op("i32.add")
                e.get(angle)
                sin.scalar(m, e, Type.F64)
                e.op("f64.const", sign).op("f64.mul").op("f64.store", 8)

            e.while_below(j, end, 1, one, labels=(f"{label}_done", label))

        table(t1, low, 2 * math.pi / n, "t1")
        table(t2, high, 2 * math.pi * low / n, "t2")
        e.i32(0).set(k)
        e.get(tw).set(at)

        def one_row() -> None:
            e.get(t2).get(k).i32(4).op("i32.shl").op("i32.add").op("v128.load", 0).set(w)
            e.get(w).get(w).op("i8x16.shuffle", _LOW2).set(re_v)
            e.get(w).get(w).op("i8x16.shuffle", _HIGH2).op("v128.const", _SIGN64).op("f64x2.mul").set(im_v)
            e.i32(0).set(j)
            e.i32(low).set(row)

            def one() -> None:   # T1[j] * T2[k] = t1 * (r2, r2) + swap(t1) * (-i2, i2)
                e.get(at)
                e.get(t1).get(j).i32(4).op("i32.shl").op("i32.add").op("v128.load", 0).tee(w)
                e.get(re_v).op("f64x2.mul")
                e.get(w).get(w).op("i8x16.shuffle", _SWAP64).get(im_v).op("f64x2.mul").op("f64x2.add")
                if ty is Type.F32:
                    e.op("f32x4.demote_f64x2_zero").op("v128.store64_lane", 0, 0)
                    e.get(at).i32(8).op("i32.add").set(at)
                else:
                    e.op("v128.store", 0)
                    e.get(at).i32(16).op("i32.add").set(at)

            e.while_below(j, row, 1, one, labels=("row_done", "row"))

        e.i32(high).set(end)
        e.while_below(k, end, 1, one_row, labels=("rows_done", "rows"))
    return cached_function(m, name, (I32,) * 3, build)


def scale_function(m, ty: Type) -> int:
    """``fft_scale_<ty>(x, count, factor)``: count values (a multiple of the lanes) at x times ``factor``."""
    f32 = ty is Type.F32
    p, s = ("f32x4", "f32") if f32 else ("f64x2", "f64")

    def build(fb, e) -> None:
        x, count, factor = range(3)
        end, v = fb.add_local(I32), fb.add_local(V128)
        e.get(factor).op(f"{p}.splat").set(v)
        e.get(x).get(count).i32(ty.size_bytes()).op("i32.mul").op("i32.add").set(end)
        with e.block("done"):
            with e.loop("next"):
                e.get(x).get(end).op("i32.ge_u").br_if("done")
                e.get(x).get(x).op("v128.load", 0).get(v).op(f"{p}.mul").op("v128.store", 0)
                e.get(x).i32(16).op("i32.add").set(x)
                e.br("next")
    return cached_function(m, f"fft_scale_{s}", (I32, I32, ValType.F32 if f32 else F64), build)


def emit_transform(cc: CoopContext, ty: Type, size: int, tw: int, src: int, dst: int) -> None:
    """Emit the forward-or-inverse radix-2 transform (the twiddles at local ``tw`` say which, made by
    ``twiddle_function`` for ``size``) of ``size`` complex values (a power of two) at local ``src`` into local
    ``dst`` (may be ``src``: in place), unscaled."""
    m, e = cc.m, cc.e
    f32 = ty is Type.F32
    csize = 2 * ty.size_bytes()
    e.get(src).get(dst).i32(size).call(_reverse(m, csize))
    if size < 2:
        return
    stage, pair = _pass(m, ty), _pass2(m, ty)
    first = _pass1_f32(m) if f32 else None
    h, ts, block, end_block = (cc.local(I32) for _ in range(4))
    span = min(BLOCK, size)

    def stages(base: int, count: int, h_from: int, h_to: int) -> None:
        """Stages h_from <= h < h_to over ``count`` complex values at local ``base``."""
        e.i32(h_from).set(h)
        e.i32(size // (2 * h_from)).set(ts)
        if f32 and h_from == 1:
            e.get(base).i32(count).call(first)
            e.i32(2).set(h)
            e.i32(size // 4).set(ts)
        with e.block("pairs_done"):   # two stages a pass (h and 2h) while both are below h_to
            with e.loop("pairs"):
                e.get(h).i32(h_to // 4).op("i32.gt_u").br_if("pairs_done")
                e.get(base).i32(count).get(h).get(ts).get(tw).call(pair)
                e.get(h).i32(2).op("i32.shl").set(h)
                e.get(ts).i32(2).op("i32.shr_u").set(ts)
                e.br("pairs")
        e.get(h).i32(h_to).op("i32.lt_u")
        with e.if_():   # an odd stage left
            e.get(base).i32(count).get(h).get(ts).get(tw).call(stage)

    e.get(dst).set(block)
    e.get(dst).i32(size * csize).op("i32.add").set(end_block)
    e.while_below(block, end_block, span * csize, lambda: stages(block, span, 1, span),
                  labels=("blocks_done", "blocks"))
    if span < size:
        stages(dst, size, span, size)


def twiddle_table(cc: CoopContext, ty: Type, n: int, inverse: bool, tw: int) -> int:
    """Emit: local ``tw`` := the per-launch scratch, holding the twiddles of a size-n transform (n >= 2) made
    there; the bytes it takes (``fft_scratch_bytes`` of a power-of-two n)."""
    e = cc.e
    low, _ = twiddle_split(n)
    cc.launch_base()
    e.i32(cc.launch.coop_scratch).op("i32.add").set(tw)
    table = round16(n * ty.size_bytes())
    e.get(tw).get(tw).i32(table).op("i32.add").get(tw).i32(table + 16 * low).op("i32.add")
    e.call(_twiddles(cc.m, f"fft_{cc.index}_twiddles", ty, n, inverse))
    return twiddle_bytes(ty, n)


@cooperative_rule("FFT", FFT_TYPES, scratch=fft_scratch_bytes)
def _build(cc: CoopContext) -> None:
    instr, e = cc.instr, cc.e
    ty, n, batch = instr.ty, instr.n, instr.batch
    # checked in operand order (output, input), as the reference checks them: the first bad one traps
    checked = {array.name: cc.array(array.name, array.ty, array.elements) for array in array_operands(instr)}
    if n * batch == 0:
        e.i32(COOP_OK)
        return
    if not power_of_two(n):
        from .coop_fft_bluestein import emit_bluestein   # (it builds on this module's functions)
        emit_bluestein(cc, checked)
        e.i32(COOP_OK)
        return
    tw, item, end_item, src, dst, x = (cc.local(I32) for _ in range(6))
    if n >= 2:
        twiddle_table(cc, ty, n, bool(instr.inverse), tw)
    e.i32(0).set(item)
    e.i32(batch).set(end_item)

    def one_item() -> None:
        e.get(item).i32(2 * n * ty.size_bytes()).op("i32.mul").tee(x)
        e.get(checked["input"]).op("i32.add").set(src)
        e.get(checked["output"]).get(x).op("i32.add").set(dst)
        emit_transform(cc, ty, n, tw, src, dst)
        if instr.inverse and n >= 2:
            e.get(dst).i32(2 * n).op(f"{'f32' if ty is Type.F32 else 'f64'}.const", 1.0 / n).call(scale_function(cc.m, ty))

    e.while_below(item, end_item, 1, one_item, labels=("items_done", "items"))
    e.i32(COOP_OK)
