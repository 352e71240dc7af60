"""Random valid programs driven by the opcode table (atlas_web/isa/opcodes.py), for differential runs.

Reuses the conformance suite's random-program builder (tests/conformance/random_cases.py: fresh registers per
definition, ``if`` blocks, counted loops, barriers) and replaces its hand list of operations with every
per-lane row of OPCODE_TABLE whose operands are registers, predicates or enums, over every type the row allows
(extended integers included). On top: special-value immediates (NaN, ±inf, −0, subnormals, INT_MIN, shift
amounts around the width), shared memory written, barriered and read back by another lane, ParallelMap /
ParallelMapBinary / ParallelReduce steps between lane code, per-lane reductions, Atlas instructions and traps
provoked on purpose (a lane-dependent division by zero, MIRROR of an invalid class).

Registers defined by an instruction whose result a backend may round differently (``inexact(name, ty)``:
a nonzero documented ulp tolerance) are stored to their own per-type buffer and never read again, so the
exact buffers compare bit for bit and the inexact ones within the documented tolerance.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable

import atlas_web.isa as isa
from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import (
    BRA, CVT, LDG, LDS, MOV_IMM, STG, STS, Address, BarSync, MIRROR, DIV, OPCODE_TABLE, ExecKind, Register, Type,
    SpecialRegister,
)
from atlas_web.isa.floats import round_float
from atlas_web.isa.opcodes import OperandKind, TypeRule
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES

from tests.conformance.case_tools import bytes_of, lane_pointer
from tests.conformance.harness import Buffer
from tests.conformance.random_cases import RandomProgramBuilder

__all__ = ["FuzzCase", "generate", "LANE_ROWS", "FUZZ_TYPES"]

#: every type the ISA has, minus the widest extended integers (slow on every backend; one wide type stays)
FUZZ_TYPES = tuple(t for t in Type if t.bits <= 256)
_SCRATCH = Register(240)
_SHARED_PTR = Register(241)
_SLOTS = 10
_FLOAT_SPECIALS = (math.nan, -math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 2.0 ** -149, 1.1754942e-38,
                   2.0 ** -1022, 1.7976931348623157e308, 3.4028235e38, 65504.0, 1.0, -1.0, 0.5)


def _lane_rows():
    """Rows a lane statement can use: per-lane, every operand a register, predicate or enum."""
    simple = {OperandKind.REG, OperandKind.PRED, OperandKind.ENUM}
    return tuple(r for r in OPCODE_TABLE if r.kind is ExecKind.LANE and r.operands
                 and all(o.kind in simple for o in r.operands) and r.type_fields in ((), ("ty",)))


LANE_ROWS = _lane_rows()


@dataclass(frozen=True)
class FuzzCase:
    """One generated program: buffers (inputs first), the builder over handles, launch, and per-buffer tolerance
    keys: None for an input, "exact", or the ((name, ty), ...) ops whose documented tolerance applies."""

    name: str
    buffers: tuple[Buffer, ...]
    build: Callable[[list[int]], object]
    config: LaunchConfig
    tolerance_ops: tuple[object, ...]
    needs: tuple[tuple[str, Type | None], ...]


class _TableBuilder(RandomProgramBuilder):
    """The conformance builder with table-driven statements and the campaign's extra statement kinds."""

    def __init__(self, rng, handles, types, inexact, lanes):
        super().__init__(rng, handles, types)
        self.inexact = inexact
        self.lanes = lanes
        self.terminal: dict[Type, list[Register]] = {ty: [] for ty in types}
        self.terminal_ops: dict[Type, set] = {ty: set() for ty in types}
        self.maps: list[tuple] = []       # (dst handle index, op, ty) of cooperative maps
        self.shared_used = False

    def room(self) -> bool:
        return (self.next_reg < 185 and all(len(r) < _SLOTS for r in self.regs.values())
                and all(len(r) < _SLOTS for r in self.terminal.values()))

    def statement(self, depth: int, top: bool) -> None:
        kind = self.rng.choice(("row", "row", "row", "row", "cvt", "sel", "special", "if", "loop", "sync",
                                "shared", "coop", "trap"))
        if kind == "row":
            return self._row()
        if kind == "special":
            return self._special()
        if kind in ("shared", "coop") and not top:
            kind = "row"
            return self._row()
        if kind == "shared":
            return self._shared()
        if kind == "coop":
            return self._coop()
        if kind == "trap":
            return self._trap()
        return super().statement(depth, top)

    def _type_for(self, rule, ty):
        if rule is TypeRule.TY or rule is None:
            return ty
        if isinstance(rule, Type):
            return rule
        if rule is TypeRule.INT32:
            return Type.U32
        if rule is TypeRule.INT:
            return self.rng.choice([t for t in self.types if t.is_integer() and t.bits <= 64])
        raise ValueError(rule)

    def _row(self) -> None:
        info = self.rng.choice(LANE_ROWS)
        allowed = [t for t in self.types if t in info.types]
        if info.type_fields and not allowed:
            return
        ty = self.rng.choice(allowed) if info.type_fields else None
        if info.name in ("MIRROR", "NbrCount"):  # traps on class >= 96; provoked apart (_trap)
            return
        fields: dict = {}
        dst = None
        for op in info.operands:
            if op.kind is OperandKind.ENUM:
                fields[op.name] = self.rng.choice(list(op.rule))
            elif op.kind is OperandKind.PRED:
                if op.access is isa.opcodes.Access.WRITE:
                    fields[op.name] = isa.Predicate(self.next_pred % 16)
                    self.next_pred += 1
                else:
                    fields[op.name] = self._predicate()
            elif op.name == "dst":
                dst = (op, self._type_for(op.rule, ty))
            else:
                fields[op.name] = self.pick(self._type_for(op.rule, ty))
        if dst is not None:
            dty = dst[1]
            if dty not in self.regs:
                return
            key = (info.name, ty)
            if self.inexact(info.name, ty):
                reg = Register(self.next_reg)
                self.next_reg += 1
                self.terminal[dty].append(reg)
                self.terminal_ops[dty].add(key)
            else:
                reg = self.fresh(dty)
            fields["dst"] = reg
        if ty is not None:
            fields["ty"] = ty
        self.b.add(getattr(isa, info.name)(**fields))

    def _special(self) -> None:
        ty = self.rng.choice(self.types)
        if ty.is_float():
            value = round_float(self.rng.choice(_FLOAT_SPECIALS), ty)
        else:
            lo, hi = ty.int_range()
            value = self.rng.choice([lo, hi, 0, -1 if lo else 1, ty.bits - 1, ty.bits, ty.bits + 1, 2 * ty.bits,
                                     lo + 1, hi - 1])
            value = ty.wrap(value)
        self.b.add(MOV_IMM(dst=self.fresh(ty), value=value, ty=ty))

    def _shared(self) -> None:
        """Every lane writes its slot of shared memory (by its index in the block), a barrier, then reads a
        neighbour's slot."""
        ty = self.rng.choice(self.types)
        size = ty.size_bytes()
        src = self.pick(ty)
        t = Register(self.next_reg)
        self.next_reg += 1
        self.b.add(CVT(dst=t, src=Register(int(SpecialRegister.LANE_IDX_X)), src_ty=Type.U32, dst_ty=Type.U32))
        off = Register(self.next_reg)
        self.next_reg += 1
        self.b.add(MOV_IMM(dst=off, value=size, ty=Type.U32))
        self.b.add(isa.MUL(dst=off, lhs=t, rhs=off, ty=Type.U32))
        self.b.add(STS(dst=Address.RegisterIndirect(off, 0), src=src, ty=ty))
        self.b.add(BarSync(id=0))
        shift = self.rng.choice([0, 1, self.block - 1])
        back = Register(self.next_reg)
        self.next_reg += 1
        self.b.add(MOV_IMM(dst=back, value=shift, ty=Type.U32))
        self.b.add(isa.ADD(dst=t, lhs=t, rhs=back, ty=Type.U32))
        self.b.add(MOV_IMM(dst=back, value=self.block, ty=Type.U32))
        self.b.add(isa.REM(dst=t, lhs=t, rhs=back, ty=Type.U32))
        self.b.add(MOV_IMM(dst=off, value=size, ty=Type.U32))
        self.b.add(isa.MUL(dst=off, lhs=t, rhs=off, ty=Type.U32))
        self.b.add(LDS(dst=self.fresh(ty), src=Address.RegisterIndirect(off, 0), ty=ty))
        self.b.add(BarSync(id=0))
        self.shared_used = True

    def _coop(self) -> None:
        """A cooperative step over an input buffer (map into a fresh output, or a reduce into a register)."""
        scalar = [t for t in self.types if t in isa.opcodes.SCALARS]
        ty = self.rng.choice(scalar)
        k = self.types.index(ty)
        kind = self.rng.choice(("map", "map2", "reduce"))
        count = self.rng.randint(0, self.lanes)
        if kind == "reduce":
            op = self.rng.choice([o for o in isa.ReduceOperation if ty in COOPERATIVE_OPERATION_TYPES[o]])
            inexact = self.inexact("ParallelReduce", ty) or ty.is_float()
            reg = Register(self.next_reg) if inexact else self.fresh(ty)
            if inexact:
                self.next_reg += 1
                self.terminal[ty].append(reg)
                self.terminal_ops[ty].add((op, ty))
            self.b.add(isa.ParallelReduce(dst=reg, src_array=Address.BufferOffset(self.handles[k]), count=count,
                                          operation=op, ty=ty))
            return
        if len(self.maps) >= 2:
            return
        out = self.map_handles[len(self.maps)]
        if kind == "map":
            op = self.rng.choice([o for o in isa.MapOperation if ty in COOPERATIVE_OPERATION_TYPES[o]])
            self.b.add(isa.ParallelMap(dst_array=Address.BufferOffset(out), src_array=Address.BufferOffset(
                self.handles[k]), count=count, operation=op, ty=ty))
        else:
            op = self.rng.choice([o for o in isa.BinaryMapOperation if ty in COOPERATIVE_OPERATION_TYPES[o]])
            self.b.add(isa.ParallelMapBinary(dst_array=Address.BufferOffset(out), src_a=Address.BufferOffset(
                self.handles[k]), src_b=Address.BufferOffset(self.handles[k], ty.size_bytes()),
                count=max(0, count - 1), operation=op, ty=ty))
        self.maps.append((op, ty))

    def _sync(self) -> None:
        """A barrier, or an I32 ParallelReduce over the I32 input (at most this launch's lanes + 1 elements)."""
        if self.rng.random() < 0.5:
            self.b.add(BarSync(id=0))
            return
        op = self.rng.choice(list(isa.ReduceOperation))
        self.b.add(isa.ParallelReduce(dst=self.fresh(Type.I32), src_array=Address.BufferOffset(
            self.handles[self.i32_input]), count=self.rng.randint(0, self.lanes + 1), operation=op, ty=Type.I32))

    def _trap(self) -> None:
        """A trap on purpose in one lane: integer division by (lane id - k), or MIRROR of lane id + base."""
        k = self.rng.randrange(self.lanes)
        t = Register(self.next_reg)
        c = Register(self.next_reg + 1)
        self.next_reg += 2
        self.b.add(MOV_IMM(dst=c, value=k, ty=Type.U32))
        self.b.add(isa.SUB(dst=t, lhs=Register(255), rhs=c, ty=Type.U32))
        if self.rng.random() < 0.5:
            self.b.add(DIV(dst=self.fresh(Type.U32), lhs=c, rhs=t, ty=Type.U32))
        else:
            self.b.add(MOV_IMM(dst=c, value=96 - (self.lanes - k), ty=Type.U32))
            self.b.add(isa.ADD(dst=t, lhs=Register(255), rhs=c, ty=Type.U32))
            self.b.add(MIRROR(dst=self.fresh(Type.U8) if Type.U8 in self.regs else Register(self.next_reg + 1),
                              src=t))
            self.next_reg += 1


_SHAPES = (((2, 1, 1), (32, 1, 1)), ((1, 1, 1), (64, 1, 1)), ((4, 1, 1), (16, 1, 1)), ((3, 1, 1), (7, 1, 1)),
           ((1, 1, 1), (1, 1, 1)))


def generate(seed: int, inexact: Callable[[str, Type | None], bool], statements: int = 16,
             trap_rate: float = 1.0) -> FuzzCase:
    """The program of ``seed`` (the same seed gives the same program and inputs)."""
    rng = random.Random(seed)
    grid, block = rng.choice(_SHAPES)
    lanes = grid[0] * block[0]
    types = tuple(rng.sample(FUZZ_TYPES, rng.randint(2, 6)))
    for needed in (Type.U32, Type.I32, Type.U8):
        if needed not in types:
            types += (needed,)
    data_seed = rng.getrandbits(32)
    count = rng.randint(1, statements)
    inputs = tuple(Buffer(ty, bytes_of(ty, lanes + 1, data_seed + k)) for k, ty in enumerate(types))
    exact_out = tuple(Buffer(ty, bytes(lanes * _SLOTS * ty.size_bytes()), output=True) for ty in types)
    inexact_out = tuple(Buffer(ty, bytes(lanes * _SLOTS * ty.size_bytes()), output=True) for ty in types)
    map_out = tuple(Buffer(Type.U8, bytes(lanes * 64 + 64), output=True) for _ in range(2))
    n = len(types)
    info: dict = {}

    def build(handles: list[int]):
        builder = _TableBuilder(random.Random(seed ^ 0x5EED), handles, types, inexact, lanes)
        builder.block = block[0]
        builder.i32_input = types.index(Type.I32)
        builder.map_handles = handles[3 * n:3 * n + 2]
        b = builder.b
        for k, ty in enumerate(types):
            lane_pointer(b, handles[k], ty.size_bytes(), _SCRATCH)
            b.add(LDG(dst=builder.fresh(ty), src=Address.RegisterIndirect(_SCRATCH, 0), ty=ty))
        for _ in range(count):
            if builder.room():
                builder.statement(0, True)
        for k, ty in enumerate(types):
            for base, regs in ((n, builder.regs[ty]), (2 * n, builder.terminal[ty])):
                if not regs:
                    continue
                lane_pointer(b, handles[base + k], _SLOTS * ty.size_bytes(), _SCRATCH)
                for slot, reg in enumerate(regs):
                    b.add(STG(dst=Address.RegisterIndirect(_SCRATCH, slot * ty.size_bytes()), src=reg, ty=ty))
        info.update(terminal_ops=builder.terminal_ops, maps=list(builder.maps))
        return b.build()

    program = build(list(range(2, 2 + 3 * n + 2)))
    tol = [None] * n + ["exact"] * n + [tuple(sorted(info["terminal_ops"][ty], key=str)) for ty in types]
    maps = info["maps"]
    map_bufs = []
    for j in range(2):
        if j < len(maps):
            op, ty = maps[j]
            map_bufs.append(Buffer(ty, bytes(lanes * ty.size_bytes() + ty.size_bytes()), output=True))
            tol.append(((op, ty),))
        else:
            map_bufs.append(map_out[j])
            tol.append("exact")
    needs = tuple(sorted({(ins.INFO.name, ins.type) for ins in program.instructions},
                         key=lambda item: (item[0], item[1].code if item[1] else -1)))
    config = LaunchConfig(grid=grid, block=block, shared_memory=max(t.size_bytes() for t in types) * block[0])
    return FuzzCase(f"fuzz.{seed}", inputs + exact_out + inexact_out + tuple(map_bufs), build, config,
                    tuple(tol), needs)
