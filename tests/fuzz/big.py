"""Launch shapes that take the wasm threaded and SIMD paths: a 2M-lane program and a 1M-element map.

Few and slow on the reference (seconds each), so only the long run (``--big``) makes them.
"""

from __future__ import annotations

import random

import atlas_web.isa as isa
from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import LDG, STG, Address, Register, Type
from atlas_web.isa.opcodes import OperandKind, TypeRule
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES

from tests.conformance.case_tools import bytes_of, lane_pointer
from tests.conformance.harness import Buffer

from .generator import LANE_ROWS, FuzzCase

__all__ = ["big_cases", "BIG_LANES", "BIG_MAP"]

BIG_LANES = 2 * 1024 * 1024
BIG_MAP = 1024 * 1024


def _needs(program):
    return tuple(sorted({(i.INFO.name, i.type) for i in program.instructions}, key=str))


def _lane_case(seed: int) -> FuzzCase:
    """Every lane applies one random table row (all operands of the row's type) to three inputs."""
    rng = random.Random(seed)
    rows = [r for r in LANE_ROWS if r.type_fields == ("ty",)
            and all(o.kind is OperandKind.REG and o.rule is TypeRule.TY for o in r.operands)]
    info = rng.choice(rows)
    ty = rng.choice(sorted((t for t in info.types if t.bits <= 64), key=lambda t: t.code))
    size = ty.size_bytes()
    bufs = tuple(Buffer(ty, bytes_of(ty, BIG_LANES, seed + k)) for k in range(3))
    bufs += (Buffer(ty, bytes(BIG_LANES * size), output=True),)
    sources = [o.name for o in info.operands if o.name != "dst"]

    def build(handles):
        b = ProgramBuilder()
        fields = {}
        for k, name in enumerate(sources):
            lane_pointer(b, handles[k], size, Register(200))
            b.add(LDG(dst=Register(10 + k), src=Address.RegisterIndirect(Register(200), 0), ty=ty))
            fields[name] = Register(10 + k)
        b.add(getattr(isa, info.name)(dst=Register(20), ty=ty, **fields))
        lane_pointer(b, handles[3], size, Register(200))
        b.add(STG(dst=Address.RegisterIndirect(Register(200), 0), src=Register(20), ty=ty))
        return b.build()

    program = build([2, 3, 4, 5])
    return FuzzCase(f"big.lanes.{seed}.{info.name}.{ty.name}", bufs, build,
                    LaunchConfig(grid=(BIG_LANES // 256, 1, 1), block=(256, 1, 1)),
                    (None, None, None, ((info.name, ty),)), _needs(program))


def _map_case(seed: int) -> FuzzCase:
    """One ParallelMap of a random operation over 1M elements."""
    rng = random.Random(seed)
    op = rng.choice(list(isa.MapOperation))
    ty = rng.choice(sorted(COOPERATIVE_OPERATION_TYPES[op], key=lambda t: t.code))
    bufs = (Buffer(ty, bytes_of(ty, BIG_MAP, seed)), Buffer(ty, bytes(BIG_MAP * ty.size_bytes()), output=True))

    def build(handles):
        b = ProgramBuilder()
        b.add(isa.ParallelMap(dst_array=Address.BufferOffset(handles[1]), src_array=Address.BufferOffset(handles[0]),
                              count=BIG_MAP, operation=op, ty=ty))
        return b.build()

    return FuzzCase(f"big.map.{seed}.{op.name}.{ty.name}", bufs, build, LaunchConfig(), (None, ((op, ty),)),
                    _needs(build([2, 3])))


def big_cases(seed: int) -> list[FuzzCase]:
    return [_lane_case(seed), _map_case(seed)]
