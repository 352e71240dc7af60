"""WGSL helpers for floats: NaN-safe MIN/MAX/SIGN, rounding to F16/BF16, exact fmod and FMA,
and the one correctly rounding routine (``round_top``) that FMA and int -> float conversions share.

Why so explicit: WGSL lets an implementation assume there are no NaNs or infinities, and
Mesa's compiler applies "inexact" algebraic rules (``x - x -> 0``, ``x * 0.0 -> 0``, ``a*b + c``
-> fused). NaN tests therefore look at the bits, constants and products that must not be
folded or fused pass through ``opaque_f32`` (an XOR with ``launch.zero``, a runtime 0 the
compiler cannot see), and FMA is computed exactly in integer arithmetic (lavapipe's ``fma``
rounds twice). Comparisons and MIN/MAX order the bits (``float_key``): WGSL lets a device flush
subnormals to zero, and SwiftShader does so in comparisons. Without shader-f16, f16 rounding
is integer code too (``f16_bits``/``f16_value``): ``pack2x16float`` of a value outside f16's
finite range is indeterminate (SwiftShader gives NaN for infinities).

Formats for ``round_top``: 0 = f32 (24 bits), 1 = f16 (11 bits), 2 = bf16 (8 bits).
"""

from __future__ import annotations

from .library import helper, helper_family

__all__ = ["FORMAT_CODES", "FORMAT_PARAMS"]

#: float format name -> round_top family parameter
FORMAT_CODES = {"f32": 0, "f16": 1, "bf16": 2}
#: family parameter -> (significand bits with the hidden one, minimum normal exponent, maximum exponent)
FORMAT_PARAMS = {0: (24, -126, 127), 1: (11, -14, 15), 2: (8, -126, 127)}


@helper("opaque_f32")
def _opaque_f32() -> str:
    return """
fn opaque_f32(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ launch.zero);
}"""


@helper("opaque_u32")
def _opaque_u32() -> str:
    return """
fn opaque_u32(x: u32) -> u32 {
    return x ^ launch.zero;
}"""


@helper("is_nan")
def _is_nan() -> str:
    return """
fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}"""


@helper("quiet_nan")
def _quiet_nan() -> str:
    return """
fn quiet_nan() -> f32 {
    return bitcast<f32>(0x7fc00000u ^ launch.zero);
}"""


@helper("float_key")
def _float_key() -> str:
    # an i32 ordered as the (non-NaN) floats are, -0 and +0 equal, subnormals exact
    return """
fn float_key(x: f32) -> i32 {
    let b = bitcast<i32>(x);
    return select(b, -(b & 0x7fffffff), b < 0);
}"""


@helper("fmin", deps=("is_nan", "quiet_nan", "float_key"))
def _fmin() -> str:
    return """
fn fmin(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return quiet_nan(); }
    let ka = float_key(a);
    let kb = float_key(b);
    if (ka == kb) { return bitcast<f32>(bitcast<u32>(a) | bitcast<u32>(b)); }
    return select(b, a, ka < kb);
}"""


@helper("fmax", deps=("is_nan", "quiet_nan", "float_key"))
def _fmax() -> str:
    return """
fn fmax(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return quiet_nan(); }
    let ka = float_key(a);
    let kb = float_key(b);
    if (ka == kb) { return bitcast<f32>(bitcast<u32>(a) & bitcast<u32>(b)); }
    return select(b, a, ka > kb);
}"""


@helper("fsign", deps=("is_nan",))
def _fsign() -> str:
    return """
fn fsign(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if (is_nan(x) || (bits & 0x7fffffffu) == 0u) { return x; }
    return bitcast<f32>((bits & 0x80000000u) | 0x3f800000u);
}"""


@helper("round_f16_packed", deps=("f16_bits", "f16_value"))
def _round_f16_packed() -> str:
    return """
fn round_f16_packed(x: f32) -> f32 {
    return f16_value(f16_bits(x));
}"""


@helper("round_bf16")
def _round_bf16() -> str:
    # nearest even on the bits; a carry into the exponent gives inf exactly; NaN stays a quiet NaN
    return """
fn round_bf16(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>((bits & 0xffff0000u) | 0x00400000u); }
    let bias = 0x7fffu + ((bits >> 16u) & 1u);
    return bitcast<f32>((bits + bias) & 0xffff0000u);
}"""


@helper("f16_bits")
def _f16_bits() -> str:
    # round to nearest even in integer arithmetic; NaN keeps its top payload bits (as NumPy does)
    return """
fn f16_bits(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let sign = (b >> 16u) & 0x8000u;
    let mag = b & 0x7fffffffu;
    if (mag >= 0x7f800000u) {
        let payload = (mag & 0x007fffffu) >> 13u;
        return sign | 0x7c00u | select(payload, 1u, payload == 0u && mag != 0x7f800000u);
    }
    if (mag >= 0x477ff000u) { return sign | 0x7c00u; }
    if (mag < 0x33000000u) { return sign; }
    var scaled: u32;
    var shift: u32;
    if (mag < 0x38800000u) {
        scaled = (mag & 0x007fffffu) | 0x00800000u;
        shift = 126u - (mag >> 23u);
    } else {
        scaled = mag - 0x38000000u;
        shift = 13u;
    }
    let kept = scaled >> shift;
    let rest = scaled & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    return sign | (kept + select(0u, 1u, rest > half || (rest == half && (kept & 1u) == 1u)));
}"""


@helper("f16_value")
def _f16_value() -> str:
    return """
fn f16_value(bits: u32) -> f32 {
    let sign = (bits & 0x8000u) << 16u;
    let exponent = (bits >> 10u) & 0x1fu;
    let mantissa = bits & 0x3ffu;
    if (exponent == 0x1fu) { return bitcast<f32>(sign | 0x7f800000u | (mantissa << 13u)); }
    if (exponent == 0u) { return bitcast<f32>(sign | bitcast<u32>(f32(mantissa) * 5.9604644775390625e-08)); }
    return bitcast<f32>(sign | ((exponent + 112u) << 23u) | (mantissa << 13u));
}"""


@helper_family("round_top")
def _round_top(fmt: int) -> str:
    precision, emin, emax = FORMAT_PARAMS[fmt]
    return f"""
// The value top * 2^(e - 31) (top's bit 31 set; sticky: nonzero bits below top), rounded to
// nearest even in format {fmt} ({precision} bits, exponents {emin}..{emax}), as an exact f32.
fn round_top_{fmt}(top: u32, sticky: bool, e: i32, negative: bool) -> f32 {{
    let sign = select(0u, 0x80000000u, negative);
    var lsb = max(e - {precision - 1}, {emin - precision + 1});
    let shift = u32(lsb - (e - 31));
    var mant = 0u;
    if (shift == 32u) {{
        mant = select(1u, 0u, top == 0x80000000u && !sticky);
    }} else if (shift < 32u) {{
        mant = top >> shift;
        let round_bit = (top >> (shift - 1u)) & 1u;
        let below = (top & ((1u << (shift - 1u)) - 1u)) != 0u || sticky;
        if (round_bit == 1u && (below || (mant & 1u) == 1u)) {{ mant = mant + 1u; }}
        if (mant == {1 << precision}u) {{ mant = {1 << (precision - 1)}u; lsb = lsb + 1; }}
    }}
    if (mant == 0u) {{ return bitcast<f32>(sign); }}
    let msb = i32(firstLeadingBit(mant));
    let exponent = lsb + msb;
    if (exponent > {emax}) {{ return bitcast<f32>(sign | 0x7f800000u); }}
    if (exponent >= -126) {{
        return bitcast<f32>(sign | (u32(exponent + 127) << 23u) | ((mant << u32(23 - msb)) & 0x7fffffu));
    }}
    return bitcast<f32>(sign | (mant << u32(lsb + 149)));
}}"""


@helper("fmod", deps=("is_nan", "quiet_nan"))
def _fmod() -> str:
    # C fmod, exact: the significand of x reduced modulo y's, 7 exponent steps at a time
    return """
fn fmod(x: f32, y: f32) -> f32 {
    let xb = bitcast<u32>(x);
    let yb = bitcast<u32>(y);
    let xa = xb & 0x7fffffffu;
    let ya = yb & 0x7fffffffu;
    if (is_nan(x) || is_nan(y) || xa == 0x7f800000u || ya == 0u) { return quiet_nan(); }
    if (ya == 0x7f800000u || xa < ya) { return x; }
    let sign = xb & 0x80000000u;
    var ex = i32(xa >> 23u);
    var ey = i32(ya >> 23u);
    var mx = select(xa & 0x7fffffu, (xa & 0x7fffffu) | 0x800000u, ex != 0);
    var my = select(ya & 0x7fffffu, (ya & 0x7fffffu) | 0x800000u, ey != 0);
    ex = max(ex, 1);
    ey = max(ey, 1);
    mx = mx % my;
    for (var k = ex - ey; k > 0; k = k - 7) {
        mx = (mx << u32(min(k, 7))) % my;
    }
    if (mx == 0u) { return bitcast<f32>(sign); }
    // mx * 2^(ey - 150) is exact in f32 (|result| < |y|): normalize it
    let msb = i32(firstLeadingBit(mx));
    var e = ey + msb - 23;
    if (e >= 1) {
        return bitcast<f32>(sign | (u32(e) << 23u) | ((mx << u32(23 - msb)) & 0x7fffffu));
    }
    return bitcast<f32>(sign | (mx << u32(ey - 1)));
}"""


@helper("u128_shr_sticky")
def _u128_shr_sticky() -> str:
    return """
// v >> s for a 128-bit v (x: lowest word); bits shifted out are OR-ed into bit 0
fn u128_shr_sticky(v: vec4<u32>, s: u32) -> vec4<u32> {
    if (s == 0u) { return v; }
    if (s >= 128u) { return vec4<u32>(select(0u, 1u, any(v != vec4<u32>(0u))), 0u, 0u, 0u); }
    var w = array<u32, 4>(v.x, v.y, v.z, v.w);
    var out = array<u32, 4>(0u, 0u, 0u, 0u);
    let words = s / 32u;
    let bits = s % 32u;
    var lost = false;
    for (var i = 0u; i < words; i = i + 1u) { lost = lost || w[i] != 0u; }
    if (bits != 0u) { lost = lost || (w[words] << (32u - bits)) != 0u; }
    for (var i = 0u; i + words < 4u; i = i + 1u) {
        var word = w[i + words] >> bits;
        if (bits != 0u && i + words + 1u < 4u) { word = word | (w[i + words + 1u] << (32u - bits)); }
        out[i] = word;
    }
    if (lost) { out[0] = out[0] | 1u; }
    return vec4<u32>(out[0], out[1], out[2], out[3]);
}"""


@helper("u128_shl")
def _u128_shl() -> str:
    return """
fn u128_shl(v: vec4<u32>, s: u32) -> vec4<u32> {
    var w = array<u32, 4>(v.x, v.y, v.z, v.w);
    var out = array<u32, 4>(0u, 0u, 0u, 0u);
    let words = s / 32u;
    let bits = s % 32u;
    for (var i = words; i < 4u; i = i + 1u) {
        var word = w[i - words] << bits;
        if (bits != 0u && i > words) { word = word | (w[i - words - 1u] >> (32u - bits)); }
        out[i] = word;
    }
    return vec4<u32>(out[0], out[1], out[2], out[3]);
}"""


@helper("u128_clz")
def _u128_clz() -> str:
    return """
fn u128_clz(v: vec4<u32>) -> u32 {
    if (v.w != 0u) { return countLeadingZeros(v.w); }
    if (v.z != 0u) { return 32u + countLeadingZeros(v.z); }
    if (v.y != 0u) { return 64u + countLeadingZeros(v.y); }
    return 96u + countLeadingZeros(v.x);
}"""


@helper("u128_add")
def _u128_add() -> str:
    return """
fn u128_add(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    let s = a + b;
    let c0 = select(0u, 1u, s.x < a.x);
    let y = s.y + c0;
    let c1 = select(0u, 1u, s.y < a.y || y < c0);
    let z = s.z + c1;
    let c2 = select(0u, 1u, s.z < a.z || z < c1);
    return vec4<u32>(s.x, y, z, s.w + c2);
}"""


@helper("u128_sub")
def _u128_sub() -> str:
    return """
fn u128_sub(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    let d = a - b;
    let b0 = select(0u, 1u, a.x < b.x);
    let y = d.y - b0;
    let b1 = select(0u, 1u, a.y < b.y || d.y < b0);
    let z = d.z - b1;
    let b2 = select(0u, 1u, a.z < b.z || d.z < b1);
    return vec4<u32>(d.x, y, z, d.w - b2);
}"""


@helper("u128_less")
def _u128_less() -> str:
    return """
fn u128_less(a: vec4<u32>, b: vec4<u32>) -> bool {
    if (a.w != b.w) { return a.w < b.w; }
    if (a.z != b.z) { return a.z < b.z; }
    if (a.y != b.y) { return a.y < b.y; }
    return a.x < b.x;
}"""


@helper("mul_wide")
def _mul_wide() -> str:
    return """
// the 64-bit product of two u32 as vec2 (low, high)
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}"""


@helper("fma_f32", deps=("is_nan", "quiet_nan", "mul_wide", "u128_shl", "u128_shr_sticky", "u128_clz", "u128_add",
                         "u128_sub", "u128_less", ("round_top", 0)))
def _fma_f32() -> str:
    # a*b is exact in 48 bits; both terms are placed in a 128-bit window with their leading bit
    # at bit 125 of their own copy, the smaller is shifted right with a sticky bit (rounding to
    # odd keeps every later nearest-even rounding correct), then added or subtracted and rounded once
    return """
fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    let ab = bitcast<u32>(a);
    let bb = bitcast<u32>(b);
    let cb = bitcast<u32>(c);
    if (is_nan(a) || is_nan(b) || is_nan(c)) { return quiet_nan(); }
    let aa = ab & 0x7fffffffu;
    let ba = bb & 0x7fffffffu;
    let ca = cb & 0x7fffffffu;
    let sp = (ab ^ bb) & 0x80000000u;
    let sc = cb & 0x80000000u;
    if (aa == 0x7f800000u || ba == 0x7f800000u) {
        if (aa == 0u || ba == 0u) { return quiet_nan(); }
        if (ca == 0x7f800000u && sc != sp) { return quiet_nan(); }
        return bitcast<f32>(sp | 0x7f800000u);
    }
    if (ca == 0x7f800000u) { return c; }
    if (aa == 0u || ba == 0u) {
        if (ca == 0u) { return bitcast<f32>(sp & sc); }
        return c;
    }
    let ea = max(i32(aa >> 23u), 1);
    let eb = max(i32(ba >> 23u), 1);
    let ma = select(aa & 0x7fffffu, (aa & 0x7fffffu) | 0x800000u, (aa >> 23u) != 0u);
    let mb = select(ba & 0x7fffffu, (ba & 0x7fffffu) | 0x800000u, (ba >> 23u) != 0u);
    let p = mul_wide(ma, mb);
    var pv = vec4<u32>(p.x, p.y, 0u, 0u);
    // exponent of bit 0 of pv: (ea - 150) + (eb - 150)
    let pshift = u128_clz(pv) - 2u;
    pv = u128_shl(pv, pshift);
    let pe = ea + eb - 300 - i32(pshift);
    if (ca == 0u) {
        let z = u128_clz(pv);
        let top = u128_shl(pv, z);
        return round_top_0(top.w, any(top.xyz != vec3<u32>(0u)), pe + 127 - i32(z), sp != 0u);
    }
    let ec = max(i32(ca >> 23u), 1);
    let mc = select(ca & 0x7fffffu, (ca & 0x7fffffu) | 0x800000u, (ca >> 23u) != 0u);
    var cv = vec4<u32>(mc, 0u, 0u, 0u);
    let cshift = u128_clz(cv) - 2u;
    cv = u128_shl(cv, cshift);
    let ce = ec - 150 - i32(cshift);
    var big = pv;
    var small = cv;
    var e = pe;
    var sbig = sp;
    var ssmall = sc;
    var d = pe - ce;
    if (ce > pe || (ce == pe && u128_less(pv, cv))) {
        big = cv; small = pv; e = ce; sbig = sc; ssmall = sp; d = ce - pe;
    }
    small = u128_shr_sticky(small, u32(min(d, 200)));
    var sum: vec4<u32>;
    if (sbig == ssmall) {
        sum = u128_add(big, small);
    } else {
        if (all(big == small)) { return 0.0; }
        sum = u128_sub(big, small);
    }
    let z = u128_clz(sum);
    let top = u128_shl(sum, z);
    return round_top_0(top.w, any(top.xyz != vec3<u32>(0u)), e + 127 - i32(z), sbig != 0u);
}"""


@helper("u32_to_float_parts")
def _u32_to_float_parts() -> str:
    return """
// (top, exponent of top's bit 31) of a nonzero u32 magnitude, for round_top
fn u32_top(m: u32) -> vec2<i32> {
    let z = countLeadingZeros(m);
    return vec2<i32>(bitcast<i32>(m << z), 31 - i32(z));
}"""


@helper("f32_to_word")
def _f32_to_word() -> str:
    # truncate toward zero, saturate to [lo, hi] (given as exact integer-valued bounds), NaN -> 0
    return """
fn f32_to_word(x: f32, bits: u32, signed: bool) -> u32 {
    let xb = bitcast<u32>(x);
    if ((xb & 0x7fffffffu) > 0x7f800000u) { return 0u; }
    let t = trunc(x);
    let mask = select(0xffffffffu, (1u << bits) - 1u, bits < 32u);
    if (signed) {
        let limit = bitcast<f32>(u32(127 + i32(bits) - 1) << 23u);
        if (t >= limit) { return mask >> 1u; }
        if (t < -limit) { return (mask >> 1u) + 1u; }
        return bitcast<u32>(i32(t)) & mask;
    }
    let limit = bitcast<f32>(u32(127 + i32(bits)) << 23u);
    if (t >= limit) { return mask; }
    if (t <= 0.0) { return 0u; }
    return u32(t) & mask;
}"""
