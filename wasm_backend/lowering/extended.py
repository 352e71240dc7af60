"""The extended-integer library (I128 … U4096): runtime helpers working on little-endian 64-bit limbs.

Every helper takes i32 addresses of limb arrays and the limb count ``n``; destinations may be the
same array as a source unless the helper says otherwise. Arithmetic wraps modulo 2**(64n).

====================================  ======================================================================
``ext_add(d, a, b, n)``                d = a + b (carry chain)
``ext_sub(d, a, b, n)``                d = a - b
``ext_and/or/xor(d, a, b, n)``         bitwise
``ext_not(d, a, n)``, ``ext_neg``      ~a, -a
``ext_mul(d, a, b, n, tmp)``           low 64n bits of a*b, schoolbook on 32-bit halves into ``tmp``
``ext_cmp_u/cmp_s(a, b, n) -> i32``    -1, 0, 1 (unsigned / two's complement order)
``ext_is_zero(a, n) -> i32``
``ext_divmod_u(q, r, a, b, n)``        a = q*b + r, binary long division (b non-zero; q, r distinct from a, b)
``ext_shl/shr_u/shr_s(d, a, s, n)``    shifts by ``s`` mod 64n
``ext_from_i64(d, v, signed, n)``      sign- or zero-extension of an i64
``ext_resize(d, a, na, nd, signed)``   wrap or extend to ``nd`` limbs
``ext_to_f64(a, n, signed, tmp, sticky) -> f64``   rounded to nearest (``sticky=1``: folded for a later rounding)
``ext_from_f64(d, x, n, signed)``      truncate toward zero and saturate (NaN -> 0)
====================================  ======================================================================
"""

from __future__ import annotations

from ..encoding.types import ValType
from .module_context import ModuleContext, runtime_helper

__all__ = ["EXT_HELPERS"]

I32, I64, F64 = ValType.I32, ValType.I64, ValType.F64


def _limb(e, base: int, index: int) -> None:
    """Push the address of limb ``index`` (an i32 local) of array ``base`` (an i32 local)."""
    e.get(base).get(index).i32(3).op("i32.shl").op("i32.add")


def _counting_loop(e, i: int, n: int, body) -> None:
    """for i in 0..n-1: body() (n may be zero)."""
    e.i32(0).set(i)
    e.while_below(i, n, 1, body)


def _down_loop(e, i: int, n: int, body) -> None:
    """for i in n-1 down to 0: body()."""
    e.get(n).set(i)
    with e.block("done"):
        with e.loop("next"):
            e.get(i).op("i32.eqz").br_if("done")
            e.get(i).i32(1).op("i32.sub").set(i)
            body()
            e.br("next")


@runtime_helper("ext_add")
def _ext_add(m: ModuleContext) -> None:
    fb, e = m.define("ext_add", (I32, I32, I32, I32))
    d, a, b, n = 0, 1, 2, 3
    i = fb.add_local(I32)
    x, s, carry, t = (fb.add_local(I64) for _ in range(4))

    def body():
        _limb(e, a, i)
        e.op("i64.load", 0).tee(x)
        _limb(e, b, i)
        e.op("i64.load", 0).op("i64.add").tee(s).get(carry).op("i64.add").set(t)
        _limb(e, d, i)
        e.get(t).op("i64.store", 0)
        e.get(s).get(x).op("i64.lt_u").get(t).get(s).op("i64.lt_u").op("i32.or").op("i64.extend_i32_u").set(carry)

    _counting_loop(e, i, n, body)


@runtime_helper("ext_sub")
def _ext_sub(m: ModuleContext) -> None:
    fb, e = m.define("ext_sub", (I32, I32, I32, I32))
    d, a, b, n = 0, 1, 2, 3
    i = fb.add_local(I32)
    x, y, diff, borrow, t = (fb.add_local(I64) for _ in range(5))

    def body():
        _limb(e, a, i)
        e.op("i64.load", 0).set(x)
        _limb(e, b, i)
        e.op("i64.load", 0).set(y)
        e.get(x).get(y).op("i64.sub").tee(diff).get(borrow).op("i64.sub").set(t)
        _limb(e, d, i)
        e.get(t).op("i64.store", 0)
        e.get(x).get(y).op("i64.lt_u").get(diff).get(borrow).op("i64.lt_u").op("i32.or")
        e.op("i64.extend_i32_u").set(borrow)

    _counting_loop(e, i, n, body)


def _bitwise(name: str, op: str) -> None:
    @runtime_helper(name)
    def build(m: ModuleContext) -> None:
        fb, e = m.define(name, (I32, I32, I32, I32))
        d, a, b, n = 0, 1, 2, 3
        i = fb.add_local(I32)

        def body():
            _limb(e, d, i)
            _limb(e, a, i)
            e.op("i64.load", 0)
            _limb(e, b, i)
            e.op("i64.load", 0).op(op).op("i64.store", 0)

        _counting_loop(e, i, n, body)


_bitwise("ext_and", "i64.and")
_bitwise("ext_or", "i64.or")
_bitwise("ext_xor", "i64.xor")


@runtime_helper("ext_not")
def _ext_not(m: ModuleContext) -> None:
    fb, e = m.define("ext_not", (I32, I32, I32))
    d, a, n = 0, 1, 2
    i = fb.add_local(I32)

    def body():
        _limb(e, d, i)
        _limb(e, a, i)
        e.op("i64.load", 0).i64(-1).op("i64.xor").op("i64.store", 0)

    _counting_loop(e, i, n, body)


@runtime_helper("ext_neg")
def _ext_neg(m: ModuleContext) -> None:
    fb, e = m.define("ext_neg", (I32, I32, I32))
    d, a, n = 0, 1, 2
    i = fb.add_local(I32)
    x, borrow = fb.add_local(I64), fb.add_local(I64)

    def body():
        _limb(e, a, i)
        e.op("i64.load", 0).set(x)
        _limb(e, d, i)
        e.i64(0).get(x).op("i64.sub").get(borrow).op("i64.sub").op("i64.store", 0)
        e.get(x).get(borrow).op("i64.or").i64(0).op("i64.ne").op("i64.extend_i32_u").set(borrow)

    _counting_loop(e, i, n, body)


@runtime_helper("ext_is_zero")
def _ext_is_zero(m: ModuleContext) -> None:
    fb, e = m.define("ext_is_zero", (I32, I32), (I32,))
    a, n = 0, 1
    i = fb.add_local(I32)
    acc = fb.add_local(I64)

    def body():
        e.get(acc)
        _limb(e, a, i)
        e.op("i64.load", 0).op("i64.or").set(acc)

    _counting_loop(e, i, n, body)
    e.get(acc).op("i64.eqz")


def _compare(name: str, signed: bool) -> None:
    @runtime_helper(name)
    def build(m: ModuleContext) -> None:
        fb, e = m.define(name, (I32, I32, I32), (I32,))
        a, b, n = 0, 1, 2
        i = fb.add_local(I32)
        x, y = fb.add_local(I64), fb.add_local(I64)
        e.get(n).set(i)
        with e.block("done"):
            with e.loop("next"):
                e.get(i).op("i32.eqz").br_if("done")
                e.get(i).i32(1).op("i32.sub").set(i)
                _limb(e, a, i)
                e.op("i64.load", 0).set(x)
                _limb(e, b, i)
                e.op("i64.load", 0).set(y)
                e.get(x).get(y).op("i64.ne")
                with e.if_():
                    less = "i64.lt_u"
                    if signed:  # the top limb carries the sign
                        e.i32(-1).i32(1).get(x).get(y).op("i64.lt_s").get(x).get(y).op("i64.lt_u")
                        e.get(i).i32(1).op("i32.add").get(n).op("i32.eq").op("select").op("select").op("return")
                    else:
                        e.i32(-1).i32(1).get(x).get(y).op(less).op("select").op("return")
                e.br("next")
        e.i32(0)


_compare("ext_cmp_u", False)
_compare("ext_cmp_s", True)


@runtime_helper("ext_mul")
def _ext_mul(m: ModuleContext) -> None:
    fb, e = m.define("ext_mul", (I32, I32, I32, I32, I32))
    d, a, b, n, tmp = 0, 1, 2, 3, 4
    i, j, words, at = (fb.add_local(I32) for _ in range(4))
    ai, t, carry = (fb.add_local(I64) for _ in range(3))
    e.get(n).i32(1).op("i32.shl").set(words)
    e.get(tmp).i32(0).get(n).i32(3).op("i32.shl").op("memory.fill", 0)

    def inner():
        e.get(tmp).get(i).get(j).op("i32.add").i32(2).op("i32.shl").op("i32.add").set(at)
        e.get(at).op("i64.load32_u", 0).get(ai).get(b).get(j).i32(2).op("i32.shl").op("i32.add")
        e.op("i64.load32_u", 0).op("i64.mul").op("i64.add").get(carry).op("i64.add").set(t)
        e.get(at).get(t).op("i64.store32", 0)
        e.get(t).i64(32).op("i64.shr_u").set(carry)

    def outer():
        e.get(a).get(i).i32(2).op("i32.shl").op("i32.add").op("i64.load32_u", 0).tee(ai).op("i64.eqz")
        with e.if_():
            e.get(i).i32(1).op("i32.add").set(i)
            e.br("next")
        e.i64(0).set(carry)
        limit = fb.add_local(I32)
        e.get(words).get(i).op("i32.sub").set(limit)
        _counting_loop(e, j, limit, inner)

    _counting_loop(e, i, words, outer)
    e.get(d).get(tmp).get(n).i32(3).op("i32.shl").op("memory.copy", 0, 0)


def _shift_left(m: ModuleContext) -> None:
    fb, e = m.define("ext_shl", (I32, I32, I32, I32))
    d, a, amount, n = 0, 1, 2, 3
    i, k, s, lo = (fb.add_local(I32) for _ in range(4))
    v = fb.add_local(I64)
    e.get(amount).get(n).i32(6).op("i32.shl").op("i32.rem_u").tee(amount)
    e.i32(6).op("i32.shr_u").set(k)
    e.get(amount).i32(63).op("i32.and").set(s)

    def body():
        e.i64(0).set(v)
        e.get(i).get(k).op("i32.sub").tee(lo).i32(0).op("i32.ge_s")
        with e.if_():
            _limb(e, a, lo)
            e.op("i64.load", 0).get(s).op("i64.extend_i32_u").op("i64.shl").set(v)
            e.get(s).op("i32.eqz").op("i32.eqz").get(lo).i32(1).op("i32.ge_s").op("i32.and")
            with e.if_():
                e.get(v)
                e.get(a).get(lo).i32(1).op("i32.sub").i32(3).op("i32.shl").op("i32.add").op("i64.load", 0)
                e.i64(64).get(s).op("i64.extend_i32_u").op("i64.sub").op("i64.shr_u").op("i64.or").set(v)
        _limb(e, d, i)
        e.get(v).op("i64.store", 0)

    _down_loop(e, i, n, body)


runtime_helper("ext_shl")(_shift_left)


def _shift_right(name: str, signed: bool) -> None:
    @runtime_helper(name)
    def build(m: ModuleContext) -> None:
        fb, e = m.define(name, (I32, I32, I32, I32))
        d, a, amount, n = 0, 1, 2, 3
        i, k, s, hi = (fb.add_local(I32) for _ in range(4))
        v, fill = fb.add_local(I64), fb.add_local(I64)
        if signed:
            e.get(a).get(n).i32(1).op("i32.sub").i32(3).op("i32.shl").op("i32.add").op("i64.load", 0)
            e.i64(63).op("i64.shr_s").set(fill)
        e.get(amount).get(n).i32(6).op("i32.shl").op("i32.rem_u").tee(amount)
        e.i32(6).op("i32.shr_u").set(k)
        e.get(amount).i32(63).op("i32.and").set(s)

        def body():
            e.get(fill).set(v)
            e.get(i).get(k).op("i32.add").tee(hi).get(n).op("i32.lt_u")
            with e.if_():
                _limb(e, a, hi)
                e.op("i64.load", 0).get(s).op("i64.extend_i32_u").op("i64.shr_u").set(v)
                e.get(s).op("i32.eqz").op("i32.eqz")
                with e.if_():
                    e.get(v)
                    e.get(hi).i32(1).op("i32.add").get(n).op("i32.lt_u")
                    with e.if_(blocktype=I64):
                        e.get(a).get(hi).i32(1).op("i32.add").i32(3).op("i32.shl").op("i32.add").op("i64.load", 0)
                        e.else_()
                        e.get(fill)
                    e.i64(64).get(s).op("i64.extend_i32_u").op("i64.sub").op("i64.shl").op("i64.or").set(v)
            _limb(e, d, i)
            e.get(v).op("i64.store", 0)

        _counting_loop(e, i, n, body)


_shift_right("ext_shr_u", False)
_shift_right("ext_shr_s", True)


@runtime_helper("ext_from_i64")
def _ext_from_i64(m: ModuleContext) -> None:
    fb, e = m.define("ext_from_i64", (I32, I64, I32, I32))
    d, v, signed, n = 0, 1, 2, 3
    i = fb.add_local(I32)
    fill = fb.add_local(I64)
    e.get(v).i64(63).op("i64.shr_s").i64(0).get(signed).op("select").set(fill)

    e.get(d).get(v).op("i64.store", 0)
    e.i32(1).set(i)
    e.while_below(i, n, 1, lambda: (_limb(e, d, i), e.get(fill).op("i64.store", 0)))


@runtime_helper("ext_resize")
def _ext_resize(m: ModuleContext) -> None:
    fb, e = m.define("ext_resize", (I32, I32, I32, I32, I32))
    d, a, na, nd, signed = 0, 1, 2, 3, 4
    i = fb.add_local(I32)
    fill = fb.add_local(I64)
    e.get(a).get(na).i32(1).op("i32.sub").i32(3).op("i32.shl").op("i32.add").op("i64.load", 0)
    e.i64(63).op("i64.shr_s").i64(0).get(signed).op("select").set(fill)

    def body():
        _limb(e, d, i)
        e.get(i).get(na).op("i32.lt_u")
        with e.if_(blocktype=I64):
            _limb(e, a, i)
            e.op("i64.load", 0)
            e.else_()
            e.get(fill)
        e.op("i64.store", 0)

    _counting_loop(e, i, nd, body)


@runtime_helper("ext_divmod_u")
def _ext_divmod_u(m: ModuleContext) -> None:
    fb, e = m.define("ext_divmod_u", (I32, I32, I32, I32, I32))
    q, r, a, b, n = 0, 1, 2, 3, 4
    bit, i, limb = (fb.add_local(I32) for _ in range(3))
    carry, out, x = (fb.add_local(I64) for _ in range(3))
    nbytes = fb.add_local(I32)
    e.get(n).i32(3).op("i32.shl").set(nbytes)
    e.get(q).i32(0).get(nbytes).op("memory.fill", 0)
    e.get(r).i32(0).get(nbytes).op("memory.fill", 0)
    # bit := index of the highest set bit of a, + 1 (0: a is zero)
    e.i32(0).set(bit)
    e.get(n).set(i)
    with e.block("found"):
        with e.loop("scan"):
            e.get(i).op("i32.eqz").br_if("found")
            e.get(i).i32(1).op("i32.sub").set(i)
            _limb(e, a, i)
            e.op("i64.load", 0).tee(x).op("i64.eqz").br_if("scan")
            e.get(i).i32(6).op("i32.shl").i32(64).op("i32.add").get(x).op("i64.clz").op("i32.wrap_i64")
            e.op("i32.sub").set(bit)
    with e.block("done"):
        with e.loop("step"):
            e.get(bit).op("i32.eqz").br_if("done")
            e.get(bit).i32(1).op("i32.sub").set(bit)
            # r = r << 1 | that bit of a; out = the bit shifted out of r
            e.get(bit).i32(6).op("i32.shr_u").set(limb)
            _limb(e, a, limb)
            e.op("i64.load", 0).get(bit).i32(63).op("i32.and").op("i64.extend_i32_u").op("i64.shr_u")
            e.i64(1).op("i64.and").set(carry)

            def shift():
                _limb(e, r, i)
                e.op("i64.load", 0).tee(x).i64(63).op("i64.shr_u").set(out)
                _limb(e, r, i)
                e.get(x).i64(1).op("i64.shl").get(carry).op("i64.or").op("i64.store", 0)
                e.get(out).set(carry)

            _counting_loop(e, i, n, shift)
            e.get(carry).op("i32.wrap_i64").get(r).get(b).get(n).call(m.helper("ext_cmp_u")).i32(0)
            e.op("i32.ge_s").op("i32.or")
            with e.if_():
                e.get(r).get(r).get(b).get(n).call(m.helper("ext_sub"))
                _limb(e, q, limb)
                _limb(e, q, limb)
                e.op("i64.load", 0).i64(1).get(bit).i32(63).op("i32.and").op("i64.extend_i32_u").op("i64.shl")
                e.op("i64.or").op("i64.store", 0)
            e.br("step")


_TWO_POW_960 = float(2 ** 960)


@runtime_helper("ext_to_f64")
def _ext_to_f64(m: ModuleContext) -> None:
    fb, e = m.define("ext_to_f64", (I32, I32, I32, I32, I32), (F64,))
    a, n, signed, tmp, sticky_mode = 0, 1, 2, 3, 4
    neg, top, p, shift, k, s, i = (fb.add_local(I32) for _ in range(7))
    x, low = fb.add_local(I64), fb.add_local(I64)
    f = fb.add_local(F64)
    e.get(signed)
    with e.if_(blocktype=I32):
        e.get(a).get(n).i32(1).op("i32.sub").i32(3).op("i32.shl").op("i32.add").op("i64.load", 0).i64(0)
        e.op("i64.lt_s")
        e.else_()
        e.i32(0)
    e.tee(neg)
    with e.if_():
        e.get(tmp).get(a).get(n).call(m.helper("ext_neg"))
        e.get(tmp).set(a)
    # top := index of the highest non-zero limb + 1 (0: the value is zero)
    e.get(n).set(top)
    with e.block("found"):
        with e.loop("scan"):
            e.get(top).op("i32.eqz")
            with e.if_():
                e.f64(0.0).op("return")
            _limb(e, a, top)
            e.i32(-8).op("i32.add").op("i64.load", 0).op("i64.eqz").op("i32.eqz").br_if("found")
            e.get(top).i32(1).op("i32.sub").set(top)
            e.br("scan")
    # p := position of the highest set bit
    e.get(top).i32(6).op("i32.shl").i32(1).op("i32.sub")
    e.get(a).get(top).i32(3).op("i32.shl").op("i32.add").i32(-8).op("i32.add").op("i64.load", 0).op("i64.clz")
    e.op("i32.wrap_i64").op("i32.sub").tee(p).i32(64).op("i32.lt_u")
    with e.if_(blocktype=I64):
        e.get(a).op("i64.load", 0)
        e.i32(0).set(shift)
        e.else_()
        e.get(p).i32(63).op("i32.sub").tee(shift).i32(6).op("i32.shr_u").set(k)
        e.get(shift).i32(63).op("i32.and").set(s)
        _limb(e, a, k)
        e.op("i64.load", 0).tee(low).get(s).op("i64.extend_i32_u").op("i64.shr_u").set(x)
        e.get(s)
        with e.if_():
            e.get(x).get(a).get(k).i32(1).op("i32.add").i32(3).op("i32.shl").op("i32.add").op("i64.load", 0)
            e.i64(64).get(s).op("i64.extend_i32_u").op("i64.sub").op("i64.shl").op("i64.or").set(x)
        # sticky: any bit below ``shift``
        e.get(low).i64(1).get(s).op("i64.extend_i32_u").op("i64.shl").i64(1).op("i64.sub").op("i64.and")
        e.i64(0).op("i64.ne").set(i)

        def lower_limbs():
            _limb(e, a, neg)  # ``neg`` is reused as the loop index once the sign is no longer needed
            e.op("i64.load", 0).i64(0).op("i64.ne").get(i).op("i32.or").set(i)

        e.get(neg).set(p)  # keep the sign in p (the position is not needed past this point)
        _counting_loop(e, neg, k, lower_limbs)
        e.get(p).set(neg)
        e.get(x).get(i).op("i64.extend_i32_u").op("i64.or")
    e.set(x)
    e.get(sticky_mode)
    with e.if_(blocktype=F64):
        e.get(x).call(m.helper("u64_to_f64_sticky"))
        e.else_()
        e.get(x).op("f64.convert_i64_u")
    e.set(f)
    with e.block("scaled"):
        with e.loop("scale"):
            e.get(shift).op("i32.eqz").br_if("scaled")
            e.get(shift).i32(960).op("i32.gt_u")
            with e.if_(blocktype=I32):
                e.get(f).f64(_TWO_POW_960).op("f64.mul").set(f)
                e.get(shift).i32(960).op("i32.sub")
                e.else_()
                e.get(f).get(shift).i32(1023).op("i32.add").op("i64.extend_i32_u").i64(52).op("i64.shl")
                e.op("f64.reinterpret_i64").op("f64.mul").set(f)
                e.i32(0)
            e.set(shift)
            e.br("scale")
    e.get(f).op("f64.neg").get(f).get(neg).op("select")


@runtime_helper("ext_from_f64")
def _ext_from_f64(m: ModuleContext) -> None:
    fb, e = m.define("ext_from_f64", (I32, F64, I32, I32))
    d, x, n, signed = 0, 1, 2, 3
    exp, bits, shift, k, s, i = (fb.add_local(I32) for _ in range(6))
    mant = fb.add_local(I64)
    t = fb.add_local(F64)
    e.get(d).i32(0).get(n).i32(3).op("i32.shl").op("memory.fill", 0)
    e.get(x).get(x).op("f64.ne")
    with e.if_():
        e.op("return")
    e.get(x).op("f64.trunc").tee(t).f64(0.0).op("f64.eq")
    with e.if_():
        e.op("return")
    e.get(signed).op("i32.eqz").get(t).f64(0.0).op("f64.lt").op("i32.and")
    with e.if_():
        e.op("return")
    e.get(n).i32(6).op("i32.shl").get(signed).op("i32.sub").set(bits)  # magnitude bits before saturation
    e.get(t).op("i64.reinterpret_f64").i64(52).op("i64.shr_u").op("i32.wrap_i64").i32(0x7FF).op("i32.and")
    e.i32(1023).op("i32.sub").tee(exp).get(bits).op("i32.ge_s").get(exp).i32(1024).op("i32.eq").op("i32.or")
    with e.if_():  # saturate (infinities included): max (0111.. or 111..) for positive, min (1000..) for negative
        e.get(t).f64(0.0).op("f64.lt")
        with e.if_():
            e.get(d).get(n).i32(3).op("i32.shl").op("i32.add").i32(-8).op("i32.add").i64(1 << 63)
            e.op("i64.store", 0)
            e.op("return")
        _counting_loop(e, i, n, lambda: (_limb(e, d, i), e.i64(-1).op("i64.store", 0)))
        e.get(signed)
        with e.if_():
            e.get(d).get(n).i32(3).op("i32.shl").op("i32.add").i32(-8).op("i32.add").i64((1 << 63) - 1)
            e.op("i64.store", 0)
        e.op("return")
    e.get(t).op("i64.reinterpret_f64").i64((1 << 52) - 1).op("i64.and").i64(1 << 52).op("i64.or").set(mant)
    e.get(exp).i32(52).op("i32.le_s")
    with e.if_():
        e.get(d).get(mant).i64(52).get(exp).op("i64.extend_i32_s").op("i64.sub").op("i64.shr_u").op("i64.store", 0)
        e.else_()
        e.get(exp).i32(52).op("i32.sub").tee(shift).i32(6).op("i32.shr_u").set(k)
        e.get(shift).i32(63).op("i32.and").set(s)
        _limb(e, d, k)
        e.get(mant).get(s).op("i64.extend_i32_u").op("i64.shl").op("i64.store", 0)
        e.get(s).i32(11).op("i32.gt_u")
        with e.if_():
            e.get(d).get(k).i32(1).op("i32.add").i32(3).op("i32.shl").op("i32.add")
            e.get(mant).i64(64).get(s).op("i64.extend_i32_u").op("i64.sub").op("i64.shr_u").op("i64.store", 0)
    e.get(t).f64(0.0).op("f64.lt")
    with e.if_():
        e.get(d).get(d).get(n).call(m.helper("ext_neg"))


EXT_HELPERS = ("ext_add", "ext_sub", "ext_and", "ext_or", "ext_xor", "ext_not", "ext_neg", "ext_is_zero",
               "ext_cmp_u", "ext_cmp_s", "ext_mul", "ext_shl", "ext_shr_u", "ext_shr_s", "ext_from_i64",
               "ext_resize", "ext_divmod_u", "ext_to_f64", "ext_from_f64")
