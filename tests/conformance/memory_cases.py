"""Cases for the memory instructions: LDG/STG per type and address mode, LDS/STS through shared memory
across a barrier, PoolLoad/PoolStore on a pool allocated in the program, and static pool addresses on a
pool allocated by the host (``PoolCase``, with its own runner).

Every lane works on its own elements (no two lanes write the same bytes), so the results do not depend
on the order lanes run in.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web import AtlasTrap, Backend, LaunchConfig, ProgramBuilder
from atlas_web.isa import (
    ALL, BOUNDARY_HANDLE, CLASS_STRIDE, CVT, LDG, LDS, MOV, MOV_IMM, MUL, STG, STS, Address, BarSync, PoolAlloc,
    PoolFree, PoolLoad, PoolStore, Register, Type, ADD, REM, XOR,
)

from .case_tools import bytes_of, lane_pointer
from .harness import Buffer, Case, Result

__all__ = ["memory_cases", "PoolCase", "pool_cases", "run_pool_case", "LANES", "CONFIG"]

LANES = 64
CONFIG = LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1))
_TYPES = sorted(ALL, key=lambda t: t.code)
_POINTER_NEEDS = (("CVT", Type.U64), ("MUL", Type.U64), ("OR", Type.U64), ("MOV_IMM", Type.U64))
IN, OUT, VALUE = Register(10), Register(11), Register(20)


def _ldg_indirect(ty: Type, disp: int):
    """out[l] = in[l + 4] read through RegisterIndirect(base, disp), base pointing ``disp`` bytes before it."""
    size = ty.size_bytes()

    def build(handles):
        b = ProgramBuilder()
        lane_pointer(b, handles[0], size, IN, extra=4 * size - disp)
        lane_pointer(b, handles[1], size, OUT)
        b.add(LDG(dst=VALUE, src=Address.RegisterIndirect(IN, disp), ty=ty))
        b.add(STG(dst=Address.RegisterIndirect(OUT, 0), src=VALUE, ty=ty))
        return b.build()
    return build


def _ldg_computed(ty: Type, offset_ty: Type):
    """out[l] = in[l] with handle and offset in separate registers (the offset of type ``offset_ty``)."""
    size = ty.size_bytes()

    def build(handles):
        b = ProgramBuilder()
        b.add(MOV_IMM(dst=Register(40), value=handles[0], ty=Type.U32))
        b.add(CVT(dst=Register(41), src=Register(255), src_ty=Type.U32, dst_ty=offset_ty))
        b.add(MOV_IMM(dst=Register(42), value=size, ty=offset_ty))
        b.add(MUL(dst=Register(43), lhs=Register(41), rhs=Register(42), ty=offset_ty))
        b.add(LDG(dst=VALUE, src=Address.RegisterIndirectComputed(Register(40), Register(43)), ty=ty))
        lane_pointer(b, handles[1], size, OUT)
        b.add(STG(dst=Address.RegisterIndirectComputed(Register(40), Register(43)), src=VALUE, ty=ty))
        b.add(STG(dst=Address.RegisterIndirect(OUT, 0), src=VALUE, ty=ty))
        return b.build()
    return build


def _ldg_static(ty: Type):
    """Every lane loads element 5 (BufferOffset) and stores it at its own slot."""
    size = ty.size_bytes()

    def build(handles):
        b = ProgramBuilder()
        b.add(LDG(dst=VALUE, src=Address.BufferOffset(handles[0], 5 * size), ty=ty))
        lane_pointer(b, handles[1], size, OUT)
        b.add(STG(dst=Address.RegisterIndirect(OUT, 0), src=VALUE, ty=ty))
        return b.build()
    return build


def _class_round_trip(ty: Type):
    """One lane: values through the boundary memory of several classes (Class addresses), and the
    boundary memory read back through a handle-1 pointer (every byte read was written first: the
    boundary memory keeps what earlier launches wrote)."""
    size = ty.size_bytes()
    classes = (0, 1, 47, 95)

    def build(handles):
        b = ProgramBuilder()
        for k, cls in enumerate(classes):
            b.add(LDG(dst=VALUE, src=Address.BufferOffset(handles[0], k * size), ty=ty))
            b.add(STG(dst=Address.Class(cls, CLASS_STRIDE - size * (k + 1)), src=VALUE, ty=ty))
        for k, cls in enumerate(classes):
            b.add(LDG(dst=Register(21), src=Address.Class(cls, CLASS_STRIDE - size * (k + 1)), ty=ty))
            b.add(STG(dst=Address.BufferOffset(handles[1], k * size), src=Register(21), ty=ty))
        b.add(STG(dst=Address.Class(95, CLASS_STRIDE - size), src=VALUE, ty=ty))
        b.add(MOV_IMM(dst=Register(50), value=(BOUNDARY_HANDLE << 32) | (95 * CLASS_STRIDE + CLASS_STRIDE - size),
                      ty=Type.U64))
        b.add(LDG(dst=Register(22), src=Address.RegisterIndirect(Register(50), 0), ty=ty))
        b.add(STG(dst=Address.BufferOffset(handles[1], len(classes) * size), src=Register(22), ty=ty))
        return b.build()
    return build


def _shared_exchange(ty: Type, static: bool):
    """Each lane stores its value in shared memory, BarSync, then reads its right neighbour's (in the
    block); with ``static``, lane values also pass through a Shared(offset) slot of the same value."""
    size = ty.size_bytes()

    def build(handles):
        b = ProgramBuilder()
        lane_pointer(b, handles[0], size, IN)
        lane_pointer(b, handles[1], size, OUT)
        b.add(LDG(dst=VALUE, src=Address.RegisterIndirect(IN, 0), ty=ty))
        b.add(MOV_IMM(dst=Register(30), value=size, ty=Type.U32))
        b.add(MUL(dst=Register(31), lhs=Register(252), rhs=Register(30), ty=Type.U32))
        b.add(STS(dst=Address.RegisterIndirect(Register(31), 0), src=VALUE, ty=ty))
        if static:
            b.add(LDG(dst=Register(24), src=Address.BufferOffset(handles[0], 0), ty=ty))
            b.add(STS(dst=Address.Shared(32 * size), src=Register(24), ty=ty))
        b.add(BarSync(id=0))
        b.add(MOV_IMM(dst=Register(32), value=1, ty=Type.U32))
        b.add(ADD(dst=Register(33), lhs=Register(252), rhs=Register(32), ty=Type.U32))
        b.add(MOV_IMM(dst=Register(34), value=32, ty=Type.U32))
        b.add(REM(dst=Register(35), lhs=Register(33), rhs=Register(34), ty=Type.U32))
        b.add(MUL(dst=Register(36), lhs=Register(35), rhs=Register(30), ty=Type.U32))
        b.add(CVT(dst=Register(37), src=Register(36), src_ty=Type.U32, dst_ty=Type.U64))
        b.add(LDS(dst=Register(23), src=Address.RegisterIndirect(Register(37), 0), ty=ty))
        if static:
            b.add(LDS(dst=Register(25), src=Address.Shared(32 * size), ty=ty))
            b.add(STG(dst=Address.RegisterIndirect(OUT, LANES * size), src=Register(25), ty=ty))
        b.add(STG(dst=Address.RegisterIndirect(OUT, 0), src=Register(23), ty=ty))
        return b.build()
    return build


def _pool_exchange(ty: Type):
    """PoolAlloc (cooperative), each lane stores at its slot of the pool, BarSync, loads the slot of its
    partner in the block (lane id xor 1) with PoolLoad, PoolFree (cooperative)."""
    size = ty.size_bytes()

    def build(handles):
        b = ProgramBuilder()
        b.add(PoolAlloc(dst=Register(60), size=LANES * size))
        lane_pointer(b, handles[0], size, IN)
        lane_pointer(b, handles[1], size, OUT)
        b.add(LDG(dst=VALUE, src=Address.RegisterIndirect(IN, 0), ty=ty))
        b.add(CVT(dst=Register(61), src=Register(255), src_ty=Type.U32, dst_ty=Type.U64))
        b.add(MOV_IMM(dst=Register(62), value=size, ty=Type.U64))
        b.add(MUL(dst=Register(63), lhs=Register(61), rhs=Register(62), ty=Type.U64))
        b.add(PoolStore(pool=Register(60), offset=Register(63), src=VALUE, ty=ty))
        b.add(BarSync(id=0))
        b.add(MOV_IMM(dst=Register(64), value=1, ty=Type.U64))
        b.add(XOR(dst=Register(65), lhs=Register(61), rhs=Register(64), ty=Type.U64))
        b.add(MUL(dst=Register(67), lhs=Register(65), rhs=Register(62), ty=Type.U64))
        b.add(PoolLoad(dst=Register(23), pool=Register(60), offset=Register(67), ty=ty))
        b.add(STG(dst=Address.RegisterIndirect(OUT, 0), src=Register(23), ty=ty))
        b.add(PoolFree(handle=Register(60)))
        return b.build()
    return build


#: types that get every address-mode variant; the others get one variant of each mode
_EVERY_VARIANT = frozenset({Type.F16, Type.F32, Type.I64, Type.U8, Type.U128})


def memory_cases() -> list[Case]:
    """Every type x (LDG/STG address mode, shared exchange, pool exchange); every displacement, offset
    type and shared-memory variant for the types of ``_EVERY_VARIANT``."""
    cases = []
    for ty in _TYPES:
        size = ty.size_bytes()
        seed = ty.code * 17
        data = bytes_of(ty, LANES + 8, seed)
        move = (("LDG", ty), ("STG", ty), *_POINTER_NEEDS)
        every = ty in _EVERY_VARIANT

        def case(kind, program, buffers, config=CONFIG, needs=move, ty=ty):
            return Case(f"{kind}.{ty.suffix}", "LDG", ty, buffers, program, config, tuple(needs))

        out = Buffer(ty, bytes(LANES * size), output=True)
        for disp in ((0, size, -size, 3 * size) if every else (-size,)):
            cases.append(case(f"indirect{disp:+d}", _ldg_indirect(ty, disp), (Buffer(ty, data), out)))
        for offset_ty in ((Type.U32, Type.U64, Type.I64) if every else (Type.U64,)):
            cases.append(case(f"computed.{offset_ty.suffix}", _ldg_computed(ty, offset_ty),
                              (Buffer(ty, data[:LANES * size], output=True), out),
                              needs=(*move, ("CVT", offset_ty), ("MUL", offset_ty))))
        cases.append(case("static", _ldg_static(ty), (Buffer(ty, data), out)))
        cases.append(case("class", _class_round_trip(ty), (Buffer(ty, data[:4 * size]),
                                                           Buffer(ty, bytes(5 * size), output=True)),
                          config=LaunchConfig()))
        shared = LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1), shared_memory=33 * size)
        shared_out = Buffer(ty, bytes(2 * LANES * size), output=True)
        for static in ((False, True) if every else (True,)):
            cases.append(case("shared.static" if static else "shared", _shared_exchange(ty, static),
                              (Buffer(ty, data[:LANES * size]), shared_out), config=shared,
                              needs=(*move, ("LDS", ty), ("STS", ty), ("BarSync", None), ("REM", Type.U32))))
        cases.append(case("pool", _pool_exchange(ty), (Buffer(ty, data[:LANES * size]), out),
                          needs=(*move, ("PoolAlloc", None), ("PoolFree", None), ("PoolLoad", ty),
                                 ("PoolStore", ty), ("BarSync", None), ("XOR", Type.U64))))
    return cases


@dataclass(frozen=True)
class PoolCase(Case):
    """A case that also needs pools allocated by the host after its buffers (sizes in ``pools``);
    the program receives the buffer handles, then the pool handles."""

    pools: tuple[int, ...] = ()


def run_pool_case(backend: Backend, case: PoolCase) -> Result:
    """Like harness.run_case, with the case's pools allocated (and freed) by the host."""
    handles = []
    for buf in case.buffers:
        h = backend.allocate_buffer(max(len(buf.data), 1))
        backend.copy_to_buffer(h, buf.data)
        handles.append(int(h))
    pools = [int(backend.allocate_pool(size)) for size in case.pools]
    trap = None
    try:
        backend.execute_program(case.program(handles + pools), case.config)
    except AtlasTrap as t:
        trap = (int(t.code), t.instruction_index, t.lane)
    outputs = [bytes(backend.copy_from_buffer(h)[:len(buf.data)]) for h, buf in zip(handles, case.buffers)
               if buf.output]
    for h in handles:
        backend.free_buffer(h)
    for p in pools:
        backend.free_pool(p)
    return Result(outputs, trap)


def _static_pool(ty: Type):
    """Each lane copies its element into a host pool (PoolStore by register), and lane values come
    back through a static PoolOffset address of element 3 and through PoolLoad."""
    size = ty.size_bytes()

    def build(handles):
        source, out, pool = handles
        b = ProgramBuilder()
        lane_pointer(b, source, size, IN)
        lane_pointer(b, out, size, OUT)
        b.add(LDG(dst=VALUE, src=Address.RegisterIndirect(IN, 0), ty=ty))
        b.add(MOV_IMM(dst=Register(60), value=pool, ty=Type.U32))
        b.add(CVT(dst=Register(61), src=Register(255), src_ty=Type.U32, dst_ty=Type.U32))
        b.add(MOV_IMM(dst=Register(62), value=size, ty=Type.U32))
        b.add(MUL(dst=Register(63), lhs=Register(61), rhs=Register(62), ty=Type.U32))
        b.add(PoolStore(pool=Register(60), offset=Register(63), src=VALUE, ty=ty))
        b.add(PoolLoad(dst=Register(23), pool=Register(60), offset=Register(63), ty=ty))
        b.add(STG(dst=Address.RegisterIndirect(OUT, 0), src=Register(23), ty=ty))
        b.add(LDG(dst=Register(24), src=Address.PoolOffset(pool, LANES * size), ty=ty))
        b.add(MOV(dst=Register(25), src=Register(24), ty=ty))
        b.add(STG(dst=Address.RegisterIndirect(OUT, LANES * size), src=Register(25), ty=ty))
        return b.build()
    return build


def pool_cases() -> list[PoolCase]:
    """Every type: a host-allocated pool addressed by registers and statically."""
    out = []
    for ty in _TYPES:
        size = ty.size_bytes()
        data = bytes_of(ty, LANES, ty.code * 29)
        out.append(PoolCase(f"pool.static.{ty.suffix}", "LDG", ty,
                            (Buffer(ty, data), Buffer(ty, bytes(2 * LANES * size), output=True)),
                            _static_pool(ty), CONFIG,
                            (("LDG", ty), ("STG", ty), ("PoolLoad", ty), ("PoolStore", ty), ("MOV", ty),
                             *_POINTER_NEEDS, ("MUL", Type.U32)),
                            pools=((LANES + 1) * size,)))
    return out
