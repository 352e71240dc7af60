"""Pure-Python rounding of a Python float to the ISA's float formats.

Used for immediates and by anything that must round without NumPy (Pyodide
has no NumPy offline). Rounding is to nearest, ties to even; overflow gives
infinity; NaN stays NaN (one canonical NaN object, so equal programs compare
equal).
"""

from __future__ import annotations

import math
import struct

from .types import Type

__all__ = ["round_float", "CANONICAL_NAN", "float_to_bits", "bits_to_float", "ulp_distance"]

CANONICAL_NAN = float("nan")

# (significand bits including the hidden one, min normal exponent, max finite value)
_FORMATS = {
    Type.F16: (11, -14, 65504.0),
    Type.BF16: (8, -126, float.fromhex("0x1.fep127")),
    Type.F32: (24, -126, float.fromhex("0x1.fffffep127")),
}


def round_float(x: float, ty: Type) -> float:
    """``x`` rounded to the float type ``ty`` (F16, BF16, F32 or F64), returned as a Python float."""
    x = float(x)
    if math.isnan(x):
        return CANONICAL_NAN
    if ty is Type.F64 or math.isinf(x) or x == 0.0:
        return x
    bits, emin, fmax = _FORMATS[ty]
    _, e = math.frexp(x)  # x = m * 2**e, 0.5 <= |m| < 1
    exp = max(e - 1, emin)  # exponent of the leading bit, clamped to the normal minimum
    quantum = math.ldexp(1.0, exp - (bits - 1))
    r = round(x / quantum) * quantum  # x / quantum is exact: quantum is a power of two
    if abs(r) > fmax:
        return math.copysign(math.inf, x)
    if r == 0.0:
        return math.copysign(0.0, x)
    return float(r)


def float_to_bits(x: float, ty: Type) -> int:
    """The IEEE bit pattern of ``x`` (already representable in ``ty``) as an unsigned int."""
    if ty is Type.F64:
        return struct.unpack("<Q", struct.pack("<d", x))[0]
    if ty is Type.F32:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    if ty is Type.F16:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    if ty is Type.BF16:
        return struct.unpack("<I", struct.pack("<f", x))[0] >> 16
    raise ValueError(f"{ty} is not a float type")


def bits_to_float(bits: int, ty: Type) -> float:
    """The float whose IEEE pattern in ``ty`` is ``bits``."""
    if ty is Type.F64:
        return struct.unpack("<d", struct.pack("<Q", bits & (2**64 - 1)))[0]
    if ty is Type.F32:
        return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
    if ty is Type.F16:
        return struct.unpack("<e", struct.pack("<H", bits & 0xFFFF))[0]
    if ty is Type.BF16:
        return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]
    raise ValueError(f"{ty} is not a float type")


def ulp_distance(a: float, b: float, ty: Type) -> float:
    """Distance in units in the last place of float type ``ty`` between two of its values: how many values
    of ``ty`` lie between them, plus one (NaN equals NaN; an infinity only equals itself, else inf)."""
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    if math.isinf(a) or math.isinf(b):
        return 0.0 if a == b else math.inf
    if a == b:
        return 0.0
    return float(abs(_ordinal(a, ty) - _ordinal(b, ty)))


def _ordinal(x: float, ty: Type) -> int:
    """Monotonic integer index of a value of ``ty`` (adjacent values differ by 1; -0 and +0 are both 0)."""
    bits = float_to_bits(x, ty)
    sign_bit = 1 << (ty.bits - 1)
    return -(bits & ~sign_bit) if bits & sign_bit else bits
