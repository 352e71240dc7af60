"""WGSL helpers for the extended integers (I128 … U4096), which live in memory, not in registers.

Every extended register is a *slot* of the lane's wide register file: ``N`` words (``N = bits /
32``) of the ``state`` buffer, limb ``k`` of slot ``s`` at ``WIDE_BASE + (s + k) * LANES +
lane_id`` (structure of arrays, so neighbouring lanes touch neighbouring words). Helpers take
slot numbers and loop over limbs in memory: a CPU adapter compiles a 4096-bit ADD in about a
second this way, against minutes for ``array<u32, 128>`` variables (the compiler unrolls and
scalarizes private arrays). Each helper is a family instantiated per limb count
(``wide_add_4``); loop bounds are ``N ^ launch.zero``, unknown to the shader compiler, which
otherwise unrolls loops of a few dozen limbs into seconds of compile time. A helper whose
result limbs depend on other limbs (MUL, shifts, division) writes into a slot different from
its operands; the rules give it a scratch slot.
"""

from __future__ import annotations

from .library import helper, helper_family

__all__ = ["DIVMOD_SCRATCH_PER_LIMB"]


@helper("wx")
def _wide_index() -> str:
    return """
fn wx(slot: u32, limb: u32) -> u32 {
    return WIDE_BASE + (slot + limb) * LANES + lane_id;
}"""


def _fn(prefix: str, n: int, params: str, result: str = "") -> str:
    return f"fn {prefix}_{n}({params})" + (f" -> {result}" if result else "")


@helper_family("wide_add", deps=("wx",))
def _wide_add(n: int) -> str:
    return f"""
{_fn("wide_add", n, "d: u32, a: u32, b: u32, subtract: bool")} {{
    let limbs = {n}u ^ launch.zero;
    var carry = select(0u, 1u, subtract);
    for (var i = 0u; i < limbs; i = i + 1u) {{
        let x = state[wx(a, i)];
        let y = select(state[wx(b, i)], ~state[wx(b, i)], subtract);
        let s = x + y;
        let t = s + carry;
        carry = select(0u, 1u, s < x || t < s);
        state[wx(d, i)] = t;
    }}
}}"""


@helper_family("wide_mul", deps=("wx", "mul_wide"))
def _wide_mul(n: int) -> str:
    return f"""
// d = a * b mod 2^{32 * n}; d must differ from a and b
{_fn("wide_mul", n, "d: u32, a: u32, b: u32")} {{
    let limbs = {n}u ^ launch.zero;
    for (var i = 0u; i < limbs; i = i + 1u) {{ state[wx(d, i)] = 0u; }}
    for (var i = 0u; i < limbs; i = i + 1u) {{
        let ai = state[wx(a, i)];
        if (ai == 0u) {{ continue; }}
        var carry = 0u;
        for (var j = 0u; i + j < limbs; j = j + 1u) {{
            let p = mul_wide(ai, state[wx(b, j)]);
            let s = state[wx(d, i + j)] + p.x;
            let t = s + carry;
            carry = p.y + select(0u, 1u, s < p.x) + select(0u, 1u, t < s);
            state[wx(d, i + j)] = t;
        }}
    }}
}}"""


@helper_family("wide_bitwise", deps=("wx",))
def _wide_bitwise(n: int) -> str:
    return f"""
// op 0: and, 1: or, 2: xor, 3: not (of a)
{_fn("wide_bitwise", n, "d: u32, a: u32, b: u32, op: u32")} {{
    let limbs = {n}u ^ launch.zero;
    for (var i = 0u; i < limbs; i = i + 1u) {{
        let x = state[wx(a, i)];
        let y = state[wx(b, i)];
        var r = ~x;
        if (op == 0u) {{ r = x & y; }} else if (op == 1u) {{ r = x | y; }} else if (op == 2u) {{ r = x ^ y; }}
        state[wx(d, i)] = r;
    }}
}}"""


@helper_family("wide_copy", deps=("wx",))
def _wide_copy(n: int) -> str:
    return f"""
{_fn("wide_copy", n, "d: u32, a: u32")} {{
    let limbs = {n}u ^ launch.zero;
    for (var i = 0u; i < limbs; i = i + 1u) {{ state[wx(d, i)] = state[wx(a, i)]; }}
}}"""


@helper_family("wide_fill", deps=("wx",))
def _wide_fill(n: int) -> str:
    return f"""
// d = the value whose low limbs are low (x, y) and whose other limbs are fill
{_fn("wide_fill", n, "d: u32, low: vec2<u32>, words: u32, fill: u32")} {{
    let limbs = {n}u ^ launch.zero;
    for (var i = 0u; i < limbs; i = i + 1u) {{
        var v = fill;
        if (i < words) {{ v = low[min(i, 1u)]; }}
        state[wx(d, i)] = v;
    }}
}}"""


@helper_family("wide_extend", deps=("wx",))
def _wide_extend(n: int) -> str:
    return f"""
// d ({n} limbs) = the value of slot a of ``limbs`` limbs, extended by its sign when signed
{_fn("wide_extend", n, "d: u32, a: u32, source_limbs: u32, signed: bool")} {{
    let limbs = {n}u ^ launch.zero;
    let top = state[wx(a, source_limbs - 1u)];
    let fill = select(0u, 0xffffffffu, signed && (top >> 31u) != 0u);
    for (var i = 0u; i < limbs; i = i + 1u) {{
        var v = fill;
        if (i < source_limbs) {{ v = state[wx(a, i)]; }}
        state[wx(d, i)] = v;
    }}
}}"""


@helper_family("wide_negate", deps=("wx",))
def _wide_negate(n: int) -> str:
    return f"""
// d = -a mod 2^{32 * n} (d may be a)
{_fn("wide_negate", n, "d: u32, a: u32")} {{
    let limbs = {n}u ^ launch.zero;
    var carry = 1u;
    for (var i = 0u; i < limbs; i = i + 1u) {{
        let t = ~state[wx(a, i)] + carry;
        carry = select(0u, 1u, carry == 1u && t == 0u);
        state[wx(d, i)] = t;
    }}
}}"""


@helper_family("wide_shift", deps=("wx",))
def _wide_shift(n: int) -> str:
    return f"""
// d = a << (amount mod {32 * n}) (left) or a >> it, arithmetic when signed; d must differ from a
{_fn("wide_shift", n, "d: u32, a: u32, amount: u32, left: bool, signed: bool")} {{
    let limbs = {n}u ^ launch.zero;
    let s = amount & {32 * n - 1}u;
    let words = s / 32u;
    let bits = s % 32u;
    let fill = select(0u, 0xffffffffu, !left && signed && (state[wx(a, {n - 1}u)] >> 31u) != 0u);
    for (var i = 0u; i < limbs; i = i + 1u) {{
        var lo = fill;
        var hi = fill;
        if (left) {{
            lo = 0u;
            hi = 0u;
            if (i >= words) {{ lo = state[wx(a, i - words)]; }}
            if (i >= words + 1u) {{ hi = state[wx(a, i - words - 1u)]; }}
            state[wx(d, i)] = select(lo, (lo << bits) | (hi >> (32u - bits)), bits != 0u);
        }} else {{
            if (i + words < {n}u) {{ lo = state[wx(a, i + words)]; }}
            if (i + words + 1u < {n}u) {{ hi = state[wx(a, i + words + 1u)]; }}
            state[wx(d, i)] = select(lo, (lo >> bits) | (hi << (32u - bits)), bits != 0u);
        }}
    }}
}}"""


@helper_family("wide_compare", deps=("wx",))
def _wide_compare(n: int) -> str:
    return f"""
// -1, 0 or 1 as a <, =, > b (signed: two's complement order)
{_fn("wide_compare", n, "a: u32, b: u32, signed: bool", "i32")} {{
    let limbs = {n}u ^ launch.zero;
    let flip = select(0u, 0x80000000u, signed);
    var u = state[wx(a, {n - 1}u)] ^ flip;
    var v = state[wx(b, {n - 1}u)] ^ flip;
    if (u != v) {{ return select(1, -1, u < v); }}
    for (var i = {n - 2}i; i >= 0; i = i - 1) {{
        u = state[wx(a, u32(i))];
        v = state[wx(b, u32(i))];
        if (u != v) {{ return select(1, -1, u < v); }}
    }}
    return 0;
}}"""


@helper_family("wide_is_zero", deps=("wx",))
def _wide_is_zero(n: int) -> str:
    return f"""
{_fn("wide_is_zero", n, "a: u32", "bool")} {{
    let limbs = {n}u ^ launch.zero;
    var any = 0u;
    for (var i = 0u; i < limbs; i = i + 1u) {{ any = any | state[wx(a, i)]; }}
    return any == 0u;
}}"""


#: scratch words wide_divmod needs per limb of its operands (digit arrays U, V and Q)
DIVMOD_SCRATCH_PER_LIMB = 7


@helper_family("wide_divmod", deps=("wx",))
def _wide_divmod(n: int) -> str:
    # Knuth's algorithm D in base 2^16 (the estimate and the products fit in u32): about
    # (digits of the quotient) x (digits of the divisor) loop iterations, which keeps a 4096-bit
    # division under lavapipe's 65535 iterations per lane
    return f"""
// unsigned q = a / b and r = a % b (b != 0); q, r and the scratch area t ({DIVMOD_SCRATCH_PER_LIMB} x {n}
// words: the digits U of a, V of b, Q of the quotient) differ from a and b
{_fn("wide_divmod", n, "q: u32, r: u32, a: u32, b: u32, t: u32")} {{
    let limbs = {n}u ^ launch.zero;
    let digits = 2u * limbs;
    let uo = t;
    let vo = t + digits + 1u;
    let qo = t + 2u * digits + 1u;
    var m = 0u;
    var n = 0u;
    for (var i = 0u; i < limbs; i = i + 1u) {{
        let x = state[wx(a, i)];
        let y = state[wx(b, i)];
        state[wx(uo, 2u * i)] = x & 0xffffu;
        state[wx(uo, 2u * i + 1u)] = x >> 16u;
        state[wx(vo, 2u * i)] = y & 0xffffu;
        state[wx(vo, 2u * i + 1u)] = y >> 16u;
        state[wx(qo, 2u * i)] = 0u;
        state[wx(qo, 2u * i + 1u)] = 0u;
        state[wx(q, i)] = 0u;
        state[wx(r, i)] = 0u;
        if (x != 0u) {{ m = 2u * i + select(1u, 2u, (x >> 16u) != 0u); }}
        if (y != 0u) {{ n = 2u * i + select(1u, 2u, (y >> 16u) != 0u); }}
    }}
    state[wx(uo, digits)] = 0u;
    if (m < n) {{
        for (var i = 0u; i < limbs; i = i + 1u) {{ state[wx(r, i)] = state[wx(a, i)]; }}
        return;
    }}
    if (n == 1u) {{
        let d = state[wx(vo, 0u)];
        var rem = 0u;
        for (var j = i32(m) - 1; j >= 0; j = j - 1) {{
            let num = rem * 65536u + state[wx(uo, u32(j))];
            state[wx(qo, u32(j))] = num / d;
            rem = num % d;
        }}
        state[wx(r, 0u)] = rem;
    }} else {{
        let shift = countLeadingZeros(state[wx(vo, n - 1u)]) - 16u;
        for (var k = 1u; k < n; k = k + 1u) {{
            let i = n - k;
            state[wx(vo, i)] = ((state[wx(vo, i)] << shift) | (state[wx(vo, i - 1u)] >> (16u - shift))) & 0xffffu;
        }}
        state[wx(vo, 0u)] = (state[wx(vo, 0u)] << shift) & 0xffffu;
        state[wx(uo, m)] = state[wx(uo, m - 1u)] >> (16u - shift);
        for (var k = 1u; k < m; k = k + 1u) {{
            let i = m - k;
            state[wx(uo, i)] = ((state[wx(uo, i)] << shift) | (state[wx(uo, i - 1u)] >> (16u - shift))) & 0xffffu;
        }}
        state[wx(uo, 0u)] = (state[wx(uo, 0u)] << shift) & 0xffffu;
        let vtop = state[wx(vo, n - 1u)];
        let vnext = state[wx(vo, n - 2u)];
        for (var jj = i32(m - n); jj >= 0; jj = jj - 1) {{
            let j = u32(jj);
            let num = state[wx(uo, j + n)] * 65536u + state[wx(uo, j + n - 1u)];
            var qhat = num / vtop;
            var rhat = num % vtop;
            for (var correction = 0u; correction < 2u; correction = correction + 1u) {{
                if (qhat < 65536u && qhat * vnext <= rhat * 65536u + state[wx(uo, j + n - 2u)]) {{ break; }}
                qhat = qhat - 1u;
                rhat = rhat + vtop;
                if (rhat >= 65536u) {{ break; }}
            }}
            var k = 0;
            for (var i = 0u; i < n; i = i + 1u) {{
                let p = qhat * state[wx(vo, i)];
                let d = i32(state[wx(uo, i + j)]) - k - i32(p & 0xffffu);
                state[wx(uo, i + j)] = u32(d) & 0xffffu;
                k = i32(p >> 16u) - (d >> 16u);
            }}
            let top = i32(state[wx(uo, j + n)]) - k;
            state[wx(uo, j + n)] = u32(top) & 0xffffu;
            state[wx(qo, j)] = qhat;
            if (top < 0) {{
                state[wx(qo, j)] = qhat - 1u;
                var c = 0u;
                for (var i = 0u; i < n; i = i + 1u) {{
                    let sum = state[wx(uo, i + j)] + state[wx(vo, i)] + c;
                    state[wx(uo, i + j)] = sum & 0xffffu;
                    c = sum >> 16u;
                }}
                state[wx(uo, j + n)] = (state[wx(uo, j + n)] + c) & 0xffffu;
            }}
        }}
        for (var i = 0u; i < n; i = i + 1u) {{
            var digit = state[wx(uo, i)] >> shift;
            if (i + 1u < n) {{ digit = digit | ((state[wx(uo, i + 1u)] << (16u - shift)) & 0xffffu); }}
            state[wx(r, i / 2u)] = state[wx(r, i / 2u)] | (digit << (16u * (i % 2u)));
        }}
    }}
    for (var i = 0u; i < limbs; i = i + 1u) {{
        state[wx(q, i)] = state[wx(qo, 2u * i)] | (state[wx(qo, 2u * i + 1u)] << 16u);
    }}
}}"""


@helper_family("wide_to_float_top", deps=("wx", "float_top"))
def _wide_to_float_top(n: int) -> str:
    return f"""
// the nonzero magnitude in slot a as FloatTop
{_fn("wide_to_float_top", n, "a: u32", "FloatTop")} {{
    var k = {n - 1}i;
    while (k > 0 && state[wx(a, u32(k))] == 0u) {{ k = k - 1; }}
    let high = state[wx(a, u32(k))];
    let z = countLeadingZeros(high);
    var top = high << z;
    var sticky = false;
    if (k > 0) {{
        let next = state[wx(a, u32(k - 1))];
        if (z != 0u) {{ top = top | (next >> (32u - z)); }}
        sticky = (next << z) != 0u;
        for (var i = 0; i < k - 1; i = i + 1) {{ sticky = sticky || state[wx(a, u32(i))] != 0u; }}
    }}
    return FloatTop(top, sticky, k * 32 + 31 - i32(z));
}}"""


@helper_family("f32_to_wide", deps=("wx", ("wide_negate", "*")))
def _f32_to_wide(n: int) -> str:
    bits = 32 * n
    return f"""
// d = x truncated, saturated to the {bits}-bit range, NaN -> 0
{_fn("f32_to_wide", n, "d: u32, x: f32, signed: bool")} {{
    let limbs = {n}u ^ launch.zero;
    for (var i = 0u; i < limbs; i = i + 1u) {{ state[wx(d, i)] = 0u; }}
    let bits = bitcast<u32>(x);
    let mag = bits & 0x7fffffffu;
    if (mag > 0x7f800000u) {{ return; }}
    let negative = (bits & 0x80000000u) != 0u;
    let e = i32(mag >> 23u) - 127;
    if (negative && !signed) {{ return; }}
    if (e >= select({bits}, {bits - 1}, signed) || mag == 0x7f800000u) {{
        if (negative) {{
            state[wx(d, {n - 1}u)] = 0x80000000u;
            return;
        }}
        for (var i = 0u; i < limbs; i = i + 1u) {{ state[wx(d, i)] = 0xffffffffu; }}
        if (signed) {{ state[wx(d, {n - 1}u)] = 0x7fffffffu; }}
        return;
    }}
    if (e < 0) {{ return; }}
    let m = (mag & 0x7fffffu) | 0x800000u;
    let shift = e - 23;
    if (shift < 0) {{
        state[wx(d, 0u)] = m >> u32(-shift);
    }} else {{
        let w = u32(shift) / 32u;
        let s = u32(shift) % 32u;
        state[wx(d, w)] = m << s;
        if (s != 0u && w + 1u < {n}u) {{ state[wx(d, w + 1u)] = m >> (32u - s); }}
    }}
    if (negative) {{ wide_negate_{n}(d, d); }}
}}"""
