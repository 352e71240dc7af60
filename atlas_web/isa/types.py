"""Scalar types of the Atlas ISA.

Every computing instruction carries one of these (``add.f32``). Type codes are
plain integers used by the bytecode; the text spelling is the lower-case name.
"""

from __future__ import annotations

import enum

__all__ = ["Type", "TypeClass", "INTEGER_TYPES_UP_TO_64", "FLOAT_TYPES", "ALL_TYPES"]


class TypeClass(enum.Enum):
    """The broad family of a type."""

    FLOAT = "float"
    SIGNED = "signed"
    UNSIGNED = "unsigned"


class Type(enum.Enum):
    """A scalar type: value is ``(code, bits, family)``.

    Extended integers (I128 … I4096, U128 … U4096) wrap modulo 2**bits and are
    stored as little-endian limbs.
    """

    F16 = (1, 16, TypeClass.FLOAT)
    BF16 = (2, 16, TypeClass.FLOAT)
    F32 = (3, 32, TypeClass.FLOAT)
    F64 = (4, 64, TypeClass.FLOAT)
    I8 = (10, 8, TypeClass.SIGNED)
    I16 = (11, 16, TypeClass.SIGNED)
    I32 = (12, 32, TypeClass.SIGNED)
    I64 = (13, 64, TypeClass.SIGNED)
    I128 = (14, 128, TypeClass.SIGNED)
    I256 = (15, 256, TypeClass.SIGNED)
    I512 = (16, 512, TypeClass.SIGNED)
    I1024 = (17, 1024, TypeClass.SIGNED)
    I2048 = (18, 2048, TypeClass.SIGNED)
    I4096 = (19, 4096, TypeClass.SIGNED)
    U8 = (30, 8, TypeClass.UNSIGNED)
    U16 = (31, 16, TypeClass.UNSIGNED)
    U32 = (32, 32, TypeClass.UNSIGNED)
    U64 = (33, 64, TypeClass.UNSIGNED)
    U128 = (34, 128, TypeClass.UNSIGNED)
    U256 = (35, 256, TypeClass.UNSIGNED)
    U512 = (36, 512, TypeClass.UNSIGNED)
    U1024 = (37, 1024, TypeClass.UNSIGNED)
    U2048 = (38, 2048, TypeClass.UNSIGNED)
    U4096 = (39, 4096, TypeClass.UNSIGNED)

    @property
    def code(self) -> int:
        """The bytecode type code."""
        return self.value[0]

    @property
    def bits(self) -> int:
        """Width in bits (16 for F16, 4096 for U4096)."""
        return self.value[1]

    @property
    def family(self) -> TypeClass:
        """Float, signed or unsigned integer."""
        return self.value[2]

    def size_bytes(self) -> int:
        """Size of one value in memory, in bytes."""
        return self.bits // 8

    def is_float(self) -> bool:
        """True for F16, BF16, F32 and F64."""
        return self.family is TypeClass.FLOAT

    def is_integer(self) -> bool:
        """True for every signed and unsigned integer type, the extended ones included."""
        return self.family is not TypeClass.FLOAT

    def is_signed(self) -> bool:
        """True for signed integers and for floats (which carry a sign)."""
        return self.family is not TypeClass.UNSIGNED

    def is_unsigned(self) -> bool:
        """True for the unsigned integer types."""
        return self.family is TypeClass.UNSIGNED

    def is_extended(self) -> bool:
        """True for the limb-stored integers wider than 64 bits."""
        return self.is_integer() and self.bits > 64

    def alignment(self) -> int:
        """Natural alignment of a load or store: the size up to 8 bytes, 8 beyond."""
        return min(self.size_bytes(), 8)

    @property
    def suffix(self) -> str:
        """The text-assembly spelling: ``f32``, ``bf16``, ``u4096``."""
        return self.name.lower()

    @classmethod
    def from_code(cls, code: int) -> "Type":
        """The type of a bytecode type code; raises KeyError for an unknown code."""
        return _BY_CODE[code]

    @classmethod
    def from_suffix(cls, suffix: str) -> "Type":
        """The type spelled ``suffix``; raises KeyError for an unknown spelling."""
        return _BY_SUFFIX[suffix]

    def int_range(self) -> tuple[int, int]:
        """Smallest and largest value of an integer type."""
        if self.is_float():
            raise ValueError(f"{self.name} is not an integer type")
        if self.is_signed():
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        return 0, (1 << self.bits) - 1

    def wrap(self, value: int) -> int:
        """``value`` wrapped to this integer type (two's complement)."""
        mask = (1 << self.bits) - 1
        value &= mask
        if self.is_signed() and value >> (self.bits - 1):
            value -= 1 << self.bits
        return value

    def __repr__(self) -> str:
        return f"Type.{self.name}"


_BY_CODE = {t.code: t for t in Type}
_BY_SUFFIX = {t.suffix: t for t in Type}

ALL_TYPES: tuple[Type, ...] = tuple(Type)
FLOAT_TYPES: tuple[Type, ...] = (Type.F16, Type.BF16, Type.F32, Type.F64)
INTEGER_TYPES_UP_TO_64: tuple[Type, ...] = (
    Type.I8, Type.I16, Type.I32, Type.I64, Type.U8, Type.U16, Type.U32, Type.U64,
)
