"""The numeric core of the reference backend (NumPy): the executable form of docs/semantics.md, Numbers.

This module re-exports the interface the executor uses; the implementation
lives in ``numeric_*`` modules, one concept each:

- ``numeric_formats``: storage dtypes, rounding to F16/BF16/F32/F64, load/store, reinterpretation.
- ``numeric_integers`` / ``numeric_extended``: wrapping integer arithmetic and logic (native / Python ints).
- ``numeric_floats``, ``numeric_fma``: float arithmetic, FMA/FMS rounded once.
- ``numeric_conversions``: CVT between every pair of types.
- ``numeric_transcendentals``: EXP … SWISH, computed in binary64 and rounded once.
- ``numeric_atlas``: the pure Atlas instructions.
- ``numeric_lane_rules``: ``PURE_LANE_RULES``, the per-lane rule table.
- ``numeric_cooperative``: ``MAP_OPS``, ``BINARY_MAP_OPS``, ``parallel_reduce``, ``lane_reduce``.
"""

from __future__ import annotations

from .numeric_conversions import convert, round_int_to_float
from .numeric_cooperative import BINARY_MAP_OPS, MAP_OPS, lane_reduce, parallel_reduce
from .numeric_formats import (
    as_type, constant, load, round_once, round_to, storage_dtype, store, to_unsigned_index, zeros,
)
from .numeric_lane_rules import PURE_LANE_RULES, family_of, typed_op
from .numeric_outcome import Outcome

__all__ = [
    "storage_dtype", "zeros", "constant", "round_to", "round_once", "load", "store", "as_type",
    "to_unsigned_index", "Outcome", "PURE_LANE_RULES", "MAP_OPS", "BINARY_MAP_OPS", "parallel_reduce", "lane_reduce",
    "convert", "round_int_to_float", "family_of", "typed_op",
]
