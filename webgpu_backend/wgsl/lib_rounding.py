"""Correctly rounded f32 division and square root in integer arithmetic.

WGSL lets a device's ``/`` be 2.5 ulp off and ``sqrt`` inherit ``inverseSqrt``'s error, and real GPUs use
that room (an NVIDIA H200 under Vulkan was 1 ulp off for DIV, RCP, SQRT and RSQRT on ordinary operands);
the contract asks for IEEE round to nearest even. ``div_f32`` and ``sqrt_f32`` read their operands' bits
(subnormals included, whatever the device does with subnormal floats), find 25 bits of the result by
restoring long division / digit-by-digit square root in u32 arithmetic, and round once with the rest as a
sticky bit; a subnormal quotient is rounded once to the subnormal grid. NaN operands give the quiet NaN.
"""

from __future__ import annotations

from .library import helper

__all__: list[str] = []


@helper("unpack_f32", deps=())
def _unpack_f32() -> str:
    return """
// (biased exponent, 24-bit significand with the hidden one) of a finite nonzero |x| given as bits; a
// subnormal is normalized (its exponent goes to 1 - shift)
struct F32Parts { e: i32, m: u32 }
fn unpack_f32(bits: u32) -> F32Parts {
    let e = i32(bits >> 23u);
    let m = bits & 0x7fffffu;
    if (e == 0) {
        let shift = countLeadingZeros(m) - 8u;
        return F32Parts(1 - i32(shift), m << shift);
    }
    return F32Parts(e, m | 0x800000u);
}"""


@helper("div_f32", deps=("unpack_f32", "quiet_nan"))
def _div_f32() -> str:
    return """
fn div_f32(a: f32, b: f32) -> f32 {
    let ab = bitcast<u32>(a);
    let bb = bitcast<u32>(b);
    let sign = (ab ^ bb) & 0x80000000u;
    let aa = ab & 0x7fffffffu;
    let ba = bb & 0x7fffffffu;
    if (aa > 0x7f800000u || ba > 0x7f800000u) { return quiet_nan(); }
    if (aa == 0x7f800000u) {
        if (ba == 0x7f800000u) { return quiet_nan(); }
        return bitcast<f32>(sign | 0x7f800000u);
    }
    if (ba == 0x7f800000u) { return bitcast<f32>(sign); }
    if (ba == 0u) {
        if (aa == 0u) { return quiet_nan(); }
        return bitcast<f32>(sign | 0x7f800000u);
    }
    if (aa == 0u) { return bitcast<f32>(sign); }
    let pa = unpack_f32(aa);
    let pb = unpack_f32(ba);
    var rem = pa.m;
    var e = pa.e - pb.e + 127;
    if (rem < pb.m) { rem = rem << 1u; e = e - 1; }
    // rem in [mb, 2 mb): 25 quotient bits, the first one 1
    var q = 0u;
    for (var i = 0u; i < 25u; i = i + 1u) {
        q = q << 1u;
        if (rem >= pb.m) { rem = rem - pb.m; q = q | 1u; }
        rem = rem << 1u;
    }
    var sticky = rem != 0u;
    // q in [2^24, 2^25) is the significand and a round bit; a subnormal result drops 1 - e more bits
    var shift = 1u;
    if (e < 1) { shift = min(u32(1 - e) + 1u, 31u); e = 0; }
    let kept = q >> shift;
    let round = (q >> (shift - 1u)) & 1u;
    sticky = sticky || (q & ((1u << (shift - 1u)) - 1u)) != 0u;
    var m = kept + select(0u, 1u, round == 1u && (sticky || (kept & 1u) == 1u));
    if (e == 0) { return bitcast<f32>(sign | m); }   // m == 2^23 is the smallest normal's bits
    if (m == 0x1000000u) { m = 0x800000u; e = e + 1; }
    if (e >= 255) { return bitcast<f32>(sign | 0x7f800000u); }
    return bitcast<f32>(sign | (u32(e) << 23u) | (m & 0x7fffffu));
}"""


@helper("sqrt_f32", deps=("unpack_f32", "quiet_nan"))
def _sqrt_f32() -> str:
    return """
fn sqrt_f32(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let mag = bits & 0x7fffffffu;
    if (mag > 0x7f800000u) { return quiet_nan(); }
    if (mag == 0u) { return x; }
    if ((bits & 0x80000000u) != 0u) { return quiet_nan(); }
    if (mag == 0x7f800000u) { return x; }
    let p = unpack_f32(mag);
    // x = m 2^(E - 23), E unbiased; the radicand m 2^s (s = 25 or 26, 49 or 50 bits) makes E - 23 - s even
    let big_e = p.e - 127;
    let s = select(26, 25, (big_e & 1) == 0);
    var rem = 0u;
    var root = 0u;
    for (var i = 0; i < 25; i = i + 1) {
        // the next two radicand bits, j = 49 - 2i and j - 1, of m << s
        let j = 49 - 2 * i;
        let hi = select(0u, (p.m >> u32(j - s)) & 1u, j >= s && j - s < 24);
        let lo = select(0u, (p.m >> u32(j - 1 - s)) & 1u, j - 1 >= s && j - 1 - s < 24);
        rem = (rem << 2u) | (hi << 1u) | lo;
        let trial = (root << 2u) | 1u;
        root = root << 1u;
        if (rem >= trial) { rem = rem - trial; root = root | 1u; }
    }
    // root in [2^24, 2^25): 24 significand bits and a round bit; sqrt(x) = root 2^h, exactly when rem == 0
    let h = (big_e - 23 - s) / 2;
    var e = h + 151;   // the significand root >> 1 weighs 2^(h + 1 + 23); biased
    let kept = root >> 1u;
    let round = root & 1u;
    var m = kept + select(0u, 1u, round == 1u && (rem != 0u || (kept & 1u) == 1u));
    if (m == 0x1000000u) { m = 0x800000u; e = e + 1; }
    return bitcast<f32>((u32(e) << 23u) | (m & 0x7fffffu));
}"""
