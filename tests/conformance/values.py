"""Deterministic test inputs per type, as raw little-endian bytes, with edge values first."""

from __future__ import annotations

import math
import random

from atlas_web.isa import Type
from atlas_web.isa.floats import float_to_bits, round_float, ulp_distance

_FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, math.inf, -math.inf, math.nan, 1e-3, 123.456,
                -7.75, 1e30, -1e-30, 65504.0, 1e-7, 2.0 ** -126, 2.0 ** -140, 0.1]


def _int_edges(ty: Type) -> list[int]:
    lo, hi = ty.int_range()
    edges = [0, 1, 2, 3, 7, hi, lo, hi - 1, lo + 1, ty.bits - 1, ty.bits, ty.bits + 1, 95, 96, 255]
    if ty.is_signed():
        edges += [-1, -2, -3, -7, -(ty.bits)]
    return [ty.wrap(v) for v in edges]


def float_values(ty: Type, n: int, seed: int, domain: tuple[float, float] | None = None) -> list[float]:
    """``n`` floats representable in ``ty``: edge values, then random ones (in ``domain`` when given)."""
    rng = random.Random(seed)
    out = [round_float(v, ty) for v in _FLOAT_EDGES]
    while len(out) < n:
        if domain is not None:
            v = rng.uniform(*domain)
        else:
            v = rng.choice([rng.uniform(-4, 4), rng.uniform(-100, 100), rng.gauss(0, 1e3), rng.uniform(-1, 1)])
        out.append(round_float(v, ty))
    rng.shuffle(out)
    return out[:n]


def int_values(ty: Type, n: int, seed: int, lo: int | None = None, hi: int | None = None) -> list[int]:
    """``n`` ints of ``ty``: edge values, then random ones (in ``lo..hi`` when given)."""
    rng = random.Random(seed)
    tlo, thi = ty.int_range()
    if lo is not None or hi is not None:
        lo = tlo if lo is None else lo
        hi = thi if hi is None else hi
        out = [v for v in _int_edges(ty) if lo <= v <= hi]
        while len(out) < n:
            out.append(rng.randint(lo, hi))
    else:
        out = _int_edges(ty)
        while len(out) < n:
            bits = rng.choice([4, 8, ty.bits // 2 or 1, ty.bits])
            out.append(ty.wrap(rng.getrandbits(bits) * rng.choice([1, -1])))
    rng.shuffle(out)
    return out[:n]


def encode(ty: Type, values: list) -> bytes:
    """Little-endian bytes of ``values`` in ``ty``."""
    size = ty.size_bytes()
    if ty.is_float():
        return b"".join(float_to_bits(v, ty).to_bytes(size, "little") for v in values)
    mask = (1 << ty.bits) - 1
    return b"".join((v & mask).to_bytes(size, "little") for v in values)


def decode(ty: Type, raw: bytes) -> list:
    """Values of ``ty`` from little-endian bytes (floats as Python floats, ints canonical)."""
    size = ty.size_bytes()
    vals = [int.from_bytes(raw[i:i + size], "little") for i in range(0, len(raw), size)]
    if ty.is_float():
        from atlas_web.isa.floats import bits_to_float
        return [bits_to_float(v, ty) for v in vals]
    return [ty.wrap(v) for v in vals]


__all__ = ["float_values", "int_values", "encode", "decode", "ulp_distance"]
