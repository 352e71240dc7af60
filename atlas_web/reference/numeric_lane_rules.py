"""PURE_LANE_RULES: one pure rule per per-lane instruction that touches neither memory nor lane state.

A rule is ``(instr, operands, n) -> Outcome``: ``operands`` maps each read
operand field name to the executed lanes' values (register operands in the
storage dtype of their static type, SEL's ``pred`` a bool array), ``n`` is the
number of executed lanes. Typed instructions dispatch through a table keyed
by the type's family (float, native int, extended int) and instruction name;
the read operands are passed in opcode-table order.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOperation
from ..isa.opcodes import OPCODE_TABLE, Access, OperandKind
from ..isa.types import Type
from . import numeric_extended as extended
from . import numeric_floats as floats
from . import numeric_integers as integers
from .numeric_atlas import ATLAS_RULES
from .numeric_conversions import convert
from .numeric_fma import fma, fms
from .numeric_formats import constant, unsigned_dtype_of
from .numeric_outcome import Outcome
from .numeric_transcendentals import UNARY as TRANSCENDENTALS

__all__ = ["PURE_LANE_RULES", "TYPED_OPS", "family_of", "typed_op"]

#: instruction name -> function (ty, *operands) per type family
TYPED_OPS: dict[str, dict[str, object]] = {
    "float": {**floats.BINARY, **floats.UNARY, **floats.TERNARY, "FMA": fma, "FMS": fms, **TRANSCENDENTALS},
    "int": {**integers.BINARY, **integers.UNARY, **integers.TERNARY},
    "extended": {**extended.BINARY, **extended.UNARY, **extended.TERNARY},
}
_COMPARE = {"float": floats.compare, "int": integers.compare, "extended": extended.compare}


def family_of(ty: Type) -> str:
    """"float", "int" (native, up to 64 bits) or "extended"."""
    if ty.is_float():
        return "float"
    return "extended" if ty.is_extended() else "int"


def typed_op(name: str, ty: Type):
    """The function computing instruction ``name`` on ``ty``; raises UnsupportedOperation when there is none."""
    try:
        return TYPED_OPS[family_of(ty)][name]
    except KeyError:
        raise UnsupportedOperation(name, ty, "cpu", "no numeric rule for this type") from None


def _read_operands(name: str) -> tuple[str, ...]:
    info = next(row for row in OPCODE_TABLE if row.name == name)
    return tuple(o.name for o in info.operands if o.kind is OperandKind.REG and o.access is Access.READ)


def _typed_rule(name: str):
    fields = _read_operands(name)

    def rule(instr, ops: dict, n: int) -> Outcome:
        result = typed_op(name, instr.ty)(instr.ty, *(ops[f] for f in fields))
        return result if isinstance(result, Outcome) else Outcome(result)

    rule.__name__ = f"rule_{name.lower()}"
    rule.__doc__ = f"{name}: the typed rule of the instruction's type family."
    return rule


def _mov(instr, ops: dict, n: int) -> Outcome:
    """dst = src (a copy)."""
    return Outcome(ops["src"].copy())


def _mov_imm(instr, ops: dict, n: int) -> Outcome:
    """dst = the (already normalized) immediate, for ``n`` lanes."""
    return Outcome(constant(instr.ty, instr.value, n))


def _cvt(instr, ops: dict, n: int) -> Outcome:
    """dst = src converted from src_ty to dst_ty."""
    return Outcome(convert(ops["src"], instr.src_ty, instr.dst_ty))


def _setcc(instr, ops: dict, n: int) -> Outcome:
    """pred = lhs cond rhs (bool array)."""
    return Outcome(_COMPARE[family_of(instr.ty)](instr.ty, instr.cond, ops["lhs"], ops["rhs"]))


_SIGNED_BY_SIZE = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _sel(instr, ops: dict, n: int) -> Outcome:
    """dst = pred ? true_val : false_val.

    Native types blend bit patterns under an all-ones mask (branch-free, and
    several times faster than np.where on a random predicate).
    """
    pred, when_true, when_false = ops["pred"], ops["true_val"], ops["false_val"]
    if when_true.dtype == object:
        return Outcome(np.where(pred, when_true, when_false))
    dtype = when_true.dtype
    unsigned = unsigned_dtype_of(dtype)
    mask = np.negative(np.asarray(pred, dtype=bool).view(np.uint8).astype(_SIGNED_BY_SIZE[dtype.itemsize]))
    false_bits = np.ascontiguousarray(when_false).view(unsigned)
    blended = np.bitwise_xor(np.ascontiguousarray(when_true).view(unsigned), false_bits)
    blended &= mask.view(unsigned)
    blended ^= false_bits
    return Outcome(blended.view(dtype))


_TYPED_NAMES = sorted(set().union(*TYPED_OPS.values()))

PURE_LANE_RULES = {
    "MOV": _mov, "MOV_IMM": _mov_imm, "CVT": _cvt, "SETcc": _setcc, "SEL": _sel,
    **{name: _typed_rule(name) for name in _TYPED_NAMES},
    **ATLAS_RULES,
}
