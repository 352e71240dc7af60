"""Address resolution and checked, vectorized byte access for the reference executor.

``resolve_global`` turns an address operand into per-lane ``(handle, offset)``
arrays; ``check_access`` makes the three checks of docs/semantics.md in their
order (handle, bounds, alignment), traps the lanes that fail and returns, per
live handle, the lanes that passed. ``gather``/``scatter`` move typed values
between those lanes and the bytes (a dtype view for the NumPy-native types,
``numeric.load``/``numeric.store`` otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TrapCode
from ..isa.addresses import BOUNDARY_HANDLE, CLASS_STRIDE, MAX_OFFSET, Address
from ..isa.types import Type
from ..trap_report import SHARED_MEMORY, TrapRecord, operand_position
from . import numeric
from .exec_step import Step

__all__ = ["LaneAddresses", "Span", "resolve_global", "resolve_shared", "check_access", "check_shared",
           "gather", "scatter", "unsigned"]


@dataclass(slots=True)
class LaneAddresses:
    """Per-lane ``handles`` (an int when every lane names the same one) and byte ``offsets`` (int64);
    ``beyond``: lanes whose offset left 0 … 2**32-1; ``wide``: where some did, every lane's offset
    modulo 2**64 (int64: what a trap record reports)."""

    handles: np.ndarray | int
    offsets: np.ndarray
    beyond: np.ndarray | None
    #: the allocation kind the handle must name ("pool"), or None for any
    kind: str | None = None
    #: the operand a trap names
    field: str = ""
    wide: np.ndarray | None = None


@dataclass(slots=True)
class Span:
    """Lanes that passed the checks for one allocation: its bytes, a lane mask (None: all) and offsets."""

    data: np.ndarray
    lanes: np.ndarray | None
    offsets: np.ndarray


def unsigned(ty: Type, values: np.ndarray) -> np.ndarray:
    """Integer register values read as unsigned numbers (uint64)."""
    return np.asarray(numeric.to_unsigned_index(values, ty), dtype=np.uint64)


def _static(step: Step, field: str, handle: int, offset: int, kind: str | None = None) -> LaneAddresses:
    return LaneAddresses(int(handle), np.full(step.count, offset, dtype=np.int64), None, kind, field)


def _split_wide(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """uint64 offsets -> (int64 offsets with out-of-range ones zeroed, mask of the out-of-range ones)."""
    beyond = offsets > np.uint64(MAX_OFFSET)
    if beyond.any():
        return np.where(beyond, np.uint64(0), offsets).astype(np.int64), beyond
    return offsets.astype(np.int64), None


def _plus_signed(offsets: np.ndarray, delta: int) -> tuple[np.ndarray, np.ndarray | None]:
    """int64 offsets + a signed static offset; lanes leaving 0 … 2**32-1 are marked beyond."""
    if delta == 0:
        return offsets, None
    offsets = offsets + delta
    beyond = (offsets < 0) | (offsets > MAX_OFFSET)
    if beyond.any():
        return np.where(beyond, 0, offsets), beyond
    return offsets, None


def _wrapped(offsets: np.ndarray, delta: int = 0) -> np.ndarray:
    """uint64 or int64 offsets + ``delta`` modulo 2**64, as int64 (a trap record's offsets)."""
    with np.errstate(over="ignore"):
        return (offsets.astype(np.uint64) + np.uint64(delta & (2 ** 64 - 1))).view(np.int64)


def _register(step: Step, field: str, sub: str) -> tuple[Type, np.ndarray]:
    reg = getattr(getattr(step.instr, field), sub)
    return step.read_register(reg, step.plan.address_types.get((field, sub)))


def resolve_global(step: Step, field: str) -> LaneAddresses:
    """The per-lane (handle, offset) of global address operand ``field`` of the step's instruction."""
    addr = getattr(step.instr, field)
    resolver = _GLOBAL_RESOLVERS[type(addr)]
    return resolver(step, field, addr)


def _buffer_offset(step: Step, field: str, addr: Address.BufferOffset) -> LaneAddresses:
    return _static(step, field, addr.handle, addr.offset)


def _pool_offset(step: Step, field: str, addr: Address.PoolOffset) -> LaneAddresses:
    return _static(step, field, addr.handle, addr.offset, "pool")


def _class(step: Step, field: str, addr: Address.Class) -> LaneAddresses:
    return _static(step, field, BOUNDARY_HANDLE, addr.class_id * CLASS_STRIDE + addr.offset)


def _indirect(step: Step, field: str, addr: Address.RegisterIndirect) -> LaneAddresses:
    ty, values = _register(step, field, "base")
    if values.dtype.itemsize == 8 and values.dtype.kind in "iu":  # the usual i64/u64 pointer: no copy to widen
        bits = values.view(np.int64)
        low, high = (int(bits.min()) >> 32, int(bits.max()) >> 32) if bits.size else (0, 1)
        # every value between two with equal high halves has that high half: one handle for all lanes
        handles = (low & MAX_OFFSET) if low == high else (bits >> 32) & MAX_OFFSET
        offsets, beyond = _plus_signed(bits & MAX_OFFSET, addr.offset)
        wide = None if beyond is None else (bits & MAX_OFFSET) + addr.offset
        return LaneAddresses(handles, offsets, beyond, None, field, wide)
    pointers = unsigned(ty, values)
    handles = (pointers >> np.uint64(32)).astype(np.int64)
    low = (pointers & np.uint64(MAX_OFFSET)).astype(np.int64)
    offsets, beyond = _plus_signed(low, addr.offset)
    return LaneAddresses(handles, offsets, beyond, None, field, None if beyond is None else low + addr.offset)


def _computed(step: Step, field: str, addr: Address.RegisterIndirectComputed) -> LaneAddresses:
    hty, hvalues = _register(step, field, "handle_reg")
    oty, ovalues = _register(step, field, "offset_reg")
    handles = unsigned(hty, hvalues).astype(np.int64)
    wide = unsigned(oty, ovalues)
    offsets, beyond = _split_wide(wide)
    return LaneAddresses(handles, offsets, beyond, None, field, None if beyond is None else _wrapped(wide))


_GLOBAL_RESOLVERS = {
    Address.BufferOffset: _buffer_offset,
    Address.PoolOffset: _pool_offset,
    Address.Class: _class,
    Address.RegisterIndirect: _indirect,
    Address.RegisterIndirectComputed: _computed,
}


def resolve_pool(step: Step, pool_field: str, offset_field: str) -> LaneAddresses:
    """PoolLoad/PoolStore: handle from register ``pool_field``, offset from ``offset_field``; must name a pool."""
    hty, hvalues = step.read_typed(pool_field)
    oty, ovalues = step.read_typed(offset_field)
    wide = unsigned(oty, ovalues)
    offsets, beyond = _split_wide(wide)
    return LaneAddresses(unsigned(hty, hvalues).astype(np.int64), offsets, beyond, "pool", pool_field,
                         None if beyond is None else _wrapped(wide))


def resolve_shared(step: Step, field: str) -> LaneAddresses:
    """Per-lane shared-memory byte offsets of operand ``field`` (handle SHARED_MEMORY) and the lanes
    outside 0 … 2**32-1."""
    addr = getattr(step.instr, field)
    if isinstance(addr, Address.Shared):
        return _static(step, field, SHARED_MEMORY, addr.offset)
    ty, values = _register(step, field, "base")
    wide = unsigned(ty, values)
    offsets, beyond = _split_wide(wide)
    more, beyond2 = _plus_signed(offsets, addr.offset)
    if beyond is not None:
        beyond = beyond if beyond2 is None else (beyond | beyond2)
    else:
        beyond = beyond2
    return LaneAddresses(SHARED_MEMORY, more, beyond, None, field,
                         None if beyond is None else _wrapped(wide, addr.offset))


def _by_handle(handles: np.ndarray | int) -> list[tuple[int, np.ndarray | None]]:
    if isinstance(handles, int):
        return [(handles, None)]
    if handles.size == 0:
        return []
    first = handles[0]
    if (handles == first).all():
        return [(int(first), None)]
    unique, inverse = np.unique(handles, return_inverse=True)
    return [(int(h), inverse == k) for k, h in enumerate(unique)]


def _trap_in_order(step: Step, where: LaneAddresses, sizes, nbytes: int, align: int, invalid: np.ndarray,
                   beyond: np.ndarray, misaligned: np.ndarray) -> np.ndarray | None:
    """Trap in the documented order (with each trap's numbers: the operand, handle, offset, bytes and the
    allocation's ``sizes``); return the mask of lanes that passed (None when all did)."""
    failed = invalid | beyond | misaligned
    if not failed.any():
        return None
    operand = operand_position(step.instr, where.field)
    offsets = where.offsets if where.wide is None else where.wide
    pool = int(where.kind == "pool")

    def at(values, k: int) -> int:
        return int(values) if np.ndim(values) == 0 else int(values[k])

    step.trap(TrapCode.INVALID_HANDLE, invalid,
              lambda k: TrapRecord(operand, at(where.handles, k), extent=pool))
    step.trap(TrapCode.OUT_OF_BOUNDS, beyond & ~invalid,
              lambda k: TrapRecord(operand, at(where.handles, k), at(offsets, k), nbytes, at(sizes, k)))
    step.trap(TrapCode.MISALIGNED, misaligned & ~invalid & ~beyond,
              lambda k: TrapRecord(operand, at(where.handles, k), at(offsets, k), align))
    return ~failed


def check_access(step: Step, where: LaneAddresses, nbytes: int, align: int) -> list[Span]:
    """Check ``nbytes`` at each lane's address; trap the failing lanes; return the passing ones per allocation."""
    store = step.machine.memory
    groups = _by_handle(where.handles)
    offsets = where.offsets
    if len(groups) == 1:  # every lane names one allocation: scalar limits, no per-lane size array
        entry = store.lookup(groups[0][0])
        if entry is not None and (where.kind is None or entry[0].kind == where.kind):
            alloc, data = entry
            # reductions only (no per-lane temporaries): offsets are never negative here
            inside = where.beyond is None and (offsets.size == 0 or int(offsets.max()) <= alloc.size - nbytes)
            if inside and (align == 1 or offsets.size == 0 or not int(np.bitwise_or.reduce(offsets)) & (align - 1)):
                return [Span(data, None, offsets)]
    n = step.count
    sizes = np.full(n, -1, dtype=np.int64)
    found: list[tuple[np.ndarray, np.ndarray | None]] = []
    for handle, lanes in groups:
        entry = store.lookup(handle)
        if entry is None or (where.kind is not None and entry[0].kind != where.kind):
            continue
        alloc, data = entry
        if lanes is None:
            sizes[:] = alloc.size
        else:
            sizes[lanes] = alloc.size
        found.append((data, lanes))
    invalid = sizes < 0
    beyond = offsets + nbytes > sizes
    if where.beyond is not None:
        beyond |= where.beyond
    misaligned = (offsets & (align - 1)) != 0
    passed = _trap_in_order(step, where, sizes, nbytes, align, invalid, beyond, misaligned)
    spans = []
    for data, lanes in found:
        mask = lanes if passed is None else (passed if lanes is None else lanes & passed)
        if mask is None:
            spans.append(Span(data, None, offsets))
        elif mask.any():
            spans.append(Span(data, mask, offsets[mask]))
    return spans


def check_shared(step: Step, where: LaneAddresses, nbytes: int, align: int) -> Span | None:
    """Check shared-memory accesses of each lane's block; trap failures; the passing lanes as one Span."""
    machine = step.machine
    size = machine.shared_bytes
    offsets = where.offsets
    bad = offsets + nbytes > size
    if where.beyond is not None:
        bad |= where.beyond
    misaligned = (offsets & (align - 1)) != 0
    passed = _trap_in_order(step, where, size, nbytes, align, np.zeros(step.count, dtype=bool), bad, misaligned)
    blocks = machine.geometry.block_index()
    block_of_lane = blocks if step.idx is None else blocks[step.idx]
    absolute = block_of_lane * size + offsets
    if passed is None:
        return Span(machine.shared, None, absolute)
    if not passed.any():
        return None
    return Span(machine.shared, passed, absolute[passed])


def _native_view(data: np.ndarray, ty: Type) -> np.ndarray | None:
    """``data`` viewed as ty's storage dtype when that dtype is the type's own little-endian bytes."""
    dtype = np.dtype(numeric.storage_dtype(ty))
    size = ty.size_bytes()
    if dtype.kind not in "iuf" or dtype.itemsize != size or dtype.byteorder == ">":
        return None
    usable = data.size - data.size % size
    return data[:usable].view(dtype)


def _element_index(offsets: np.ndarray, size: int) -> np.ndarray:
    """Aligned byte offsets as element indices (sizes are powers of two)."""
    return offsets >> (size.bit_length() - 1)


def _byte_index(offsets: np.ndarray, nbytes: int) -> np.ndarray:
    return offsets[:, None] + np.arange(nbytes, dtype=np.int64)


def gather(data: np.ndarray, offsets: np.ndarray, ty: Type) -> np.ndarray:
    """One value of ``ty`` at each (checked, aligned) byte offset of ``data``."""
    view = _native_view(data, ty)
    size = ty.size_bytes()
    if view is not None:
        return view[_element_index(offsets, size)]
    return numeric.load(ty, data[_byte_index(offsets, size)])


def gather_runs(data: np.ndarray, offsets: np.ndarray, ty: Type, count: int) -> np.ndarray:
    """``count`` consecutive values of ``ty`` from each offset: shape (lanes, count)."""
    size = ty.size_bytes()
    view = _native_view(data, ty)
    if view is not None:
        return view[_element_index(offsets, size)[:, None] + np.arange(count, dtype=np.int64)]
    raw = data[_byte_index(offsets, size * count)].reshape(len(offsets) * count, size)
    return numeric.load(ty, raw).reshape(len(offsets), count)


def scatter(data: np.ndarray, offsets: np.ndarray, ty: Type, values: np.ndarray) -> None:
    """Store ``values`` (of ``ty``) at the (checked, aligned) byte offsets; a repeated offset keeps the last."""
    view = _native_view(data, ty)
    if view is not None:
        view[_element_index(offsets, ty.size_bytes())] = values
        return
    data[_byte_index(offsets, ty.size_bytes())] = numeric.store(ty, values)
