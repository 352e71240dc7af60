"""CVT: conversions between every pair of ISA types, each rounded or wrapped once.

- int -> int: wrap to the destination width (sign- or zero-extended by the source's signedness).
- int -> float: round to nearest even, once (64-bit and extended sources included; beyond the format: ±inf).
- float -> float: round to nearest even, once; NaN stays NaN.
- float -> int: truncate toward zero, saturate to the destination range; NaN gives 0.

Native paths are vectorized; extended integers go through Python ints. Every
function returns a new array in the destination's storage dtype.
"""

from __future__ import annotations

import math

import numpy as np

from ..isa.types import Type
from .numeric_extended import wrapper
from .numeric_formats import object_array, round_once, round_to, storage_dtype

__all__ = ["convert", "round_int_to_float", "CONVERSIONS"]

_TWO53 = 2 ** 53
# significand bits (with the hidden bit) and the largest finite value, as an exact int
_PRECISION = {
    Type.F16: (11, 65504),
    Type.BF16: (8, int(float.fromhex("0x1.fep127"))),
    Type.F32: (24, int(float.fromhex("0x1.fffffep127"))),
    Type.F64: (53, int(float.fromhex("0x1.fffffffffffffp1023"))),
}


def _family(ty: Type) -> str:
    if ty.is_float():
        return "float"
    return "extended" if ty.is_extended() else "int"


def round_int_to_float(value: int, ty: Type) -> float:
    """The Python int ``value`` rounded to nearest even in the float type ``ty`` (±inf beyond its range)."""
    if value == 0:
        return 0.0
    precision, largest = _PRECISION[ty]
    magnitude = abs(value)
    shift = magnitude.bit_length() - precision
    if shift > 0:
        kept = magnitude >> shift
        dropped = magnitude - (kept << shift)
        half = 1 << (shift - 1)
        if dropped > half or (dropped == half and kept & 1):
            kept += 1
        magnitude = kept << shift
    if magnitude > largest:
        result = math.inf
    else:
        result = float(magnitude)  # exact: at most ``precision`` significant bits, within range
    return result if value > 0 else -result


def _int_to_f64_odd(values: np.ndarray) -> np.ndarray:
    """64-bit integers as f64, exact below 2**53, above it rounded to odd at 2**11 granularity.

    The dropped low 11 bits are folded into a sticky bit, so any later round
    to nearest of at most 51 bits sees the true side of every midpoint.
    """
    wide = values.astype(np.float64)  # exact where |v| < 2**53, the usual case
    big = np.abs(wide) >= _TWO53
    if not big.any():
        return wide
    idx = np.flatnonzero(big)
    few = values[idx]
    as_u = few.view(np.uint64)
    magnitude = as_u if values.dtype.kind == "u" else np.where(few < 0, (~as_u) + np.uint64(1), as_u)
    sticky = np.where((magnitude & np.uint64(0x7FF)) != 0, np.uint64(0x800), np.uint64(0))
    folded = ((magnitude & ~np.uint64(0x7FF)) | sticky).astype(np.float64)  # exact: at most 53 significant bits
    wide[idx] = folded if values.dtype.kind == "u" else np.where(few < 0, -folded, folded)
    return wide


def _int_to_f64(values: np.ndarray) -> np.ndarray:
    """Native integers rounded to nearest even in f64."""
    if values.dtype != np.uint64:
        return values.astype(np.float64)  # exact below 64 bits; int64 -> f64 is the IEEE conversion
    high = values >= np.uint64(1 << 63)
    if not high.any():
        return values.astype(np.int64).astype(np.float64)
    halved = ((values >> np.uint64(1)) | (values & np.uint64(1))).astype(np.int64)  # keeps a sticky bit
    return np.where(high, halved.astype(np.float64) * 2.0, values.astype(np.int64).astype(np.float64))


def _int_to_float(values: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    if dst is Type.F64 or src.bits <= 32:
        exact_or_once = _int_to_f64(values)  # exact for sources of at most 32 bits
        return round_once(dst, exact_or_once) if dst is not Type.F64 else exact_or_once
    return round_once(dst, _int_to_f64_odd(values))


def _float_to_int(values: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    """Truncate, then saturate; NaN gives 0. Computed in the source's own precision (F16 widened to f32)."""
    with np.errstate(all="ignore"):
        t = np.trunc(values.astype(np.float32) if src is Type.F16 else values)
        lo, hi = dst.int_range()
        result = t.astype(storage_dtype(dst))  # exact inside the range; lanes outside are set below
        # hi + 1 and lo are powers of two (or 0): exact in every float format
        for outside, value in ((t >= float(hi + 1), hi), (t < float(lo), lo), (np.isnan(t), 0)):
            if outside.any():
                result[outside] = value
        return result


def _float_to_extended(values: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    lo, hi = dst.int_range()

    def one(x: float) -> int:
        if x != x:
            return 0
        if math.isinf(x):
            return hi if x > 0 else lo
        return min(max(math.trunc(x), lo), hi)

    return object_array(map(one, values.astype(np.float64).tolist()), len(values))


def _float_to_float(values: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    if src is not Type.F64:
        return round_to(dst, values)  # from f32 (or narrower, widened exactly) this rounds once
    return round_once(dst, values)


def _int_to_int(values: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    with np.errstate(all="ignore"):
        return values.astype(storage_dtype(dst))  # C conversion: sign/zero-extend, then wrap


def _int_to_extended(values: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    wrap = wrapper(dst)
    return object_array(map(wrap, values.tolist()), len(values))


def _extended_to_int(values: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    wrap = wrapper(dst)
    return np.fromiter(map(wrap, values.tolist()), dtype=storage_dtype(dst), count=len(values))


def _extended_to_float(values: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    rounded = [round_int_to_float(v, dst) for v in values.tolist()]
    return np.array(rounded, dtype=np.float64).astype(storage_dtype(dst))  # exact: already in the format


CONVERSIONS = {
    ("int", "int"): _int_to_int, ("int", "extended"): _int_to_extended, ("int", "float"): _int_to_float,
    ("extended", "int"): _extended_to_int, ("extended", "extended"): _int_to_extended,
    ("extended", "float"): _extended_to_float,
    ("float", "int"): _float_to_int, ("float", "extended"): _float_to_extended, ("float", "float"): _float_to_float,
}


def convert(values: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    """CVT: ``values`` of ``src`` converted to ``dst`` (a new array in ``dst``'s storage dtype)."""
    if src is dst:
        return values.copy()
    return CONVERSIONS[_family(src), _family(dst)](values, src, dst)
