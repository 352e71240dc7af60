"""Element operations of the cooperative instructions, as v128 and scalar code, per type.

``SHAPES[ty]`` says how a type is processed: elements per 16-byte chunk and the v128 lanes its
arithmetic uses (F16/BF16: 8 halves per chunk, decoded to two f32x4 and encoded back with one
rounding). ``VECTOR_OPS[name](e, shape, args)`` pushes the v128 result of an operation on v128
locals; ``SCALAR_OPS[name](e, ty, args, locals)`` the scalar one on native locals (the scalar tails).
``load_scalar``/``store_scalar`` move one element; ``decode_halves``/``encode_halves`` convert eight
F16/BF16 values to and from two f32x4.

Operations: add sub mul div min max (binary), abs neg sqrt relu (unary). Min/max follow MIN/MAX
(wasm's float min/max propagate NaN and order -0 < +0).
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .typemap import type_info

__all__ = ["Shape", "SHAPES", "VECTOR_OPS", "SCALAR_OPS", "load_scalar", "store_scalar", "decode_halves",
           "encode_halves", "splat_constant", "SIGN_FLIP_64"]

V128 = ValType.V128
SIGN_FLIP_64 = (1 << 63).to_bytes(8, "little") * 2


@dataclass(frozen=True)
class Shape:
    """How values of ``ty`` are processed in 16-byte chunks."""

    ty: Type
    per_chunk: int
    lanes: str          # the v128 interpretation of the arithmetic: f32x4 f64x2 i8x16 i16x8 i32x4 i64x2
    half: str | None    # "f16" or "bf16" for the 16-bit floats (arithmetic on two f32x4)

    @property
    def signed(self) -> bool:
        return self.ty.is_signed()


def _shape(ty: Type) -> Shape:
    if ty in (Type.F16, Type.BF16):
        return Shape(ty, 8, "f32x4", ty.name.lower())
    if ty is Type.F32:
        return Shape(ty, 4, "f32x4", None)
    if ty is Type.F64:
        return Shape(ty, 2, "f64x2", None)
    return Shape(ty, 16 // ty.size_bytes(), {8: "i8x16", 16: "i16x8", 32: "i32x4", 64: "i64x2"}[ty.bits], None)


SHAPES: dict[Type, Shape] = {ty: _shape(ty) for ty in Type if not ty.is_extended()}


def _is_float(shape: Shape) -> bool:
    return shape.lanes.startswith("f")


def splat_constant(e, lanes: str, value: float | int) -> None:
    """Push a v128 with every lane ``value``."""
    scalar = {"f32x4": "f32", "f64x2": "f64", "i64x2": "i64"}.get(lanes, "i32")
    getattr(e, scalar)(value)
    e.op(f"{lanes}.splat")


# ---- vector operations ----------------------------------------------------------------------------------

def _v_simple(op: str):
    def emit(e, shape: Shape, args: list[int]) -> None:
        for a in args:
            e.get(a)
        e.op(f"{shape.lanes}.{op}")
    return emit


def _v_mul(e, shape: Shape, args: list[int]) -> None:
    a, b = args
    if shape.lanes != "i8x16":
        e.get(a).get(b).op(f"{shape.lanes}.mul")
        return
    # no i8x16.mul: 16-bit products of the halves, then the low byte of each
    e.get(a).get(b).op("i16x8.extmul_low_i8x16_u")
    e.get(a).get(b).op("i16x8.extmul_high_i8x16_u")
    e.op("i8x16.shuffle", tuple(range(0, 32, 2)))


def _v_extreme(kind: str):
    def emit(e, shape: Shape, args: list[int]) -> None:
        a, b = args
        lanes = shape.lanes
        if _is_float(shape):
            e.get(a).get(b).op(f"{lanes}.{kind}")
            return
        if lanes != "i64x2":
            e.get(a).get(b).op(f"{lanes}.{kind}_{'s' if shape.signed else 'u'}")
            return
        # i64x2 has signed comparisons only: flip the sign bits for unsigned order
        e.get(a).get(b)
        e.get(a)
        if not shape.signed:
            e.op("v128.const", SIGN_FLIP_64).op("v128.xor")
        e.get(b)
        if not shape.signed:
            e.op("v128.const", SIGN_FLIP_64).op("v128.xor")
        e.op("i64x2.lt_s" if kind == "min" else "i64x2.gt_s").op("v128.bitselect")
    return emit


def _v_abs(e, shape: Shape, args: list[int]) -> None:
    e.get(args[0])
    if _is_float(shape) or shape.signed:
        e.op(f"{shape.lanes}.abs")


def _v_relu(e, shape: Shape, args: list[int]) -> None:
    """max(x, 0): floats by ``max`` (NaN stays, -0 gives +0), signed integers by max_s, unsigned: x."""
    a = args[0]
    if not _is_float(shape) and not shape.signed:
        e.get(a)
        return
    if shape.lanes == "i64x2":
        e.get(a).op("v128.const", bytes(16)).get(a).op("v128.const", bytes(16)).op("i64x2.gt_s")
        e.op("v128.bitselect")
        return
    e.get(a).op("v128.const", bytes(16))
    e.op(f"{shape.lanes}.max" if _is_float(shape) else f"{shape.lanes}.max_s")


VECTOR_OPS = {
    "add": _v_simple("add"), "sub": _v_simple("sub"), "mul": _v_mul, "div": _v_simple("div"),
    "min": _v_extreme("min"), "max": _v_extreme("max"),
    "abs": _v_abs, "neg": _v_simple("neg"), "sqrt": _v_simple("sqrt"), "relu": _v_relu,
}


# ---- scalar operations (tails) ----------------------------------------------------------------------------

def _compute_prefix(ty: Type) -> str:
    return type_info(ty).prefix


def _s_simple(op: str):
    def emit(e, ty: Type, args: list[int], temp) -> None:
        for a in args:
            e.get(a)
        e.op(f"{_compute_prefix(ty)}.{op}")
    return emit


def _s_extreme(kind: str):
    def emit(e, ty: Type, args: list[int], temp) -> None:
        a, b = args
        prefix = _compute_prefix(ty)
        if ty.is_float():
            e.get(a).get(b).op(f"{prefix}.{kind}")
            return
        relation = "lt" if kind == "min" else "gt"
        e.get(a).get(b).get(a).get(b).op(f"{prefix}.{relation}_{'s' if ty.is_signed() else 'u'}").op("select")
    return emit


def _s_abs(e, ty: Type, args: list[int], temp) -> None:
    a = args[0]
    prefix = _compute_prefix(ty)
    if ty.is_float():
        e.get(a).op(f"{prefix}.abs")
    elif ty.is_unsigned():
        e.get(a)
    else:
        zero = (lambda: e.i64(0)) if prefix == "i64" else (lambda: e.i32(0))
        zero()
        e.get(a).op(f"{prefix}.sub")  # -a where a is negative, else a
        e.get(a)
        e.get(a)
        zero()
        e.op(f"{prefix}.lt_s").op("select")


def _s_neg(e, ty: Type, args: list[int], temp) -> None:
    prefix = _compute_prefix(ty)
    if ty.is_float():
        e.get(args[0]).op(f"{prefix}.neg")
    else:
        (e.i64(0) if prefix == "i64" else e.i32(0)).get(args[0]).op(f"{prefix}.sub")


def _s_relu(e, ty: Type, args: list[int], temp) -> None:
    a = args[0]
    prefix = _compute_prefix(ty)
    if ty.is_float():
        e.get(a)
        (e.f64(0.0) if prefix == "f64" else e.f32(0.0)).op(f"{prefix}.max")
    elif ty.is_unsigned():
        e.get(a)
    else:
        zero = (lambda: e.i64(0)) if prefix == "i64" else (lambda: e.i32(0))
        e.get(a)
        zero()
        e.get(a)
        zero()
        e.op(f"{prefix}.gt_s").op("select")


SCALAR_OPS = {
    "add": _s_simple("add"), "sub": _s_simple("sub"), "mul": _s_simple("mul"), "div": _s_simple("div"),
    "min": _s_extreme("min"), "max": _s_extreme("max"),
    "abs": _s_abs, "neg": _s_neg, "sqrt": _s_simple("sqrt"), "relu": _s_relu,
}


# ---- element and half-float conversion ---------------------------------------------------------------------

def load_scalar(m, e, ty: Type) -> None:
    """Address on the stack -> the native (compute) value of one element (narrow integers normalised)."""
    info = type_info(ty)
    if info.load:
        e.op(info.load, 0)
    elif ty is Type.F16:
        e.op("i32.load16_u", 0).call(m.helper("f16_from_bits"))
    else:
        e.op("i32.load16_u", 0).i32(16).op("i32.shl").op("f32.reinterpret_i32")


def store_scalar(m, e, ty: Type, value: int) -> None:
    """Address on the stack; store the compute value in local ``value`` as one element (rounded to F16/BF16)."""
    info = type_info(ty)
    e.get(value)
    if info.store:
        e.op(info.store, 0)
    elif ty is Type.F16:
        e.call(m.helper("round_f16")).call(m.helper("f16_to_bits")).op("i32.store16", 0)
    else:
        e.call(m.helper("round_bf16")).op("i32.reinterpret_f32").i32(16).op("i32.shr_u").op("i32.store16", 0)


def decode_halves(e, shape: Shape, chunk: int, low: int, high: int, scratch: tuple[int, int]) -> None:
    """The 8 halves in v128 local ``chunk`` -> f32x4 locals ``low`` (elements 0-3) and ``high`` (4-7)."""
    for out, extend in ((low, "i32x4.extend_low_i16x8_u"), (high, "i32x4.extend_high_i16x8_u")):
        if shape.half == "bf16":
            e.get(chunk).op(extend).i32(16).op("i32x4.shl").set(out)
        else:
            bits, t = scratch
            e.get(chunk).op(extend).set(bits)
            _f16_to_f32x4_clean(e, bits, t)
            e.set(out)


def _f16_to_f32x4_clean(e, bits: int, t: int) -> None:
    """i32x4 of binary16 patterns (local ``bits``) -> f32x4 on the stack (``t`` a v128 scratch local)."""
    # infinities and NaN keep their payload with the f32 exponent all ones
    e.get(bits).i32(0x3FF).op("i32x4.splat").op("v128.and").i32(13).op("i32x4.shl")
    e.i32(0x7F800000).op("i32x4.splat").op("v128.or").set(t)
    # finite: magnitude << 13 as an f32, times 2**112 (exact for normal and subnormal halves)
    e.get(t)
    e.get(bits).i32(0x7FFF).op("i32x4.splat").op("v128.and").i32(13).op("i32x4.shl")
    e.f32(2.0 ** 112).op("f32x4.splat").op("f32x4.mul")
    e.get(bits).i32(0x7C00).op("i32x4.splat").op("v128.and").i32(0x7C00).op("i32x4.splat").op("i32x4.eq")
    e.op("v128.bitselect")
    e.get(bits).i32(0x8000).op("i32x4.splat").op("v128.and").i32(16).op("i32x4.shl").op("v128.or")


def _f32x4_to_f16_bits(e, x: int, mag: int, t: int) -> None:
    """f32x4 local ``x`` -> i32x4 of binary16 patterns rounded to nearest even (overflow to inf, NaN quiet)."""
    e.get(x).i32(0x7FFFFFFF).op("i32x4.splat").op("v128.and").set(mag)
    # normal: round the f32 pattern at bit 13 (ties to even), rebias the exponent
    e.get(mag).i32(0xFFF).op("i32x4.splat").op("i32x4.add")
    e.get(mag).i32(13).op("i32x4.shr_u").i32(1).op("i32x4.splat").op("v128.and").op("i32x4.add")
    e.i32(13).op("i32x4.shr_u").i32(112 << 10).op("i32x4.splat").op("i32x4.sub")
    # subnormal (below 2**-14): |x| + 0.5 rounds to a multiple of 2**-24; its pattern minus 0.5's is the half
    e.get(mag).f32(0.5).op("f32x4.splat").op("f32x4.add").i32(0x3F000000).op("i32x4.splat").op("i32x4.sub")
    e.get(mag).i32(0x38800000).op("i32x4.splat").op("i32x4.ge_u").op("v128.bitselect")
    e.set(t)
    # overflow (65520 and above, infinity included) -> 0x7C00; NaN -> 0x7E00
    e.i32(0x7C00).op("i32x4.splat").get(t).get(mag).i32(0x477FF000).op("i32x4.splat").op("i32x4.ge_u")
    e.op("v128.bitselect").set(t)
    e.i32(0x7E00).op("i32x4.splat").get(t).get(mag).i32(0x7F800000).op("i32x4.splat").op("i32x4.gt_u")
    e.op("v128.bitselect")
    e.get(x).i32(16).op("i32x4.shr_u").i32(0x8000).op("i32x4.splat").op("v128.and").op("v128.or")


def _f32x4_to_bf16_bits(e, x: int, t: int) -> None:
    """f32x4 local ``x`` -> i32x4 of bfloat16 patterns (nearest even; NaN quiet, sign kept)."""
    e.get(x).i32(0x7FFF).op("i32x4.splat").op("i32x4.add")
    e.get(x).i32(16).op("i32x4.shr_u").i32(1).op("i32x4.splat").op("v128.and").op("i32x4.add")
    e.i32(16).op("i32x4.shr_u").set(t)
    e.get(x).i32(16).op("i32x4.shr_u").i32(0x0040).op("i32x4.splat").op("v128.or")
    e.get(t)
    e.get(x).i32(0x7FFFFFFF).op("i32x4.splat").op("v128.and").i32(0x7F800000).op("i32x4.splat").op("i32x4.gt_u")
    e.op("v128.bitselect")


def encode_halves(e, shape: Shape, low: int, high: int, scratch: tuple[int, int, int]) -> None:
    """f32x4 locals ``low`` and ``high`` -> one v128 of 8 halves (each rounded once) on the stack."""
    mag, t, first = scratch
    if shape.half == "bf16":
        _f32x4_to_bf16_bits(e, low, t)
        e.set(first)
        _f32x4_to_bf16_bits(e, high, t)
    else:
        _f32x4_to_f16_bits(e, low, mag, t)
        e.set(first)
        _f32x4_to_f16_bits(e, high, mag, t)
    e.set(t)
    e.get(first).get(t).op("i16x8.narrow_i32x4_u")
