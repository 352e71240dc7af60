"""WGSL helpers for the extended integers (I128 … U4096) held as ``array<u32, N>`` limbs.

Every helper is a family instantiated per limb count N (``wide_add_4`` for 128 bits). Values
wrap modulo 2**(32 N). Division is shift-and-subtract from the dividend's leading bit, with a
short-division fast path for one-limb divisors.
"""

from __future__ import annotations

from .library import helper_family

__all__: list[str] = []


def _sig(n: int, name: str, params: str, result: str) -> str:
    return f"fn {name}_{n}({params}) -> {result}"


def _arr(n: int) -> str:
    return f"array<u32, {n}>"


@helper_family("wide_add")
def _wide_add(n: int) -> str:
    a = _arr(n)
    return f"""
{_sig(n, "wide_add", f"x: {a}, y: {a}", a)} {{
    var a = x;
    var b = y;
    var out: {a};
    var carry = 0u;
    for (var i = 0u; i < {n}u; i = i + 1u) {{
        let s = a[i] + b[i];
        let t = s + carry;
        carry = select(0u, 1u, s < a[i] || t < s);
        out[i] = t;
    }}
    return out;
}}"""


@helper_family("wide_sub")
def _wide_sub(n: int) -> str:
    a = _arr(n)
    return f"""
{_sig(n, "wide_sub", f"x: {a}, y: {a}", a)} {{
    var a = x;
    var b = y;
    var out: {a};
    var borrow = 0u;
    for (var i = 0u; i < {n}u; i = i + 1u) {{
        let d = a[i] - b[i];
        out[i] = d - borrow;
        borrow = select(0u, 1u, a[i] < b[i] || d < borrow);
    }}
    return out;
}}"""


@helper_family("wide_mul", deps=("mul_wide",))
def _wide_mul(n: int) -> str:
    a = _arr(n)
    return f"""
{_sig(n, "wide_mul", f"x: {a}, y: {a}", a)} {{
    var a = x;
    var b = y;
    var out: {a};
    for (var i = 0u; i < {n}u; i = i + 1u) {{
        if (a[i] == 0u) {{ continue; }}
        var carry = 0u;
        for (var j = 0u; i + j < {n}u; j = j + 1u) {{
            let p = mul_wide(a[i], b[j]);
            let s = out[i + j] + p.x;
            let t = s + carry;
            carry = p.y + select(0u, 1u, s < p.x) + select(0u, 1u, t < s);
            out[i + j] = t;
        }}
    }}
    return out;
}}"""


@helper_family("wide_neg", deps=(("wide_sub", "*"),))
def _wide_neg(n: int) -> str:
    a = _arr(n)
    return f"""
{_sig(n, "wide_neg", f"x: {a}", a)} {{
    return wide_sub_{n}({a}(), x);
}}"""


@helper_family("wide_bitwise")
def _wide_bitwise(n: int) -> str:
    a = _arr(n)
    return f"""
// op 0: and, 1: or, 2: xor, 3: not (of x)
{_sig(n, "wide_bitwise", f"x: {a}, y: {a}, op: u32", a)} {{
    var a = x;
    var b = y;
    var out: {a};
    for (var i = 0u; i < {n}u; i = i + 1u) {{
        switch op {{
            case 0u: {{ out[i] = a[i] & b[i]; }}
            case 1u: {{ out[i] = a[i] | b[i]; }}
            case 2u: {{ out[i] = a[i] ^ b[i]; }}
            default: {{ out[i] = ~a[i]; }}
        }}
    }}
    return out;
}}"""


@helper_family("wide_shl")
def _wide_shl(n: int) -> str:
    a = _arr(n)
    return f"""
{_sig(n, "wide_shl", f"x: {a}, amount: u32", a)} {{
    var a = x;
    var out: {a};
    let s = amount & {32 * n - 1}u;
    let words = s / 32u;
    let bits = s % 32u;
    for (var i = words; i < {n}u; i = i + 1u) {{
        var w = a[i - words] << bits;
        if (bits != 0u && i > words) {{ w = w | (a[i - words - 1u] >> (32u - bits)); }}
        out[i] = w;
    }}
    return out;
}}"""


@helper_family("wide_shr")
def _wide_shr(n: int) -> str:
    a = _arr(n)
    return f"""
{_sig(n, "wide_shr", f"x: {a}, amount: u32, arithmetic: bool", a)} {{
    var a = x;
    let fill = select(0u, 0xffffffffu, arithmetic && (a[{n - 1}] >> 31u) != 0u);
    var out: {a};
    let s = amount & {32 * n - 1}u;
    let words = s / 32u;
    let bits = s % 32u;
    for (var i = 0u; i < {n}u; i = i + 1u) {{
        let k = i + words;
        let lo = select(fill, a[min(k, {n - 1}u)], k < {n}u);
        let hi = select(fill, a[min(k + 1u, {n - 1}u)], k + 1u < {n}u);
        out[i] = select(lo, (lo >> bits) | (hi << (32u - bits)), bits != 0u);
    }}
    return out;
}}"""


@helper_family("wide_compare")
def _wide_compare(n: int) -> str:
    a = _arr(n)
    return f"""
// -1, 0 or 1 as x <, =, > y (signed: two's complement order)
{_sig(n, "wide_compare", f"x: {a}, y: {a}, signed: bool", "i32")} {{
    var a = x;
    var b = y;
    let flip = select(0u, 0x80000000u, signed);
    for (var i = {n - 1}i; i >= 0; i = i - 1) {{
        var u = a[i];
        var v = b[i];
        if (i == {n - 1}) {{ u = u ^ flip; v = v ^ flip; }}
        if (u != v) {{ return select(1, -1, u < v); }}
    }}
    return 0;
}}"""


@helper_family("wide_is_zero")
def _wide_is_zero(n: int) -> str:
    a = _arr(n)
    return f"""
{_sig(n, "wide_is_zero", f"x: {a}", "bool")} {{
    var a = x;
    var any = 0u;
    for (var i = 0u; i < {n}u; i = i + 1u) {{ any = any | a[i]; }}
    return any == 0u;
}}"""


@helper_family("wide_divmod", deps=(("wide_compare", "*"), ("wide_sub", "*")))
def _wide_divmod(n: int) -> str:
    a = _arr(n)
    return f"""
struct WideDivMod{n} {{
    q: {a},
    r: {a},
}}

// unsigned x / y and x % y (y != 0)
{_sig(n, "wide_divmod", f"x: {a}, y: {a}", f"WideDivMod{n}")} {{
    var a = x;
    var b = y;
    var q: {a};
    var r: {a};
    var top = -1;
    var bwords = 0u;
    for (var i = 0u; i < {n}u; i = i + 1u) {{
        if (a[i] != 0u) {{ top = i32(i * 32u + firstLeadingBit(a[i])); }}
        if (b[i] != 0u) {{ bwords = i + 1u; }}
    }}
    if (bwords == 1u) {{
        // short division by one limb: 32 steps per limb
        let d = b[0];
        var rem = 0u;
        for (var i = {n - 1}i; i >= 0; i = i - 1) {{
            var word = 0u;
            let src = a[i];
            for (var k = 31i; k >= 0; k = k - 1) {{
                let carry = (rem >> 31u) != 0u;
                rem = (rem << 1u) | ((src >> u32(k)) & 1u);
                word = word << 1u;
                if (carry || rem >= d) {{ rem = rem - d; word = word | 1u; }}
            }}
            q[i] = word;
        }}
        r[0] = rem;
        return WideDivMod{n}(q, r);
    }}
    for (var i = top; i >= 0; i = i - 1) {{
        let carry = (r[{n - 1}] >> 31u) != 0u;
        for (var k = {n - 1}u; k > 0u; k = k - 1u) {{ r[k] = (r[k] << 1u) | (r[k - 1u] >> 31u); }}
        r[0] = (r[0] << 1u) | ((a[u32(i) / 32u] >> (u32(i) % 32u)) & 1u);
        if (carry || wide_compare_{n}(r, b, false) >= 0) {{
            r = wide_sub_{n}(r, b);
            q[u32(i) / 32u] = q[u32(i) / 32u] | (1u << (u32(i) % 32u));
        }}
    }}
    return WideDivMod{n}(q, r);
}}"""


@helper_family("wide_sdivmod", deps=(("wide_divmod", "*"), ("wide_neg", "*")))
def _wide_sdivmod(n: int) -> str:
    a = _arr(n)
    return f"""
// truncating signed x / y and x % y (y != 0, not MIN / -1); the remainder has x's sign
{_sig(n, "wide_sdivmod", f"x: {a}, y: {a}", f"WideDivMod{n}")} {{
    var a = x;
    var b = y;
    let na = (a[{n - 1}] >> 31u) != 0u;
    let nb = (b[{n - 1}] >> 31u) != 0u;
    if (na) {{ a = wide_neg_{n}(a); }}
    if (nb) {{ b = wide_neg_{n}(b); }}
    var m = wide_divmod_{n}(a, b);
    if (na != nb) {{ m.q = wide_neg_{n}(m.q); }}
    if (na) {{ m.r = wide_neg_{n}(m.r); }}
    return m;
}}"""


@helper_family("wide_to_float_top", deps=("float_top",))
def _wide_to_float_top(n: int) -> str:
    a = _arr(n)
    return f"""
// a nonzero magnitude of {n} limbs as FloatTop
{_sig(n, "wide_to_float_top", f"x: {a}", "FloatTop")} {{
    var a = x;
    var k = {n - 1}i;
    while (k > 0 && a[k] == 0u) {{ k = k - 1; }}
    let z = countLeadingZeros(a[k]);
    var top = a[k] << z;
    var sticky = false;
    if (k > 0) {{
        if (z != 0u) {{ top = top | (a[k - 1] >> (32u - z)); }}
        sticky = (a[k - 1] << z) != 0u;
        for (var i = 0; i < k - 1; i = i + 1) {{ sticky = sticky || a[i] != 0u; }}
    }}
    return FloatTop(top, sticky, k * 32 + 31 - i32(z));
}}"""


@helper_family("f32_to_wide", deps=(("wide_neg", "*"),))
def _f32_to_wide(n: int) -> str:
    a = _arr(n)
    bits = 32 * n
    return f"""
// truncate, saturate to the {bits}-bit range, NaN -> 0
{_sig(n, "f32_to_wide", f"x: f32, signed: bool", a)} {{
    let bits = bitcast<u32>(x);
    let mag = bits & 0x7fffffffu;
    var out: {a};
    if (mag > 0x7f800000u) {{ return out; }}
    let negative = (bits & 0x80000000u) != 0u;
    let e = i32(mag >> 23u) - 127;
    if (negative && !signed) {{ return out; }}
    let limit = select({bits}, {bits - 1}, signed);
    if (e >= limit) {{
        if (negative) {{
            out[{n - 1}] = 0x80000000u;
            return out;
        }}
        for (var i = 0u; i < {n}u; i = i + 1u) {{ out[i] = 0xffffffffu; }}
        if (signed) {{ out[{n - 1}] = 0x7fffffffu; }}
        return out;
    }}
    if (e < 0) {{ return out; }}
    let m = (mag & 0x7fffffu) | 0x800000u;
    let shift = e - 23;
    if (shift < 0) {{
        out[0] = m >> u32(-shift);
    }} else {{
        let w = u32(shift) / 32u;
        let s = u32(shift) % 32u;
        out[w] = m << s;
        if (s != 0u && w + 1u < {n}u) {{ out[w + 1u] = m >> (32u - s); }}
    }}
    if (negative) {{ out = wide_neg_{n}(out); }}
    return out;
}}"""
