"""FFT of an n that is not a power of two (F32, F64): Bluestein's algorithm over coop_fft's radix-2 transforms.

With ``w[j] = exp(s*pi*i*j^2/n)`` (s = -1 forward, +1 inverse) and ``j*k = (j^2 + k^2 - (k - j)^2) / 2``, the
transform is a convolution: ``y[k] = w[k] * sum_j (x[j] * w[j]) * conj(w[k - j])``, computed as a circular one of
length m, the power of two at least 2n - 1 (``bluestein_size``):

- per launch: the chirp ``w`` (j^2 reduced modulo 2n exactly in i64, the angle ``k * (pi/n)`` with |k| <= n, the
  math library's f64 sin and cos, rounded once to ty: ``fft_<index>_chirp``), the radix-2 twiddles of m, and
  ``B = FFT_m(b) / m`` where ``b[j] = b[m - j] = conj(w[j])`` for j < n, 0 elsewhere (1/m, a power of two, is
  exact);
- per batch item: ``a = x * w`` zero-padded to m; ``a := FFT_m(a)``; ``a := conj(a * B)``; ``a := FFT_m(a)``
  (forward transforms only: ``FFT_m(conj(Z)) = m * conj(IFFT_m(Z))``); ``y = conj(a) * w`` (inverse: times
  1/n rounded to ty, one more rounding).

Complex products as coop_fft's (two roundings per component, no fused multiply-add). The input is read whole into
the work area before the output is written, so in place is allowed. Scratch: m's twiddles, the chirp (n complex),
B and the work area (m complex each). docs/semantics.md states the bound it meets (with log2(m) for log2(n)).
One thread.
"""

from __future__ import annotations

import math
import struct

from atlas_web.isa.enums import MapOperation
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .coop_context import CoopContext
from .coop_fft import emit_transform, push_product, twiddle_bytes, twiddle_table
from .coop_gemm_kernel import cached_function, round16
from .math_seam import math_function_for

__all__ = ["bluestein_size", "bluestein_scratch_bytes", "emit_bluestein"]

I32, I64, F64, V128 = ValType.I32, ValType.I64, ValType.F64, ValType.V128


def bluestein_size(n: int) -> int:
    """m: the power of two at least 2n - 1, the length of the circular convolution."""
    return 1 << max(0, 2 * n - 2).bit_length()


def bluestein_scratch_bytes(ty: Type, n: int) -> int:
    """m's twiddles, the chirp (n complex values of ty), then B and the work area (m complex values each)."""
    m, csize = bluestein_size(n), 2 * ty.size_bytes()
    return twiddle_bytes(ty, m) + round16(n * csize) + 2 * m * csize


def _conj(ty: Type, factor: float = 1.0) -> bytes:
    """(f, -f) per complex lane pair of ty."""
    if ty is Type.F32:
        return struct.pack("<4f", factor, -factor, factor, -factor)
    return struct.pack("<2d", factor, -factor)


def _chirp(m, name: str, ty: Type, n: int, inverse: bool) -> int:
    """``name(dst)``: w[j] = exp(+-pi*i*j^2/n) for j < n at dst, complex of ty: k = j^2 mod 2n (exact, i64), taken
    to (-n, n], the angle k * fl(pi/n) in binary64 (|angle| <= pi), cos and sin by the math library, rounded once."""
    sign = 1.0 if inverse else -1.0
    sin, cos = math_function_for(MapOperation.Sin, Type.F64), math_function_for(MapOperation.Cos, Type.F64)
    store, size = ("f32.store", 4) if ty is Type.F32 else ("f64.store", 8)

    def build(fb, e) -> None:
        dst = 0
        j, k, end, at = (fb.add_local(I32) for _ in range(4))
        angle = fb.add_local(F64)

        def one() -> None:
            e.get(j).op("i64.extend_i32_u").get(j).op("i64.extend_i32_u").op("i64.mul")
            e.i64(2 * n).op("i64.rem_u").op("i32.wrap_i64").set(k)
            e.get(k).i32(n).op("i32.gt_u")
            with e.if_():
                e.get(k).i32(2 * n).op("i32.sub").set(k)
            e.get(k).op("f64.convert_i32_s").op("f64.const", math.pi / n).op("f64.mul").set(angle)
            for offset, function, factor in ((0, cos, 1.0), (size, sin, sign)):
                e.get(at).get(angle)
                function.scalar(m, e, Type.F64)
                if factor != 1.0:
                    e.op("f64.const", factor).op("f64.mul")
                if ty is Type.F32:
                    e.op("f32.demote_f64")
                e.op(store, offset)
            e.get(at).i32(2 * size).op("i32.add").set(at)

        e.get(dst).set(at)
        e.i32(0).set(j)
        e.i32(n).set(end)
        e.while_below(j, end, 1, one, labels=("chirp_done", "chirp"))
    return cached_function(m, name, (I32,), build)


def _padded_conjugate(m, ty: Type) -> int:
    """``fft_bluestein_b_<ty>(b, w, n, size)``: b[0..size) = 0, then b[j] = b[size - j] = conj(w[j]) / size for
    j < n (size a power of two: the scaling is exact)."""
    f32 = ty is Type.F32
    csize = 2 * ty.size_bytes()
    load, store = ("v128.load64_zero", 0), ("v128.store64_lane", 0, 0)
    if not f32:
        load, store = ("v128.load", 0), ("v128.store", 0)
    mul = "f32x4.mul" if f32 else "f64x2.mul"

    def build(fb, e) -> None:
        b, w, n, size = range(4)
        j, v, factor = fb.add_local(I32), fb.add_local(V128), fb.add_local(V128)
        e.get(b).i32(0).get(size).i32(csize).op("i32.mul").op("memory.fill", 0)
        if f32:
            e.op("f32.const", 1.0).get(size).op("f32.convert_i32_u").op("f32.div").op("f32x4.splat")
        else:
            e.op("f64.const", 1.0).get(size).op("f64.convert_i32_u").op("f64.div").op("f64x2.splat")
        e.op("v128.const", _conj(ty)).op(mul).set(factor)
        e.i32(0).set(j)

        def one() -> None:
            e.get(w).get(j).i32(csize).op("i32.mul").op("i32.add").op(*load).get(factor).op(mul).set(v)
            e.get(b).get(j).i32(csize).op("i32.mul").op("i32.add").get(v).op(*store)
            e.get(j)
            with e.if_():
                e.get(b).get(size).get(j).op("i32.sub").i32(csize).op("i32.mul").op("i32.add").get(v).op(*store)

        e.while_below(j, n, 1, one, labels=("b_done", "b"))
    return cached_function(m, f"fft_bluestein_b_{ty.name.lower()}", (I32,) * 4, build)


def _multiply(m, ty: Type, conj_a: bool, conj_out: bool) -> int:
    """``fft_cmul_<ty>_<flags>(dst, a, w, count, factor)``: dst[j] = (conj(a[j]) if conj_a) * w[j], conjugated if
    conj_out, times ``factor`` (1: exact), for j < count (F32: two complex values a vector, an odd last one alone);
    dst may be a."""
    f32 = ty is Type.F32
    p = "f32x4" if f32 else "f64x2"
    csize = 2 * ty.size_bytes()

    def build(fb, e) -> None:
        dst, a, w, count, factor = range(5)
        j, end = fb.add_local(I32), fb.add_local(I32)
        va, vw, scale = (fb.add_local(V128) for _ in range(3))
        e.get(factor).op(f"{p}.splat")
        if conj_out:
            e.op("v128.const", _conj(ty)).op(f"{p}.mul")
        e.set(scale)

        def one(load, store) -> None:
            e.get(a).get(j).i32(csize).op("i32.mul").op("i32.add").op(*load)
            if conj_a:
                e.op("v128.const", _conj(ty)).op(f"{p}.mul")
            e.set(va)
            e.get(w).get(j).i32(csize).op("i32.mul").op("i32.add").op(*load).set(vw)
            e.get(dst).get(j).i32(csize).op("i32.mul").op("i32.add")
            push_product(e, ty, va, vw)
            e.get(scale).op(f"{p}.mul").op(*store)

        e.i32(0).set(j)
        if f32:
            e.get(count).i32(-2).op("i32.and").set(end)
            e.while_below(j, end, 2, lambda: one(("v128.load", 0), ("v128.store", 0)), labels=("pairs_done", "pairs"))
            e.get(j).get(count).op("i32.lt_u")
            with e.if_():
                one(("v128.load64_zero", 0), ("v128.store64_lane", 0, 0))
        else:
            e.while_below(j, count, 1, lambda: one(("v128.load", 0), ("v128.store", 0)), labels=("all_done", "all"))
    scalar = ValType.F32 if f32 else F64
    return cached_function(m, f"fft_cmul_{ty.name.lower()}_{int(conj_a)}{int(conj_out)}",
                           (I32, I32, I32, I32, scalar), build)


def emit_bluestein(cc: CoopContext, checked: dict) -> None:
    """Emit FFT ``cc.instr`` (n not a power of two, batch > 0) on the arrays at the locals ``checked`` (by name)."""
    instr, m, e = cc.instr, cc.m, cc.e
    ty, n, inverse = instr.ty, instr.n, bool(instr.inverse)
    size, csize = bluestein_size(n), 2 * ty.size_bytes()
    const = "f32.const" if ty is Type.F32 else "f64.const"
    tw, chirp, bhat, work, item, end_item, src, dst, x, pad = (cc.local(I32) for _ in range(10))
    table = twiddle_table(cc, ty, size, False, tw)
    e.get(tw).i32(table).op("i32.add").tee(chirp).call(_chirp(m, f"fft_{cc.index}_chirp", ty, n, inverse))
    e.get(chirp).i32(round16(n * csize)).op("i32.add").tee(bhat).i32(size * csize).op("i32.add").set(work)
    e.get(bhat).get(chirp).i32(n).i32(size).call(_padded_conjugate(m, ty))
    emit_transform(cc, ty, size, tw, bhat, bhat)
    e.get(work).i32(n * csize).op("i32.add").set(pad)
    e.i32(0).set(item)
    e.i32(instr.batch).set(end_item)

    def one_item() -> None:
        e.get(item).i32(n * csize).op("i32.mul").tee(x)
        e.get(checked["input"]).op("i32.add").set(src)
        e.get(checked["output"]).get(x).op("i32.add").set(dst)
        e.get(work).get(src).get(chirp).i32(n).op(const, 1.0).call(_multiply(m, ty, False, False))
        e.get(pad).i32(0).i32((size - n) * csize).op("memory.fill", 0)
        emit_transform(cc, ty, size, tw, work, work)
        e.get(work).get(work).get(bhat).i32(size).op(const, 1.0).call(_multiply(m, ty, False, True))
        emit_transform(cc, ty, size, tw, work, work)
        e.get(dst).get(work).get(chirp).i32(n).op(const, 1.0 / n if inverse else 1.0)
        e.call(_multiply(m, ty, True, False))

    e.while_below(item, end_item, 1, one_item, labels=("items_done", "items"))
