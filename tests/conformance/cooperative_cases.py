"""Cases for the cooperative instructions: every operation x accepted type of ParallelMap,
ParallelMapBinary and ParallelReduce (odd counts, so vector loops have scalar tails), arrays that
overlap their destination (forward, backward, on both sides), ``count = 0``, and addresses held in
lane 0's registers.

``CooperativeCase.operation`` is the enum member; ``operation_supported`` asks a backend about it
(``supports_operation`` where the backend has it, else the instruction-level ``supports``).
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import (
    COOPERATIVE_OPERATION_TYPES, MOV_IMM, STG, Address, BinaryMapOperation, MapOperation, ParallelMap,
    ParallelMapBinary, ParallelReduce, ReduceOperation, Register, Type,
)

from .case_tools import bytes_of, lane_pointer
from .harness import Buffer, Case

__all__ = ["CooperativeCase", "cooperative_cases", "operation_supported", "reduce_tolerance"]

_TYPES = (Type.F16, Type.BF16, Type.F32, Type.F64, Type.I8, Type.U8, Type.I16, Type.U16, Type.I32, Type.U32,
          Type.I64, Type.U64)
COUNT = 37
LONG = 301
REDUCE_LANES = LaunchConfig(grid=(1, 1, 1), block=(4, 1, 1))
SINGLE = LaunchConfig()


@dataclass(frozen=True)
class CooperativeCase(Case):
    """A case whose cooperative ``operation`` (enum member) must be supported for ``ty``."""

    operation: object = None
    instruction: str = ""


def operation_supported(backend, case: CooperativeCase) -> bool:
    ask = getattr(backend, "supports_operation", None)
    if ask is not None:
        return bool(ask(case.operation, case.ty)) and all(backend.supports(n, t) for n, t in case.needs)
    return all(backend.supports(n, t) for n, t in case.needs)


def reduce_tolerance(case: CooperativeCase, ulps: float) -> float:
    """Float sums may be summed in any order: within ``count`` ulps (the contract's count * eps)."""
    if case.operation is ReduceOperation.Sum and case.ty.is_float():
        return max(ulps, float(max(COUNT, LONG)))
    return ulps


def _map(ty: Type, operation: MapOperation, count: int, shift: int = 0):
    """dst = op(src); with ``shift`` (elements) dst starts ``shift`` elements after src in one buffer."""
    size = ty.size_bytes()

    def build(handles):
        if shift:
            dst, src = Address.BufferOffset(handles[0], max(shift, 0) * size), \
                Address.BufferOffset(handles[0], max(-shift, 0) * size)
        else:
            dst, src = Address.BufferOffset(handles[1]), Address.BufferOffset(handles[0])
        return ProgramBuilder().add(ParallelMap(dst_array=dst, src_array=src, count=count, operation=operation,
                                                ty=ty)).build()
    return build


def _map_binary(ty: Type, operation: BinaryMapOperation, count: int, layout: str = "separate"):
    """dst = op(a, b): separate buffers, or one buffer with dst between a and b ("between"), or dst = a."""
    size = ty.size_bytes()

    def build(handles):
        if layout == "between":
            a = Address.BufferOffset(handles[0], 0)
            dst = Address.BufferOffset(handles[0], 3 * size)
            b = Address.BufferOffset(handles[0], 5 * size)
        elif layout == "in_place":
            a = dst = Address.BufferOffset(handles[0])
            b = Address.BufferOffset(handles[1])
        else:
            a, b, dst = (Address.BufferOffset(h) for h in handles[:3])
        return ProgramBuilder().add(ParallelMapBinary(dst_array=dst, src_a=a, src_b=b, count=count,
                                                      operation=operation, ty=ty)).build()
    return build


def _reduce(ty: Type, operation: ReduceOperation, count: int, registers: bool = False):
    """r1 = reduce(src); every lane stores it at its slot of the output."""
    size = ty.size_bytes()

    def build(handles):
        b = ProgramBuilder()
        if registers:
            b.add(MOV_IMM(dst=Register(20), value=handles[0] << 32, ty=Type.U64))
            src = Address.RegisterIndirect(Register(20), 0)
        else:
            src = Address.BufferOffset(handles[0])
        b.add(ParallelReduce(dst=Register(1), src_array=src, count=count, operation=operation, ty=ty))
        lane_pointer(b, handles[1], size, Register(2))
        b.add(STG(dst=Address.RegisterIndirect(Register(2), 0), src=Register(1), ty=ty))
        return b.build()
    return build


def _register_map(ty: Type, count: int):
    """ParallelMap Neg with both arrays addressed through lane 0's pointer registers."""
    def build(handles):
        b = ProgramBuilder()
        b.add(MOV_IMM(dst=Register(20), value=handles[0] << 32, ty=Type.U64))
        b.add(MOV_IMM(dst=Register(21), value=(handles[1] << 32) | ty.size_bytes(), ty=Type.U64))
        b.add(ParallelMap(dst_array=Address.RegisterIndirect(Register(21), -ty.size_bytes()),
                          src_array=Address.RegisterIndirect(Register(20), 0), count=count,
                          operation=MapOperation.Neg, ty=ty))
        return b.build()
    return build


_POINTER = (("CVT", Type.U64), ("MUL", Type.U64), ("OR", Type.U64), ("MOV_IMM", Type.U64))


def _needs(name: str, ty: Type, extra=()) -> tuple:
    return ((name, ty), *extra)


def cooperative_cases() -> list[CooperativeCase]:
    cases: list[CooperativeCase] = []

    def add(name, ty, operation, instruction, buffers, build, config=SINGLE, extra=()):
        cases.append(CooperativeCase(name, operation, ty, tuple(buffers), build, config,
                                     _needs(instruction, ty, extra), operation=operation, instruction=instruction))

    for ty in _TYPES:
        size = ty.size_bytes()
        seed = ty.code * 31
        a = bytes_of(ty, LONG, seed)
        b = bytes_of(ty, LONG, seed + 1)
        out = Buffer(ty, bytes(LONG * size), output=True)
        for op in MapOperation:
            if ty not in COOPERATIVE_OPERATION_TYPES[op]:
                continue
            add(f"pmap.{op.text}.{ty.suffix}", ty, op, "ParallelMap", [Buffer(ty, a[:COUNT * size]), out],
                _map(ty, op, COUNT))
        for op in BinaryMapOperation:
            if ty not in COOPERATIVE_OPERATION_TYPES[op]:
                continue
            add(f"pmap2.{op.text}.{ty.suffix}", ty, op, "ParallelMapBinary",
                [Buffer(ty, a[:COUNT * size]), Buffer(ty, b[:COUNT * size]), out], _map_binary(ty, op, COUNT))
        for op in ReduceOperation:
            for count in (COUNT, LONG, 0):
                add(f"preduce.{op.text}.{ty.suffix}.{count}", ty, op, "ParallelReduce",
                    [Buffer(ty, a[:max(count, 1) * size]), Buffer(ty, bytes(4 * size), output=True)],
                    _reduce(ty, op, count), REDUCE_LANES, (("STG", ty), *_POINTER))
        # overlaps: dst after src (runs backward), dst before src (forward), dst between the sources
        whole = Buffer(ty, a, output=True)
        add(f"pmap.neg.{ty.suffix}.overlap_after", ty, MapOperation.Neg, "ParallelMap", [whole],
            _map(ty, MapOperation.Neg, LONG - 3, shift=3))
        add(f"pmap.neg.{ty.suffix}.overlap_before", ty, MapOperation.Neg, "ParallelMap", [whole],
            _map(ty, MapOperation.Neg, LONG - 3, shift=-3))
        add(f"pmap2.sub.{ty.suffix}.between", ty, BinaryMapOperation.Sub, "ParallelMapBinary", [whole],
            _map_binary(ty, BinaryMapOperation.Sub, LONG - 5, "between"))
        add(f"pmap2.max.{ty.suffix}.in_place", ty, BinaryMapOperation.Max, "ParallelMapBinary",
            [whole, Buffer(ty, b)], _map_binary(ty, BinaryMapOperation.Max, LONG, "in_place"))
        add(f"pmap.neg.{ty.suffix}.count0", ty, MapOperation.Neg, "ParallelMap", [Buffer(ty, a[:size]), out],
            _map(ty, MapOperation.Neg, 0))
        add(f"pmap.neg.{ty.suffix}.registers", ty, MapOperation.Neg, "ParallelMap", [Buffer(ty, a), out],
            _register_map(ty, LONG), extra=(("MOV_IMM", Type.U64),))
        add(f"preduce.max.{ty.suffix}.registers", ty, ReduceOperation.Max, "ParallelReduce",
            [Buffer(ty, a), Buffer(ty, bytes(4 * size), output=True)], _reduce(ty, ReduceOperation.Max, LONG, True),
            REDUCE_LANES, (("STG", ty), *_POINTER))
    return cases

