"""WGSL helpers in double-f32 arithmetic (a value as an unevaluated sum hi + lo of two f32), for the
transcendentals whose argument must be known far better than f32: GELU (e^(-2z) for |2z| up to
88 magnifies z's error 88 times) and POW (2^(y log2 x) likewise).

The error-free transformations (``two_sum``; ``two_prod`` by Dekker's splitting, since WGSL's
``fma`` may round twice) only hold when every operation rounds once, as written: each
intermediate passes through ``opaque_f32`` so the shader compiler neither reassociates nor
simplifies ``t - (t - a)`` to ``a``.
"""

from __future__ import annotations

from .library import helper

__all__: list[str] = []


@helper("two_sum", deps=("opaque_f32",))
def _two_sum() -> str:
    return """
// (s, e) with s = round(a + b) and a + b = s + e exactly
fn two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = opaque_f32(a + b);
    let bb = opaque_f32(s - a);
    let e = opaque_f32(a - opaque_f32(s - bb)) + opaque_f32(b - bb);
    return vec2<f32>(s, e);
}"""


@helper("two_prod", deps=("opaque_f32",))
def _two_prod() -> str:
    return """
// hi + lo = a with hi holding the upper 12 significand bits (Veltkamp's split)
fn split12(a: f32) -> vec2<f32> {
    let t = opaque_f32(a * 4097.0);
    let hi = opaque_f32(t - opaque_f32(t - a));
    return vec2<f32>(hi, opaque_f32(a - hi));
}

// (p, e) with p = round(a b) and a b = p + e exactly (|a|, |b| < 2^100, no underflow)
fn two_prod(a: f32, b: f32) -> vec2<f32> {
    let p = opaque_f32(a * b);
    let x = split12(a);
    let y = split12(b);
    let e = opaque_f32(opaque_f32(opaque_f32(opaque_f32(x.x * y.x) - p) + opaque_f32(x.x * y.y))
        + opaque_f32(x.y * y.x)) + opaque_f32(x.y * y.y);
    return vec2<f32>(p, e);
}

// (hi, lo) * (hi, lo) to about 2^-44 relative
fn df_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let p = two_prod(a.x, b.x);
    return two_sum(p.x, opaque_f32(p.y + opaque_f32(opaque_f32(a.x * b.y) + opaque_f32(a.y * b.x))));
}

// (hi, lo) + (hi, lo)
fn df_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let s = two_sum(a.x, b.x);
    return two_sum(s.x, opaque_f32(s.y + opaque_f32(a.y + b.y)));
}"""


@helper("exp_df", deps=("exp_parts", "scale2", "opaque_f32"))
def _exp_df() -> str:
    return """
// e^(hi + lo) for -104 < hi < 89 and |lo| tiny: e^hi (1 + lo), rounded once at the end
fn exp_df(u: vec2<f32>) -> f32 {
    let p = exp_parts(u.x);
    return scale2(p.x + opaque_f32(p.x * u.y), i32(p.y));
}"""


@helper("gelu_f32", deps=("is_nan", "opaque_f32", "two_sum", "two_prod", "exp_f32", "exp_df", "exp_parts",
                              "scale2"))
def _gelu_precise() -> str:
    # u = -2 sqrt(2/pi) (x + 0.044715 x^3) in double-f32; GELU(x) = x / (1 + e^u)
    return """
fn gelu_f32(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (abs(x) > 12.0) {
        if (x > 0.0) { return x; }
        return x * opaque_f32(0.0);
    }
    let x2 = two_prod(x, x);
    let x3 = two_prod(x, x2.x);
    let x3lo = opaque_f32(x3.y + opaque_f32(x * x2.y));
    let c = two_prod(0.044714998453855515, x3.x);
    let clo = opaque_f32(c.y + opaque_f32(opaque_f32(0.044714998453855515 * x3lo)
        + opaque_f32(1.5461444347053543e-09 * x3.x)));
    let inner = two_sum(x, c.x);
    let innerlo = opaque_f32(inner.y + clo);
    let k = two_prod(-1.5957691669464111, inner.x);
    let klo = opaque_f32(k.y + opaque_f32(opaque_f32(-1.5957691669464111 * innerlo)
        + opaque_f32(4.534068054340423e-08 * inner.x)));
    let u = two_sum(k.x, klo);
    if (u.x > 20.0) {
        // 1 + e^u is e^u to f32: x e^-u = (x p) 2^k with e^(-u) = p 2^k, rounded once
        let p = exp_parts(-u.x);
        return scale2(x * (p.x - opaque_f32(p.x * u.y)), i32(p.y));
    }
    return x / (1.0 + exp_df(u));
}"""


@helper("pow_f32", deps=("is_nan", "quiet_nan", "is_odd_integer", "exponent_split", "two_sum", "two_prod",
                         "exp_df", "opaque_f32"))
def _pow() -> str:
    # log2 |x| in double-f32 (from exponent_split's m: s = f / (2 + f) refined by its residual), times y,
    # then 2^t = e^(t ln 2) with t split into an integer and a small double-f32 part
    return """
fn log2_df(ax: f32) -> vec2<f32> {
    let em = exponent_split(ax);
    let e = em.x;
    let f = em.y - 1.0;
    let d = two_sum(2.0, f);
    let s = f / d.x;
    let p = two_prod(s, d.x);
    let sl = opaque_f32(opaque_f32(opaque_f32(f - p.x) - p.y) - opaque_f32(s * d.y)) / d.x;
    let z = s * s;
    let q = s * z * (0.6666666269302368 + z * (0.4000157117843628 + z * (0.28417128324508667
        + z * 0.26393142342567444)));
    let ln = two_sum(2.0 * s, opaque_f32(2.0 * sl + q));
    let l2 = two_prod(ln.x, 1.4426950216293335);
    let l2lo = opaque_f32(l2.y + opaque_f32(opaque_f32(ln.x * 1.925963033500011e-08)
        + opaque_f32(ln.y * 1.4426950216293335)));
    let whole = two_sum(e, l2.x);
    return two_sum(whole.x, opaque_f32(whole.y + l2lo));
}

// C pow(x, y)
fn pow_f32(x: f32, y: f32) -> f32 {
    let inf = bitcast<f32>(0x7f800000u ^ launch.zero);
    if (y == 0.0 || x == 1.0) { return 1.0; }
    if (is_nan(x) || is_nan(y)) { return quiet_nan(); }
    let ax = abs(x);
    let odd = is_odd_integer(y);
    if (abs(y) == inf) {
        if (ax == 1.0) { return 1.0; }
        return select(0.0, inf, (ax > 1.0) == (y > 0.0));
    }
    if (ax == 0.0 || ax == inf) {
        let magnitude = select(0.0, inf, (ax == 0.0) == (y < 0.0));
        return select(magnitude, bitcast<f32>(bitcast<u32>(magnitude) | (bitcast<u32>(x) & 0x80000000u)), odd);
    }
    if (x < 0.0 && !is_integer(y)) { return quiet_nan(); }
    let l = log2_df(ax);
    var v: f32;
    if (abs(y) > 1.0e6 || abs(l.x * y) > 300.0) {
        v = select(0.0, inf, l.x * y > 0.0);
    } else {
        let t = two_prod(y, l.x);
        let tlo = opaque_f32(t.y + opaque_f32(y * l.y));
        let n = round(t.x);
        let r = two_sum(opaque_f32(t.x - n), tlo);
        let scaled = two_prod(r.x, 0.6931471824645996);
        let slo = opaque_f32(scaled.y + opaque_f32(opaque_f32(r.x * -1.9046542121259336e-09)
            + opaque_f32(r.y * 0.6931471824645996)));
        let u = two_sum(scaled.x, slo);
        if (n > 130.0) {
            v = inf;
        } else if (n < -160.0) {
            v = 0.0;
        } else {
            let half = i32(n) / 2;
            v = exp_df(u) * bitcast<f32>(u32(half + 127) << 23u) * bitcast<f32>(u32(i32(n) - half + 127) << 23u);
        }
    }
    return select(v, -v, x < 0.0 && odd);
}"""
