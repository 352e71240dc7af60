"""rcp and rsqrt: one correctly rounded division (after f32.sqrt/f64.sqrt, also correctly rounded, for rsqrt).

``rcp(x) = 1/x`` is correctly rounded (IEEE division), with C's special
values (±0 -> ±inf, ±inf -> ±0, NaN -> NaN). ``rsqrt(x) = 1/sqrt(x)`` rounds
twice, exactly as the Atlas reference defines it, so it matches the
reference bit for bit and is within one ulp of the correctly rounded
1/sqrt(x); rsqrt(+0) = +inf, rsqrt(-0) = -inf, rsqrt(x < 0) = NaN.
"""

from __future__ import annotations

from .vec_builder import VecBuilder, Vec
from .registry import math_routine

__all__ = ["rcp_routine", "rsqrt_routine"]


@math_routine("rcp", "f32", formula="1 / x")
@math_routine("rcp", "f64", formula="1 / x")
def rcp_routine(kb: VecBuilder, x: Vec) -> Vec:
    return 1.0 / x


@math_routine("rsqrt", "f32", formula="1 / sqrt(x)")
@math_routine("rsqrt", "f64", formula="1 / sqrt(x)")
def rsqrt_routine(kb: VecBuilder, x: Vec) -> Vec:
    return 1.0 / kb.sqrt(x)
