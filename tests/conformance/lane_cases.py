"""Cases generated from the opcode table for every per-lane register instruction and type.

Each lane loads its operands from input buffers at ``GLOBAL_LANE_ID * size``,
runs the instruction once and stores the result (predicates as u8 0/1). A new
instruction of this shape is covered without touching this file.
"""

from __future__ import annotations

import itertools

from atlas_web import LaunchConfig, Program, ProgramBuilder
from atlas_web.isa import (
    CVT, INSTRUCTION_CLASSES, LDG, MOV_IMM, MUL, OPCODE_TABLE, OR, SEL, STG, Access, Address, Condition, OperandKind,
    Predicate, Register, SETcc, Type, TypeRule,
)

from .harness import Buffer, Case
from .values import encode, float_values, int_values

LANES = 64
CONFIG = LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1))
#: instructions with register operands that act on memory or lane state (covered by hand-written cases)
STATEFUL = {"PoolLoad", "PoolStore", "PhaseGet", "PhaseWrite", "ResAccum"}
_PURE_KINDS = {OperandKind.REG, OperandKind.PRED, OperandKind.ENUM}

#: value ranges for operands whose full range would only test the trap path (traps have their own cases)
_DOMAINS: dict[tuple[str, str], tuple[int, int]] = {
    ("MIRROR", "src"): (0, 95), ("NbrCount", "class_id"): (0, 95), ("NbrGet", "class_id"): (0, 95),
    ("NbrGet", "index"): (0, 7), ("BoundMap", "class_id"): (0, 95), ("BoundMap", "page"): (0, 47),
    ("BoundMap", "byte"): (0, 255),
}


def _is_pure(info) -> bool:
    return (info.name not in STATEFUL and all(o.kind in _PURE_KINDS for o in info.operands)
            and any(o.access is not Access.READ for o in info.operands))


def _concrete(rule, ty: Type | None, src_ty: Type | None) -> Type:
    if isinstance(rule, Type):
        return rule
    return {TypeRule.TY: ty, TypeRule.DST_TY: ty, TypeRule.SRC_TY: src_ty, TypeRule.INT: Type.U32,
            TypeRule.INT32: Type.U32, TypeRule.PTR: Type.U64, None: Type.U8}[rule]


def _inputs(info, name: str, ty: Type, seed: int) -> list:
    dom = _DOMAINS.get((info.name, name))
    if ty.is_float():
        return float_values(ty, LANES, seed)
    if dom is not None:
        return int_values(ty, LANES, seed, *dom)
    return int_values(ty, LANES, seed)


def _avoid_division_traps(info, values: dict[str, list], ty: Type) -> None:
    """DIV/REM on integers: replace zero divisors and MIN / -1 so the case checks values, not traps."""
    if info.name not in ("DIV", "REM") or ty.is_float():
        return
    lo, _ = ty.int_range()
    lhs, rhs = values["lhs"], values["rhs"]
    for i in range(LANES):
        if rhs[i] == 0 or (ty.is_signed() and lhs[i] == lo and rhs[i] == -1):
            rhs[i] = 3


def _pointer(b: ProgramBuilder, handle: int, size: int, dst: Register) -> None:
    """dst:u64 = (handle << 32) | GLOBAL_LANE_ID * size, using r200..r203."""
    b.add(CVT(dst=Register(200), src=Register(255), src_ty=Type.U32, dst_ty=Type.U64))
    b.add(MOV_IMM(dst=Register(201), value=size, ty=Type.U64))
    b.add(MUL(dst=Register(202), lhs=Register(200), rhs=Register(201), ty=Type.U64))
    b.add(MOV_IMM(dst=Register(203), value=handle << 32, ty=Type.U64))
    b.add(OR(dst=dst, lhs=Register(202), rhs=Register(203), ty=Type.U64))


def _make_program(info, fields: dict, reads: list[tuple[str, Type, bool]], out_ty: Type, writes_pred: bool):
    def build(handles: list[int]) -> Program:
        b = ProgramBuilder()
        args = dict(fields)
        zero_u8 = Register(150)
        b.add(MOV_IMM(dst=zero_u8, value=0, ty=Type.U8))
        for k, (name, ty, is_pred) in enumerate(reads):
            ptr = Register(210 + k)
            _pointer(b, handles[k], ty.size_bytes(), ptr)
            reg = Register(1 + k)
            b.add(LDG(dst=reg, src=Address.RegisterIndirect(ptr, 0), ty=ty))
            if is_pred:
                b.add(SETcc(pred=Predicate(k), lhs=reg, rhs=zero_u8, cond=Condition.NE, ty=Type.U8))
                args[name] = Predicate(k)
            else:
                args[name] = reg
        result = Register(100)
        if writes_pred:
            args["pred"] = Predicate(10)
        else:
            args["dst"] = result
        b.add(INSTRUCTION_CLASSES[info.name](**args))
        if writes_pred:
            b.add(MOV_IMM(dst=Register(101), value=1, ty=Type.U8))
            b.add(SEL(dst=result, pred=Predicate(10), true_val=Register(101), false_val=zero_u8, ty=Type.U8))
        out_ptr = Register(220)
        _pointer(b, handles[len(reads)], out_ty.size_bytes(), out_ptr)
        b.add(STG(dst=Address.RegisterIndirect(out_ptr, 0), src=result, ty=out_ty))
        return b.build()
    return build


def _type_variants(info):
    """(fields for the type fields, ty, src_ty) for every accepted type (CVT: every pair)."""
    types = sorted(info.types, key=lambda t: t.code)
    if info.type_fields == ("src_ty", "dst_ty"):
        for s, d in itertools.product(types, types):
            yield {"src_ty": s, "dst_ty": d}, d, s
    elif info.type_fields:
        for t in types:
            yield {"ty": t}, t, None
    else:
        yield {}, None, None


def lane_cases() -> list[Case]:
    """Every pure per-lane register instruction x accepted type (x enum member)."""
    cases: list[Case] = []
    for info in OPCODE_TABLE:
        if not _is_pure(info):
            continue
        enum_ops = [o for o in info.operands if o.kind is OperandKind.ENUM]
        enum_choices = [[(o.name, m) for m in o.rule] for o in enum_ops]
        for type_fields, ty, src_ty in _type_variants(info):
            for enum_combo in (itertools.product(*enum_choices) if enum_choices else [()]):
                fields = dict(type_fields, **dict(enum_combo))
                reads = []
                values: dict[str, list] = {}
                for k, o in enumerate(info.operands):
                    if o.access is Access.WRITE or o.kind is OperandKind.ENUM:
                        continue
                    if o.kind is OperandKind.PRED:
                        reads.append((o.name, Type.U8, True))
                        values[o.name] = int_values(Type.U8, LANES, k, 0, 1)
                    else:
                        t = _concrete(o.rule, ty, src_ty)
                        reads.append((o.name, t, False))
                        values[o.name] = _inputs(info, o.name, t, seed=hash((info.name, o.name)) & 0xFFFF)
                if ty is not None:
                    _avoid_division_traps(info, values, ty)
                written = next(o for o in info.operands if o.access is Access.WRITE)
                writes_pred = written.kind is OperandKind.PRED
                out_ty = Type.U8 if writes_pred else _concrete(written.rule, ty, src_ty)
                buffers = tuple(Buffer(t, encode(t, values[name])) for name, t, _ in reads)
                buffers += (Buffer(out_ty, bytes(LANES * out_ty.size_bytes()), output=True),)
                parts = [m.text for _, m in enum_combo] + [t.suffix for t in reversed(type_fields.values())]
                suffix = ".".join(parts)
                cases.append(Case(
                    name=f"{info.name}.{suffix}" if suffix else info.name, op=info.name, ty=ty, buffers=buffers,
                    program=_make_program(info, fields, reads, out_ty, writes_pred), config=CONFIG,
                    needs=((info.name, ty), ("STG", out_ty), ("CVT", Type.U64), ("MUL", Type.U64),
                           ("OR", Type.U64), ("SEL", Type.U8), *(("LDG", t) for _, t, _ in reads)),
                ))
    return cases


__all__ = ["lane_cases", "LANES", "CONFIG"]
