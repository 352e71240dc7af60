"""LaneContext: what a lane rule writes its code through.

A rule ``rule(ctx, instr)`` reads operands onto the wasm stack (``read``), computes, and writes the
destination (``write``). Registers are wasm locals, one per (register, bank) (see ``typemap``);
predicates are i32 locals; extended-integer registers are addresses in the lane record
(``ext_address``). ``temp`` gives scratch locals valid until the next instruction. ``trap_if``
consumes an i32 condition and, where it holds, records the trap (code, this instruction, this lane)
and leaves the lane. ``global_address`` / ``shared_address`` / ``pool_address`` resolve an address
operand and make the semantic checks in their order (handle, bounds, alignment), leaving the
effective i32 address on the stack.

The parameters of the lane function are ``gid`` (global lane id), ``lane`` (index in the block),
``block`` (linear block index) and ``record`` (address of the lane's record).
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.isa.addresses import BOUNDARY_HANDLE, CLASS_STRIDE, Address
from atlas_web.isa.registers import FIRST_SPECIAL_REGISTER, Register
from atlas_web.isa.types import Type
from atlas_web.trap_report import SHARED_MEMORY

from .. import layout
from ..encoding.types import ValType
from .emitter import Emitter
from .lane_state import EXT_TEMPORARIES, LaneState
from .module_context import ModuleContext
from .trap_numbers import Number, entry_size, i64, operand, push_record, u32
from .typemap import bank_of, type_info, valtype_of

__all__ = ["LaneContext", "STOP_ENDED", "STOP_TRAPPED", "PARAM_GID",
           "PARAM_LANE", "PARAM_BLOCK", "PARAM_RECORD"]

#: what a segment function returns when the lane ended or trapped (``STOP_SUSPENDED + r`` when it
#: suspended at resume point ``r``, see segment_function)
STOP_ENDED = 0
STOP_TRAPPED = 1

PARAM_GID, PARAM_LANE, PARAM_BLOCK, PARAM_RECORD = 0, 1, 2, 3

I32, I64, F32, F64 = ValType.I32, ValType.I64, ValType.F32, ValType.F64
_MASKS = {8: 0xFF, 16: 0xFFFF}
_SIGN_EXTEND = {8: "i32.extend8_s", 16: "i32.extend16_s"}


class LaneContext:
    """The code generator's state for one lane function (see the module docstring)."""

    def __init__(self, m: ModuleContext, fb, e: Emitter, program, info, state: LaneState, config) -> None:
        self.m = m
        self.fb = fb
        self.e = e
        self.program = program
        self.info = info
        self.state = state
        self.config = config
        self.index = 0
        self.instr = None
        self._registers: dict[tuple[int, object], int] = {}
        self._predicates: dict[int, int] = {}
        self._free: dict[ValType, list[int]] = {}
        self._taken: list[tuple[ValType, int]] = []
        self.special_locals: dict[int, int] = {}
        #: locals of the lane's control state
        self.jumps = fb.add_local(I64, "jumps")
        self.phase = fb.add_local(I32, "phase")
        self.table = fb.add_local(I32, "table")
        self.capacity = fb.add_local(I32, "capacity")

    # ---- instructions and operands -----------------------------------------------------------------
    def begin(self, index: int) -> None:
        """Start instruction ``index``: temporaries of the previous one become free."""
        for valtype, local in self._taken:
            self._free.setdefault(valtype, []).append(local)
        self._taken.clear()
        self.index = index
        self.instr = self.program.instructions[index]

    def use_type(self, path: str) -> Type:
        return self.info.use_types[(self.index, path)]

    def def_type(self, path: str) -> Type:
        return self.info.def_types[(self.index, path)]

    def register_local(self, reg: int, ty: Type) -> int:
        """The local holding register ``reg`` in ``ty``'s bank (created on first use)."""
        if reg >= FIRST_SPECIAL_REGISTER:
            return self.special_locals[reg]
        key = (reg, bank_of(ty))
        local = self._registers.get(key)
        if local is None:
            local = self._registers[key] = self.fb.add_local(valtype_of(ty), f"r{reg}.{ty.suffix}")
        return local

    def predicate_local(self, index: int) -> int:
        local = self._predicates.get(index)
        if local is None:
            local = self._predicates[index] = self.fb.add_local(I32, f"p{index}")
        return local

    def operand_register(self, path: str) -> Register:
        name, _, sub = path.partition(".")
        value = getattr(self.instr, name)
        return getattr(value, sub) if sub else value

    def read(self, path: str) -> Type:
        """Push register operand ``path`` (its native value; an extended one's limb address); return its type."""
        ty = self.use_type(path)
        reg = self.operand_register(path).index
        if ty.is_extended():
            self.ext_address(reg, ty)
        else:
            self.e.get(self.register_local(reg, ty))
        return ty

    def write(self, path: str = "dst") -> Type:
        """Pop the native value on the stack into register operand ``path``; return its type."""
        ty = self.def_type(path)
        self.e.set(self.register_local(self.operand_register(path).index, ty))
        return ty

    def write_address(self, path: str = "dst") -> Type:
        """Push the limb address of the extended register operand ``path`` written here; return its type."""
        ty = self.def_type(path)
        self.ext_address(self.operand_register(path).index, ty)
        return ty

    def ext_address(self, reg: int, ty: Type) -> None:
        """Push the address of extended register ``reg`` (of ``ty``) in the lane record."""
        offset = self.state.ext_slots[(reg, ty.bits)]
        self.e.get(PARAM_RECORD).i32(offset).op("i32.add")

    def ext_temp(self, k: int) -> None:
        """Push the address of extended temporary ``k`` (0 .. EXT_TEMPORARIES-1) of the record."""
        width = self.state.ext_temp_bytes // EXT_TEMPORARIES
        self.e.get(PARAM_RECORD).i32(self.state.ext_temp + k * width).op("i32.add")

    def read_predicate(self, path: str) -> None:
        self.e.get(self.predicate_local(getattr(self.instr, path).index))

    def write_predicate(self, path: str) -> None:
        self.e.set(self.predicate_local(getattr(self.instr, path).index))

    def temp(self, valtype: ValType) -> int:
        """A scratch local of ``valtype`` for this instruction."""
        pool = self._free.get(valtype)
        local = pool.pop() if pool else self.fb.add_local(valtype)
        self._taken.append((valtype, local))
        return local

    # ---- value normalisation -------------------------------------------------------------------------
    def normalize(self, ty: Type) -> None:
        """The narrow integer on the stack with its upper bits made canonical (sign- or zero-extended)."""
        bits = ty.bits
        if ty.is_integer() and bits < 32:
            if ty.is_signed():
                self.e.op(_SIGN_EXTEND[bits])
            else:
                self.e.i32(_MASKS[bits]).op("i32.and")

    def zero_extend(self, ty: Type) -> None:
        """The narrow integer on the stack zero-extended (its bits read unsigned)."""
        if ty.is_integer() and ty.bits < 32:
            self.e.i32(_MASKS[ty.bits]).op("i32.and")

    def unsigned64(self, ty: Type) -> None:
        """The integer (at most 64 bits) on the stack as an unsigned i64."""
        if ty.bits == 64:
            return
        self.zero_extend(ty)
        self.e.op("i64.extend_i32_u")

    def read_unsigned64(self, path: str) -> Type:
        ty = self.read(path)
        self.unsigned64(ty)
        return ty

    # ---- traps ---------------------------------------------------------------------------------------
    def trap(self, code: TrapCode, numbers: tuple[Number, ...] = ()) -> None:
        """Record trap ``code`` at this instruction for this lane with its ``numbers`` (trap_numbers) and
        leave the lane."""
        e = self.e
        e.i32(int(code)).i32(self.index).get(PARAM_GID)
        push_record(e, numbers)
        e.call(self.m.helper("trap"))
        e.i32(STOP_TRAPPED).op("return")

    def trap_if(self, code: TrapCode, numbers: tuple[Number, ...] = ()) -> None:
        """Consume an i32 condition; where it is non-zero, trap ``code`` with ``numbers``."""
        with self.e.if_():
            self.trap(code, numbers)

    def operand(self, path: str) -> int:
        """The trap record's number of this instruction's operand ``path``."""
        return operand(self.instr, path)

    # ---- memory --------------------------------------------------------------------------------------
    def load_table(self) -> None:
        """Refresh the table locals from the globals (at lane entry)."""
        self.e.op("global.get", self.m.global_index("table_base")).set(self.table)
        self.e.op("global.get", self.m.global_index("table_capacity")).set(self.capacity)

    def _entry_of_handle(self, field: str, handle: int, kind: int | None) -> int:
        """entry local := table entry of the i32 handle local; traps INVALID_HANDLE (kind: required kind)
        naming operand ``field``."""
        e = self.e
        entry = self.temp(I32)
        numbers = (self.operand(field), u32(handle), 0, int(kind is not None))
        e.get(handle).get(self.capacity).op("i32.ge_u")
        self.trap_if(TrapCode.INVALID_HANDLE, numbers)
        e.get(self.table).get(handle).i32(layout.TABLE_ENTRY_SHIFT).op("i32.shl").op("i32.add").tee(entry)
        e.op("i32.load", layout.ENTRY_KIND)
        if kind is None:
            e.op("i32.eqz")
        else:
            e.i32(kind).op("i32.ne")
        self.trap_if(TrapCode.INVALID_HANDLE, numbers)
        return entry

    def _check_range(self, field: str, handle: int, entry: int, offset64: int, nbytes: int, align: int,
                     may_exceed_32: bool) -> None:
        """Bounds, then alignment, of ``nbytes`` at the i64 offset local inside the entry's allocation."""
        e = self.e
        if may_exceed_32:
            e.get(offset64).i64(0xFFFFFFFF).op("i64.gt_u")
        e.get(offset64).i64(nbytes).op("i64.add").get(entry).op("i64.load32_u", layout.ENTRY_SIZE).op("i64.gt_u")
        if may_exceed_32:
            e.op("i32.or")
        where = (self.operand(field), u32(handle), i64(offset64))
        self.trap_if(TrapCode.OUT_OF_BOUNDS, where + (nbytes, entry_size(entry)))
        if align > 1:
            e.get(offset64).op("i32.wrap_i64").i32(align - 1).op("i32.and")
            self.trap_if(TrapCode.MISALIGNED, where + (align,))

    def _static_entry(self, field: str, handle: int, kind: int | None) -> None:
        """Push the base of static handle ``handle``; with pools freed in the program, check it is live."""
        e = self.e
        if self.may_free_pools:
            local = self.temp(I32)
            e.i32(handle).set(local)
            entry = self._entry_of_handle(field, local, kind)
            e.get(entry).op("i32.load", layout.ENTRY_BASE)
            return
        e.get(self.table).op("i32.load", handle * layout.TABLE_ENTRY_BYTES + layout.ENTRY_BASE)

    @property
    def may_free_pools(self) -> bool:
        """Whether a static handle may name a freed pool at run time (the program frees pools)."""
        return self.state.frees_pools

    def global_address(self, field: str, nbytes: int, align: int) -> None:
        """Push the effective address of global address operand ``field`` after its checks."""
        addr = getattr(self.instr, field)
        _GLOBAL_MODES[type(addr)](self, field, addr, nbytes, align)

    def _buffer_offset(self, field, addr, nbytes, align) -> None:
        self._static_entry(field, addr.handle, None)
        if addr.offset:
            self.e.i32(addr.offset).op("i32.add")

    def _pool_offset(self, field, addr, nbytes, align) -> None:
        self._static_entry(field, addr.handle, layout.KIND_POOL)
        if addr.offset:
            self.e.i32(addr.offset).op("i32.add")

    def _class(self, field, addr, nbytes, align) -> None:
        self._static_entry(field, BOUNDARY_HANDLE, None)
        offset = addr.class_id * CLASS_STRIDE + addr.offset
        if offset:
            self.e.i32(offset).op("i32.add")

    def _indirect(self, field, addr, nbytes, align) -> None:
        e = self.e
        pointer, handle, offset64 = self.temp(I64), self.temp(I32), self.temp(I64)
        self.read(f"{field}.base")
        e.tee(pointer).i64(32).op("i64.shr_u").op("i32.wrap_i64").set(handle)
        entry = self._entry_of_handle(field, handle, None)
        e.get(pointer).i64(0xFFFFFFFF).op("i64.and")
        if addr.offset:
            e.i64(addr.offset).op("i64.add")
        e.set(offset64)
        self._check_range(field, handle, entry, offset64, nbytes, align, addr.offset != 0)
        e.get(entry).op("i32.load", layout.ENTRY_BASE).get(offset64).op("i32.wrap_i64").op("i32.add")

    def _computed(self, field, addr, nbytes, align) -> None:
        self.resolve_handle_offset(f"{field}.handle_reg", f"{field}.offset_reg", None, nbytes, align)

    def resolve_handle_offset(self, handle_path: str, offset_path: str, kind: int | None, nbytes: int,
                              align: int) -> None:
        """Handle from a 32-bit register, offset from an integer register read unsigned: push the address."""
        e = self.e
        handle, offset64 = self.temp(I32), self.temp(I64)
        hty = self.read(handle_path)
        self.zero_extend(hty)
        e.set(handle)
        entry = self._entry_of_handle(handle_path, handle, kind)
        oty = self.read_unsigned64(offset_path)
        e.set(offset64)
        self._check_range(handle_path, handle, entry, offset64, nbytes, align, oty.bits == 64)
        e.get(entry).op("i32.load", layout.ENTRY_BASE).get(offset64).op("i32.wrap_i64").op("i32.add")

    def pool_address(self, nbytes: int, align: int) -> None:
        """PoolLoad/PoolStore: push the address of ``offset`` in pool ``pool`` after the checks."""
        self.resolve_handle_offset("pool", "offset", layout.KIND_POOL, nbytes, align)

    def shared_address(self, field: str, nbytes: int, align: int) -> None:
        """Push the address of shared-memory operand ``field`` (static ones were checked at launch)."""
        e = self.e
        addr = getattr(self.instr, field)
        shared = self.m.global_index("shared_base")
        if isinstance(addr, Address.Shared):
            e.op("global.get", shared)
            if addr.offset:
                e.i32(addr.offset).op("i32.add")
            return
        offset64 = self.temp(I64)
        ty = self.read_unsigned64(f"{field}.base")
        if addr.offset:
            e.i64(addr.offset).op("i64.add")
        e.set(offset64)
        if ty.bits == 64 or addr.offset:
            e.get(offset64).i64(0xFFFFFFFF).op("i64.gt_u")
            e.get(offset64).i64(nbytes).op("i64.add").i64(self.config.shared_memory).op("i64.gt_u").op("i32.or")
        else:
            e.get(offset64).i64(nbytes).op("i64.add").i64(self.config.shared_memory).op("i64.gt_u")
        where = (self.operand(field), SHARED_MEMORY, i64(offset64))
        self.trap_if(TrapCode.OUT_OF_BOUNDS, where + (nbytes, self.config.shared_memory))
        if align > 1:
            e.get(offset64).op("i32.wrap_i64").i32(align - 1).op("i32.and")
            self.trap_if(TrapCode.MISALIGNED, where + (align,))
        e.op("global.get", shared).get(offset64).op("i32.wrap_i64").op("i32.add")

    # ---- typed memory access ---------------------------------------------------------------------------
    def load_value(self, ty: Type) -> None:
        """Address on the stack -> the native value of ``ty`` there."""
        info = type_info(ty)
        if info.load:
            self.e.op(info.load, 0)
        elif ty is Type.F16:
            self.e.op("i32.load16_u", 0).call(self.m.helper("f16_from_bits"))
        elif ty is Type.BF16:
            self.e.op("i32.load16_u", 0).i32(16).op("i32.shl").op("f32.reinterpret_i32")
        else:
            raise AssertionError(f"no native load for {ty.name}")

    def store_value(self, ty: Type, value_local: int) -> None:
        """Address on the stack; store the native value in ``value_local`` as ``ty``."""
        info = type_info(ty)
        e = self.e
        e.get(value_local)
        if info.store:
            e.op(info.store, 0)
        elif ty is Type.F16:
            e.call(self.m.helper("f16_to_bits")).op("i32.store16", 0)
        elif ty is Type.BF16:
            e.op("i32.reinterpret_f32").i32(16).op("i32.shr_u").op("i32.store16", 0)
        else:
            raise AssertionError(f"no native store for {ty.name}")

    # ---- float formats ---------------------------------------------------------------------------------
    def round_to(self, ty: Type) -> None:
        """An f32 result on the stack rounded to F16/BF16 (nothing for F32/F64)."""
        if ty is Type.F16:
            self.e.call(self.m.helper("round_f16"))
        elif ty is Type.BF16:
            self.e.call(self.m.helper("round_bf16"))


_GLOBAL_MODES = {
    Address.BufferOffset: LaneContext._buffer_offset,
    Address.PoolOffset: LaneContext._pool_offset,
    Address.Class: LaneContext._class,
    Address.RegisterIndirect: LaneContext._indirect,
    Address.RegisterIndirectComputed: LaneContext._computed,
}
