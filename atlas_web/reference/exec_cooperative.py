"""Executor rules of the cooperative instructions: ParallelMap, ParallelMapBinary, ParallelReduce, LayerScale, PoolAlloc, PoolFree.

They run once, when every live lane stands at them, as a ``CooperativeStep``:
registers are read from global lane 0 (address registers included), a
destination register is written for every lane (uniform), and a trap is
raised at once as AtlasTrap with lane -1. Array operands are checked over
their whole range (their extent in the opcode table) in operand order, all
before any is written: handle, bounds, alignment of the start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AllocationFailed, TrapCode
from ..isa.enums import BinaryMapOperation
from ..isa.extents import ArrayOperand, array_operands
from ..isa.types import Type
from . import numeric
from .exec_address import check_access, gather_runs, resolve_global, scatter, unsigned
from ..trap_report import TrapRecord, operand_position, trap
from .exec_step import Plan, Step

__all__ = ["COOPERATIVE_RULES", "CooperativeStep", "CheckedArray", "checked_arrays"]

_LANE_ZERO = np.zeros(1, dtype=np.int64)


class CooperativeStep(Step):
    """A step run once for the whole launch: reads lane 0, traps with lane -1 by raising AtlasTrap."""

    __slots__ = ()

    def __init__(self, machine, plan: Plan) -> None:
        super().__init__(machine, plan, _LANE_ZERO, 1)

    def trap(self, code: TrapCode, mask: np.ndarray, record=None) -> None:
        if np.any(mask):
            raise trap(code, self.plan.index, -1, self.plan.instr, None if record is None else record(0))

    def write_uniform(self, number: int, ty: Type, value: np.ndarray) -> None:
        """Register ``number`` := the one value in ``value`` (of ``ty``) in every lane."""
        self.machine.regs.write(number, ty, np.repeat(value[:1], self.machine.geometry.n), None)


@dataclass(slots=True)
class CheckedArray:
    """An array operand that passed its checks: the allocation's bytes and the array's byte offset in them."""

    array: ArrayOperand
    data: np.ndarray
    offset: int

    def read(self) -> np.ndarray:
        """The array's ``elements`` values."""
        return gather_runs(self.data, np.array([self.offset], dtype=np.int64), self.array.ty,
                           self.array.elements)[0]

    def write(self, values: np.ndarray) -> None:
        """Store ``values`` (of the array's type) from the array's start."""
        offsets = self.offset + self.array.ty.size_bytes() * np.arange(len(values), dtype=np.int64)
        scatter(self.data, offsets, self.array.ty, values)


def checked_arrays(step: CooperativeStep) -> dict[str, CheckedArray]:
    """Every array operand of the step's instruction (the table's extents), checked over its whole range in
    operand order (handle, bounds, alignment of the start): operand name -> CheckedArray. An array whose
    extent reads another array's element (a CSR count, ``a_ptr[m]``) is checked after the others, in operand
    order, with that element read from the checked array. Traps (AtlasTrap, lane -1) at the first failing
    operand."""
    out: dict[str, CheckedArray] = {}

    def load(name: str, index: int) -> int:
        return int(out[name].read()[index])

    for at_launch in (False, True):
        for array in array_operands(step.instr, load if at_launch else None):
            if array.name in out or array.elements is None:   # checked, or known only in the second pass
                continue
            span, = check_access(step, resolve_global(step, array.name), array.nbytes, array.ty.alignment())
            out[array.name] = CheckedArray(array, span.data, int(span.offsets[0]))
    return {op.name: out[op.name] for op in step.instr.INFO.address_operands}


def _parallel_map(step: CooperativeStep) -> None:
    instr = step.instr
    arrays = checked_arrays(step)
    arrays["dst_array"].write(numeric.MAP_OPS[instr.operation](instr.ty, arrays["src_array"].read()))


def _parallel_map_binary(step: CooperativeStep) -> None:
    instr = step.instr
    arrays = checked_arrays(step)
    result = numeric.BINARY_MAP_OPS[instr.operation](instr.ty, arrays["src_a"].read(), arrays["src_b"].read())
    arrays["dst_array"].write(result)


def _parallel_reduce(step: CooperativeStep) -> None:
    instr = step.instr
    values = checked_arrays(step)["src_array"].read()
    result = numeric.parallel_reduce(instr.operation, instr.ty, values)
    step.write_uniform(step.plan.dest.number, instr.ty, np.asarray(result))


def _layer_scale(step: CooperativeStep) -> None:
    instr = step.instr
    arrays = checked_arrays(step)
    scale = np.tile(arrays["scale"].read(), instr.rows)
    mul = numeric.BINARY_MAP_OPS[BinaryMapOperation.Mul]   # f16/bf16: the f32 product is exact, rounded once
    arrays["output"].write(mul(instr.ty, arrays["input"].read(), scale))


def _pool_alloc(step: CooperativeStep) -> None:
    store = step.machine.memory
    try:
        alloc = store.allocate("pool", step.instr.size)
    except AllocationFailed:
        raise trap(TrapCode.POOL_EXHAUSTED, step.plan.index, -1, step.instr, TrapRecord(value=step.instr.size),
                   free=store.free_bytes()) from None
    step.write_uniform(step.plan.dest.number, Type.U32, np.array([alloc.handle], dtype=np.uint32))


def _pool_free(step: CooperativeStep) -> None:
    ty, values = step.read_typed("handle")
    handle = int(unsigned(ty, values)[0])
    store = step.machine.memory
    entry = store.lookup(handle)
    if entry is None or entry[0].kind != "pool":
        record = TrapRecord(operand_position(step.instr, "handle"), handle, extent=1)
        raise trap(TrapCode.INVALID_HANDLE, step.plan.index, -1, step.instr, record)
    store.free(handle, "pool")


COOPERATIVE_RULES = {
    "ParallelMap": _parallel_map, "ParallelMapBinary": _parallel_map_binary, "ParallelReduce": _parallel_reduce,
    "LayerScale": _layer_scale, "PoolAlloc": _pool_alloc, "PoolFree": _pool_free,
}
