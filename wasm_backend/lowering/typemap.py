"""How each Atlas type is held in WebAssembly: local value type, register bank, loads and stores.

* integers of 8, 16 and 32 bits live in ``i32`` locals, 64-bit ones in ``i64``. Narrow integers keep
  only their low bits meaningful ("dirty" upper bits): wrapping operations (add, mul, and, shl ...)
  need no fix-up, and the rules that depend on the value (compare, divide, shift right, convert,
  address) normalise first with ``extend`` (sign) or ``mask`` (zero);
* F16 and BF16 live in ``f32`` locals holding values exactly representable in their format (every
  instruction rounds its f32 result with the runtime helpers ``round_f16`` / ``round_bf16``);
  F32 in ``f32``, F64 in ``f64``;
* extended integers (I128 … U4096) live in the lane's record in linear memory as little-endian
  64-bit limbs; their "value" on the wasm stack is the i32 address of those limbs.

Integers of one width share a bank (the bits are reinterpreted), as in the reference's register file.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.types import Type

from ..encoding.types import ValType

__all__ = ["TypeInfo", "TYPE_INFO", "type_info", "bank_of", "valtype_of", "limbs_of"]


@dataclass(frozen=True, slots=True)
class TypeInfo:
    """The WebAssembly form of one Atlas type."""

    ty: Type
    #: the local's value type (I32 for the address of an extended integer's limbs)
    valtype: ValType
    #: the wasm prefix of its arithmetic ("i32", "i64", "f32", "f64"; "" for extended integers)
    prefix: str
    #: load instruction for native types ("" where a helper decodes the bytes: F16, BF16, extended)
    load: str
    #: store instruction ("" as above)
    store: str
    #: natural alignment exponent of the memory argument
    align_log2: int


def _int(ty: Type) -> TypeInfo:
    bits = ty.bits
    if bits > 64:
        return TypeInfo(ty, ValType.I32, "", "", "", 3)
    signed = "s" if ty.is_signed() else "u"
    prefix = "i64" if bits == 64 else "i32"
    if bits in (32, 64):
        return TypeInfo(ty, ValType.I64 if bits == 64 else ValType.I32, prefix, f"{prefix}.load", f"{prefix}.store",
                        bits.bit_length() - 4)
    return TypeInfo(ty, ValType.I32, prefix, f"i32.load{bits}_{signed}", f"i32.store{bits}", bits.bit_length() - 4)


TYPE_INFO: dict[Type, TypeInfo] = {
    Type.F16: TypeInfo(Type.F16, ValType.F32, "f32", "", "", 1),
    Type.BF16: TypeInfo(Type.BF16, ValType.F32, "f32", "", "", 1),
    Type.F32: TypeInfo(Type.F32, ValType.F32, "f32", "f32.load", "f32.store", 2),
    Type.F64: TypeInfo(Type.F64, ValType.F64, "f64", "f64.load", "f64.store", 3),
    **{ty: _int(ty) for ty in Type if ty.is_integer()},
}


def type_info(ty: Type) -> TypeInfo:
    return TYPE_INFO[ty]


def bank_of(ty: Type) -> object:
    """The register bank of ``ty``: integers of one width share one, every float type has its own."""
    return ("int", ty.bits) if ty.is_integer() else ty


def valtype_of(ty: Type) -> ValType:
    return TYPE_INFO[ty].valtype


def limbs_of(ty: Type) -> int:
    """64-bit limbs of an extended integer type."""
    return ty.bits // 64
