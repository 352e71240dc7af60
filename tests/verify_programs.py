"""Small builders for the verifier tests: programs as lists of instructions and label names."""

from __future__ import annotations

import pytest

from atlas_web.errors import ProgramError
from atlas_web.isa import ADD, BRA, MOV, MOV_IMM, SETcc, Condition, Type
from atlas_web.isa.registers import Predicate, Register
from atlas_web.program import Program
from atlas_web.verify import verify

F32, F64, I32, U32, I64, U64, U8 = Type.F32, Type.F64, Type.I32, Type.U32, Type.I64, Type.U64, Type.U8
#: special registers by role
LANE_X, BLOCK_X, BLOCK_DIM_X, GRID_DIM_X, GLOBAL_ID = 252, 253, 254, 249, 255


def R(index: int) -> Register:
    return Register(index)


def P(index: int) -> Predicate:
    return Predicate(index)


def program(*items) -> Program:
    """Instructions in order; a str places a label at the next instruction."""
    instrs, labels = [], {}
    for item in items:
        if isinstance(item, str):
            labels[item] = len(instrs)
        else:
            instrs.append(item)
    return Program(instrs, labels)


def mov_imm(dst: int, value, ty: Type):
    return MOV_IMM(dst=R(dst), value=value, ty=ty)


def mov(dst: int, src: int, ty: Type):
    return MOV(dst=R(dst), src=R(src), ty=ty)


def add(dst: int, lhs: int, rhs: int, ty: Type):
    return ADD(dst=R(dst), lhs=R(lhs), rhs=R(rhs), ty=ty)


def set_lt(pred: int, lhs: int, rhs: int, ty: Type = U32):
    return SETcc(pred=P(pred), lhs=R(lhs), rhs=R(rhs), cond=Condition.LT, ty=ty)


def bra(label: str, pred: int | None = None, negate: bool = False):
    return BRA(target=label, pred=None if pred is None else P(pred), negate=negate)


def rejects(prog: Program, match: str, index: int | None = None, **kwargs) -> ProgramError:
    """Assert that verify() raises ProgramError matching ``match`` at instruction ``index``."""
    with pytest.raises(ProgramError, match=match) as caught:
        verify(prog, **kwargs)
    if index is not None:
        assert caught.value.index == index, str(caught.value)
    return caught.value


def constant_store(value: int, handle: int) -> Program:
    """A one-lane program that stores ``value`` (u32) at the start of buffer ``handle``: one distinct
    program per value, for the compile cache tests."""
    return Program.from_text(f"""
        mov_imm.u32 r1, {value}
        mov_imm.u64 r4, {handle << 32}
        stg.u32 [r4 + 0], r1
        exit
    """)
