"""SIMD lane mode: predicates as lane masks, SETcc on every 32/64-bit type and SEL (``simd_lanes``).

A predicate's abstract value is one of:

* ``Const`` (0 or 1) — the same known truth in every lane (a predicate never written is false);
* ``Uniform`` — an i32 local (0 or 1) computed in the prologue (a comparison of uniform values);
* ``LaneRange`` — a lane-id guard (``simd_lanes.lane_range_of``), kept as such for the guard of
  ``simd_function``;
* ``Mask`` — per lane all ones where it holds, all zeros where not: one i32x4 local per step
  (``narrow``, four lanes) and/or two i64x2 locals (``wide``, for 64-bit selects).

SETcc compares exactly as the scalar rules do (``rules_compare``): integers by the type's signedness,
LTU … GEU as unsigned bit patterns (i64x2 has no unsigned comparison: both sides have their sign bit
flipped, then compare signed), floats ordered for EQ … GE (NE true with NaN) and unordered for LTU …
GEU (the complement of the opposite ordered comparison). SEL is ``v128.bitselect`` of the two values
under the predicate's mask in the value's lane width; a mask is converted between the widths (and made
from a Uniform or a LaneRange) on first use and the converted form is kept (``SimdBuilder.derived``).
BF16 compares its f32 lanes (exact: BF16 values are f32 values). Nothing here can trap. Raises
SimdUnsupported for types without lanes here (narrow integers, F16, extended integers).
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.enums import Condition
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .rules_compare import FLOAT_CONDITIONS, INT_CONDITIONS
from .simd_lanes import (
    SIMD_RULES, VECTOR_TYPES, Const, LaneRange, Scalar, SimdBuilder, SimdUnsupported, Uniform, Vector, halves,
    lane_range_of, lane_shape, wrap,
)
from .typemap import type_info

__all__ = ["Mask", "predicate_value", "mask_locals", "compare_scalar", "compare_vectors"]

I32, I64, V128 = ValType.I32, ValType.I64, ValType.V128
#: the low four bytes of each i64 lane of two vectors: two i64x2 masks -> one i32x4 mask
_NARROW_64 = (0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27)
_LANE_OFFSETS = b"".join(k.to_bytes(4, "little") for k in range(4))
_SIGN_BITS_64 = (1 << 63).to_bytes(8, "little") * 2


@dataclass(frozen=True)
class Mask:
    """A predicate as lane masks (see the module docstring); at least one of the forms is present."""

    narrow: int | None = None
    wide: tuple[int, int] | None = None


def predicate_value(s: SimdBuilder, index: int):
    """The abstract value of predicate ``index`` (Const(0) when no instruction wrote it yet)."""
    found = s.values.get(("p", index))
    return Const(0) if found is None else found[1]


def write_predicate(s: SimdBuilder, value) -> None:
    s.write_predicate(s.instr.pred.index, value)


def _narrow(s: SimdBuilder, value) -> int:
    """The i32x4 mask local of a Uniform, LaneRange or Mask predicate."""
    e = s.body
    if isinstance(value, Mask) and value.narrow is not None:
        return value.narrow
    out = s.fb.add_local(V128)
    if isinstance(value, Mask):
        e.get(value.wide[0]).get(value.wide[1]).op("i8x16.shuffle", _NARROW_64).set(out)
    elif isinstance(value, (Uniform, Scalar)):
        e.i32(0).get(value.local).op("i32.sub").op("i32x4.splat").set(out)
    elif isinstance(value, Const):
        e.op("v128.const", (b"\xff" if value.value else b"\x00") * 16).set(out)
    elif isinstance(value, LaneRange):
        e.get(s.gid).op("i32x4.splat").op("v128.const", _LANE_OFFSETS).op("i32x4.add")
        e.i32(value.bound).op("i32x4.splat").op("i32x4.lt_u" if value.below else "i32x4.ge_u").set(out)
    else:
        raise SimdUnsupported(f"no lane mask for {value!r}")
    return out


def _wide(s: SimdBuilder, value) -> tuple[int, int]:
    """The two i64x2 mask locals of a Uniform, LaneRange or Mask predicate."""
    if isinstance(value, Mask) and value.wide is not None:
        return value.wide
    e = s.body
    if isinstance(value, (Uniform, Scalar)):
        both = s.fb.add_local(V128)
        e.i64(0).get(value.local).op("i64.extend_i32_u").op("i64.sub").op("i64x2.splat").set(both)
        return both, both
    narrow = _narrow(s, value)
    low, high = s.fb.add_local(V128), s.fb.add_local(V128)
    e.get(narrow).op("i64x2.extend_low_i32x4_s").set(low)
    e.get(narrow).op("i64x2.extend_high_i32x4_s").set(high)
    return low, high


def mask_locals(s: SimdBuilder, value, bits: int) -> tuple[int, ...]:
    """The mask of predicate value ``value`` for lanes of ``bits`` (32: one local, 64: two), made on
    first use and kept for the later instructions of the step."""
    key = (value, bits)
    found = s.derived.get(key)
    if found is None:
        found = (_narrow(s, value),) if bits == 32 else _wide(s, value)
        s.derived[key] = found
    return found


# ---- comparisons ------------------------------------------------------------------------------------------

def _signed_int_compare(ty: Type, cond: Condition) -> bool:
    return ty.is_signed() and INT_CONDITIONS[cond][1] is False


def _fold(ty: Type, cond: Condition, a: int, b: int) -> int:
    if _signed_int_compare(ty, cond):
        a, b = (x - (1 << ty.bits) if x >> (ty.bits - 1) else x for x in (a, b))
    relation = INT_CONDITIONS[cond][0]
    return int({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[relation])


def compare_scalar(e, ty: Type, cond: Condition) -> None:
    """Two scalars of ``ty`` on the stack -> the i32 truth of ``cond`` (as ``rules_compare`` computes it)."""
    prefix = type_info(ty).prefix
    if ty.is_float():
        relation, negate = FLOAT_CONDITIONS[cond]
        e.op(f"{prefix}.{relation}")
        if negate:
            e.op("i32.eqz")
        return
    relation, unsigned = INT_CONDITIONS[cond]
    if unsigned is not None:
        relation += "_s" if _signed_int_compare(ty, cond) else "_u"
    e.op(f"{prefix}.{relation}")


def compare_vectors(s: SimdBuilder, ty: Type, cond: Condition, a: tuple[int, ...], b: tuple[int, ...]
                    ) -> tuple[int, ...]:
    """The mask locals (one per half) of ``a cond b`` for vectors of ``ty``."""
    e = s.body
    shape = lane_shape(ty)
    out = tuple(s.fb.add_local(V128) for _ in a)
    for x, y, dst in zip(a, b, out):
        if ty.is_float():
            relation, negate = FLOAT_CONDITIONS[cond]
            e.get(x).get(y).op(f"{shape}.{relation}")
            if negate:
                e.op("v128.not")
            e.set(dst)
            continue
        relation, unsigned = INT_CONDITIONS[cond]
        signed = _signed_int_compare(ty, cond)
        if unsigned is None:
            e.get(x).get(y).op(f"{shape}.{relation}")
        elif ty.bits == 32:
            e.get(x).get(y).op(f"{shape}.{relation}_{'s' if signed else 'u'}")
        elif signed:
            e.get(x).get(y).op(f"i64x2.{relation}_s")
        else:  # unsigned 64-bit: flip the sign bits, compare signed
            for side in (x, y):
                e.get(side).op("v128.const", _SIGN_BITS_64).op("v128.xor")
            e.op(f"i64x2.{relation}_s")
        e.set(dst)
    return out


def _simd_setcc(s: SimdBuilder, instr) -> None:
    guard = lane_range_of(s, instr)
    if guard is not None:
        write_predicate(s, guard)
        return
    ty, cond = instr.ty, instr.cond
    if ty not in VECTOR_TYPES:
        raise SimdUnsupported(f"SETcc {ty.name}")
    _, a = s.read("lhs")
    _, b = s.read("rhs")
    uniform = (Const, Uniform)
    if isinstance(a, Const) and isinstance(b, Const):
        write_predicate(s, Const(_fold(ty, cond, wrap(ty, a.value), wrap(ty, b.value))))
        return
    if isinstance(a, uniform) and isinstance(b, uniform):
        local = s.fb.add_local(I32)
        s.scalar(a, ty)
        s.scalar(b, ty)
        compare_scalar(s.pro, ty, cond)
        s.pro.set(local)
        write_predicate(s, Uniform(local))
        return
    if isinstance(a, (Const, Uniform, Scalar)) and isinstance(b, (Const, Uniform, Scalar)):
        local = s.fb.add_local(I32)  # the same in the four lanes of the step: one comparison per step
        for value in (a, b):
            if isinstance(value, Const):
                (s.body.i64 if ty.bits == 64 and ty.is_integer() else s.body.i32)(value.value)
            else:
                s.body.get(value.local)
        compare_scalar(s.body, ty, cond)
        s.body.set(local)
        write_predicate(s, Scalar(local))
        return
    masks = compare_vectors(s, ty, cond, s.vector(a, ty), s.vector(b, ty))
    write_predicate(s, Mask(narrow=masks[0]) if len(masks) == 1 else Mask(wide=(masks[0], masks[1])))


def _simd_sel(s: SimdBuilder, instr) -> None:
    ty = instr.ty
    if ty not in VECTOR_TYPES:
        raise SimdUnsupported(f"SEL {ty.name}")
    _, on_true = s.read("true_val")
    _, on_false = s.read("false_val")
    pred = predicate_value(s, instr.pred.index)
    if isinstance(pred, Const) or on_true == on_false:
        s.write(on_true if pred == Const(1) or on_true == on_false else on_false)
        return
    uniform = (Const, Uniform)
    if isinstance(pred, Uniform) and isinstance(on_true, uniform) and isinstance(on_false, uniform):
        local = s.uniform_local(ty)
        s.scalar(on_true, ty)
        s.scalar(on_false, ty)
        s.pro.get(pred.local).op("select").set(local)
        s.write(Uniform(local))
        return
    masks = mask_locals(s, pred, 64 if ty.bits == 64 else 32)
    t, f = s.vector(on_true, ty), s.vector(on_false, ty)
    out = tuple(s.fb.add_local(V128) for _ in range(halves(ty)))
    for h, dst in enumerate(out):
        s.body.get(t[h]).get(f[h]).get(masks[h]).op("v128.bitselect").set(dst)
    s.write(Vector(out))


SIMD_RULES.update({"SETcc": _simd_setcc, "SEL": _simd_sel})
