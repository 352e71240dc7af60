"""WGSL helpers for 64-bit integers held as ``vec2<u32>`` (x: low word, y: high word).

Signed variants differ from unsigned ones only where the contract does: comparisons, SHR
(arithmetic), DIV/REM (truncating), ABS/SIGN and conversions. Division is shift-and-subtract
from the dividend's leading bit (a u32 division when both fit in 32 bits).
"""

from __future__ import annotations

from .library import helper

__all__: list[str] = []


@helper("u64_add")
def _u64_add() -> str:
    return """
fn u64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}"""


@helper("u64_sub")
def _u64_sub() -> str:
    return """
fn u64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}"""


@helper("u64_mul", deps=("mul_wide",))
def _u64_mul() -> str:
    return """
fn u64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let p = mul_wide(a.x, b.x);
    return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}"""


@helper("u64_less")
def _u64_less() -> str:
    return """
fn u64_less(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}"""


@helper("i64_less", deps=("u64_less",))
def _i64_less() -> str:
    return """
fn i64_less(a: vec2<u32>, b: vec2<u32>) -> bool {
    return u64_less(vec2<u32>(a.x, a.y ^ 0x80000000u), vec2<u32>(b.x, b.y ^ 0x80000000u));
}"""


@helper("u64_shl")
def _u64_shl() -> str:
    return """
fn u64_shl(a: vec2<u32>, amount: u32) -> vec2<u32> {
    let s = amount & 63u;
    if (s == 0u) { return a; }
    if (s >= 32u) { return vec2<u32>(0u, a.x << (s - 32u)); }
    return vec2<u32>(a.x << s, (a.y << s) | (a.x >> (32u - s)));
}"""


@helper("u64_shr")
def _u64_shr() -> str:
    return """
fn u64_shr(a: vec2<u32>, amount: u32) -> vec2<u32> {
    let s = amount & 63u;
    if (s == 0u) { return a; }
    if (s >= 32u) { return vec2<u32>(a.y >> (s - 32u), 0u); }
    return vec2<u32>((a.x >> s) | (a.y << (32u - s)), a.y >> s);
}"""


@helper("i64_shr")
def _i64_shr() -> str:
    return """
fn i64_shr(a: vec2<u32>, amount: u32) -> vec2<u32> {
    let s = amount & 63u;
    let fill = bitcast<u32>(bitcast<i32>(a.y) >> 31u);
    if (s == 0u) { return a; }
    if (s >= 32u) { return vec2<u32>(bitcast<u32>(bitcast<i32>(a.y) >> (s - 32u)), fill); }
    return vec2<u32>((a.x >> s) | (a.y << (32u - s)), bitcast<u32>(bitcast<i32>(a.y) >> s));
}"""


@helper("u64_neg", deps=("u64_sub",))
def _u64_neg() -> str:
    return """
fn u64_neg(a: vec2<u32>) -> vec2<u32> {
    return u64_sub(vec2<u32>(0u, 0u), a);
}"""


@helper("i64_abs", deps=("u64_neg",))
def _i64_abs() -> str:
    return """
fn i64_abs(a: vec2<u32>) -> vec2<u32> {
    return select(a, u64_neg(a), (a.y & 0x80000000u) != 0u);
}"""


@helper("u64_divmod", deps=("u64_less", "u64_sub"))
def _u64_divmod() -> str:
    return """
struct U64DivMod {
    q: vec2<u32>,
    r: vec2<u32>,
}

// unsigned a / b and a % b (b != 0)
fn u64_divmod(a: vec2<u32>, b: vec2<u32>) -> U64DivMod {
    if (a.y == 0u && b.y == 0u) {
        return U64DivMod(vec2<u32>(a.x / b.x, 0u), vec2<u32>(a.x % b.x, 0u));
    }
    var q = vec2<u32>(0u, 0u);
    var r = vec2<u32>(0u, 0u);
    let top = select(i32(firstLeadingBit(a.x)), 32 + i32(firstLeadingBit(a.y)), a.y != 0u);
    for (var i = top; i >= 0; i = i - 1) {
        let bit = select((a.x >> u32(i)) & 1u, (a.y >> u32(i - 32)) & 1u, i >= 32);
        let carry = (r.y >> 31u) != 0u;
        r = vec2<u32>((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
        if (carry || !u64_less(r, b)) {
            r = u64_sub(r, b);
            if (i >= 32) { q.y = q.y | (1u << u32(i - 32)); } else { q.x = q.x | (1u << u32(i)); }
        }
    }
    return U64DivMod(q, r);
}"""


@helper("i64_divmod", deps=("u64_divmod", "i64_abs", "u64_neg"))
def _i64_divmod() -> str:
    return """
// truncating signed a / b and a % b (b != 0, not MIN / -1); the remainder has a's sign
fn i64_divmod(a: vec2<u32>, b: vec2<u32>) -> U64DivMod {
    let na = (a.y & 0x80000000u) != 0u;
    let nb = (b.y & 0x80000000u) != 0u;
    let m = u64_divmod(i64_abs(a), i64_abs(b));
    return U64DivMod(select(m.q, u64_neg(m.q), na != nb), select(m.r, u64_neg(m.r), na));
}"""


@helper("i64_sign")
def _i64_sign() -> str:
    return """
fn i64_sign(a: vec2<u32>) -> vec2<u32> {
    if ((a.y & 0x80000000u) != 0u) { return vec2<u32>(0xffffffffu, 0xffffffffu); }
    return vec2<u32>(select(0u, 1u, a.x != 0u || a.y != 0u), 0u);
}"""


@helper("float_top")
def _float_top() -> str:
    return """
// a nonzero magnitude as (top word normalized to bit 31, sticky: nonzero bits below, exponent of top's bit 31)
struct FloatTop {
    top: u32,
    sticky: bool,
    e: i32,
}"""


@helper("u64_to_float_top", deps=("float_top",))
def _u64_to_float_top() -> str:
    return """
fn u64_to_float_top(m: vec2<u32>) -> FloatTop {
    if (m.y == 0u) {
        let z = countLeadingZeros(m.x);
        return FloatTop(m.x << z, false, 31 - i32(z));
    }
    let z = countLeadingZeros(m.y);
    if (z == 0u) { return FloatTop(m.y, m.x != 0u, 63); }
    return FloatTop((m.y << z) | (m.x >> (32u - z)), (m.x << z) != 0u, 63 - i32(z));
}"""


@helper("f32_to_u64_magnitude")
def _f32_to_u64_magnitude() -> str:
    return """
// trunc(|x|) as a 64-bit magnitude for a finite x with |x| < 2^64
fn f32_to_u64_magnitude(x: f32) -> vec2<u32> {
    let bits = bitcast<u32>(x) & 0x7fffffffu;
    let biased = i32(bits >> 23u);
    if (biased < 127) { return vec2<u32>(0u, 0u); }
    let m = (bits & 0x7fffffu) | 0x800000u;
    let shift = biased - 150;
    if (shift < 0) { return vec2<u32>(m >> u32(-shift), 0u); }
    if (shift >= 32) { return vec2<u32>(0u, m << u32(shift - 32)); }
    if (shift == 0) { return vec2<u32>(m, 0u); }
    return vec2<u32>(m << u32(shift), m >> u32(32 - shift));
}"""


@helper("f32_to_dword", deps=("f32_to_u64_magnitude", "u64_neg"))
def _f32_to_dword() -> str:
    return """
// truncate, saturate to the 64-bit range, NaN -> 0
fn f32_to_dword(x: f32, signed: bool) -> vec2<u32> {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    if (a > 0x7f800000u) { return vec2<u32>(0u, 0u); }
    let negative = (bits & 0x80000000u) != 0u;
    let e = i32(a >> 23u) - 127;
    if (signed) {
        if (e >= 63) { return select(vec2<u32>(0xffffffffu, 0x7fffffffu), vec2<u32>(0u, 0x80000000u), negative); }
        let m = f32_to_u64_magnitude(x);
        return select(m, u64_neg(m), negative);
    }
    if (negative) { return vec2<u32>(0u, 0u); }
    if (e >= 64) { return vec2<u32>(0xffffffffu, 0xffffffffu); }
    return f32_to_u64_magnitude(x);
}"""
