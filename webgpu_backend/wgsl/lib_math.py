"""WGSL transcendentals in f32: our own implementations where lavapipe's builtins are worse than
4 ulp (benchmarks/wgsl_accuracy.py measures both; ``accuracy`` holds the table).

- exp: k = round(x log2 e), r = x - k ln2 in two parts (the first product exact), e^r by a
  degree-7 polynomial, scaled by 2^k in two steps (exact into the subnormal range);
- log, log2, log10: x = 2^e m with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact),
  s = f / (2 + f), log(m) = f - s (f - T(s)) with T a polynomial in s^2;
- sin, cos, tan: |x| < pi/4 directly; otherwise a Payne-Hanek reduction in integer arithmetic
  (the 24-bit significand times a 96-bit window of 2/pi), exact for every finite f32, then the
  quadrant's polynomial;
- tanh, sigmoid, swish, atan2 from the above, with the C special cases (GELU and POW, which
  need their argument in double-f32, are in ``lib_double``).

Polynomial coefficients were fitted for relative error (weighted least squares on Chebyshev
nodes, iterated towards minimax) by ``benchmarks/wgsl_accuracy.py --fit``. The constant parts of
products that must not be merged by the compiler pass through ``opaque_f32``.
"""

from __future__ import annotations

from .library import helper

__all__ = ["two_over_pi_words"]


def _pi_scaled(bits: int) -> int:
    """floor(pi * 2**bits), by Machin's formula in integer arithmetic."""
    guard = bits + 32
    one = 1 << guard

    def arctan_inverse(n: int) -> int:
        total, term, k, sign = 0, one // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k += 2
            sign = -sign
        return total

    return (16 * arctan_inverse(5) - 4 * arctan_inverse(239)) >> 32


def two_over_pi_words(words: int = 8) -> list[int]:
    """The first ``32 * words`` fractional bits of 2/pi as u32 words, most significant first."""
    bits = 32 * words
    value = (2 << (2 * bits + 64)) // _pi_scaled(bits + 64)  # floor(2/pi * 2**bits)
    return [(value >> (32 * (words - 1 - k))) & 0xFFFFFFFF for k in range(words)]


@helper("scale2", deps=())
def _scale2() -> str:
    return """
// p * 2^k for k in -150..128, rounded once (exact unless the result is subnormal)
fn scale2(p: f32, k: i32) -> f32 {
    let k1 = k / 2;
    let k2 = k - k1;
    return p * bitcast<f32>(u32(k1 + 127) << 23u) * bitcast<f32>(u32(k2 + 127) << 23u);
}"""


@helper("exp_parts", deps=("opaque_f32",))
def _exp_parts() -> str:
    return """
// (p, k) with e^x = p * 2^k, p in [0.7, 1.42], for -104 < x < 89
fn exp_parts(x: f32) -> vec2<f32> {
    let k = round(x * 1.4426950216293335);
    let r = opaque_f32(x - k * 0.693145751953125) - k * 1.428606765330187e-06;
    let q = 0.5 + r * (0.1666666567325592 + r * (0.04166647419333458 + r * (0.008333604782819748
        + r * (0.0013932740548625588 + r * 0.00019693576905410737))));
    return vec2<f32>(1.0 + (r + (r * r) * q), k);
}"""


@helper("exp_f32", deps=("is_nan", "exp_parts", "scale2"))
def _exp() -> str:
    return """
fn exp_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (x > 88.72283935546875) { return bitcast<f32>(0x7f800000u ^ launch.zero); }
    if (x < -103.97208404541016) { return 0.0; }
    let p = exp_parts(x);
    return scale2(p.x, i32(p.y));
}"""


@helper("exponent_split", deps=())
def _exponent_split() -> str:
    return """
// (e, m) with x = 2^e m, m in [sqrt(1/2), sqrt(2)), for a positive finite x (subnormals included)
fn exponent_split(x: f32) -> vec2<f32> {
    var b = bitcast<u32>(x);
    var e = -127;
    if (b < 0x00800000u) {
        // normalized on the bits (a device that flushes subnormals would read x * 2^23 as 0)
        let shift = countLeadingZeros(b) - 8u;
        b = ((b << shift) & 0x7fffffu) | 0x00800000u;
        e = e - i32(shift);
    }
    e = e + i32(b >> 23u);
    var m = bitcast<f32>((b & 0x7fffffu) | 0x3f800000u);
    if (m > 1.4142135381698608) {
        m = m * 0.5;
        e = e + 1;
    }
    return vec2<f32>(f32(e), m);
}"""


@helper("log_parts", deps=("exponent_split",))
def _log_parts() -> str:
    return """
// (e, log(m)) with x = 2^e m, m in [sqrt(1/2), sqrt(2)), for a positive finite x
fn log_parts(x: f32) -> vec2<f32> {
    let em = exponent_split(x);
    let e = em.x;
    let f = em.y - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let t = z * (0.6666666269302368 + z * (0.4000157117843628 + z * (0.28417128324508667 + z * 0.26393142342567444)));
    return vec2<f32>(e, f - s * (f - t));
}"""


@helper("log_special", deps=("is_nan",))
def _log_special() -> str:
    # (NaN compares are left out on purpose: WGSL may treat them as "cannot happen")
    return """
// whether log(x) is special (NaN, negative, zero, infinite x) and, if so, its value
fn log_is_special(x: f32) -> bool {
    let b = bitcast<u32>(x);
    return is_nan(x) || b >= 0x80000000u || b == 0u || b == 0x7f800000u;
}

fn log_special(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    if (is_nan(x) || (b > 0x80000000u)) { return bitcast<f32>(0x7fc00000u ^ launch.zero); }
    if ((b & 0x7fffffffu) == 0u) { return bitcast<f32>(0xff800000u ^ launch.zero); }
    return x;
}"""


@helper("log_f32", deps=("log_parts", "log_special"))
def _log() -> str:
    return """
fn log_f32(x: f32) -> f32 {
    if (log_is_special(x)) { return log_special(x); }
    let p = log_parts(x);
    return p.x * 0.693145751953125 + (p.x * 1.428606765330187e-06 + p.y);
}"""


@helper("log2_f32", deps=("log_parts", "log_special"))
def _log2() -> str:
    return """
fn log2_f32(x: f32) -> f32 {
    if (log_is_special(x)) { return log_special(x); }
    let p = log_parts(x);
    return p.x + (p.y * 1.4426950216293335 + p.y * 1.925963033500011e-08);
}"""


@helper("log10_f32", deps=("log_parts", "log_special"))
def _log10() -> str:
    return """
fn log10_f32(x: f32) -> f32 {
    if (log_is_special(x)) { return log_special(x); }
    let p = log_parts(x);
    return p.x * 0.301025390625 + (p.x * 4.605039066518657e-06
        + (p.y * 0.4342944920063019 + p.y * -1.0103049952192578e-08));
}"""


@helper("reduce_half_pi", deps=("mul_wide", "u128_shl", "u128_sub", "u128_clz", ("round_top", 0)))
def _reduce_half_pi() -> str:
    words = ", ".join(f"0x{w:08x}u" for w in two_over_pi_words(8))
    return f"""
var<private> TWO_OVER_PI: array<u32, 8> = array<u32, 8>({words});

struct Reduced {{
    r: f32,
    q: u32,
}}

// a = q pi/2 + r with |r| <= pi/4, for a finite a >= pi/4: the significand times a 96-bit window of
// the bits of 2/pi (every bit that is not a multiple of 4 and enough below the binary point)
fn reduce_half_pi(a: f32) -> Reduced {{
    let bits = bitcast<u32>(a);
    let m = (bits & 0x7fffffu) | 0x800000u;
    let e = i32(bits >> 23u) - 150;
    let first = max(1, e - 1);
    let index = u32(first - 1);
    let word = index / 32u;
    let off = index % 32u;
    var t = array<u32, 4>(TWO_OVER_PI[word], TWO_OVER_PI[word + 1u], TWO_OVER_PI[word + 2u],
                          TWO_OVER_PI[min(word + 3u, 7u)]);
    var w = array<u32, 3>(t[2], t[1], t[0]);
    if (off != 0u) {{
        w = array<u32, 3>((t[2] << off) | (t[3] >> (32u - off)), (t[1] << off) | (t[2] >> (32u - off)),
                          (t[0] << off) | (t[1] >> (32u - off)));
    }}
    let p0 = mul_wide(m, w[0]);
    let p1 = mul_wide(m, w[1]);
    let p2 = mul_wide(m, w[2]);
    let s1 = p0.y + p1.x;
    let c1 = select(0u, 1u, s1 < p0.y);
    let s2 = p1.y + p2.x;
    let c2a = select(0u, 1u, s2 < p1.y);
    let s2c = s2 + c1;
    let c2 = c2a + select(0u, 1u, s2c < s2);
    let product = vec4<u32>(p0.x, s1, s2c, p2.y + c2);
    let point = u32(first + 95 - e);
    var f = u128_shl(product, 126u - point);
    var q = f.w >> 30u;
    f.w = f.w & 0x3fffffffu;
    var negative = false;
    if ((f.w & 0x20000000u) != 0u) {{
        f = u128_sub(vec4<u32>(0u, 0u, 0u, 0x40000000u), f);
        q = q + 1u;
        negative = true;
    }}
    if (all(f == vec4<u32>(0u))) {{ return Reduced(0.0, q & 3u); }}
    let z = u128_clz(f);
    let top = u128_shl(f, z);
    let fraction = round_top_0(top.w, any(top.xyz != vec3<u32>(0u)), 1 - i32(z), negative);
    return Reduced(fraction * 1.5707963705062866 + fraction * -4.371138828673793e-08, q & 3u);
}}"""


@helper("sin_cos_poly")
def _sin_cos_poly() -> str:
    return """
fn sin_poly(r: f32) -> f32 {
    let z = r * r;
    return r + r * (z * (-0.1666666716337204 + z * (0.008333331905305386 + z * (-0.00019840063760057092
        + z * 2.7247453999734716e-06))));
}

fn cos_poly(r: f32) -> f32 {
    let z = r * r;
    return (1.0 - 0.5 * z) + (z * z) * (0.0416666679084301 + z * (-0.00138888880610466
        + z * (2.4800587198114954e-05 + z * -2.7299597604724113e-07)));
}

// sin(q * pi/2 + r), |r| <= pi/4: the one quadrant table of sin, cos and sin_cos (cos is quadrant q + 1);
// one polynomial per call
fn sin_quadrant(q: u32, r: f32) -> f32 {
    switch q & 3u {
        case 0u: { return sin_poly(r); }
        case 1u: { return cos_poly(r); }
        case 2u: { return -sin_poly(r); }
        default: { return -cos_poly(r); }
    }
}"""


@helper("sin_f32", deps=("is_nan", "reduce_half_pi", "sin_cos_poly"))
def _sin() -> str:
    return """
fn sin_f32(x: f32) -> f32 {
    let a = abs(x);
    if (is_nan(x) || a == bitcast<f32>(0x7f800000u ^ launch.zero)) { return bitcast<f32>(0x7fc00000u ^ launch.zero); }
    if (a < 0.785398006439209) { return sin_poly(x); }
    let red = reduce_half_pi(a);
    let v = sin_quadrant(red.q, red.r);
    return select(v, -v, x < 0.0);
}"""


@helper("cos_f32", deps=("is_nan", "reduce_half_pi", "sin_cos_poly"))
def _cos() -> str:
    return """
fn cos_f32(x: f32) -> f32 {
    let a = abs(x);
    if (is_nan(x) || a == bitcast<f32>(0x7f800000u ^ launch.zero)) { return bitcast<f32>(0x7fc00000u ^ launch.zero); }
    if (a < 0.785398006439209) { return cos_poly(a); }
    let red = reduce_half_pi(a);
    return sin_quadrant(red.q + 1u, red.r);
}"""


@helper("sin_cos_f32", deps=("is_nan", "reduce_half_pi", "sin_cos_poly"))
def _sin_cos() -> str:
    return """
// vec2(sin_f32(x), cos_f32(x)) bit for bit, with one range reduction for both
fn sin_cos_f32(x: f32) -> vec2<f32> {
    let a = abs(x);
    if (is_nan(x) || a == bitcast<f32>(0x7f800000u ^ launch.zero)) {
        let nan = bitcast<f32>(0x7fc00000u ^ launch.zero);
        return vec2<f32>(nan, nan);
    }
    if (a < 0.785398006439209) { return vec2<f32>(sin_poly(x), cos_poly(a)); }
    let red = reduce_half_pi(a);
    let s = sin_quadrant(red.q, red.r);
    return vec2<f32>(select(s, -s, x < 0.0), sin_quadrant(red.q + 1u, red.r));
}"""


@helper("tan_f32", deps=("is_nan", "reduce_half_pi", "sin_cos_poly"))
def _tan() -> str:
    return """
fn tan_f32(x: f32) -> f32 {
    let a = abs(x);
    if (is_nan(x) || a == bitcast<f32>(0x7f800000u ^ launch.zero)) { return bitcast<f32>(0x7fc00000u ^ launch.zero); }
    var r = a;
    var q = 0u;
    if (a >= 0.785398006439209) {
        let red = reduce_half_pi(a);
        r = red.r;
        q = red.q;
    }
    var v = sin_poly(r) / cos_poly(r);
    if ((q & 1u) == 1u) { v = -cos_poly(r) / sin_poly(r); }
    return select(v, -v, x < 0.0);
}"""


@helper("tanh_f32", deps=("is_nan", "exp_f32"))
def _tanh() -> str:
    return """
fn tanh_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    let a = abs(x);
    if (a < 0.55) {
        let z = x * x;
        return x + x * (z * (-0.3333333134651184 + z * (0.13333086669445038 + z * (-0.053905144333839417
            + z * (0.021287264302372932 + z * -0.006574282422661781)))));
    }
    var y = 1.0;
    if (a < 9.1) { y = 1.0 - 2.0 / (exp_f32(2.0 * a) + 1.0); }
    return select(y, -y, x < 0.0);
}"""


@helper("sigmoid_f32", deps=("is_nan", "exp_f32"))
def _sigmoid() -> str:
    return """
fn sigmoid_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (x < -20.0) { return exp_f32(x); }
    return 1.0 / (1.0 + exp_f32(-x));
}"""


@helper("swish_f32", deps=("is_nan", "opaque_f32", "exp_f32", "exp_parts", "scale2"))
def _swish() -> str:
    # below -20, x e^x = (x p) 2^k rounds once even where the result is subnormal
    return """
fn swish_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (x < -20.0) {
        if (x < -120.0) { return x * opaque_f32(0.0); }
        let p = exp_parts(x);
        return scale2(x * p.x, i32(p.y));
    }
    return x / (1.0 + exp_f32(-x));
}"""


@helper("is_odd_integer")
def _is_odd_integer() -> str:
    return """
fn is_integer(y: f32) -> bool {
    return floor(y) == y && abs(y) < bitcast<f32>(0x7f800000u ^ launch.zero);
}

fn is_odd_integer(y: f32) -> bool {
    return is_integer(y) && abs(y) < 16777216.0 && (bitcast<u32>(i32(y)) & 1u) == 1u;
}"""


@helper("atan_f32")
def _atan() -> str:
    return """
// atan(t) for t >= 0 (t may be +inf)
fn atan_f32(t: f32) -> f32 {
    var u = t;
    var offset = 0.0;
    var offset_lo = 0.0;
    var flip = false;
    if (u > 1.0) {
        u = 1.0 / u;
        flip = true;
    }
    if (u > 0.2679491924311227) {
        u = (u - 0.5773502588272095) / (1.0 + u * 0.5773502588272095);
        offset = 0.5235987901687622;
        offset_lo = -1.457046305830545e-08;
    }
    let z = u * u;
    let a = offset + (offset_lo + (u + u * (z * (-0.3333333134651184 + z * (0.19999366998672485
        + z * (-0.14236047863960266 + z * 0.09929778426885605))))));
    if (flip) { return 1.5707963705062866 + (-4.371138828673793e-08 - a); }
    return a;
}"""


@helper("atan2_f32", deps=("is_nan", "quiet_nan", "atan_f32"))
def _atan2() -> str:
    return """
// C atan2(y, x)
fn atan2_f32(y: f32, x: f32) -> f32 {
    if (is_nan(x) || is_nan(y)) { return quiet_nan(); }
    let sign = bitcast<u32>(y) & 0x80000000u;
    let x_negative = (bitcast<u32>(x) & 0x80000000u) != 0u;
    let inf = bitcast<f32>(0x7f800000u ^ launch.zero);
    var a: f32;
    if (y == 0.0) {
        a = select(0.0, 3.1415927410125732, x_negative);
    } else if (x == 0.0) {
        a = 1.5707963705062866;
    } else if (abs(y) == inf) {
        if (abs(x) == inf) { a = select(0.7853981852531433, 2.356194496154785, x_negative); }
        else { a = 1.5707963705062866; }
    } else if (abs(x) == inf) {
        a = select(0.0, 3.1415927410125732, x_negative);
    } else {
        a = atan_f32(abs(y) / abs(x));
        if (x_negative) { a = 3.1415927410125732 + (-8.742277657347586e-08 - a); }
    }
    return bitcast<f32>(bitcast<u32>(a) | sign);
}"""
