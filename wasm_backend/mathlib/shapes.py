"""Lane formats and function shapes of the math library.

A ``LaneFormat`` (F32 or F64) says how a v128 is read: four f32 lanes or two
f64 lanes, with the matching integer view (i32x4 / i64x2) used for bit
manipulation. A ``Shape`` is the signature of one emitted function: a vector
(``f32x4``, ``f64x2``: v128 arguments, v128 result) or a scalar (``f32``,
``f64``). Shapes are also accepted by their text (``"f32x4"``).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from atlas_web.errors import UnsupportedOperation

from ..encoding.types import ValType

__all__ = ["LaneFormat", "Shape", "as_shape", "FORMAT_F32", "FORMAT_F64", "FORMAT_F64_SCALAR"]


@dataclass(frozen=True)
class LaneFormat:
    """One float lane format: names of its instruction families and its bit layout."""

    name: str            # "f32" / "f64"
    lanes: int           # lanes per v128
    bits: int
    mantissa_bits: int   # stored fraction bits (23 / 52)
    exponent_bias: int
    pack: str            # struct code of one lane
    int_pack: str        # struct code of the same-width signed integer

    @property
    def float_prefix(self) -> str:
        """``f32x4``/``f64x2``; a one-lane (scalar) format uses the plain ``f32``/``f64`` instructions."""
        return f"{self.name}x{self.lanes}" if self.lanes > 1 else self.name

    @property
    def int_prefix(self) -> str:
        return f"i{self.bits}x{self.lanes}" if self.lanes > 1 else f"i{self.bits}"

    @property
    def is_vector(self) -> bool:
        return self.lanes > 1

    @property
    def valtype(self) -> ValType:
        """The wasm type a value of this format lives in (v128, or the scalar type)."""
        return ValType.V128 if self.lanes > 1 else self.scalar

    @property
    def scalar(self) -> ValType:
        return ValType.F32 if self.bits == 32 else ValType.F64

    def splat_float(self, value: float) -> bytes:
        """16 bytes holding ``value`` (rounded to the format) in every lane."""
        return struct.pack("<" + self.pack * self.lanes, *([float(value)] * self.lanes))

    def splat_int(self, value: int) -> bytes:
        """16 bytes holding the integer ``value`` (two's complement, wrapped to the lane width) in every lane."""
        wrapped = value & ((1 << self.bits) - 1)
        return wrapped.to_bytes(self.bits // 8, "little") * self.lanes

    def round(self, value: float) -> float:
        """``value`` rounded to this format (identity for f64)."""
        return struct.unpack("<" + self.pack, struct.pack("<" + self.pack, value))[0]


FORMAT_F32 = LaneFormat("f32", 4, 32, 23, 127, "f", "i")
FORMAT_F64 = LaneFormat("f64", 2, 64, 52, 1023, "d", "q")
#: plain f64 values (scalar helper code; float operations only)
FORMAT_F64_SCALAR = LaneFormat("f64", 1, 64, 52, 1023, "d", "q")


class Shape(enum.Enum):
    """The signature of an emitted math function."""

    F32X4 = "f32x4"
    F64X2 = "f64x2"
    F32 = "f32"
    F64 = "f64"

    @property
    def format(self) -> LaneFormat:
        return FORMAT_F32 if self in (Shape.F32X4, Shape.F32) else FORMAT_F64

    @property
    def is_vector(self) -> bool:
        return self in (Shape.F32X4, Shape.F64X2)

    @property
    def valtype(self) -> ValType:
        """The wasm type of each argument and of the result."""
        return ValType.V128 if self.is_vector else self.format.scalar

    @property
    def vector(self) -> "Shape":
        """The vector shape with the same lane format."""
        return Shape.F32X4 if self.format is FORMAT_F32 else Shape.F64X2


def as_shape(shape: object) -> Shape:
    """``shape`` as a Shape (a Shape or its text); raises UnsupportedOperation naming the known shapes."""
    if isinstance(shape, Shape):
        return shape
    try:
        return Shape(shape)
    except ValueError:
        known = ", ".join(s.value for s in Shape)
        raise UnsupportedOperation("math library", shape, "wasm", f"unknown shape (known: {known})") from None
