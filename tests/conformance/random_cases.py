"""Random well-formed programs (hypothesis) for differential runs against the reference.

A program loads one value of each of a few types per lane, then runs random statements — typed
arithmetic, logic, conversions, comparisons and selects on the registers defined so far, ``if``
blocks (a SETcc and a forward BRA), counted loops (LOOP), barriers and ParallelReduce steps at the top
level — and finally stores every register to per-type output buffers at the lane's own slots (so no
two lanes write the same bytes). Every definition names a fresh register, so each read sees one type;
registers defined inside an ``if`` are zero on the other path. Integer division may trap; the trap is
compared like any result.
"""

from __future__ import annotations

import random

from hypothesis import strategies as st

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import (
    ABS, ADD, AND, BRA, CEIL, CLAMP, CVT, DIV, FLOOR, FMA, LDG, LERP, LOOP, MAD, MAX, MIN, MOV_IMM, MUL, NEG, NOT, OR,
    REM, ROUND, SEL, SETcc, SHL, SHR, SIGN, SQRT, STG, SUB, TRUNC, XOR, Address, BarSync, Condition, ParallelReduce,
    Predicate, ReduceOperation, Register, Type,
)

from .case_tools import bytes_of, lane_pointer
from .harness import Buffer, Case

__all__ = ["random_program_cases", "RandomProgramBuilder", "TYPES", "LANES"]

LANES = 64
CONFIG = LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1))
TYPES = (Type.F32, Type.F64, Type.F16, Type.BF16, Type.I32, Type.U32, Type.I64, Type.U64, Type.U16, Type.I8,
         Type.I128)
_SLOTS = 12  # most registers of one type stored per lane

_BINARY_ALL = (ADD, SUB, MUL, MIN, MAX)
_BINARY_INT = (AND, OR, XOR, DIV, REM)
_UNARY_ALL = (ABS, NEG, SIGN)
_UNARY_FLOAT = (FLOOR, CEIL, ROUND, TRUNC, SQRT)
_SCRATCH = Register(240)


class RandomProgramBuilder:
    """Builds one random program from ``rng`` (the same choices give the same program for any handles)."""

    def __init__(self, rng: random.Random, handles: list[int], types: tuple[Type, ...]) -> None:
        self.rng = rng
        self.b = ProgramBuilder()
        self.types = types
        self.handles = handles
        self.regs: dict[Type, list[Register]] = {ty: [] for ty in types}
        self.next_reg = 1
        self.next_pred = 0
        self.labels = 0

    def fresh(self, ty: Type) -> Register:
        reg = Register(self.next_reg)
        self.next_reg += 1
        self.regs[ty].append(reg)
        return reg

    def pick(self, ty: Type) -> Register:
        return self.rng.choice(self.regs[ty])

    def room(self) -> bool:
        return self.next_reg < 190 and all(len(r) < _SLOTS for r in self.regs.values())

    def statement(self, depth: int, top: bool) -> None:
        kind = self.rng.choice(("op", "op", "op", "cvt", "sel", "const", "if", "loop", "sync"))
        if kind == "if" and depth < 2:
            return self._if(depth)
        if kind == "loop" and depth < 2:
            return self._loop(depth, top)
        if kind == "sync" and top:
            return self._sync()
        if kind == "cvt":
            return self._cvt()
        if kind == "sel":
            return self._sel()
        if kind == "const":
            ty = self.rng.choice(self.types)
            value = self.rng.uniform(-1e3, 1e3) if ty.is_float() else self.rng.randint(*ty.int_range())
            self.b.add(MOV_IMM(dst=self.fresh(ty), value=value, ty=ty))
            return None
        return self._op()

    def _op(self) -> None:
        ty = self.rng.choice(self.types)
        shapes = [("binary", c) for c in _BINARY_ALL] + [("unary", c) for c in _UNARY_ALL] + [("mad", MAD),
                                                                                          ("clamp", CLAMP)]
        if ty.is_float():
            shapes += [("unary", c) for c in _UNARY_FLOAT] + [("fma", FMA), ("lerp", LERP), ("binary", DIV)]
        else:
            shapes += [("binary", c) for c in _BINARY_INT] + [("unary", NOT), ("shift", SHL), ("shift", SHR)]
        shape, cls = self.rng.choice(shapes)
        src = [self.pick(ty) for _ in range(3)]
        fields = {
            "binary": lambda: dict(lhs=src[0], rhs=src[1]),
            "unary": lambda: dict(src=src[0]),
            "mad": lambda: dict(a=src[0], b=src[1], c=src[2]),
            "fma": lambda: dict(a=src[0], b=src[1], c=src[2]),
            "lerp": lambda: dict(a=src[0], b=src[1], t=src[2]),
            "clamp": lambda: dict(src=src[0], min=src[1], max=src[2]),
            "shift": lambda: dict(src=src[0], amount=self.pick(Type.U32)),
        }[shape]()
        self.b.add(cls(dst=self.fresh(ty), ty=ty, **fields))

    def _cvt(self) -> None:
        src_ty = self.rng.choice(self.types)
        dst_ty = self.rng.choice(self.types)
        self.b.add(CVT(dst=self.fresh(dst_ty), src=self.pick(src_ty), src_ty=src_ty, dst_ty=dst_ty))

    def _predicate(self) -> Predicate:
        ty = self.rng.choice(self.types)
        pred = Predicate(self.next_pred % 16)
        self.next_pred += 1
        cond = self.rng.choice(list(Condition))
        self.b.add(SETcc(pred=pred, lhs=self.pick(ty), rhs=self.pick(ty), cond=cond, ty=ty))
        return pred

    def _sel(self) -> None:
        pred = self._predicate()
        ty = self.rng.choice(self.types)
        self.b.add(SEL(dst=self.fresh(ty), pred=pred, true_val=self.pick(ty), false_val=self.pick(ty), ty=ty))

    def _label(self) -> str:
        self.labels += 1
        return f"L{self.labels}"

    def _if(self, depth: int) -> None:
        pred = self._predicate()
        skip = self._label()
        self.b.add(BRA(target=skip, pred=pred, negate=self.rng.random() < 0.5))
        for _ in range(self.rng.randint(1, 4)):
            if self.room():
                self.statement(depth + 1, False)
        self.b.bind(skip)

    def _loop(self, depth: int, top: bool) -> None:
        count = Register(self.next_reg)
        self.next_reg += 1
        self.b.add(MOV_IMM(dst=count, value=self.rng.randint(0, 3), ty=Type.U32))
        head = self.b.label(self._label())
        for _ in range(self.rng.randint(1, 3)):
            if self.room():
                self.statement(depth + 1, top)
        self.b.add(LOOP(count=count, body=head))

    def _sync(self) -> None:
        if self.rng.random() < 0.5:
            self.b.add(BarSync(id=0))
            return
        op = self.rng.choice(list(ReduceOperation))
        source = Address.BufferOffset(self.handles[self.i32_input])
        self.b.add(ParallelReduce(dst=self.fresh(Type.I32), src_array=source, count=self.rng.randint(0, LANES),
                                  operation=op, ty=Type.I32))


@st.composite
def random_program_cases(draw, max_statements: int = 14) -> Case:
    """A Case running a random program (see the module docstring)."""
    types = tuple(draw(st.lists(st.sampled_from(TYPES), min_size=2, max_size=5, unique=True)))
    for needed in (Type.U32, Type.I32):  # shift amounts; the input of the ParallelReduce steps
        if needed not in types:
            types += (needed,)
    seed = draw(st.integers(0, (1 << 32) - 1))
    statements = draw(st.integers(1, max_statements))
    inputs = tuple(Buffer(ty, bytes_of(ty, LANES, seed + k)) for k, ty in enumerate(types))
    outputs = tuple(Buffer(ty, bytes(LANES * _SLOTS * ty.size_bytes()), output=True) for ty in types)

    def build(handles: list[int]):
        builder = RandomProgramBuilder(random.Random(seed), handles, types)
        builder.i32_input = types.index(Type.I32)
        b = builder.b
        for k, ty in enumerate(types):
            lane_pointer(b, handles[k], ty.size_bytes(), _SCRATCH)
            b.add(LDG(dst=builder.fresh(ty), src=Address.RegisterIndirect(_SCRATCH, 0), ty=ty))
        for _ in range(statements):
            if builder.room():
                builder.statement(0, True)
        for k, ty in enumerate(types):
            lane_pointer(b, handles[len(types) + k], _SLOTS * ty.size_bytes(), _SCRATCH)
            for slot, reg in enumerate(builder.regs[ty]):
                b.add(STG(dst=Address.RegisterIndirect(_SCRATCH, slot * ty.size_bytes()), src=reg, ty=ty))
        return b.build()

    program = build([2 + k for k in range(2 * len(types))])
    needs = tuple(sorted({(ins.INFO.name, ins.type) for ins in program.instructions},
                         key=lambda item: (item[0], item[1].code if item[1] else -1)))
    return Case(f"random.{seed}.{statements}.{'_'.join(t.suffix for t in types)}", "random", None,
                inputs + outputs, build, CONFIG, needs)
