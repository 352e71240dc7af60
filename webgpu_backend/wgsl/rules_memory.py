"""Per-lane memory rules: LDG STG LDS STS PoolLoad PoolStore and the per-lane ReduceAdd/Min/Max/Mul.

Global addresses resolve through the device handle table ``dtable`` (``vec4<u32>``: chunk,
base, size, kind) to a chunk and a byte offset. Static addresses (BufferOffset, PoolOffset,
Class) were checked when the launch started (``verify_launch``), so they carry no run-time
check; register-based ones check, in the contract's order, the handle (INVALID_HANDLE), the
range (OUT_OF_BOUNDS, also for an offset leaving 0 … 2**32-1) and the alignment (MISALIGNED).

Memory is read and written in 32-bit words (``mem_load``/``mem_store`` and, for the 8- and
16-bit stores that share a word with other lanes' bytes, ``mem_merge``: one atomic step, see ``subword``);
the stage shader defines these for its chunks (with several chunks they act on the private
``current_chunk``, set before each access). Shared memory works the same way through
``shm_*`` on a workgroup array of SHARED_WORDS words.
"""

from __future__ import annotations

import math

from atlas_web.errors import TrapCode
from atlas_web.isa.addresses import BOUNDARY_HANDLE, CLASS_STRIDE, Address
from atlas_web.isa.types import Type
from atlas_web.trap_report import SHARED_MEMORY

from ..memory import KIND_NONE, KIND_POOL
from .lane_context import LaneContext
from .rules import lane_rule, value
from .rules_lane import literal
from .rules_wide import wide_load, wide_store
from .types import TYPE_MAP, WgslType

__all__ = ["load_value", "store_value", "GLOBAL_ADDRESSES", "SHARED_ADDRESSES"]


# ---- typed word access ------------------------------------------------------------------------
def load_value(ctx, wt: WgslType, load: str, byte: str) -> str:
    """The value of ``wt`` (not extended) at byte offset ``byte`` (aligned) read with ``load(word)``."""
    if wt.size == 1 or wt.size == 2:
        mask, lane_bits = ("0xffu", 3) if wt.size == 1 else ("0xffffu", 2)
        bits = f"(({load}({byte} >> 2u) >> (({byte} & {lane_bits}u) * 8u)) & {mask})"
        formats = {"f16": f"{ctx.helper('f16_value')}({bits})", "bf16": f"bitcast<f32>({bits} << 16u)"}
        return formats.get(wt.format, bits)
    if wt.size == 4:
        word = f"{load}({byte} >> 2u)"
        return f"bitcast<f32>({word})" if wt.family == "float" else word
    first = ctx.temp(f"{byte} >> 2u")
    return f"vec2<u32>({load}({first}), {load}({first} + 1u))"


def _bits16(ctx, wt: WgslType, expr: str) -> str:
    return {"f16": f"{ctx.helper('f16_bits')}({expr})", "bf16": f"(bitcast<u32>({expr}) >> 16u)"}.get(wt.format, expr)


def store_value(ctx, wt: WgslType, prefix: str, byte: str, src: str) -> None:
    """Store ``src`` (of ``wt``, not extended) at byte offset ``byte`` with ``{prefix}_store`` (whole words) or
    ``{prefix}_merge`` (8/16 bits into their word, one atomic step: subword.merge_bits)."""
    if wt.size == 1 or wt.size == 2:
        ctx.resources.atomic_memory = ctx.resources.atomic_memory or prefix == "mem"
        ctx.resources.atomic_shared = ctx.resources.atomic_shared or prefix == "shm"
        mask, lane_bits = ("0xffu", 3) if wt.size == 1 else ("0xffffu", 2)
        shift = ctx.temp(f"({byte} & {lane_bits}u) * 8u")
        word = ctx.temp(f"{byte} >> 2u")
        ctx.emit(f"{prefix}_merge({word}, {mask} << {shift}, ({_bits16(ctx, wt, src)} & {mask}) << {shift});")
        return
    if wt.size == 4:
        bits = f"bitcast<u32>({src})" if wt.family == "float" else src
        ctx.emit(f"{prefix}_store({byte} >> 2u, {bits});")
        return
    first = ctx.temp(f"{byte} >> 2u")
    value_name = ctx.temp(src)
    ctx.emit(f"{prefix}_store({first}, {value_name}.x);")
    ctx.emit(f"{prefix}_store({first} + 1u, {value_name}.y);")


# ---- global addresses ---------------------------------------------------------------------------
def _static(ctx: LaneContext, handle: int, offset: int) -> tuple[str, str]:
    entry = ctx.known(f"dtable[{int(handle)}u]", "entry")
    return f"{entry}.x", ctx.temp(f"{entry}.y + {int(offset)}u", "byte")


def _checked(ctx: LaneContext, field: str, handle: str, offset: str, high: str, out_of_range: str, nbytes: int,
             align: int, pool_only: bool = False) -> tuple[str, str]:
    """Check handle, bounds and alignment in that order (a trap records operand ``field``, the handle,
    the offset with its ``high`` word, ...); (chunk, byte offset) of a valid access. The handle's
    table entry and its check are made once per run of straight-line code and handle register
    (``LaneContext.known``/``seen``)."""
    entry = ctx.known(f"dtable[min({handle}, launch.table_entries - 1u)]", "entry")
    kind_ok = f"{entry}.w == {KIND_POOL}u" if pool_only else f"{entry}.w != {KIND_NONE}u"
    invalid = f"{handle} >= launch.table_entries || !({kind_ok})"
    if not ctx.seen(invalid):
        ctx.trap(TrapCode.INVALID_HANDLE, invalid, operand=field, handle=handle, extent=f"{int(pool_only)}u")
    _range_and_alignment(ctx, f"{out_of_range} || {entry}.z < {nbytes}u || {offset} > {entry}.z - {nbytes}u",
                         f"{entry}.z", offset, align, nbytes, operand=field, handle=handle, value=(offset, high))
    return f"{entry}.x", ctx.temp(f"{entry}.y + {offset}", "byte")


def _range_and_alignment(ctx: LaneContext, outside: str, limit: str, offset: str, align: int, nbytes: int,
                         **where) -> None:
    """OUT_OF_BOUNDS where ``outside`` holds (limit ``limit``), else MISALIGNED where ``offset`` is not
    a multiple of ``align``: one check choosing its code and numbers (each check lengthens the chain of
    selects that keeps a lane's first trap, which Mesa's NIR optimizes in time growing faster than its length)."""
    if align <= 1:
        ctx.trap(TrapCode.OUT_OF_BOUNDS, outside, extent=f"{nbytes}u", limit=limit, **where)
        return
    out = ctx.temp(f"{outside}", "out")
    ctx.trap(f"select({int(TrapCode.MISALIGNED)}u, {int(TrapCode.OUT_OF_BOUNDS)}u, {out})",
             f"{out} || ({offset} & {align - 1}u) != 0u", extent=f"select({align}u, {nbytes}u, {out})",
             limit=f"select(0u, {limit}, {out})", **where)


def _plus_static(ctx: LaneContext, base: str, high: str, delta: int) -> tuple[str, str, str]:
    """(base + delta as u32, the high word of the 64-bit sum (base's high word ``high``; a trap record's),
    the condition that the sum left 0 … 2**32-1)."""
    if delta == 0:
        return base, high, "false"
    total = ctx.temp(f"{base} + {delta & 0xFFFFFFFF}u", "off")
    if delta > 0:
        return total, f"({high} + select(0u, 1u, {total} < {base}))", f"({total} < {base})"
    return total, f"({high} - select(0u, 1u, {base} < {-delta}u))", f"({base} < {-delta}u)"


def _unsigned_word(ctx: LaneContext, path: str) -> tuple[str, str, str]:
    """An integer register read unsigned as (low word, high word, the condition that it exceeds 32 bits)."""
    wt = ctx.read_type(path)
    reg = ctx.read(path)
    if wt.family == "word":
        return reg, "0u", "false"
    return f"{reg}[0]", f"{reg}[1]", f"({reg}[1] != 0u)"


def _pointer(ctx: LaneContext, addr, field: str, nbytes: int, align: int):
    pointer = ctx.read(f"{field}.base")
    offset, high, outside = _plus_static(ctx, f"{pointer}.x", "0u", addr.offset)
    return _checked(ctx, field, f"{pointer}.y", offset, high, outside, nbytes, align)


def _computed(ctx: LaneContext, addr, field: str, nbytes: int, align: int):
    handle = ctx.read(f"{field}.handle_reg")
    offset, high, outside = _unsigned_word(ctx, f"{field}.offset_reg")
    return _checked(ctx, field, handle, offset, high, outside, nbytes, align)


#: global address mode -> (ctx, address, field, bytes, alignment) -> (chunk, byte offset)
GLOBAL_ADDRESSES = {
    Address.BufferOffset: lambda ctx, a, f, n, al: _static(ctx, a.handle, a.offset),
    Address.PoolOffset: lambda ctx, a, f, n, al: _static(ctx, a.handle, a.offset),
    Address.Class: lambda ctx, a, f, n, al: _static(ctx, BOUNDARY_HANDLE, a.class_id * CLASS_STRIDE + a.offset),
    Address.RegisterIndirect: _pointer,
    Address.RegisterIndirectComputed: _computed,
}


def _global(ctx: LaneContext, field: str, nbytes: int, align: int) -> tuple[str, str]:
    addr = getattr(ctx.instr, field)
    return GLOBAL_ADDRESSES[type(addr)](ctx, addr, field, nbytes, align)


# ---- shared addresses ---------------------------------------------------------------------------
def _shared_static(ctx: LaneContext, addr, field: str, nbytes: int, align: int) -> str:
    return f"{addr.offset}u"


def _shared_register(ctx: LaneContext, addr, field: str, nbytes: int, align: int) -> str:
    base, base_high, too_wide = _unsigned_word(ctx, f"{field}.base")
    offset, high, outside = _plus_static(ctx, base, base_high, addr.offset)
    outside = f"{too_wide} || {outside} || SHARED_BYTES < {nbytes}u || {offset} > SHARED_BYTES - {nbytes}u"
    _range_and_alignment(ctx, outside, "SHARED_BYTES", offset, align, nbytes, operand=field, handle=f"{SHARED_MEMORY}u",
                         value=(offset, high))
    return offset


SHARED_ADDRESSES = {Address.Shared: _shared_static, Address.RegisterIndirect: _shared_register}


def _shared(ctx: LaneContext, field: str, nbytes: int, align: int) -> str:
    ctx.resources.shared = True
    addr = getattr(ctx.instr, field)
    return SHARED_ADDRESSES[type(addr)](ctx, addr, field, nbytes, align)


# ---- rules --------------------------------------------------------------------------------------
def _load_global(ctx: LaneContext, wt: WgslType, chunk: str, byte: str) -> str:
    if ctx.chunks > 1:
        ctx.emit(f"current_chunk = {chunk};")
    return load_value(ctx, wt, "mem_load", byte)


def _select_chunk(ctx: LaneContext, chunk: str) -> None:
    if ctx.chunks > 1:
        ctx.emit(f"current_chunk = {chunk};")


def _load_into(ctx: LaneContext, wt: WgslType, prefix: str, byte: str) -> None:
    """dst = the value at ``byte`` through the ``{prefix}_load`` accessor (extended: into its slot)."""
    if wt.family == "wide":
        wide_load(ctx, wt, f"{prefix}_load", byte, ctx.wide_slot("dst", write=True))
    else:
        ctx.write("dst", load_value(ctx, wt, f"{prefix}_load", byte))


def _store_from(ctx: LaneContext, wt: WgslType, prefix: str, byte: str) -> None:
    """Store register operand ``src`` at ``byte`` through the ``{prefix}_*`` accessors."""
    if wt.family == "wide":
        wide_store(ctx, wt, f"{prefix}_store", byte, ctx.wide_slot("src"))
    else:
        store_value(ctx, wt, prefix, byte, ctx.read("src"))


@lane_rule("LDG")
def _ldg(ctx: LaneContext, instr) -> None:
    wt = TYPE_MAP[instr.ty]
    chunk, byte = _global(ctx, "src", wt.size, instr.ty.alignment())
    _select_chunk(ctx, chunk)
    _load_into(ctx, wt, "mem", byte)


@lane_rule("STG")
def _stg(ctx: LaneContext, instr) -> None:
    wt = TYPE_MAP[instr.ty]
    chunk, byte = _global(ctx, "dst", wt.size, instr.ty.alignment())
    _select_chunk(ctx, chunk)
    _store_from(ctx, wt, "mem", byte)


@lane_rule("LDS")
def _lds(ctx: LaneContext, instr) -> None:
    wt = TYPE_MAP[instr.ty]
    byte = ctx.temp(_shared(ctx, "src", wt.size, instr.ty.alignment()), "sbyte")
    _load_into(ctx, wt, "shm", byte)


@lane_rule("STS")
def _sts(ctx: LaneContext, instr) -> None:
    wt = TYPE_MAP[instr.ty]
    byte = ctx.temp(_shared(ctx, "dst", wt.size, instr.ty.alignment()), "sbyte")
    _store_from(ctx, wt, "shm", byte)


def _pool_address(ctx: LaneContext, wt: WgslType) -> tuple[str, str]:
    handle = ctx.read("pool")
    offset, high, too_wide = _unsigned_word(ctx, "offset")
    return _checked(ctx, "pool", handle, offset, high, too_wide, wt.size, wt.ty.alignment(), pool_only=True)


@lane_rule("PoolLoad")
def _pool_load(ctx: LaneContext, instr) -> None:
    wt = TYPE_MAP[instr.ty]
    chunk, byte = _pool_address(ctx, wt)
    _select_chunk(ctx, chunk)
    _load_into(ctx, wt, "mem", byte)


@lane_rule("PoolStore")
def _pool_store(ctx: LaneContext, instr) -> None:
    wt = TYPE_MAP[instr.ty]
    chunk, byte = _pool_address(ctx, wt)
    _select_chunk(ctx, chunk)
    _store_from(ctx, wt, "mem", byte)


_REDUCTIONS = {"ReduceAdd": "ADD", "ReduceMul": "MUL", "ReduceMin": "MIN", "ReduceMax": "MAX"}


def _identity(name: str, ty: Type) -> int | float:
    if ty.is_float():
        return {"ADD": 0.0, "MUL": 1.0, "MIN": math.inf, "MAX": -math.inf}[name]
    lo, hi = ty.int_range()
    return {"ADD": 0, "MUL": 1, "MIN": hi, "MAX": lo}[name]


@lane_rule(*_REDUCTIONS)
def _reduce(ctx: LaneContext, instr) -> None:
    wt = TYPE_MAP[instr.ty]
    operation = _REDUCTIONS[instr.INFO.name]
    if instr.count == 0:
        ctx.write("dst", literal(wt, _identity(operation, instr.ty)))
        return
    chunk, byte = _global(ctx, "src_array", wt.size * instr.count, instr.ty.alignment())
    acc = ctx.var(wt.wgsl, _load_global(ctx, wt, chunk, byte), "acc")
    with ctx.block(f"for (var i = 1u; i < {instr.count}u; i = i + 1u)"):
        element = ctx.temp(_load_global(ctx, wt, chunk, f"({byte} + i * {wt.size}u)"), "x")
        ctx.emit(f"{acc} = {value(ctx, operation, instr.ty, (acc, element))};")
    ctx.write("dst", acc)
