"""Small builders for the lowering tests: programs as lists with label names, and lane stores."""

from __future__ import annotations

from atlas_web.isa import ADD, CVT, MOV_IMM, MUL, STG, Address, Type
from atlas_web.isa.registers import Predicate, Register
from atlas_web.program import Program
from atlas_web.verify import verify

from .harness import pointer

U32, I32, U64, F32 = Type.U32, Type.I32, Type.U64, Type.F32
GID, LANE_X, BLOCK_X = 255, 252, 253
#: the register preset with the pointer to the output buffer (buffer 0)
OUT = 20
#: bytes of output per lane: four u32 slots
STRIDE = 16


def R(index: int) -> Register:
    return Register(index)


def P(index: int) -> Predicate:
    return Predicate(index)


def program(*items) -> Program:
    """Instructions in order (nested lists are flattened); a str places a label at the next one."""
    instrs: list = []
    labels: dict[str, int] = {}

    def add(item) -> None:
        if isinstance(item, str):
            labels[item] = len(instrs)
        elif isinstance(item, (list, tuple)):
            for sub in item:
                add(sub)
        else:
            instrs.append(item)

    for item in items:
        add(item)
    return Program(instrs, labels)


def imm(dst: int, value: int, ty: Type = U32):
    return MOV_IMM(dst=R(dst), value=value, ty=ty)


def add(dst: int, lhs: int, rhs: int, ty: Type = U32):
    return ADD(dst=R(dst), lhs=R(lhs), rhs=R(rhs), ty=ty)


def lane_slot_pointer(dst: int = 21, scratch: int = 22) -> list:
    """``r<dst>`` (u64) = the OUT pointer + GLOBAL_LANE_ID * STRIDE."""
    return [CVT(dst=R(dst), src=R(GID), src_ty=U32, dst_ty=U64), MOV_IMM(dst=R(scratch), value=STRIDE, ty=U64),
            MUL(dst=R(dst), lhs=R(dst), rhs=R(scratch), ty=U64), ADD(dst=R(dst), lhs=R(OUT), rhs=R(dst), ty=U64)]


def store(value: int, slot: int, ty: Type = U32, base: int = 21):
    """Store ``r<value>`` in the lane's output ``slot`` (0 … 3) through the pointer in ``r<base>``."""
    return STG(dst=Address.RegisterIndirect(R(base), 4 * slot), src=R(value), ty=ty)


def out_presets(buffers: int = 1) -> dict:
    """OUT (r20) -> a pointer to buffer 0; r23, r26, … to the following buffers."""
    presets = {R(OUT): (U64, pointer(0))}
    for k in range(1, buffers):
        presets[R(20 + 3 * k)] = (U64, pointer(k))
    return presets


def info_of(prog: Program, presets: dict | None = None):
    """The verifier's ProgramInfo (preset types from ``presets`` or out_presets())."""
    presets = out_presets() if presets is None else presets
    return verify(prog, preset_types={reg: ty for reg, (ty, _v) in presets.items()})
