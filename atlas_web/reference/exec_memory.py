"""Executor rules of the per-lane memory instructions: LDG STG LDS STS PoolLoad PoolStore ReduceAdd/Min/Max/Mul.

Each rule resolves its address for the step's lanes, lets ``check_access``
trap the lanes whose access fails (INVALID_HANDLE, OUT_OF_BOUNDS, MISALIGNED,
in that order), and moves values for the others. A load writes its
destination only for lanes that did not trap; a store writes memory only for
them.
"""

from __future__ import annotations

import numpy as np

from ..isa.types import Type
from . import numeric
from .exec_address import (
    Span, check_access, check_shared, gather, gather_runs, resolve_global, resolve_pool, resolve_shared, scatter,
)
from .exec_step import Step

__all__ = ["MEMORY_RULES", "REDUCE_CHUNK_VALUES", "reduction_rules"]


def _collect(step: Step, ty: Type, spans: list[Span], fetch) -> np.ndarray:
    """Per-lane values from ``fetch(span)`` for every span; lanes outside all spans (trapped) get zeros."""
    if len(spans) == 1 and spans[0].lanes is None:
        return fetch(spans[0])
    values = None
    for span in spans:
        part = fetch(span)
        if values is None:
            values = np.zeros((step.count,) + part.shape[1:], dtype=part.dtype)
        values[span.lanes] = part
    if values is None:
        return numeric.zeros(ty, step.count)
    return values


def _store(spans: list[Span], ty: Type, values: np.ndarray) -> None:
    for span in spans:
        scatter(span.data, span.offsets, ty, values if span.lanes is None else values[span.lanes])


def _ldg(step: Step) -> None:
    ty = step.instr.ty
    spans = check_access(step, resolve_global(step, "src"), ty.size_bytes(), ty.alignment())
    step.write_dest(_collect(step, ty, spans, lambda s: gather(s.data, s.offsets, ty)))


def _stg(step: Step) -> None:
    ty = step.instr.ty
    values = step.read("src")
    _store(check_access(step, resolve_global(step, "dst"), ty.size_bytes(), ty.alignment()), ty, values)


def _lds(step: Step) -> None:
    ty = step.instr.ty
    span = check_shared(step, resolve_shared(step, "src"), ty.size_bytes(), ty.alignment())
    step.write_dest(_collect(step, ty, [span] if span else [], lambda s: gather(s.data, s.offsets, ty)))


def _sts(step: Step) -> None:
    ty = step.instr.ty
    values = step.read("src")
    span = check_shared(step, resolve_shared(step, "dst"), ty.size_bytes(), ty.alignment())
    _store([span] if span else [], ty, values)


def _pool_load(step: Step) -> None:
    ty = step.instr.ty
    spans = check_access(step, resolve_pool(step, "pool", "offset"), ty.size_bytes(), ty.alignment())
    step.write_dest(_collect(step, ty, spans, lambda s: gather(s.data, s.offsets, ty)))


def _pool_store(step: Step) -> None:
    ty = step.instr.ty
    values = step.read("src")
    _store(check_access(step, resolve_pool(step, "pool", "offset"), ty.size_bytes(), ty.alignment()), ty, values)


#: the most values a per-lane reduction gathers at once (lanes x columns): longer runs are folded in
#: column chunks, each continuing from the running value, so memory stays bounded whatever ``count`` is
REDUCE_CHUNK_VALUES = 1 << 22


def reduction_rules(fold) -> dict:
    """The rules of ReduceAdd/Min/Max/Mul folding each lane's values with ``fold(kind, ty, values)``
    (numeric.lane_reduce; the flush mode's numeric_flush.flushing_lane_reduce)."""
    return {f"Reduce{kind.capitalize()}": _reduce_rule(kind, fold) for kind in ("add", "min", "max", "mul")}


def _reduce_rule(kind: str, fold):
    def rule(step: Step) -> None:
        ty, count = step.instr.ty, step.instr.count
        spans = check_access(step, resolve_global(step, "src_array"), ty.size_bytes() * count, ty.alignment())
        if not spans:  # every lane trapped: nothing to read, fold or write (count may be up to 2**32 - 1)
            return
        size = ty.size_bytes()
        columns = max(1, REDUCE_CHUNK_VALUES // step.count)
        folded = fold(kind, ty, numeric.zeros(ty, 0).reshape(step.count, 0))  # count 0: identity
        for start in range(0, count, columns):
            width = min(columns, count - start)
            first = start * size
            chunk = _collect(step, ty, spans,
                             lambda s, first=first, width=width: gather_runs(s.data, s.offsets + first, ty, width))
            # the running value as the first column: the fold goes on in index order, rounding as before
            runs = chunk if start == 0 else np.concatenate([folded[:, None], chunk], axis=1)
            folded = fold(kind, ty, runs)
        step.write_dest(folded)
    rule.__name__ = f"_reduce_{kind}"
    return rule


MEMORY_RULES = {
    "LDG": _ldg, "STG": _stg, "LDS": _lds, "STS": _sts, "PoolLoad": _pool_load, "PoolStore": _pool_store,
    **reduction_rules(numeric.lane_reduce),
}
