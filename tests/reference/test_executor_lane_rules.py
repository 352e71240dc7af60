"""Reference executor plumbing of every pure per-lane rule (numeric.PURE_LANE_RULES) for every accepted type.

Each case loads per-lane operands of the operand's type from memory, runs
the instruction in the odd lanes only (the even lanes branch around it), and
stores the destination. The odd lanes must hold exactly what the rule gives
for their operands, the even lanes the destination's earlier value: this
checks operand typing, lane selection under divergence and masked writes of
every storage dtype (the rules' numbers are tested in test_numeric_*).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from atlas_web import ExecutionParams, LaunchConfig
from atlas_web.isa import (
    ALL, AND, BRA, INSTRUCTION_CLASSES, LDG, MOV_IMM, OPCODE_TABLE, SEL, STG, Address, Condition, OperandKind,
    Predicate, SETcc, Type, TypeRule,
)
from atlas_web.reference import CpuBackend, numeric

from .executor_helpers import lane_pointer, pointer, prog, r

LANES = 16
ALL_TYPES = sorted(ALL, key=lambda t: t.code)
#: the type a generic-rule operand is loaded as (other widths and signedness than the usual u32)
GENERIC = {TypeRule.INT: Type.U16, TypeRule.INT32: Type.I32, TypeRule.PTR: Type.U64}
OPERAND_REGS = (1, 2, 3, 4)
DEST, OLD_BUF, OUT_BUF = 10, 210, 211
ODD_PRED, SEL_PRED = Predicate(0), Predicate(1)
#: operands kept away from values that trap: (instruction, operand) -> value map on Python ints
TRAP_FREE = {
    ("DIV", "rhs"): lambda ty, v: 1 + v % 7, ("REM", "rhs"): lambda ty, v: 1 + v % 7,
    ("MIRROR", "src"): lambda ty, v: v % 96, ("NbrCount", "class_id"): lambda ty, v: v % 96,
    ("NbrGet", "class_id"): lambda ty, v: v % 96, ("BoundMap", "class_id"): lambda ty, v: v % 96,
    ("BoundMap", "page"): lambda ty, v: v % 48, ("BoundMap", "byte"): lambda ty, v: v % 256,
}


def _cases() -> list:
    cases = []
    for row in OPCODE_TABLE:
        if row.name not in numeric.PURE_LANE_RULES:
            continue
        if row.name == "CVT":  # each type once as source and once as destination
            cases += [(row.name, ty, ALL_TYPES[(i + 5) % len(ALL_TYPES)]) for i, ty in enumerate(ALL_TYPES)]
        else:
            cases += [(row.name, ty, None) for ty in (sorted(row.types, key=lambda t: t.code) or [None])]
    return cases


CASES = _cases()
COVERS = sorted({(name, ty) for name, ty, _ in CASES}, key=str) + \
    sorted({("CVT", dst) for name, _, dst in CASES if name == "CVT"}, key=str) + [("BRA", None)]


def _immediate(ty: Type):
    if ty.is_float():
        return 1.75
    return -(1 << (ty.bits - 2)) + 3 if ty.is_signed() else (1 << (ty.bits - 1)) + 5


def _operand_type(rule: object, types: dict) -> Type:
    """A fixed type, the instruction's ty / src_ty / dst_ty, or the GENERIC choice for int/int32/ptr."""
    if isinstance(rule, Type):
        return rule
    if rule in GENERIC:
        return GENERIC[rule]
    return types[rule.value]


def _build(name: str, ty: Type | None, dst_ty: Type | None):
    """The instruction, its register operands as (field, register, type), and its destination."""
    cls = INSTRUCTION_CLASSES[name]
    info = cls.INFO
    kwargs: dict = {}
    types = {"ty": ty} if "ty" in info.type_fields else {}
    if info.type_fields == ("src_ty", "dst_ty"):
        types = {"src_ty": ty, "dst_ty": dst_ty}
    operands, dest, regs = [], None, iter(OPERAND_REGS)
    for op in info.operands:
        if op.kind is OperandKind.REG:
            op_ty = _operand_type(op.rule, types)
            if op.name == "dst":
                kwargs[op.name], dest = r(DEST), ("reg", op_ty)
            else:
                reg = r(next(regs))
                kwargs[op.name] = reg
                operands.append((op.name, reg, op_ty))
        elif op.kind is OperandKind.PRED:
            if op.name == "pred" and op.access.value == "w":
                kwargs[op.name], dest = Predicate(2), ("pred", Type.U8)
            else:
                kwargs[op.name] = SEL_PRED
        elif op.kind is OperandKind.ENUM:
            kwargs[op.name] = Condition.LT
        elif op.kind is OperandKind.IMM:
            kwargs[op.name] = _immediate(ty)
    return cls(**kwargs, **types), operands, dest


def _operand_bytes(name: str, field: str, ty: Type, seed: int) -> bytes:
    size = ty.size_bytes()
    raw = np.random.default_rng(seed).integers(0, 256, (LANES, size), dtype=np.uint8)
    keep = TRAP_FREE.get((name, field))
    if keep is None or ty.is_float():  # float division by zero does not trap
        return raw.tobytes()
    values = [keep(ty, int(v)) for v in numeric.to_unsigned_index(numeric.load(ty, raw), ty)]
    out = np.empty(LANES, dtype=numeric.storage_dtype(ty))
    out[:] = values
    return numeric.store(ty, out).tobytes()


def _predicate_setup() -> list:
    """p0 = lane is even (those lanes skip the instruction); p1 = bit 1 of the lane id (SEL's predicate)."""
    return [MOV_IMM(dst=r(30), value=1, ty=Type.U32), MOV_IMM(dst=r(31), value=2, ty=Type.U32),
            MOV_IMM(dst=r(32), value=0, ty=Type.U32),
            AND(dst=r(33), lhs=r(255), rhs=r(30), ty=Type.U32),
            SETcc(pred=ODD_PRED, lhs=r(33), rhs=r(32), cond=Condition.EQ, ty=Type.U32),
            AND(dst=r(34), lhs=r(255), rhs=r(31), ty=Type.U32),
            SETcc(pred=SEL_PRED, lhs=r(34), rhs=r(32), cond=Condition.NE, ty=Type.U32),
            SETcc(pred=Predicate(2), lhs=r(34), rhs=r(32), cond=Condition.EQ, ty=Type.U32)]


@pytest.fixture(scope="module")
def backend():
    return CpuBackend()


@pytest.mark.parametrize("name,ty,dst_ty", CASES,
                         ids=[f"{n}-{t.name if t else 'untyped'}{'-' + d.name if d else ''}" for n, t, d in CASES])
def test_lane_rule_through_the_executor(backend, name, ty, dst_ty):
    instr, operands, (dest_kind, dest_ty) = _build(name, ty, dst_ty)
    if dest_kind == "reg":
        dest_ty = instr.INFO.operand("dst").rule if isinstance(instr.INFO.operand("dst").rule, Type) else instr.type
    size = dest_ty.size_bytes()
    code, registers, handles, inputs = [], {}, [], {}
    for k, (field, reg, op_ty) in enumerate(operands):
        data = _operand_bytes(name, field, op_ty, seed=zlib.crc32(f"{name}.{field}".encode()))
        handle = backend.allocate_buffer(len(data))
        backend.copy_to_buffer(handle, data)
        handles.append(handle)
        inputs[field] = (op_ty, data)
        registers[r(200 + k)] = (Type.U64, pointer(handle))
        code += [*lane_pointer(r(100), r(200 + k), op_ty.size_bytes(), r(101)),
                 LDG(dst=reg, src=Address.RegisterIndirect(r(100)), ty=op_ty)]
    old = np.random.default_rng(7).integers(0, 256, LANES * size, dtype=np.uint8).tobytes()
    if dest_kind == "pred":
        old = bytes(1 if (lane & 2) == 0 else 0 for lane in range(LANES))  # p2's value before
    old_buf, out_buf = backend.allocate_buffer(len(old)), backend.allocate_buffer(len(old))
    handles += [old_buf, out_buf]
    backend.copy_to_buffer(old_buf, old)
    registers[r(OLD_BUF)] = (Type.U64, pointer(old_buf))
    registers[r(OUT_BUF)] = (Type.U64, pointer(out_buf))
    if dest_kind == "reg":
        code += [*lane_pointer(r(100), r(OLD_BUF), size, r(101)),
                 LDG(dst=r(DEST), src=Address.RegisterIndirect(r(100)), ty=dest_ty)]
    code += _predicate_setup()
    skip = len(code) + 2
    code += [BRA(target="skip", pred=ODD_PRED), instr]
    if dest_kind == "pred":
        code += [MOV_IMM(dst=r(40), value=1, ty=Type.U8), MOV_IMM(dst=r(41), value=0, ty=Type.U8),
                 SEL(dst=r(DEST), pred=Predicate(2), true_val=r(40), false_val=r(41), ty=Type.U8)]
    code += [*lane_pointer(r(100), r(OUT_BUF), size, r(101)),
             STG(dst=Address.RegisterIndirect(r(100)), src=r(DEST), ty=dest_ty)]
    backend.execute_program_with_params(prog(*code, skip=skip),
                                        ExecutionParams(LaunchConfig.linear(LANES, 8), registers))

    odd = np.arange(1, LANES, 2)
    args = {}
    for field, (op_ty, data) in inputs.items():
        raw = np.frombuffer(data, dtype=np.uint8).reshape(LANES, op_ty.size_bytes())
        args[field] = numeric.load(op_ty, raw[odd])
    if "pred" in instr.INFO.fields and dest_kind != "pred":
        args["pred"] = (odd & 2) != 0
    outcome = numeric.PURE_LANE_RULES[name](instr, args, len(odd))
    assert not outcome.traps, "the case's operands should not trap"
    expected = np.frombuffer(old, dtype=np.uint8).reshape(LANES, size).copy()
    if dest_kind == "pred":
        expected[odd, 0] = np.asarray(outcome.value, dtype=np.uint8)
    else:
        expected[odd] = numeric.store(dest_ty, outcome.value)
    assert backend.copy_from_buffer(out_buf) == expected.tobytes()
    for handle in handles:
        backend.free_buffer(handle)
