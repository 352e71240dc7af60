"""CoopContext: what the builder of one cooperative instruction's function writes through.

The function ``coop_<index>() -> i32`` runs once per launch when every live lane stopped at the
instruction; it returns 0, or 1 after recording a trap with lane -1. Registers it reads are global
lane 0's, taken from lane 0's record (the lane function spilled them there when it stopped; the
special registers of lane 0 are constants). Array operands are checked over their whole range in
operand order: handle, bounds (``count`` values), alignment of the start.
"""

from __future__ import annotations

from typing import Callable

from atlas_web.errors import TrapCode
from atlas_web.isa.addresses import BOUNDARY_HANDLE, CLASS_STRIDE, Address
from atlas_web.isa.registers import SpecialRegister
from atlas_web.isa.types import Type

from .. import layout
from ..encoding.types import ValType
from .lane_state import LaneState
from .launch_layout import LaunchLayout
from .module_context import ModuleContext
from .trap_numbers import Number, entry_size, i64, operand, push_record, u32
from .typemap import type_info

__all__ = ["CoopContext", "COOP_OK", "COOP_TRAPPED"]

COOP_OK = 0
COOP_TRAPPED = 1
I32, I64 = ValType.I32, ValType.I64
_LOADS = {ValType.I32: "i32.load", ValType.I64: "i64.load", ValType.F32: "f32.load", ValType.F64: "f64.load"}
_STORES = {ValType.I32: "i32.store", ValType.I64: "i64.store", ValType.F32: "f32.store", ValType.F64: "f64.store"}


class CoopContext:
    """The function of cooperative instruction ``index`` being written (see the module docstring)."""

    def __init__(self, m: ModuleContext, state: LaneState, launch: LaunchLayout, config, index: int, *,
                 function=None, on_fail: Callable[[], None] | None = None) -> None:
        """``function``: (builder, emitter) of a function to write into instead of a new ``coop_<index>``;
        ``on_fail``: what a failed check writes instead of recording the trap (``coop_fusion``'s checks)."""
        self.m = m
        self.state = state
        self.plan = state.plan
        self.info = info = state.plan.info
        self.program = program = info.program
        self.launch = launch
        self.config = config
        self.index = index
        self.instr = program.instructions[index]
        self.fb, self.e = function if function is not None else m.define(f"coop_{index}", (), (I32,))
        self._on_fail = on_fail

    def local(self, valtype: ValType, name: str | None = None) -> int:
        return self.fb.add_local(valtype, name)

    def trap(self, code: TrapCode, numbers: tuple[Number, ...] = ()) -> None:
        """Record ``code`` at this instruction with lane -1 and its ``numbers`` (trap_numbers); return
        COOP_TRAPPED."""
        e = self.e
        e.i32(int(code)).i32(self.index).i32(-1)
        push_record(e, numbers)
        e.call(self.m.helper("trap")).i32(COOP_TRAPPED).op("return")

    def trap_if(self, code: TrapCode, numbers: tuple[Number, ...] = ()) -> None:
        with self.e.if_():
            if self._on_fail is not None:
                self._on_fail()
            else:
                self.trap(code, numbers)

    def operand(self, path: str) -> int:
        """The trap record's number of this instruction's operand ``path``."""
        return operand(self.instr, path)

    def launch_base(self) -> None:
        self.e.op("global.get", self.m.global_index("launch_base"))

    def read_lane0(self, path: str) -> Type:
        """Push global lane 0's value of register operand ``path`` (native form); return its type."""
        ty = self.info.use_types[(self.index, path)]
        vreg = self.plan.registers.reads[(self.index, path)]
        e = self.e
        if vreg.is_special:
            e.i32(_LANE_ZERO_SPECIALS[SpecialRegister(vreg.register.index)](self.config))
            return ty
        self.launch_base()
        e.op(_LOADS[type_info(ty).valtype], self.launch.records + self.state.slots[vreg.id])
        return ty

    def store_result(self, ty: Type) -> None:
        """Pop a native value of ``ty`` into this instruction's result slot (read by resuming lanes)."""
        value = self.local(type_info(ty).valtype)
        e = self.e
        e.set(value)
        self.launch_base()
        e.get(value).op(_STORES[type_info(ty).valtype], self.launch.results[self.index])

    def refresh_table(self) -> None:
        """Reload the device-table globals from the header (a host call may have moved the table)."""
        e = self.e
        e.i32(0).op("i32.load", layout.HEADER_TABLE_BASE).op("global.set", self.m.global_index("table_base"))
        e.i32(0).op("i32.load", layout.HEADER_TABLE_CAPACITY).op("global.set", self.m.global_index("table_capacity"))

    def array(self, field: str, ty: Type, count: int | Callable[[], None]) -> int:
        """An i32 local holding the address of array operand ``field`` (``count`` values of ``ty``; a callable
        pushes the count as an i64, for an extent read at launch), after the handle, bounds and alignment
        checks."""
        e = self.e
        addr = getattr(self.instr, field)
        handle, offset, entry, result = self.local(I32), self.local(I64), self.local(I32), self.local(I32)
        kind = layout.KIND_POOL if isinstance(addr, Address.PoolOffset) else None
        if isinstance(addr, (Address.BufferOffset, Address.PoolOffset)):
            e.i32(addr.handle).set(handle)
            e.i64(addr.offset).set(offset)
        elif isinstance(addr, Address.Class):
            e.i32(BOUNDARY_HANDLE).set(handle)
            e.i64(addr.class_id * CLASS_STRIDE + addr.offset).set(offset)
        elif isinstance(addr, Address.RegisterIndirect):
            pointer = self.local(I64)
            self.read_lane0(f"{field}.base")
            e.tee(pointer).i64(32).op("i64.shr_u").op("i32.wrap_i64").set(handle)
            e.get(pointer).i64(0xFFFFFFFF).op("i64.and").i64(addr.offset).op("i64.add").set(offset)
        else:
            hty = self.read_lane0(f"{field}.handle_reg")
            if hty.bits < 32:
                e.i32((1 << hty.bits) - 1).op("i32.and")
            e.set(handle)
            oty = self.read_lane0(f"{field}.offset_reg")
            if oty.bits < 64:
                if oty.bits < 32:
                    e.i32((1 << oty.bits) - 1).op("i32.and")
                e.op("i64.extend_i32_u")
            e.set(offset)
        position = self.operand(field)
        invalid = (position, u32(handle), 0, int(kind is not None))
        e.get(handle).op("global.get", self.m.global_index("table_capacity")).op("i32.ge_u")
        self.trap_if(TrapCode.INVALID_HANDLE, invalid)
        e.op("global.get", self.m.global_index("table_base")).get(handle).i32(layout.TABLE_ENTRY_SHIFT).op("i32.shl")
        e.op("i32.add").tee(entry).op("i32.load", layout.ENTRY_KIND)
        if kind is None:
            e.op("i32.eqz")
        else:
            e.i32(kind).op("i32.ne")
        self.trap_if(TrapCode.INVALID_HANDLE, invalid)
        if callable(count):
            nbytes = self.local(I64)
            count()
            e.i64(ty.size_bytes()).op("i64.mul").set(nbytes)
            push_nbytes, extent = (lambda: e.get(nbytes)), i64(nbytes)
        else:
            extent = ty.size_bytes() * count
            push_nbytes = lambda: e.i64(extent)  # noqa: E731
        where = (position, u32(handle), i64(offset))
        e.get(offset).i64(0xFFFFFFFF).op("i64.gt_u")
        e.get(offset)
        push_nbytes()
        e.op("i64.add").get(entry).op("i64.load32_u", layout.ENTRY_SIZE)
        e.op("i64.gt_u").op("i32.or")
        self.trap_if(TrapCode.OUT_OF_BOUNDS, where + (extent, entry_size(entry)))
        if ty.alignment() > 1:
            e.get(offset).op("i32.wrap_i64").i32(ty.alignment() - 1).op("i32.and")
            self.trap_if(TrapCode.MISALIGNED, where + (ty.alignment(),))
        e.get(entry).op("i32.load", layout.ENTRY_BASE).get(offset).op("i32.wrap_i64").op("i32.add").set(result)
        return result


#: lane 0's value of each special register
_LANE_ZERO_SPECIALS = {
    SpecialRegister.GLOBAL_LANE_ID: lambda c: 0, SpecialRegister.LANE_IDX_X: lambda c: 0,
    SpecialRegister.LANE_IDX_Y: lambda c: 0, SpecialRegister.LANE_IDX_Z: lambda c: 0,
    SpecialRegister.BLOCK_IDX_X: lambda c: 0, SpecialRegister.BLOCK_IDX_Y: lambda c: 0,
    SpecialRegister.BLOCK_IDX_Z: lambda c: 0,
    SpecialRegister.BLOCK_DIM_X: lambda c: c.block[0], SpecialRegister.BLOCK_DIM_Y: lambda c: c.block[1],
    SpecialRegister.BLOCK_DIM_Z: lambda c: c.block[2], SpecialRegister.GRID_DIM_X: lambda c: c.grid[0],
    SpecialRegister.GRID_DIM_Y: lambda c: c.grid[1], SpecialRegister.GRID_DIM_Z: lambda c: c.grid[2],
}
