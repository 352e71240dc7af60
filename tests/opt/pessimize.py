"""Make a program worse on purpose, without changing what it computes, so the optimizer has work to do.

The fuzz generator writes tight programs (a fresh register per definition, every result stored), which give the
passes little to do. ``pessimize(program, seed)`` inserts, before pure instructions, what each pass removes:

* a copy: ``mov.T rF, rY`` and the instruction reads ``rF`` (copy propagation, then dead code);
* an integer round trip: ``cvt.i64.T rF, rY; cvt.T.i64 rG, rF`` read as ``rG`` (CVT chains);
* a product by one: ``add.T d, a, b`` becomes ``mov_imm.T rO, 1; mul.T rF, a, rO; add.T d, rF, b`` (MUL+ADD to
  MAD; for floats ``a * 1`` is ``a`` but for a NaN's bits, and the program at level 0 runs the MUL too);
* dead constant arithmetic: ``mov_imm.T rA, k1; mov_imm.T rB, k2; add.T rC, rA, rB`` read by nothing (folding
  and dead code).

Registers the program never names hold the new values. Labels keep pointing at the code they named (the
inserted instructions come before it). The result verifies with the same preset types.
"""

from __future__ import annotations

import dataclasses
import random

from atlas_web import Program
from atlas_web.isa import ADD, CVT, MOV, MOV_IMM, MUL, Register, Type
from atlas_web.isa.registers import FIRST_SPECIAL_REGISTER
from atlas_web.opt.analysis import is_pure

__all__ = ["pessimize"]


def pessimize(program: Program, seed: int, rate: float = 0.5) -> Program:
    """``program`` with redundant code inserted before about ``rate`` of its pure instructions."""
    info = program.verify()
    rng = random.Random(seed)
    used = {r.index for r in info.registers_read | info.registers_written}
    free = [Register(i) for i in range(FIRST_SPECIAL_REGISTER) if i not in used]
    out, starts = [], []
    for index, instr in enumerate(program.instructions):
        starts.append(len(out))
        if is_pure(instr) and len(free) >= 4 and rng.random() < rate:
            out.extend(_worse(instr, index, info, rng, free))
        else:
            out.append(instr)
    starts.append(len(out))
    return Program(out, {name: starts[at] for name, at in program.labels.items()})


def _worse(instr, index, info, rng, free) -> list:
    reads = [(name, getattr(instr, name)) for name in instr.INFO.fields
             if isinstance(getattr(instr, name), Register) and (index, name) in info.use_types]
    choice = rng.randrange(4)
    if choice == 3 or not reads:
        ty = rng.choice(sorted({t for t in info.def_types.values() if t in (Type.I32, Type.U64, Type.F32, Type.F64)}
                               | {Type.U64}, key=lambda t: t.code))  # types the program uses already
        a, b, c = free.pop(), free.pop(), free.pop()
        return [MOV_IMM(dst=a, value=rng.choice((3, 7)) if ty.is_integer() else 1.5, ty=ty),
                MOV_IMM(dst=b, value=5 if ty.is_integer() else -0.25, ty=ty), ADD(dst=c, lhs=a, rhs=b, ty=ty), instr]
    name, reg = rng.choice(reads)
    ty = info.use_types[(index, name)]
    if choice == 2 and instr.INFO.name == "ADD" and name == "lhs" and ty in (Type.F32, Type.F64, Type.I32, Type.U64):
        one, product = free.pop(), free.pop()
        return [MOV_IMM(dst=one, value=1, ty=ty), MUL(dst=product, lhs=reg, rhs=one, ty=ty),
                dataclasses.replace(instr, lhs=product)]
    if choice == 1 and ty.is_integer() and ty.bits <= 64:
        wide, back = free.pop(), free.pop()
        return [CVT(dst=wide, src=reg, src_ty=ty, dst_ty=Type.I64), CVT(dst=back, src=wide, src_ty=Type.I64, dst_ty=ty),
                dataclasses.replace(instr, **{name: back})]
    copy = free.pop()
    return [MOV(dst=copy, src=reg, ty=ty), dataclasses.replace(instr, **{name: copy})]
