"""The flush mode of the reference: a device that flushes f32 subnormals, executable (docs/semantics.md, Numbers).

``CpuBackend(subnormals="flushed")`` runs the rows of the opcode table whose
``may_flush_subnormals`` is set with the rules of this module when the
instruction's type is one of ``SUBNORMAL_FLUSHED_TYPES`` (F32, BF16): every
step reads a subnormal operand as a zero of its sign and gives a zero of its
sign for a subnormal result (denormals-are-zero and flush-to-zero, as a GPU in
that mode). MAD's product and sum, LERP's three steps and each step of a
per-lane ReduceAdd/ReduceMul flush apart; the other rows (a single step, or a
transcendental computed as one) flush their operands and their result. A step's
result is its f32 one: BF16 computes in f32 and flushes that before rounding to
BF16 (a device rounds the float unit's result). Every other row, and every other
type, runs as in the exact reference.
"""

from __future__ import annotations

import functools

import numpy as np

from ..isa.opcodes import OPCODE_TABLE, SUBNORMAL_FLUSHED_TYPES, Access, OperandKind
from ..isa.types import Type
from .numeric_cooperative import fold_in_order, lane_reduce
from .numeric_floats import computed, finish, lerp, mad
from .numeric_lane_rules import PURE_LANE_RULES, typed_op
from .numeric_outcome import Outcome

__all__ = ["flush", "subnormal", "flushing_op", "FLUSHING_LANE_RULES", "flushing_lane_reduce", "FLUSHED_ROWS"]

#: the smallest normal magnitude of f32 (and BF16), 2**-126
_TINY = np.float32(2.0 ** -126)

#: the names of the rows the flush mode changes (the opcode table's ``may_flush_subnormals`` column)
FLUSHED_ROWS = frozenset(row.name for row in OPCODE_TABLE if row.may_flush_subnormals)


def subnormal(values: np.ndarray) -> np.ndarray:
    """Where ``values`` (float32: F32 or BF16 storage; or a scalar) are f32 subnormals: nonzero and below
    2**-126 in magnitude (a bool array, a NumPy bool for a scalar; NaN is not)."""
    values = np.asarray(values)
    with np.errstate(invalid="ignore"):
        return (np.abs(values) < _TINY) & (values != 0)


def flush(values: np.ndarray) -> np.ndarray:
    """``values`` (float32: F32 or BF16 storage) with every subnormal replaced by a zero of its sign (a new
    array; NaN, infinities, zeros and normal numbers unchanged, bit for bit)."""
    values = np.asarray(values)
    return np.where(subnormal(values), np.copysign(np.float32(0.0), values), values).astype(values.dtype, copy=False)


def _flushing_step(ufunc):
    """``ufunc`` reading flushed operands and giving a flushed result (one step of a flushing device)."""
    def step(*arrays: np.ndarray) -> np.ndarray:
        return flush(ufunc(*(flush(a) for a in arrays)))
    step.__name__ = f"flushing_{ufunc.__name__}"
    return step


_ADD, _SUB, _MUL = (_flushing_step(u) for u in (np.add, np.subtract, np.multiply))

#: rows of several steps, each flushed apart (in the compute dtype, f32; BF16 rounds the last)
_STEPWISE = {
    "MAD": computed(functools.partial(mad, add=_ADD, multiply=_MUL)),
    "LERP": computed(functools.partial(lerp, add=_ADD, multiply=_MUL, subtract=_SUB)),
}


@functools.cache
def flushing_op(name: str, ty):
    """The flush mode's function ``(ty, *arrays) -> array`` of row ``name`` on ``ty``: for a may-flush row
    and a SUBNORMAL_FLUSHED_TYPES type the flushing form, else the exact one (typed_op). Raises
    UnsupportedOperation where typed_op does."""
    exact = typed_op(name, ty)
    if name not in FLUSHED_ROWS or ty not in SUBNORMAL_FLUSHED_TYPES:
        return exact
    if name in _STEPWISE:
        return _STEPWISE[name]

    in_f32 = typed_op(name, Type.F32)   # BF16's function is F32's rounded to BF16 (computed, round_to)

    def op(ty, *arrays: np.ndarray) -> np.ndarray:
        # the f32 result flushed before BF16's rounding, which would take (1 - 2^-12) * 2^-126 to 2^-126
        return finish(ty, flush(in_f32(Type.F32, *(flush(a) for a in arrays))))
    op.__name__ = f"flushing_{name.lower()}"
    return op


def _flushing_rule(row):
    exact = PURE_LANE_RULES[row.name]
    fields = tuple(o.name for o in row.operands if o.kind is OperandKind.REG and o.access is Access.READ)

    def rule(instr, ops: dict, n: int) -> Outcome:
        if instr.ty not in SUBNORMAL_FLUSHED_TYPES:
            return exact(instr, ops, n)
        return Outcome(flushing_op(row.name, instr.ty)(instr.ty, *(ops[f] for f in fields)))
    rule.__name__ = f"flushing_rule_{row.name.lower()}"
    return rule


#: the flush mode's pure per-lane rules (numeric.PURE_LANE_RULES' shape) of the may-flush rows that have one
FLUSHING_LANE_RULES = {row.name: _flushing_rule(row) for row in OPCODE_TABLE
                       if row.may_flush_subnormals and row.name in PURE_LANE_RULES}


def flushing_lane_reduce(kind: str, ty, values: np.ndarray) -> np.ndarray:
    """numeric.lane_reduce in the flush mode: F32/BF16 sums and products fold with the flushing ADD/MUL (the
    first value is read, not computed: a single value comes back as it is); the rest as lane_reduce.
    Raises UnsupportedOperation as lane_reduce does."""
    if kind not in ("add", "mul") or ty not in SUBNORMAL_FLUSHED_TYPES or values.shape[1] == 0:
        return lane_reduce(kind, ty, values)
    return fold_in_order(flushing_op("ADD" if kind == "add" else "MUL", ty), ty, values)
