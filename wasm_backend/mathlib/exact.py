"""Error-free transformations and polynomial evaluation on routine Vecs.

WebAssembly has no fused multiply-add outside relaxed SIMD (which may or may
not fuse, engine by engine), so exact products use Dekker's method with
Veltkamp splitting: ``split`` cuts a float into a high part of about half
the mantissa and a low part so that products of halves are exact. The
results are exact as long as nothing overflows or underflows (callers keep
their operands in range; documented where they do).
"""

from __future__ import annotations

from typing import Sequence

from .vec_builder import VecBuilder, Vec

__all__ = ["two_sum", "fast_two_sum", "split", "two_product", "horner", "SPLITTER"]

#: Veltkamp's constant 2**ceil(p/2) + 1 per lane format
SPLITTER = {"f32": float(2 ** 12 + 1), "f64": float(2 ** 27 + 1)}


def two_sum(kb: VecBuilder, a: Vec, b: Vec) -> tuple[Vec, Vec]:
    """(s, e) with s = fl(a + b) and a + b = s + e exactly (Knuth; any magnitudes)."""
    s = kb.let(a + b)
    bb = kb.let(s - a)
    e = kb.let((a - (s - bb)) + (b - bb))
    return s, e


def fast_two_sum(kb: VecBuilder, a: Vec, b: Vec) -> tuple[Vec, Vec]:
    """(s, e) with s = fl(a + b), a + b = s + e exactly, provided |a| >= |b| (or a = 0)."""
    s = kb.let(a + b)
    e = kb.let(b - (s - a))
    return s, e


def split(kb: VecBuilder, a: Vec) -> tuple[Vec, Vec]:
    """(hi, lo) with a = hi + lo, each holding at most half the mantissa (|a| must stay far below overflow)."""
    t = kb.let(a * SPLITTER[kb.fmt.name])
    hi = kb.let(t - (t - a))
    return hi, kb.let(a - hi)


def two_product(kb: VecBuilder, a: Vec, b: Vec, *, a_parts: tuple[Vec, Vec] | None = None,
                b_parts: tuple[Vec, Vec] | None = None) -> tuple[Vec, Vec]:
    """(p, e) with p = fl(a * b) and a * b = p + e exactly (Dekker); pass known splits to save work."""
    ah, al = a_parts or split(kb, a)
    bh, bl = b_parts or split(kb, b)
    p = kb.let(a * b)
    e = kb.let(((ah * bh - p) + ah * bl + al * bh) + al * bl)
    return p, e


def horner(kb: VecBuilder, coefficients: Sequence[float], t: Vec) -> Vec:
    """sum(c[i] * t**i) by Horner's rule with ``kb.madd`` steps (``t`` is read once per coefficient; let it
    first)."""
    acc: Vec | float = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        acc = kb.madd(acc, t, c)
    return kb.vec(acc)
