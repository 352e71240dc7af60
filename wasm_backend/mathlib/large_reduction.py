"""Payne-Hanek reduction by pi/2 for |x| >= 2**20, where the Cody-Waite products stop being exact.

``x = M * 2**E`` (M a 53-bit integer) times 2/pi, modulo 4, needs only the
bits of 2/pi from about position E on. 2/pi is held as 24-bit integer chunks
``g[i]`` (weight ``2**(-24*(i+1))``) in a ``br_table`` helper (no data in
linear memory). With ``M = MH * 2**26 + ML`` every product ``MH*g[i]``,
``ML*g[i]`` is exact in f64, and so is its scaling by a power of two and its
reduction modulo 4 (``p - 4*floor(p/4)``). Chunks below ``i0 =
max(0, (E-2) // 24)`` only add multiples of 4 and are skipped; eight chunks
from ``i0`` leave a truncation error below ``2**-114``.

Each reduced product is cut at ``2**-30``: the heads (multiples of 2**-30,
below 4) sum exactly in f64, the tails (below 2**-30) sum as a double-f64
with two-sum. The nearest integer ``k`` of the total gives the quadrant, and
``(heads - k) + tails`` (exact, then double-f64) times pi/2 (double-f64)
gives ``r + r_lo`` with an absolute error far below the ``2**-114`` that the
closest approach of a double to a multiple of pi/2 needs.

The helper ``reduce_large(x: f64) -> (r: f64, r_lo: f64, quadrant: i64)``
runs per lane, only for lanes with ``LARGE_ARGUMENT <= |x| < inf``, inside a
branch that vector code takes only when such a lane exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..encoding.module import FunctionBuilder
from ..encoding.types import ValType
from .exact import fast_two_sum, two_product, two_sum
from .vec_builder import VecBuilder, Vec
from .shapes import FORMAT_F64_SCALAR

if TYPE_CHECKING:
    from .ops_trig import Reduced

__all__ = ["LARGE_ARGUMENT", "reduce_large_lanes", "TWO_OVER_PI_CHUNKS"]

#: lanes at or above this magnitude are reduced by Payne-Hanek
LARGE_ARGUMENT = 2.0 ** 20

_F64, _I32, _I64 = ValType.F64, ValType.I32, ValType.I64
_CHUNKS_USED = 8
_HEAD_CUT = 2.0 ** 30
_PIO2_HI, _PIO2_LO = float.fromhex("0x1.921fb54442d18p+0"), float.fromhex("0x1.1a62633145c07p-54")

#: 2/pi in 24-bit chunks, most significant first (chunk i has weight 2**(-24*(i+1)))
TWO_OVER_PI_CHUNKS = (
    0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163, 0xABDEBB,
    0xC561B7, 0x246E3A, 0x424DD2, 0xE00649, 0x2EEA09, 0xD1921C, 0xFE1DEB, 0x1CB129, 0xA73EE8, 0x8235F5,
    0x2EBB44, 0x84E99C, 0x7026B4, 0x5F7E41, 0x3991D6, 0x398353, 0x39F49C, 0x845F8B, 0xBDF928, 0x3B1FF8,
    0x97FFDE, 0x05980F, 0xEF2F11, 0x8B5A0A, 0x6D1F6D, 0x367ECF, 0x27CB09, 0xB74F46, 0x3F669E, 0x5FEA2D,
    0x7527BA, 0xC7EBE5, 0xF17B3D, 0x0739F7, 0x8A5292, 0xEA6BFB, 0x5FB11F, 0x8D5D08, 0x560330, 0x46FC7B,
    0x6BABF0, 0xCFBC20, 0x9AF436, 0x1DA9E3, 0x91615E, 0xE61B08,
)


def _write_chunk_table(fb: FunctionBuilder) -> None:
    """chunk(i: i32) -> f64: TWO_OVER_PI_CHUNKS[i] (the last chunk for i past the end)."""
    w = fb.code
    count = len(TWO_OVER_PI_CHUNKS)
    for _ in range(count):
        w.block()
    w.local_get(0).br_table(list(range(count - 1)), count - 1)
    for chunk in TWO_OVER_PI_CHUNKS:
        w.end().f64_const(float(chunk)).return_()
    w.unreachable()


def _power_of_two(w, exponent_local: int, offset: int) -> None:
    """Push 2**(local + offset) as f64 (the exponent must stay in the normal range)."""
    w.local_get(exponent_local).i32_const(offset + 1023).i32_add().i64_extend_i32_s()
    w.i64_const(52).i64_shl().f64_reinterpret_i64()


def _write_reduce_large(chunk_index: int) -> Callable[[FunctionBuilder], None]:
    """The body of reduce_large_f64 (see the module docstring)."""
    def write(fb: FunctionBuilder) -> None:
        kb = VecBuilder(fb, FORMAT_F64_SCALAR)
        w = fb.code
        bits, e2, i0, sh = fb.add_local(_I64), fb.add_local(_I32), fb.add_local(_I32), fb.add_local(_I32)
        w.local_get(0).i64_reinterpret_f64().local_set(bits)
        w.local_get(bits).i64_const(52).i64_shr_u().i32_wrap_i64().i32_const(0x7FF).i32_and()
        w.i32_const(1075).i32_sub().local_set(e2)
        mantissa = fb.add_local(_I64)
        w.local_get(bits).i64_const((1 << 52) - 1).i64_and().i64_const(1 << 52).i64_or().local_set(mantissa)
        parts = []
        for shift, mask in ((26, None), (0, (1 << 26) - 1)):
            local = fb.add_local(_F64)
            w.local_get(mantissa)
            if shift:
                w.i64_const(shift).i64_shr_u()
            if mask is not None:
                w.i64_const(mask).i64_and()
            w.f64_convert_i64_s().local_set(local)
            parts.append((kb.local(local), shift))
        # i0 = max(0, (e2 - 2) / 24)
        w.local_get(e2).i32_const(2).i32_sub().i32_const(24).i32_div_s().local_tee(i0)
        w.i32_const(0).local_get(i0).i32_const(0).i32_gt_s().select().local_set(i0)
        heads, tails_hi, tails_lo = kb.variable(), kb.variable(), kb.variable()
        for accumulator in (heads, tails_hi, tails_lo):
            kb.assign(accumulator, 0.0)
        chunk, j = fb.add_local(_F64), fb.add_local(_I32)
        with w.loop(label="chunks"):
            # sh = e2 - 24 * (i0 + j + 1): the weight of chunk i0 + j times 2**e2
            w.local_get(i0).local_get(j).i32_add().local_tee(sh).call(chunk_index).local_set(chunk)
            w.local_get(e2).local_get(sh).i32_const(1).i32_add().i32_const(24).i32_mul().i32_sub().local_set(sh)
            for part, shift in parts:
                scale = fb.add_local(_F64)
                _power_of_two(w, sh, shift)
                w.local_set(scale)
                p = kb.let((part * kb.local(chunk)) * kb.local(scale))
                p = kb.let(p - 4.0 * kb.fop("floor", p * 0.25))
                head = kb.let(kb.fop("floor", p * _HEAD_CUT) * (1.0 / _HEAD_CUT))
                kb.assign(heads, heads + head)
                s, e = two_sum(kb, tails_hi, kb.let(p - head))
                kb.assign(tails_lo, tails_lo + e)
                kb.assign(tails_hi, s)
            w.local_get(j).i32_const(1).i32_add().local_tee(j).i32_const(_CHUNKS_USED).i32_lt_s().br_if("chunks")
        heads = kb.let(heads - 4.0 * kb.fop("floor", heads * 0.25))
        k = kb.let(kb.nearest(heads + tails_hi))
        f, f_err = two_sum(kb, kb.let(heads - k), tails_hi)
        f, f_lo = fast_two_sum(kb, f, kb.let(f_err + tails_lo))
        r_hi, r_err = two_product(kb, f, kb.const(_PIO2_HI))
        r, r_lo = fast_two_sum(kb, r_hi, kb.let(r_err + (f * _PIO2_LO + f_lo * _PIO2_HI)))
        # a negative x: the reduction of |x| with every sign flipped
        sign = kb.let(kb.fop("copysign", 1.0, kb.local(0)))
        kb.emit(r * sign)
        kb.emit(r_lo * sign)
        quadrant = fb.add_local(_I64)
        kb.emit(k)
        w.i64_trunc_f64_s().local_set(quadrant)
        w.i64_const(0).local_get(quadrant).i64_sub().local_get(quadrant)
        w.local_get(bits).i64_const(0).i64_lt_s().select().i64_const(3).i64_and()
    return write


def reduce_large_lanes(kb: VecBuilder, x: Vec, reduced: "Reduced") -> "Reduced":
    """``reduced`` with the lanes where ``LARGE_ARGUMENT <= |x| < inf`` replaced by Payne-Hanek's reduction."""
    from .ops_trig import Reduced
    chunk_index = kb.helper("two_over_pi_chunk", (_I32,), (_F64,), _write_chunk_table)
    reduce_index = kb.helper("reduce_large_f64", (_F64,), (_F64, _F64, _I64), _write_reduce_large(chunk_index))
    r, r_lo, quadrant_bits = kb.let(reduced.r), kb.let(reduced.r_lo), kb.let(reduced.quadrant_bits)
    magnitude = kb.let(kb.abs(x))
    large = kb.let(kb.and_(kb.ge(magnitude, LARGE_ARGUMENT), kb.lt(magnitude, float("inf"))))
    fb, w = kb.function, kb.w
    lane_r, lane_r_lo, lane_q = fb.add_local(_F64), fb.add_local(_F64), fb.add_local(_I64)
    kb.emit(large)
    w.v128_any_true()
    with w.if_():
        for lane in range(2):
            kb.emit(large)
            w.i64x2_extract_lane(lane).i64_eqz().i32_eqz()
            with w.if_():
                kb.emit(x)
                w.f64x2_extract_lane(lane).call(reduce_index)
                w.local_set(lane_q).local_set(lane_r_lo).local_set(lane_r)
                for target, scalar, op in ((r, lane_r, "f64x2"), (r_lo, lane_r_lo, "f64x2"),
                                           (quadrant_bits, lane_q, "i64x2")):
                    kb.emit(target)
                    w.local_get(scalar).emit(f"{op}.replace_lane", lane)
                    w.local_set(target.local_index)
    return Reduced(r, r_lo, quadrant_bits)

