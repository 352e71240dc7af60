"""SIMD lane mode: the remaining integer operations that cannot trap, fused multiply-add and the
transcendentals (``simd_lanes`` has the values and the first rules; ``simd_masks`` SETcc and SEL).

Each rule computes what the scalar lane rule computes, lane by lane:

* integers (I32 U32 I64 U64): ``NOT``; ``NEG`` and ``ABS`` wrapping (``ABS`` the identity on unsigned
  types, ``|MIN| = MIN`` as wasm's ``abs``); ``MIN``/``MAX`` by the type's signedness (i64x2 has no
  min/max: a signed comparison, with sign bits flipped for unsigned types, and ``v128.bitselect``);
  ``SHL``/``SHR`` by a Const or Uniform amount (wasm's vector shifts take the amount modulo the lane
  width, as the contract does; ``SHR`` arithmetic on signed types, logical on unsigned). Const and
  Uniform operands are computed once (folded, or in the prologue); a shift by a varying amount has no
  rule (wasm shifts all lanes by one amount);
* ``FMA``/``FMS`` on F32 round once exactly as the ``fma32`` helper: the product of two f32 values is
  exact in f64 and the f64 sum rounded to f32 is the result, unless a lane's sum is an f32 midpoint or
  in f32's subnormal range: then the sum is split with TwoSum, rounded to odd and then to f32 (the
  helper's way), all on f64x2 halves;
  on F64 each lane calls the scalar ``fma64`` helper (its exponent-window branches have no cheap
  vector form), so F64 results equal the scalar path's bit for bit;
* ``EXP LOG LOG2 LOG10 SIN COS TAN TANH SIGMOID GELU SWISH`` on F32/F64 call the math library's vector
  function (written inline into the step where the library can, ``MathFunction.inline``). The scalar
  path's ``.scalar`` functions compute through the same vector kernels (one lane), so both paths give
  the same bits; a Uniform operand is computed once in the prologue by ``.scalar``.

BF16 runs in f32 lanes, each inexact result rounded to BF16 as the scalar rule rounds it
(``SimdBuilder.round_to``); F16 has no rules here (its conversions stay on the scalar path, see
``simd_lanes``). Raises SimdUnsupported where no rule applies.
"""

from __future__ import annotations

import struct

from atlas_web.isa.enums import Condition
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .math_seam import LANE_MATH_OPS, math_function_for
from .simd_lanes import (
    FLOAT_LANE_TYPES, INT_TYPES, SIMD_RULES, Const, SimdBuilder, SimdUnsupported, Uniform, Vector, float_binary,
    float_unary, halves, lane_shape, wrap,
)
from .simd_masks import compare_vectors
from .typemap import type_info

__all__: list[str] = []

V128 = ValType.V128
_UNIFORM = (Const, Uniform)


def _signed(ty: Type, value: int) -> int:
    return value - (1 << ty.bits) if value >> (ty.bits - 1) else value


def _new_vectors(s: SimdBuilder, ty: Type) -> tuple[int, ...]:
    return tuple(s.fb.add_local(V128) for _ in range(halves(ty)))


def _scalar_result(s: SimdBuilder, ty: Type) -> Uniform:
    """Store the prologue's top of stack in a new uniform local of ``ty``."""
    local = s.uniform_local(ty)
    s.pro.set(local)
    return Uniform(local)


# ---- integer unary ----------------------------------------------------------------------------------------

def _fold_abs(ty: Type, v: int) -> int:
    return wrap(ty, abs(_signed(ty, v))) if ty.is_signed() else v


#: op -> its value on a Const (unsigned representation)
_INT_UNARY_FOLD = {"NOT": lambda ty, v: wrap(ty, ~v), "NEG": lambda ty, v: wrap(ty, -v), "ABS": _fold_abs}


def _prologue_unary(s: SimdBuilder, op: str, ty: Type, value: Uniform) -> Uniform:
    p, prefix = s.pro, type_info(ty).prefix
    const = p.i64 if ty.bits == 64 else p.i32
    if op == "NOT":
        p.get(value.local)
        const(-1)
        p.op(f"{prefix}.xor")
    elif op == "NEG" or ty.is_signed():  # ABS on signed: x < 0 ? 0 - x : x
        const(0)
        p.get(value.local).op(f"{prefix}.sub")
        if op == "ABS":
            p.get(value.local).get(value.local)
            const(0)
            p.op(f"{prefix}.lt_s").op("select")
    else:
        return value  # ABS on unsigned types
    return _scalar_result(s, ty)


def _int_unary(s: SimdBuilder, op: str, instr) -> None:
    ty = instr.ty
    _, value = s.read("src")
    if isinstance(value, Const):
        s.write(Const(_INT_UNARY_FOLD[op](ty, value.value)))
        return
    if isinstance(value, Uniform):
        s.write(_prologue_unary(s, op, ty, value))
        return
    if op == "ABS" and not ty.is_signed():
        s.write(value)
        return
    source = s.vector(value, ty)
    out = _new_vectors(s, ty)
    name = {"NOT": "v128.not", "NEG": f"{lane_shape(ty)}.neg", "ABS": f"{lane_shape(ty)}.abs"}[op]
    for src, dst in zip(source, out):
        s.body.get(src).op(name).set(dst)
    s.write(Vector(out))


# ---- integer MIN / MAX ------------------------------------------------------------------------------------

_EXTREME_CONDITIONS = {("lt", True): Condition.LT, ("gt", True): Condition.GT, ("lt", False): Condition.LTU,
                       ("gt", False): Condition.GTU}


def _int_extreme(s: SimdBuilder, op: str, instr) -> None:
    ty = instr.ty
    _, a = s.read("lhs")
    _, b = s.read("rhs")
    relation = "lt" if op == "MIN" else "gt"
    if isinstance(a, Const) and isinstance(b, Const):
        x, y = (_signed(ty, v.value) if ty.is_signed() else v.value for v in (a, b))
        s.write(a if (x < y if op == "MIN" else x > y) else b)
        return
    if isinstance(a, _UNIFORM) and isinstance(b, _UNIFORM):
        for value in (a, b, a, b):
            s.scalar(value, ty)
        s.pro.op(f"{type_info(ty).prefix}.{relation}_{'s' if ty.is_signed() else 'u'}").op("select")
        s.write(_scalar_result(s, ty))
        return
    va, vb = s.vector(a, ty), s.vector(b, ty)
    out = _new_vectors(s, ty)
    if ty.bits == 32:
        name = f"i32x4.{op.lower()}_{'s' if ty.is_signed() else 'u'}"
        s.body.get(va[0]).get(vb[0]).op(name).set(out[0])
    else:
        # a relation b ? a : b, as the scalar rule (``_select_by``)
        cond = _EXTREME_CONDITIONS[(relation, ty.is_signed())]
        masks = compare_vectors(s, ty, cond, va, vb)
        for x, y, m, dst in zip(va, vb, masks, out):
            s.body.get(x).get(y).get(m).op("v128.bitselect").set(dst)
    s.write(Vector(out))


# ---- shifts -----------------------------------------------------------------------------------------------

def _shift(s: SimdBuilder, op: str, instr, const_shl) -> None:
    ty = instr.ty
    if ty not in INT_TYPES:
        raise SimdUnsupported(f"{op} {ty.name}")
    _, amount = s.read("amount")
    if op == "SHL" and isinstance(amount, Const):
        const_shl(s, instr)  # the first rule keeps Affine values Affine
        return
    _, value = s.read("src")
    if not isinstance(amount, _UNIFORM):
        raise SimdUnsupported(f"{op} by an amount that varies between lanes")
    kind = "shl" if op == "SHL" else f"shr_{'s' if ty.is_signed() else 'u'}"
    if isinstance(value, Const) and isinstance(amount, Const):
        n = amount.value % ty.bits
        s.write(Const(wrap(ty, value.value << n if op == "SHL" else
                           (_signed(ty, value.value) if ty.is_signed() else value.value) >> n)))
        return
    if isinstance(value, _UNIFORM):
        s.scalar(value, ty)
        s.scalar(amount, Type.U32)
        if ty.bits == 64:
            s.pro.op("i64.extend_i32_u")
        s.pro.op(f"{type_info(ty).prefix}.{kind}")
        s.write(_scalar_result(s, ty))
        return
    source = s.vector(value, ty)
    out = _new_vectors(s, ty)
    for src, dst in zip(source, out):
        s.body.get(src)
        if isinstance(amount, Const):
            s.body.i32(amount.value % ty.bits)
        else:
            s.body.get(amount.local)
        s.body.op(f"{lane_shape(ty)}.{kind}").set(dst)
    s.write(Vector(out))


# ---- fused multiply-add -----------------------------------------------------------------------------------

_ONE_64 = (1).to_bytes(8, "little") * 2
_INF_64 = (0x7FF0000000000000).to_bytes(8, "little") * 2
#: the f64 bits below an f32's last bit, and their pattern at an f32 midpoint (normal range)
_LOW_29 = ((1 << 29) - 1).to_bytes(8, "little") * 2
_MIDPOINT = (1 << 28).to_bytes(8, "little") * 2
_F32_MIN_NORMAL = struct.pack("<d", 2.0 ** -126) * 2
_HIGH_HALF_LOW = tuple(range(8, 16)) * 2
_LOW_HALVES = tuple(range(0, 8)) + tuple(range(16, 24))


def _fma32_half(s: SimdBuilder, a: int, b: int, c: int, out: int) -> None:
    """``out`` (f64x2) := RO(a*b + c) of two f64x2 lanes holding f32 values: the exact product, TwoSum with
    c, then the sum rounded to odd (as ``runtime.fma32``; demoting it rounds once)."""
    e = s.body
    p, sum_, err, bb = (s.fb.add_local(V128) for _ in range(4))
    e.get(a).get(b).op("f64x2.mul").set(p)
    e.get(p).get(c).op("f64x2.add").set(sum_)
    e.get(sum_).get(p).op("f64x2.sub").set(bb)
    e.get(p).get(sum_).get(bb).op("f64x2.sub").op("f64x2.sub").get(c).get(bb).op("f64x2.sub").op("f64x2.add").set(err)
    zero = bytes(16)
    # nudge where err is finite and nonzero and the sum's last bit is 0: toward err. err is finite exactly
    # where the sum is (f32 operands: no finite sum of f64 products of them overflows), and the sum's
    # tests come off the chain through c that bounds a loop of FMAs
    e.get(sum_).op("f64x2.abs").op("v128.const", _INF_64).op("f64x2.lt")
    e.get(sum_).op("v128.const", _ONE_64).op("v128.and").op("v128.const", zero).op("i64x2.eq").op("v128.and")
    e.get(err).op("v128.const", zero).op("f64x2.ne").op("v128.and")
    # +1 (away from zero) where err and the sum have the same sign (by > 0, as the helper), else -1
    e.get(err).op("v128.const", zero).op("f64x2.gt").get(sum_).op("v128.const", zero).op("f64x2.gt")
    e.op("v128.xor").op("v128.const", _ONE_64).op("v128.or")  # 1 where equal, all ones (-1) where not
    e.op("v128.and").get(sum_).op("i64x2.add").set(out)


def _fma32_vector(s: SimdBuilder, a: tuple[int, ...], b: tuple[int, ...], c: tuple[int, ...]) -> tuple[int, ...]:
    e = s.body
    wide = {}
    for name, source in (("a", a[0]), ("b", b[0]), ("c", c[0])):
        low, high = s.fb.add_local(V128), s.fb.add_local(V128)
        e.get(source).op("f64x2.promote_low_f32x4").set(low)
        e.get(source).get(source).op("i8x16.shuffle", _HIGH_HALF_LOW).op("f64x2.promote_low_f32x4").set(high)
        wide[name] = (low, high)
    results = (s.fb.add_local(V128), s.fb.add_local(V128))
    # RN32(x) = RN32(RN64(x)) unless RN64(x) is an f32 midpoint (f32 midpoints are f64 numbers and rounding
    # is monotonic, so x and RN64(x) lie between the same two midpoints) or in f32's subnormal range: there
    # (rare) the sum rounded to odd; elsewhere the f64 sum itself, off the long chain through c
    careful = s.fb.add_local(V128)
    e.op("v128.const", bytes(16)).set(careful)
    for h in range(2):
        e.get(wide["a"][h]).get(wide["b"][h]).op("f64x2.mul").get(wide["c"][h]).op("f64x2.add").tee(results[h])
        e.op("v128.const", _LOW_29).op("v128.and").op("v128.const", _MIDPOINT).op("i64x2.eq")
        e.get(results[h]).op("f64x2.abs").op("v128.const", _F32_MIN_NORMAL).op("f64x2.lt")
        e.get(results[h]).op("v128.const", bytes(16)).op("f64x2.ne").op("v128.and").op("v128.or")
        e.get(careful).op("v128.or").set(careful)
    e.get(careful).op("v128.any_true")
    with e.if_():
        for h in range(2):
            _fma32_half(s, wide["a"][h], wide["b"][h], wide["c"][h], results[h])
    out = s.fb.add_local(V128)
    e.get(results[0]).op("f32x4.demote_f64x2_zero").get(results[1]).op("f32x4.demote_f64x2_zero")
    e.op("i8x16.shuffle", _LOW_HALVES).set(out)
    return (out,)


def _fma64_lanes(s: SimdBuilder, a: tuple[int, ...], b: tuple[int, ...], c: tuple[int, ...]) -> tuple[int, ...]:
    e = s.body
    helper = s.m.helper("fma64")
    out = _new_vectors(s, Type.F64)
    for h, dst in enumerate(out):
        for lane in range(2):
            if lane:
                e.get(dst)
            for source in (a, b, c):
                e.get(source[h]).op("f64x2.extract_lane", lane)
            e.call(helper)
            if lane:
                e.op("f64x2.replace_lane", 1)
            else:
                e.op("f64x2.splat")
            e.set(dst)
    return out


def _fused(negate: bool):
    def rule(s: SimdBuilder, instr) -> None:
        ty = instr.ty
        if ty not in FLOAT_LANE_TYPES:
            raise SimdUnsupported(f"{instr.INFO.name} {ty.name}")
        a, b, c = (s.vector(s.read(path)[1], ty) for path in ("a", "b", "c"))
        if negate:
            negated = _new_vectors(s, ty)
            for src, dst in zip(c, negated):
                s.body.get(src).op(f"{lane_shape(ty)}.neg").set(dst)
            c = negated
        out = (_fma64_lanes if ty is Type.F64 else _fma32_vector)(s, a, b, c)
        s.round_to(ty, out)  # BF16: the f32 result rounded to the format, as the scalar rule
        s.write(Vector(out))
    return rule


# ---- transcendentals --------------------------------------------------------------------------------------

class _InlineTarget:
    """What ``MathFunction.inline`` writes into: the step body, with locals from the recorder."""

    def __init__(self, s: SimdBuilder) -> None:
        self.code = s.body
        self.add_local = s.fb.add_local


def _transcendental(op: str):
    def rule(s: SimdBuilder, instr) -> None:
        ty = instr.ty
        function = math_function_for(op, ty)
        if ty not in FLOAT_LANE_TYPES or function is None:
            raise SimdUnsupported(f"{op} {ty.name}")
        compute = Type.F64 if ty is Type.F64 else Type.F32
        _, value = s.read("src")
        if isinstance(value, Uniform):
            s.pro.get(value.local)
            function.scalar(s.m, s.pro, compute)
            if ty is Type.BF16:
                s.pro.call(s.m.helper("round_bf16"))
            s.write(_scalar_result(s, ty))
            return
        source = s.vector(value, ty)
        out = _new_vectors(s, ty)
        for src, dst in zip(source, out):
            if function.inline is None or not function.inline(s.m, _InlineTarget(s), compute, [src]):
                s.body.get(src)
                function.vector(s.m, s.body, compute)
            s.body.set(dst)
        s.round_to(ty, out)
        s.write(Vector(out))
    rule.__name__ = f"simd_{op.lower()}"
    return rule


# ---- the table --------------------------------------------------------------------------------------------

def _by_kind(op: str, integer, floating):
    def rule(s: SimdBuilder, instr) -> None:
        if instr.ty in INT_TYPES:
            integer(s, op, instr)
        else:
            floating(s, instr)
    return rule


def _int_only(op: str, integer):
    def rule(s: SimdBuilder, instr) -> None:
        if instr.ty not in INT_TYPES:
            raise SimdUnsupported(f"{op} {instr.ty.name}")
        integer(s, op, instr)
    return rule


def _shift_rule(op: str, const_shl):
    def rule(s: SimdBuilder, instr) -> None:
        _shift(s, op, instr, const_shl)
    return rule


SIMD_RULES.update({
    "NOT": _int_only("NOT", _int_unary),
    "ABS": _by_kind("ABS", _int_unary, float_unary("ABS")),
    "NEG": _by_kind("NEG", _int_unary, float_unary("NEG")),
    "MIN": _by_kind("MIN", _int_extreme, float_binary("MIN")),
    "MAX": _by_kind("MAX", _int_extreme, float_binary("MAX")),
    "SHL": _shift_rule("SHL", SIMD_RULES["SHL"]),
    "SHR": _shift_rule("SHR", None),
    "FMA": _fused(False),
    "FMS": _fused(True),
    **{name: _transcendental(name) for name in LANE_MATH_OPS},
})
