"""KVCacheUpdate (every scalar type): the cooperative rule, one ``memory.copy`` per row.

``position`` and ``max_seq`` are immediates, so a position past the cache (``position >= max_seq``, max_seq > 0)
is known when the module is built: the function then only records the trap (OUT_OF_BOUNDS naming ``position``,
with its value and the limit, before any array is checked, as the reference does) and writes nothing. Otherwise
it checks cache and new_kv over their extents (in operand order: handle, bounds, alignment) and copies each of the
``batch * heads`` rows of ``head_dim`` elements of new_kv to ``cache[b, h, position, :]`` with ``memory.copy``:
the bytes as they are (NaN payloads kept), nothing else of the cache touched.
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.isa.extents import array_operands
from atlas_web.isa.opcodes import SCALARS

from ..encoding.types import ValType
from .coop_context import COOP_OK, CoopContext
from .rules import cooperative_rule

__all__ = ["KV_CACHE_TYPES"]

I32 = ValType.I32
KV_CACHE_TYPES = SCALARS


def _wrapped(value: int) -> int:
    """``value`` as a signed i32 immediate, modulo 2**32 (only a cache that passed its bounds check is written,
    so every address is below 2**32)."""
    return (value + (1 << 31)) % (1 << 32) - (1 << 31)


@cooperative_rule("KVCacheUpdate", KV_CACHE_TYPES)
def build_kv_cache_update(cc: CoopContext) -> None:
    instr, e = cc.instr, cc.e
    if instr.max_seq and instr.position >= instr.max_seq:
        cc.trap(TrapCode.OUT_OF_BOUNDS, (cc.operand("position"), 0, instr.position, 0, instr.max_seq))
        return
    checked = {array.name: cc.array(array.name, array.ty, array.elements) for array in array_operands(instr)}
    rows, row_bytes = instr.batch * instr.heads, instr.head_dim * instr.ty.size_bytes()
    if rows * row_bytes == 0:
        e.i32(COOP_OK)
        return
    slots = instr.max_seq or instr.position + 1
    cache, new = checked["cache"], checked["new_kv"]
    row, end = cc.local(I32), cc.local(I32)

    def one_row() -> None:   # cache + ((row * slots + position) * head_dim) * size  <-  new + row * head_dim * size
        e.get(cache).get(row).i32(_wrapped(slots * row_bytes)).op("i32.mul").op("i32.add")
        e.i32(_wrapped(instr.position * row_bytes))
        e.op("i32.add")
        e.get(new).get(row).i32(row_bytes).op("i32.mul").op("i32.add")
        e.i32(row_bytes).op("memory.copy", 0, 0)

    e.i32(0).set(row)
    e.i32(rows).set(end)
    e.while_below(row, end, 1, one_row, labels=("rows_done", "rows"))
    e.i32(COOP_OK)
