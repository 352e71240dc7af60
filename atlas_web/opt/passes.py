"""The optimization passes. Each takes the shared :class:`~atlas_web.opt.analysis.Analysis`, the
:class:`Target` and ``taken``, the changes the round's earlier passes made (all passes of a round see the same
analysis of the same program), and returns its changes: instruction index -> the instruction that replaces
it, or None to remove it. A pass leaves the instructions in ``taken`` alone (dead-code elimination may still
remove one: what it removes is dead whatever the other passes did, since they only redirect reads to
definitions already read). A pass never moves an instruction, never touches a pinned one (``analysis.is_pinned``: it may
trap, has effects, waits at a barrier, runs cooperatively or jumps) except to replace an integer DIV/REM that
provably cannot trap by its value, and never changes a bit of what the program computes:

* ``fold_constants``: a pure instruction whose register operands all hold one known constant (every
  reaching definition a MOV_IMM or a folded instruction with the same bits) becomes a MOV_IMM of its result,
  computed by ``atlas_web.opt.fold`` in the instruction's type (integers wrap; F32/F64 exactly rounded;
  what cannot be proved bit-exact is left alone);
* ``propagate_copies``: a pure instruction reading the destination of ``MOV rD, rS`` earlier in its basic
  block, with ``rS`` not written in between and the MOV the only definition reaching it, reads ``rS``;
* ``fuse_multiply_add``: ``MUL rM, a, b`` then ``ADD rD, rM, c`` in one basic block, the ADD the MUL's only
  reader and ``a``, ``b`` unchanged in between, become ``MAD rD, a, b, c`` at the ADD's place (MAD rounds the
  product, then the sum: the pair's bits, docs/semantics.md) for F32, F64 and integers; never FMA. F16/BF16
  are left alone (their MAD rounds the product to f32, the MUL to the format);
* ``shorten_conversions``: ``CVT T->U`` then ``CVT U->T`` of the same value, where U holds every value of T
  exactly (integers to wider integers, small integers to floats), becomes ``MOV.T``;
* ``eliminate_dead_code``: a pure instruction none of whose definitions reaches a read is removed, and so,
  in turn, the pure instructions only it read.

Standard library only.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Callable, Protocol

from ..isa.instructions import MAD, MOV, MOV_IMM  # type: ignore[attr-defined]  # generated from the table
from ..isa.types import Type
from .analysis import Analysis, is_pure
from .fold import conversion, evaluate

__all__ = ["Target", "EXACT", "PASSES", "Changes", "fold_constants", "propagate_copies", "fuse_multiply_add",
           "shorten_conversions", "eliminate_dead_code"]

#: a pass's result: instruction index -> its replacement, or None to remove it
Changes = dict


class Target(Protocol):
    """What a pass asks about the backend that will run the program (a Backend answers both)."""

    def supports(self, op: object, ty: Type | None = None) -> bool: ...

    def ulp_tolerance(self, op: object, ty: Type) -> float: ...


class _Exact:
    """The target of a program optimized by hand: every instruction, computed as the reference does."""

    @staticmethod
    def supports(op: object, ty: Type | None = None) -> bool:
        return True

    @staticmethod
    def ulp_tolerance(op: object, ty: Type) -> float:
        return 0.0


#: the reference's semantics: every instruction supported and exact
EXACT = _Exact()


def _computes_exactly(target: Target, name: str, ty: Type) -> bool:
    """Whether ``target`` computes ``name`` on ``ty`` with the reference's bits (a float op with a documented
    ulp tolerance may round otherwise, so a value folded here could differ from what it computes)."""
    return not ty.is_float() or target.ulp_tolerance(name, ty) == 0.0


def _key(ty: Type, value: int | float) -> tuple:
    """A constant's identity: its type and bits (``-0.0`` is not ``0.0``)."""
    return (ty, struct.pack("<d", value)) if isinstance(value, float) else (ty, value)


def _reinterpreted(ty: Type, value: int | float, read_as: Type | None) -> int | float | None:
    """A constant of ``ty`` read as ``read_as``: itself, or an integer's bits in the other signedness."""
    if read_as is ty:
        return value
    if read_as is not None and ty.is_integer() and read_as.is_integer() and ty.bits == read_as.bits:
        return read_as.wrap(value)  # type: ignore[arg-type]
    return None


def fold_constants(analysis: Analysis, target: Target, taken: Changes) -> Changes:
    """Constant propagation and folding (see the module docstring). One sweep in program order: a constant
    defined after its reader (around a loop) is found by the next round."""
    instructions = analysis.instructions
    constants: dict[int, tuple[Type, int | float]] = {}
    changes: Changes = {}

    def constant_at(index: int, path: str) -> int | float | None:
        defs = analysis.reaching(index, path)
        if not defs or defs[0] < 0:
            return None
        found = {_key(*constants[d]) if d in constants else None for d in defs}
        if len(found) != 1 or None in found:
            return None
        ty, value = constants[defs[0]]
        return _reinterpreted(ty, value, analysis.use_type(index, path))

    for index, instr in enumerate(instructions):
        name = instr.INFO.name
        if name == "MOV_IMM":
            constants[index] = (instr.ty, instr.value)
            continue
        if (not (is_pure(instr) or name in ("DIV", "REM")) or "dst" not in instr.INFO.fields
                or index in taken):
            continue
        dst_ty = analysis.def_type(index)
        if dst_ty is None:
            continue
        operands = {}
        for access in analysis.reads(index):
            value = constant_at(index, access.path)
            if value is None:
                break
            operands[access.path] = value
        else:
            result = _folded(instr, operands, dst_ty, target)
            if result is not None and target.supports("MOV_IMM", dst_ty):
                constants[index] = (dst_ty, result)
                changes[index] = MOV_IMM(dst=instr.dst, value=result, ty=dst_ty)
    return changes


def _folded(instr, operands: dict, dst_ty: Type, target: Target) -> int | float | None:
    name = instr.INFO.name
    if not operands:
        return None
    if name == "MOV":
        return operands["src"] if instr.ty is dst_ty else None
    if name == "CVT":
        if not (_computes_exactly(target, name, instr.dst_ty) and _computes_exactly(target, name, instr.src_ty)):
            return None
        return conversion(instr.src_ty, instr.dst_ty, operands["src"])
    if "ty" not in instr.INFO.type_fields or instr.ty is not dst_ty or not _computes_exactly(target, name, dst_ty):
        return None
    return evaluate(name, dst_ty, operands)


def propagate_copies(analysis: Analysis, target: Target, taken: Changes) -> Changes:
    """Copy propagation within basic blocks (see the module docstring)."""
    instructions = analysis.instructions
    changes: Changes = {}
    for index, instr in enumerate(instructions):
        if not is_pure(instr) or index in taken:
            continue
        fields = {}
        for access in analysis.reads(index):
            source = _copied_from(analysis, index, access.path, access.location)
            if source is not None:
                fields[access.path] = source
        if fields:
            changes[index] = dataclasses.replace(instr, **fields)
    return changes


def _copied_from(analysis: Analysis, index: int, path: str, location: int):
    """The register ``rS`` a read may use instead of ``rD`` (``MOV rD, rS`` is its only definition, earlier
    in the block, ``rS`` unchanged since and of the MOV's own type), or None."""
    defs = analysis.reaching(index, path)
    if len(defs) != 1 or "." in path:
        return None
    d = defs[0]
    if not 0 <= d < index or not analysis.same_block(d, index):
        return None
    copy = analysis.instructions[d]
    if copy.INFO.name != "MOV" or copy.src.index == location or copy.src.index == copy.dst.index:
        return None
    if analysis.use_type(d, "src") is not copy.ty or analysis.written_between(copy.src.index, d, index):
        return None
    return copy.src


def fuse_multiply_add(analysis: Analysis, target: Target, taken: Changes) -> Changes:
    """MUL + ADD -> MAD (see the module docstring); never FMA."""
    instructions = analysis.instructions
    changes: Changes = {}
    for index, add in enumerate(instructions):
        if (add.INFO.name != "ADD" or not (add.ty.is_integer() or add.ty in (Type.F32, Type.F64))
                or index in taken):
            continue
        # float addition is commutative in value but a NaN's bits may follow the operand order: only lhs there
        for product_path, addend in (("lhs", add.rhs), ("rhs", add.lhs)) if add.ty.is_integer() else (("lhs", add.rhs),):
            m = _fusable_product(analysis, index, product_path, changes, taken)
            if m is None or not _fusion_exact(target, add.ty):
                continue
            mul = instructions[m]
            changes[m] = None
            changes[index] = MAD(dst=add.dst, a=mul.lhs, b=mul.rhs, c=addend, ty=add.ty)
            break
    return changes


def _fusable_product(analysis: Analysis, index: int, path: str, changes: Changes, taken: Changes) -> int | None:
    add = analysis.instructions[index]
    defs = analysis.reaching(index, path)
    if len(defs) != 1:
        return None
    m = defs[0]
    if not 0 <= m < index or m in changes or m in taken or not analysis.same_block(m, index):
        return None
    mul = analysis.instructions[m]
    if (mul.INFO.name != "MUL" or mul.ty is not add.ty or analysis.uses_of[m] != [(index, path)]
            or not analysis.removable(m)):
        return None
    operands = {mul.lhs.index, mul.rhs.index}
    if mul.dst.index in operands:
        return None  # the MUL overwrote its own operand: MAD at the ADD would read the product
    if any(analysis.written_between(loc, m, index) for loc in operands):
        return None
    return m


def _fusion_exact(target: Target, ty: Type) -> bool:
    return (target.supports("MAD", ty) and all(_computes_exactly(target, op, ty) for op in ("MUL", "ADD", "MAD")))


#: significand bits (the hidden one included) of each float type: the integers it holds exactly
_SIGNIFICAND = {Type.F16: 11, Type.BF16: 8, Type.F32: 24, Type.F64: 53}


def round_trip_exact(ty: Type, via: Type) -> bool:
    """Whether every value of ``ty`` converted to ``via`` and back is itself (CVT's rules)."""
    if ty.is_float():
        return False  # a NaN's bits need not survive a conversion on every engine
    if via.is_integer():
        return via.bits >= ty.bits
    magnitude_bits = ty.bits - 1 if ty.is_signed() else ty.bits
    return ty.bits <= 64 and magnitude_bits <= _SIGNIFICAND[via]


def shorten_conversions(analysis: Analysis, target: Target, taken: Changes) -> Changes:
    """``CVT T->U`` then ``CVT U->T`` of the same value -> ``MOV.T`` (see the module docstring)."""
    instructions = analysis.instructions
    changes: Changes = {}
    for index, back in enumerate(instructions):
        if back.INFO.name != "CVT" or index in taken:
            continue
        defs = analysis.reaching(index, "src")
        if len(defs) != 1 or not 0 <= defs[0] < index or not analysis.same_block(defs[0], index):
            continue
        there = instructions[defs[0]]
        if (there.INFO.name != "CVT" or there.dst_ty is not back.src_ty or there.src_ty is not back.dst_ty
                or not round_trip_exact(back.dst_ty, back.src_ty) or there.src.index == there.dst.index
                or analysis.use_type(defs[0], "src") is not there.src_ty
                or analysis.written_between(there.src.index, defs[0], index)
                or not target.supports("MOV", back.dst_ty)):
            continue
        changes[index] = MOV(dst=back.dst, src=there.src, ty=back.dst_ty)
    return changes


def _kept(analysis: Analysis, index: int, taken: Changes) -> bool:
    """Whether ``taken`` pins instruction ``index`` as it is (mapped to itself: one the target cannot run,
    which stays so that the backend refuses the program as written, whether or not it is dead)."""
    return taken.get(index) is analysis.instructions[index]


def eliminate_dead_code(analysis: Analysis, target: Target, taken: Changes) -> Changes:
    """Remove pure instructions whose definitions no read sees, transitively (see the module docstring)."""
    instructions = analysis.instructions
    live_uses = [len(uses) for uses in analysis.uses_of]
    dead = [i for i in range(len(instructions)) if live_uses[i] == 0 and analysis.removable(i) and not _kept(analysis, i, taken)]
    changes: Changes = {}
    while dead:
        index = dead.pop()
        if index in changes:
            continue
        changes[index] = None
        for access in analysis.reads(index):
            for d in analysis.reaching(index, access.path):
                if d >= 0:
                    live_uses[d] -= 1
                    if live_uses[d] == 0 and analysis.removable(d) and d not in changes and not _kept(analysis, d, taken):
                        dead.append(d)
    return changes


#: the passes in the order a round runs them: name -> pass
PASSES: dict[str, Callable[[Analysis, Target, Changes], Changes]] = {
    "fold_constants": fold_constants,
    "propagate_copies": propagate_copies,
    "shorten_conversions": shorten_conversions,
    "fuse_multiply_add": fuse_multiply_add,
    "eliminate_dead_code": eliminate_dead_code,
}
