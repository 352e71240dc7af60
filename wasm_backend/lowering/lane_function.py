"""The per-lane function: ``lane(gid, lane, block, record) -> stop`` runs one lane from its entry or
from where it stopped until it ends, traps, or stops at a barrier or a cooperative instruction.

Layout of the body: a prologue (device table, special registers, then either the entry state —
preset registers, zeroed extended registers — or the state saved in the lane record at the last
stop), then the program's dispatch blocks (see ``lane_plan``) inside a dispatch loop::

    loop $dispatch
      block $end block $bK-1 ... block $b0
        (br_table $b0 … $bK-1 $end (local.get $pc))
      end  <code of block 0>
      end  <code of block 1>   ;; falls through from block 0
      ...
      end  (return ENDED)      ;; the end of the program
    end

A jump sets ``pc`` and branches to ``$dispatch``. A program of one block without stops is written
straight, without the loop. At a stop the lane saves its status (the block to resume at), call stack
pointer, budget counter, phase, and the registers live across stops, and returns
STOP_BARRIER / STOP_COOPERATIVE (recording the cooperative instruction in the ``coop_at`` global).
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.isa.opcodes import ExecKind
from atlas_web.isa.registers import SpecialRegister

from ..encoding.types import ValType
from .lane_context import (
    PARAM_BLOCK, PARAM_GID, PARAM_LANE, PARAM_RECORD, STOP_BARRIER, STOP_COOPERATIVE, STOP_ENDED, LaneContext,
)
from .lane_plan import (
    RECORD_CALLS, RECORD_JUMPS, RECORD_PHASE, RECORD_SP, RECORD_STATUS, STATUS_RESUME, LanePlan,
)
from .launch_layout import LaunchLayout
from .module_context import ModuleContext
from .rules import lookup_lane_rule
from .typemap import type_info

__all__ = ["LaneFunction", "build_lane_function"]

I32, I64 = ValType.I32, ValType.I64

_LOADS = {ValType.I32: "i32.load", ValType.I64: "i64.load", ValType.F32: "f32.load", ValType.F64: "f64.load"}
_STORES = {ValType.I32: "i32.store", ValType.I64: "i64.store", ValType.F32: "f32.store", ValType.F64: "f64.store"}


class LaneFunction(LaneContext):
    """Builds the lane function of one program; also the control operations the control rules use."""

    def __init__(self, m: ModuleContext, program, info, plan: LanePlan, config, launch: LaunchLayout) -> None:
        fb, e = m.define("lane", (I32, I32, I32, I32), (I32,))
        super().__init__(m, fb, e, program, info, plan, config)
        self.launch = launch
        self.end_block = len(plan.leaders)

    # ---- control operations (used by rules_control) ---------------------------------------------------
    def jump(self, target: int) -> None:
        """Continue at instruction ``target`` (the program's length ends the lane)."""
        e = self.e
        if target >= self.plan.length:
            e.i32(STOP_ENDED).op("return")
            return
        e.i32(self.plan.block_of[target]).set(self.pc).br("dispatch")

    def end_lane(self) -> None:
        self.e.i32(STOP_ENDED).op("return")

    def count_backward(self) -> None:
        """One more backward jump; the one past the budget traps BUDGET_EXCEEDED here."""
        e = self.e
        e.get(self.jumps).i64(1).op("i64.add").tee(self.jumps)
        e.op("global.get", self.m.global_index("budget")).op("i64.gt_u")
        self.trap_if(TrapCode.BUDGET_EXCEEDED)

    def call_push(self, return_index: int) -> None:
        e = self.e
        block = self.plan.block_of.get(return_index, self.end_block)
        e.get(PARAM_RECORD).get(self.sp).i32(2).op("i32.shl").op("i32.add").i32(block)
        e.op("i32.store", RECORD_CALLS)
        e.get(self.sp).i32(1).op("i32.add").set(self.sp)

    def call_return(self) -> None:
        e = self.e
        e.get(self.sp).op("i32.eqz")
        with e.if_():
            e.i32(STOP_ENDED).op("return")
        e.get(self.sp).i32(1).op("i32.sub").tee(self.sp).i32(2).op("i32.shl").get(PARAM_RECORD).op("i32.add")
        e.op("i32.load", RECORD_CALLS).set(self.pc).br("dispatch")

    def stop(self, code: int) -> None:
        """Save the lane's state to resume after this instruction and return ``code``."""
        e = self.e
        plan = self.plan
        e.get(PARAM_RECORD).i32(STATUS_RESUME + plan.resume_block(self.index)).op("i32.store", RECORD_STATUS)
        e.get(PARAM_RECORD).get(self.sp).op("i32.store", RECORD_SP)
        e.get(PARAM_RECORD).get(self.jumps).op("i64.store", RECORD_JUMPS)
        e.get(PARAM_RECORD).get(self.phase).op("i32.store", RECORD_PHASE)
        for (reg, _bank), offset in plan.spill_slots.items():
            ty = plan.native[(reg, _bank)]
            e.get(PARAM_RECORD).get(self.register_local(reg, ty)).op(_STORES[type_info(ty).valtype], offset)
        for pred, offset in plan.spill_preds.items():
            e.get(PARAM_RECORD).get(self.predicate_local(pred)).op("i32.store", offset)
        if code == STOP_COOPERATIVE:
            e.i32(self.index).op("global.set", self.m.global_index("coop_at"))
        e.i32(code).op("return")

    # ---- the function ---------------------------------------------------------------------------------
    def build(self) -> int:
        """Write the whole function; returns its index. Raises UnsupportedOperation for an instruction
        without a rule."""
        rules = [None if ins.INFO.kind is ExecKind.COOPERATIVE else lookup_lane_rule(ins.INFO.name, ins.type)
                 for ins in self.program.instructions]
        self._prologue()
        if self.plan.straight:
            for index in range(self.plan.length):
                self._instruction(index, rules[index])
            self.e.i32(STOP_ENDED)
            return self.fb.index
        self._dispatch(rules)
        self.e.i32(STOP_ENDED)  # unreachable: every path returns; keeps the validator's stack typed
        return self.fb.index

    def _instruction(self, index: int, rule) -> None:
        self.begin(index)
        instr = self.instr
        if rule is None:
            self.stop(STOP_COOPERATIVE)
        elif instr.INFO.name == "BarSync":
            self.stop(STOP_BARRIER)
        else:
            rule(self, instr)

    def _dispatch(self, rules) -> None:
        e = self.e
        leaders = self.plan.leaders
        ends = leaders[1:] + [self.plan.length]
        names = [f"b{k}" for k in range(len(leaders))]
        with e.loop("dispatch"):
            with e.block("end"):
                for name in reversed(names):
                    e.block(name)
                e.get(self.pc).br_table(names, "end")
                for k, (start, stop) in enumerate(zip(leaders, ends)):
                    e.end()  # closes block b{k}: its code follows
                    for index in range(start, stop):
                        self._instruction(index, rules[index])
            e.i32(STOP_ENDED).op("return")

    def _prologue(self) -> None:
        e = self.e
        plan = self.plan
        self.load_table()
        self._specials()
        if plan.sync:
            status = self.temp(I32)
            e.get(PARAM_RECORD).op("i32.load", RECORD_STATUS).tee(status).i32(STATUS_RESUME).op("i32.ge_u")
            with e.if_():
                self._resume(status)
                e.else_()
                self._fresh()
        else:
            self._fresh()

    def _fresh(self) -> None:
        e = self.e
        plan = self.plan
        for reg, ty in self.info.preset_types.items():
            offset = self.launch.presets[reg.index]
            if ty.is_extended():
                self.ext_address(reg.index, ty)
                e.op("global.get", self.m.global_index("launch_base")).i32(offset).op("i32.add")
                e.i32(ty.size_bytes()).op("memory.copy", 0, 0)
            else:
                vt = type_info(ty).valtype
                e.op("global.get", self.m.global_index("launch_base")).op(_LOADS[vt], offset)
                e.set(self.register_local(reg.index, ty))
        if plan.ext_slots and not plan.sync:
            first = min(plan.ext_slots.values())
            e.get(PARAM_RECORD).i32(first).op("i32.add").i32(0).i32(plan.ext_temp - first).op("memory.fill", 0)

    def _resume(self, status: int) -> None:
        e = self.e
        plan = self.plan
        e.get(status).i32(STATUS_RESUME).op("i32.sub").set(self.pc)
        e.get(PARAM_RECORD).op("i32.load", RECORD_SP).set(self.sp)
        e.get(PARAM_RECORD).op("i64.load", RECORD_JUMPS).set(self.jumps)
        e.get(PARAM_RECORD).op("i32.load", RECORD_PHASE).set(self.phase)
        for (reg, bank), offset in plan.spill_slots.items():
            ty = plan.native[(reg, bank)]
            e.get(PARAM_RECORD).op(_LOADS[type_info(ty).valtype], offset).set(self.register_local(reg, ty))
        for pred, offset in plan.spill_preds.items():
            e.get(PARAM_RECORD).op("i32.load", offset).set(self.predicate_local(pred))
        for index, offset in self.launch.results.items():
            instr = self.program.instructions[index]
            ty = self.info.def_types[(index, "dst")]
            e.get(self.pc).i32(plan.resume_block(index)).op("i32.eq")
            with e.if_():
                e.op("global.get", self.m.global_index("launch_base")).op(_LOADS[type_info(ty).valtype], offset)
                e.set(self.register_local(instr.dst.index, ty))

    def _specials(self) -> None:
        e = self.e
        (gx, gy, _gz), (bx, by, _bz) = self.config.grid, self.config.block
        for special in sorted(self.plan.specials):
            local = self.special_locals[special] = self.fb.add_local(I32, special.name.lower())
            _SPECIALS[special](e, gx, gy, bx, by, self.config)
            e.set(local)


def _div_mod(e, param: int, divisor: int, modulo: int | None) -> None:
    e.get(param)
    if divisor != 1:
        e.i32(divisor).op("i32.div_u")
    if modulo is not None:
        e.i32(modulo).op("i32.rem_u")


#: special register -> writer(e, gx, gy, bx, by, config) pushing its u32 value
_SPECIALS = {
    SpecialRegister.GLOBAL_LANE_ID: lambda e, gx, gy, bx, by, c: e.get(PARAM_GID),
    SpecialRegister.LANE_IDX_X: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_LANE, 1, bx if c.block_lanes != bx
                                                                       else None),
    SpecialRegister.LANE_IDX_Y: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_LANE, bx, by),
    SpecialRegister.LANE_IDX_Z: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_LANE, bx * by, None),
    SpecialRegister.BLOCK_IDX_X: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_BLOCK, 1, gx if c.num_blocks != gx
                                                                        else None),
    SpecialRegister.BLOCK_IDX_Y: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_BLOCK, gx, gy),
    SpecialRegister.BLOCK_IDX_Z: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_BLOCK, gx * gy, None),
    SpecialRegister.BLOCK_DIM_X: lambda e, gx, gy, bx, by, c: e.i32(c.block[0]),
    SpecialRegister.BLOCK_DIM_Y: lambda e, gx, gy, bx, by, c: e.i32(c.block[1]),
    SpecialRegister.BLOCK_DIM_Z: lambda e, gx, gy, bx, by, c: e.i32(c.block[2]),
    SpecialRegister.GRID_DIM_X: lambda e, gx, gy, bx, by, c: e.i32(c.grid[0]),
    SpecialRegister.GRID_DIM_Y: lambda e, gx, gy, bx, by, c: e.i32(c.grid[1]),
    SpecialRegister.GRID_DIM_Z: lambda e, gx, gy, bx, by, c: e.i32(c.grid[2]),
}


def build_lane_function(m: ModuleContext, program, info, plan: LanePlan, config, launch: LaunchLayout) -> int:
    """Define the lane function of ``program`` in ``m``; returns its index (raises UnsupportedOperation)."""
    return LaneFunction(m, program, info, plan, config, launch).build()

