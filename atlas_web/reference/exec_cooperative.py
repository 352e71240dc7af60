"""Executor rules of the cooperative instructions: ParallelMap, ParallelMapBinary, ParallelReduce, PoolAlloc, PoolFree.

They run once, when every live lane stands at them, as a ``CooperativeStep``:
registers are read from global lane 0 (address registers included), a
destination register is written for every lane (uniform), and a trap is
raised at once as AtlasTrap with lane -1. Array operands are checked over
their whole range (``count`` values) in operand order: handle, bounds,
alignment of the start.
"""

from __future__ import annotations

import numpy as np

from ..errors import AllocationFailed, AtlasTrap, TrapCode
from ..isa.types import Type
from . import numeric
from .exec_address import check_access, gather_runs, resolve_global, scatter, unsigned
from .exec_step import Plan, Step, trap_detail

__all__ = ["COOPERATIVE_RULES", "CooperativeStep"]

_LANE_ZERO = np.zeros(1, dtype=np.int64)


class CooperativeStep(Step):
    """A step run once for the whole launch: reads lane 0, traps with lane -1 by raising AtlasTrap."""

    __slots__ = ()

    def __init__(self, machine, plan: Plan) -> None:
        super().__init__(machine, plan, _LANE_ZERO, 1)

    def trap(self, code: TrapCode, mask: np.ndarray) -> None:
        if np.any(mask):
            raise AtlasTrap(code, self.plan.index, -1, trap_detail(self.plan.instr, code))

    def write_uniform(self, number: int, ty: Type, value: np.ndarray) -> None:
        """Register ``number`` := the one value in ``value`` (of ``ty``) in every lane."""
        self.machine.regs.write(number, ty, np.repeat(value[:1], self.machine.geometry.n), None)


def _array_span(step: CooperativeStep, field: str, ty: Type, count: int):
    span, = check_access(step, resolve_global(step, field), ty.size_bytes() * count, ty.alignment())
    return span.data, int(span.offsets[0])


def _read_array(step: CooperativeStep, field: str, ty: Type, count: int) -> np.ndarray:
    data, offset = _array_span(step, field, ty, count)
    return gather_runs(data, np.array([offset], dtype=np.int64), ty, count)[0]


def _write_array(data: np.ndarray, offset: int, ty: Type, values: np.ndarray) -> None:
    offsets = offset + ty.size_bytes() * np.arange(len(values), dtype=np.int64)
    scatter(data, offsets, ty, values)


def _parallel_map(step: CooperativeStep) -> None:
    instr = step.instr
    ty, count = instr.ty, instr.count
    dst, dst_offset = _array_span(step, "dst_array", ty, count)
    source = _read_array(step, "src_array", ty, count)
    _write_array(dst, dst_offset, ty, numeric.MAP_OPS[instr.operation](ty, source))


def _parallel_map_binary(step: CooperativeStep) -> None:
    instr = step.instr
    ty, count = instr.ty, instr.count
    dst, dst_offset = _array_span(step, "dst_array", ty, count)
    a = _read_array(step, "src_a", ty, count)
    b = _read_array(step, "src_b", ty, count)
    _write_array(dst, dst_offset, ty, numeric.BINARY_MAP_OPS[instr.operation](ty, a, b))


def _parallel_reduce(step: CooperativeStep) -> None:
    instr = step.instr
    values = _read_array(step, "src_array", instr.ty, instr.count)
    result = numeric.parallel_reduce(instr.operation, instr.ty, values)
    step.write_uniform(step.plan.dest.number, instr.ty, np.asarray(result))


def _pool_alloc(step: CooperativeStep) -> None:
    try:
        alloc = step.machine.memory.allocate("pool", step.instr.size)
    except AllocationFailed as failure:
        raise AtlasTrap(TrapCode.POOL_EXHAUSTED, step.plan.index, -1,
                        trap_detail(step.instr, TrapCode.POOL_EXHAUSTED, str(failure))) from None
    step.write_uniform(step.plan.dest.number, Type.U32, np.array([alloc.handle], dtype=np.uint32))


def _pool_free(step: CooperativeStep) -> None:
    ty, values = step.read_typed("handle")
    handle = int(unsigned(ty, values)[0])
    store = step.machine.memory
    entry = store.lookup(handle)
    if entry is None or entry[0].kind != "pool":
        raise AtlasTrap(TrapCode.INVALID_HANDLE, step.plan.index, -1,
                        trap_detail(step.instr, TrapCode.INVALID_HANDLE, f"handle {handle} names no live pool"))
    store.free(handle, "pool")


COOPERATIVE_RULES = {
    "ParallelMap": _parallel_map, "ParallelMapBinary": _parallel_map_binary, "ParallelReduce": _parallel_reduce,
    "PoolAlloc": _pool_alloc, "PoolFree": _pool_free,
}
