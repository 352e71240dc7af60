"""THE type map of the WGSL code generator: how every Atlas type lives in a WGSL register and in memory.

Families (the rule tables are keyed by instruction name and family):

``float``  F16, BF16, F32: an ``f32`` holding a value of the format (F16 and BF16 compute in f32
           and are rounded to their format after every instruction, as the contract says);
``word``   the integers of 8, 16 and 32 bits: a ``u32`` holding the canonical *unsigned* bits,
           zero-extended (``i8`` -1 is ``0xff``); signed rules sign-extend where it matters;
``dword``  I64, U64: a ``vec2<u32>`` (low word, high word);
``wide``   I128 … U4096: an ``array<u32, N>`` of little-endian limbs.

F64 has no entry: WGSL has no 64-bit float, so every F64 instruction raises
UnsupportedOperation (the registry's AUTO selection routes such programs to another backend).
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.types import Type

__all__ = ["WgslType", "TYPE_MAP", "wgsl_type", "FAMILIES", "PREDICATE_WGSL", "is_supported_type", "u32_literal",
           "f32_literal"]

FAMILIES = ("float", "word", "dword", "wide")
PREDICATE_WGSL = "bool"


@dataclass(frozen=True)
class WgslType:
    """How values of ``ty`` are held: ``family``, the WGSL type ``wgsl`` of a register, ``words``
    (u32 words of a register or lane-state slot), ``size`` (bytes in memory), ``zero`` (the WGSL
    zero value), ``bits`` and ``signed`` (integers), ``mask`` (the canonical bits of a word-family
    value), and ``format`` (floats: "f16", "bf16" or "f32")."""

    ty: Type
    family: str
    wgsl: str
    words: int
    size: int
    zero: str
    bits: int
    signed: bool
    mask: int = 0xFFFFFFFF
    format: str = ""

    @property
    def suffix(self) -> str:
        return self.ty.suffix


def _entry(ty: Type) -> WgslType:
    size = ty.size_bytes()
    if ty.is_float():
        return WgslType(ty, "float", "f32", 1, size, "0.0", ty.bits, True, format=ty.suffix)
    signed = ty.is_signed()
    if ty.bits <= 32:
        return WgslType(ty, "word", "u32", 1, size, "0u", ty.bits, signed, (1 << ty.bits) - 1)
    if ty.bits == 64:
        return WgslType(ty, "dword", "vec2<u32>", 2, size, "vec2<u32>(0u, 0u)", 64, signed)
    words = ty.bits // 32
    return WgslType(ty, "wide", f"array<u32, {words}>", words, size, f"array<u32, {words}>()", ty.bits, signed)


#: Type -> WgslType for every type the WebGPU backend holds (F64 absent)
TYPE_MAP: dict[Type, WgslType] = {ty: _entry(ty) for ty in Type if ty is not Type.F64}


def is_supported_type(ty: Type | None) -> bool:
    """True for None (untyped instructions) and every type of TYPE_MAP."""
    return ty is None or ty in TYPE_MAP


def wgsl_type(ty: Type) -> WgslType:
    """The WgslType of ``ty``; raises KeyError for F64 (callers check ``is_supported_type`` first)."""
    return TYPE_MAP[ty]


def u32_literal(value: int) -> str:
    """A WGSL u32 literal of ``value`` taken modulo 2**32 (hex above 255)."""
    value &= 0xFFFFFFFF
    return f"{value}u" if value < 256 else f"0x{value:08x}u"


def f32_literal(bits: int) -> str:
    """An f32 with IEEE bits ``bits``, exactly (``bitcast<f32>(0x...u)``: NaN payloads and -0 kept).

    Infinities and NaNs XOR the bits with ``launch.zero`` (function scope only): WGSL makes a
    constant expression that evaluates to one an error (Tint, in browsers, enforces it)."""
    if (bits >> 23) & 0xFF == 0xFF:
        return f"bitcast<f32>({u32_literal(bits)} ^ launch.zero)"
    return f"bitcast<f32>({u32_literal(bits)})"
