"""Segment functions: ``segment_<r>(gid, lane, block, record) -> stop`` runs one lane from resume point
``r`` until it ends (STOP_ENDED), traps (STOP_TRAPPED) or suspends at resume point ``s``
(``STOP_SUSPENDED + s``).

The body is the segment's tree from the lowering plan (``atlas_web.lowering.structure``), written by
a table of statement writers: Code runs the instructions' lane rules; Block, Loop and If become wasm
constructs, Br/BrIf/Goto branches to them by name; BranchTest evaluates a BRA predicate or a LOOP
count once; CountJump counts a backward jump against the budget; EndLane and Suspend store the lane
state the plan names and return. The Dispatch fallback is a loop around a ``br_table`` over a case
local.

Prologue: the device table and special registers into locals, then the entry values (preset
registers; the scratch record's extended registers zeroed) for the ENTRY segment, or the registers
of ``boundaries[r].reload`` from the lane record (those a cooperative step just wrote from its
result slot) for the others.
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.isa.opcodes import STRUCTURAL_INSTRUCTIONS, ExecKind
from atlas_web.isa.registers import SpecialRegister
from atlas_web.launch import UNIFORM_SPECIALS
from atlas_web.lowering.plan import LoweringPlan, Segment
from atlas_web.lowering.stages import ResumeKind
from atlas_web.lowering.structure import Block, Br, BrIf, CountJump, Dispatch, EndLane, Goto, If, Loop, Suspend
from atlas_web.lowering.structure import Code as CodeStatement

from ..encoding.types import ValType
from .lane_context import PARAM_BLOCK, PARAM_GID, PARAM_LANE, PARAM_RECORD, STOP_ENDED, LaneContext
from .lane_state import RECORD_JUMPS, RECORD_PHASE, LaneState
from .launch_layout import LaunchLayout
from .module_context import ModuleContext
from .rules import BRANCH_TESTS, lookup_lane_rule
from .typemap import type_info

__all__ = ["SegmentFunction", "STOP_SUSPENDED", "build_segment_function"]

I32 = ValType.I32
#: a segment that suspends at resume point ``s`` returns STOP_SUSPENDED + s
STOP_SUSPENDED = 2

_LOADS = {ValType.I32: "i32.load", ValType.I64: "i64.load", ValType.F32: "f32.load", ValType.F64: "f64.load"}
_STORES = {ValType.I32: "i32.store", ValType.I64: "i64.store", ValType.F32: "f32.store", ValType.F64: "f64.store"}


def _label(label: int) -> str:
    return f"L{label}"


class SegmentFunction(LaneContext):
    """Writes the function of one segment (see the module docstring)."""

    def __init__(self, m: ModuleContext, plan: LoweringPlan, state: LaneState, config, launch: LaunchLayout,
                 segment: Segment) -> None:
        self.segment = segment
        fb, e = m.define(f"segment_{segment.resume.id}", (I32, I32, I32, I32), (I32,))
        info = plan.info
        super().__init__(m, fb, e, info.program, info, state, config)
        self.plan = plan
        self.launch = launch
        self.case_locals: dict[int, int] = {}
        self.rules = [None if ins.INFO.kind is ExecKind.COOPERATIVE or ins.INFO.name in STRUCTURAL_INSTRUCTIONS
                      else lookup_lane_rule(ins.INFO.name, ins.type) for ins in info.program.instructions]

    # ---- locals of virtual registers -----------------------------------------------------------------
    def vreg_local(self, vreg) -> int:
        if vreg.type is None:
            return self.predicate_local(vreg.register.index)
        return self.register_local(vreg.register.index, vreg.type)

    def _vreg_valtype(self, vreg) -> ValType:
        return I32 if vreg.type is None else type_info(vreg.type).valtype

    def store_vregs(self, vregs) -> None:
        """Store the native virtual registers of ``vregs`` to their record slots."""
        e = self.e
        for vreg in vregs:
            offset = self.state.slots.get(vreg.id)
            if offset is not None:
                e.get(PARAM_RECORD).get(self.vreg_local(vreg)).op(_STORES[self._vreg_valtype(vreg)], offset)

    def load_vregs(self, vregs, skip: frozenset = frozenset()) -> None:
        e = self.e
        for vreg in vregs:
            offset = self.state.slots.get(vreg.id)
            if offset is not None and vreg.id not in skip:
                e.get(PARAM_RECORD).op(_LOADS[self._vreg_valtype(vreg)], offset).set(self.vreg_local(vreg))

    # ---- operations used by the statement writers and the branch tests --------------------------------
    def count_backward(self, index: int) -> None:
        """One more backward jump of instruction ``index``; the one past the budget traps there."""
        e = self.e
        self.index = index
        e.get(self.jumps).i64(1).op("i64.add").tee(self.jumps)
        e.op("global.get", self.m.global_index("budget")).op("i64.gt_u")
        self.trap_if(TrapCode.BUDGET_EXCEEDED)

    def branch_test(self, test) -> None:
        """Push the i32 truth of a BranchTest (evaluating its instruction's effects once)."""
        self.begin(test.index)
        BRANCH_TESTS[self.instr.INFO.name](self, self.instr)
        if test.negated:
            self.e.op("i32.eqz")

    def end_lane(self) -> None:
        if self.state.sync:
            self.store_vregs(self.plan.lane_end_stores)
        self.e.i32(STOP_ENDED).op("return")

    def suspend(self, resume: int) -> None:
        e = self.e
        self.store_vregs(self.plan.boundaries[resume].spill)
        e.get(PARAM_RECORD).get(self.jumps).op("i64.store", RECORD_JUMPS)
        e.get(PARAM_RECORD).get(self.phase).op("i32.store", RECORD_PHASE)
        e.i32(STOP_SUSPENDED + resume).op("return")

    # ---- the function -----------------------------------------------------------------------------------
    def build(self) -> int:
        """Write the whole function; returns its index."""
        self._prologue()
        self.statements(self.segment.body)
        self.e.i32(STOP_ENDED)  # every path returns first; keeps the function's result typed
        return self.fb.index

    def statements(self, body) -> None:
        for stmt in body:
            _STATEMENTS[type(stmt)](self, stmt)

    def code(self, start: int, end: int) -> None:
        for index in range(start, end):
            self.begin(index)
            self.rules[index](self, self.instr)

    def _prologue(self) -> None:
        e = self.e
        self.load_table()
        self._specials()
        resume = self.segment.resume
        if resume.kind is ResumeKind.ENTRY:
            self._entry_values()
            return
        boundary = self.plan.boundaries[resume.id]
        uniform = frozenset(v.id for v in boundary.uniform)
        self.load_vregs(boundary.reload, uniform)
        for vreg in boundary.uniform:  # what the cooperative step just wrote: its result slot
            if self.state.native(vreg):
                e.op("global.get", self.m.global_index("launch_base"))
                e.op(_LOADS[self._vreg_valtype(vreg)], self.launch.results[resume.after])
                e.set(self.vreg_local(vreg))
        e.get(PARAM_RECORD).op("i64.load", RECORD_JUMPS).set(self.jumps)
        e.get(PARAM_RECORD).op("i32.load", RECORD_PHASE).set(self.phase)

    def _entry_values(self) -> None:
        e = self.e
        state = self.state
        if state.ext_slots and not state.sync:  # the scratch record is reused lane after lane
            first = min(state.ext_slots.values())
            e.get(PARAM_RECORD).i32(first).op("i32.add").i32(0).i32(state.ext_temp - first).op("memory.fill", 0)
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

    def _specials(self) -> None:
        e = self.e
        (gx, gy, _gz), (bx, by, _bz) = self.config.grid, self.config.block
        for special in sorted(self.state.specials):
            local = self.special_locals[special] = self.fb.add_local(I32, special.name.lower())
            _SPECIALS[special](e, gx, gy, bx, by, self.config)
            e.set(local)


# ---- statement writers --------------------------------------------------------------------------------

def _code(f: SegmentFunction, stmt) -> None:
    f.code(stmt.start, stmt.end)


def _block(f: SegmentFunction, stmt) -> None:
    with f.e.block(_label(stmt.label)):
        f.statements(stmt.body)


def _loop(f: SegmentFunction, stmt) -> None:
    with f.e.loop(_label(stmt.label)):
        f.statements(stmt.body)


def _if(f: SegmentFunction, stmt) -> None:
    f.branch_test(stmt.test)
    with f.e.if_():
        f.statements(stmt.then)
        if stmt.orelse:
            f.e.else_()
            f.statements(stmt.orelse)


def _br(f: SegmentFunction, stmt) -> None:
    f.e.br(_label(stmt.label))


def _br_if(f: SegmentFunction, stmt) -> None:
    f.branch_test(stmt.test)
    f.e.br_if(_label(stmt.label))


def _count_jump(f: SegmentFunction, stmt) -> None:
    f.count_backward(stmt.index)


def _end_lane(f: SegmentFunction, stmt) -> None:
    f.end_lane()


def _suspend(f: SegmentFunction, stmt) -> None:
    f.suspend(stmt.resume)


def _dispatch(f: SegmentFunction, stmt) -> None:
    e = f.e
    case = f.fb.add_local(I32, f"case{stmt.label}")
    f.case_locals[stmt.label] = case
    e.i32(stmt.entry).set(case)
    names = [f"{_label(stmt.label)}c{k}" for k in range(len(stmt.cases))]
    with e.loop(_label(stmt.label)):
        for name in reversed(names):
            e.block(name)
        e.get(case).br_table(names, names[-1])
        for body in stmt.cases:
            e.end()
            f.statements(body)


def _goto(f: SegmentFunction, stmt) -> None:
    f.e.i32(stmt.case).set(f.case_locals[stmt.label]).br(_label(stmt.label))


_STATEMENTS = {
    CodeStatement: _code, Block: _block, Loop: _loop, If: _if, Br: _br, BrIf: _br_if, CountJump: _count_jump,
    EndLane: _end_lane, Suspend: _suspend, Dispatch: _dispatch, Goto: _goto,
}


def _div_mod(e, param: int, divisor: int, modulo: int | None) -> None:
    e.get(param)
    if divisor != 1:
        e.i32(divisor).op("i32.div_u")
    if modulo is not None:
        e.i32(modulo).op("i32.rem_u")


#: special register -> writer(e, gx, gy, bx, by, config) pushing its u32 value
_SPECIALS = {
    SpecialRegister.GLOBAL_LANE_ID: lambda e, gx, gy, bx, by, c: e.get(PARAM_GID),
    SpecialRegister.LANE_IDX_X: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_LANE, 1,
                                                                       None if c.block_lanes == bx else bx),
    SpecialRegister.LANE_IDX_Y: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_LANE, bx, by),
    SpecialRegister.LANE_IDX_Z: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_LANE, bx * by, None),
    SpecialRegister.BLOCK_IDX_X: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_BLOCK, 1,
                                                                        None if c.num_blocks == gx else gx),
    SpecialRegister.BLOCK_IDX_Y: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_BLOCK, gx, gy),
    SpecialRegister.BLOCK_IDX_Z: lambda e, gx, gy, bx, by, c: _div_mod(e, PARAM_BLOCK, gx * gy, None),
    # the block and grid dimensions: constants of the launch
    **{reg: lambda e, gx, gy, bx, by, c, reg=reg: e.i32(c.uniform_specials()[reg])
       for reg in UNIFORM_SPECIALS},
}


def build_segment_function(m: ModuleContext, plan: LoweringPlan, state: LaneState, config, launch: LaunchLayout,
                           segment: Segment) -> int:
    """Define the function of ``segment`` in ``m``; returns its index (raises UnsupportedOperation)."""
    return SegmentFunction(m, plan, state, config, launch, segment).build()
