"""A tiny Python interpreter of LoweringPlans: runs a whole launch the way generated code would.

Stage by stage, block by block, segment by segment and lane by lane, it
executes the structured trees of ``plan.segments`` (resolving Br/BrIf by their
``depth`` and checking ``label`` and ``crossed`` against its own construct
stack), keeps each lane's registers in locals that exist only after a
segment's reload or a definition (reading anything else fails the test: a
liveness bug), replaces a lane's state area by exactly the spill set at each
Suspend and by the lane-end stores at EndLane, and runs cooperative steps
between stages reading global lane 0's state area.

Python semantics for a subset of instructions: integer MOV_IMM MOV ADD SUB MUL
AND OR XOR SETcc SEL CVT (int to int), LDG/STG of 32-bit integers
(BufferOffset and RegisterIndirect addresses, with the handle / bounds /
alignment checks), MemFence, and the cooperative ParallelMap (Neg, Abs) and
ParallelMapBinary (Add, Sub, Mul) on 32-bit integers. Anything else fails the
test with AssertionError.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atlas_web.errors import AtlasTrap, TrapCode
from atlas_web.isa import Address, Type
from atlas_web.isa.addresses import MAX_OFFSET
from atlas_web.isa.enums import BinaryMapOperation, Condition, MapOperation
from atlas_web.isa.registers import SpecialRegister
from atlas_web.lowering import LoweringPlan, ResumeKind
from atlas_web.lowering.liveness import VirtualRegister, storage_type
from atlas_web.lowering.structure import (
    Block, Br, BrIf, Code, CountJump, Dispatch, EndLane, Goto, If, Loop, Suspend,
)

__all__ = ["PlanInterpreter", "LaunchOutcome"]


class LaneTrap(Exception):
    """A lane trapped with ``code`` at instruction ``index``."""

    def __init__(self, code: TrapCode, index: int) -> None:
        super().__init__(code, index)
        self.code = code
        self.index = index


@dataclass
class LaunchOutcome:
    """What a launch did: the final buffers, the trap (code, index, lane) or None, and each lane's
    backward-jump count."""

    buffers: dict[int, bytes]
    trap: tuple[TrapCode, int, int] | None
    jumps: list[int]


@dataclass
class _Lane:
    gid: int
    specials: dict[int, int]
    slots: dict[int, object] = field(default_factory=dict)
    locals: dict[int, object] = field(default_factory=dict)
    jumps: int = 0
    live: bool = True
    #: (kind, label) of each construct being executed: kind "block", "loop", "if" or "case"
    stack: list[tuple[str, int | None]] = field(default_factory=list)


def _mask(ty: Type) -> int:
    return (1 << ty.bits) - 1


def _signed(ty: Type, bits: int) -> int:
    return ty.wrap(bits) if ty.is_signed() else bits


_COMPARE = {
    Condition.EQ: lambda a, b: a == b, Condition.NE: lambda a, b: a != b,
    Condition.LT: lambda a, b: a < b, Condition.LE: lambda a, b: a <= b,
    Condition.GT: lambda a, b: a > b, Condition.GE: lambda a, b: a >= b,
}
_UNSIGNED_COMPARE = {Condition.LTU: Condition.LT, Condition.LEU: Condition.LE,
                     Condition.GTU: Condition.GT, Condition.GEU: Condition.GE}
_BINARY = {"ADD": lambda a, b: a + b, "SUB": lambda a, b: a - b, "MUL": lambda a, b: a * b,
           "AND": lambda a, b: a & b, "OR": lambda a, b: a | b, "XOR": lambda a, b: a ^ b}
_MAP = {MapOperation.Neg: lambda a: -a, MapOperation.Abs: abs}
_MAP2 = {BinaryMapOperation.Add: lambda a, b: a + b, BinaryMapOperation.Sub: lambda a, b: a - b,
         BinaryMapOperation.Mul: lambda a, b: a * b}


class PlanInterpreter:
    """Runs ``plan`` over ``config`` on ``buffers`` (handle -> bytearray, changed in place), with
    ``presets`` (Register -> (Type, value)) and the per-lane ``budget``."""

    def __init__(self, plan: LoweringPlan, config, buffers: dict[int, bytearray], presets=None,
                 budget: int = 1 << 24) -> None:
        self.plan = plan
        self.program = plan.info.program.instructions
        self.config = config
        self.buffers = buffers
        self.presets = {reg.index: (ty, value) for reg, (ty, value) in (presets or {}).items()}
        self.budget = budget
        self.reads = plan.registers.reads
        self.writes = plan.registers.writes
        self.lanes = self._make_lanes()

    # ---- launch ---------------------------------------------------------------------------------
    def _make_lanes(self) -> list[_Lane]:
        (gx, gy, _), (bx, by, bz) = self.config.grid, self.config.block
        per_block = bx * by * bz
        lanes = []
        for gid in range(self.config.total_threads):
            block, lane = divmod(gid, per_block)
            specials = {
                SpecialRegister.LANE_IDX_X: lane % bx, SpecialRegister.LANE_IDX_Y: (lane // bx) % by,
                SpecialRegister.LANE_IDX_Z: lane // (bx * by), SpecialRegister.BLOCK_IDX_X: block % gx,
                SpecialRegister.BLOCK_IDX_Y: (block // gx) % gy, SpecialRegister.BLOCK_IDX_Z: block // (gx * gy),
                SpecialRegister.BLOCK_DIM_X: bx, SpecialRegister.BLOCK_DIM_Y: by, SpecialRegister.BLOCK_DIM_Z: bz,
                SpecialRegister.GRID_DIM_X: gx, SpecialRegister.GRID_DIM_Y: gy,
                SpecialRegister.GRID_DIM_Z: self.config.grid[2], SpecialRegister.GLOBAL_LANE_ID: gid,
            }
            state = _Lane(gid, {int(k): v for k, v in specials.items()})
            for v in self.plan.boundaries[0].reload:
                state.slots[v.id] = self._entry_value(v)
            lanes.append(state)
        return lanes

    def _entry_value(self, v: VirtualRegister):
        if v.is_predicate:
            return False
        preset = self.presets.get(v.register.index)
        if preset is None:
            return 0
        ty, value = preset
        assert storage_type(ty) is v.type, f"preset {v.register} as {ty.name} feeds {v}"
        return value & _mask(v.type)

    def run(self) -> LaunchOutcome:
        plan = self.plan
        per_block = self.config.block_lanes
        stage = plan.stages[0]
        trap = None
        while True:
            traps: list[tuple[int, TrapCode, int]] = []
            next_resume: set[int] = set()
            for first in range(0, len(self.lanes), per_block):
                block = self.lanes[first:first + per_block]
                resume = stage.entry
                while True:
                    assert resume in stage.segments, f"resume point {resume} is not in stage {stage.id}"
                    suspended = {self._run_segment(lane, resume, traps) for lane in block if lane.live}
                    suspended.discard(None)
                    if not suspended:
                        break
                    assert len(suspended) == 1, f"lanes of one block suspended at {sorted(suspended)}"
                    resume = suspended.pop()
                    if plan.resume_points[resume].kind is ResumeKind.COOPERATIVE:
                        assert resume in stage.cooperative_exits
                        next_resume.add(resume)
                        break
            if traps:
                lane, code, index = min(traps)
                trap = (code, index, lane)
                break
            if not any(lane.live for lane in self.lanes):
                break
            assert len(next_resume) == 1, f"blocks suspended at cooperative resume points {sorted(next_resume)}"
            resume = next_resume.pop()
            try:
                self._cooperative(plan.resume_points[resume].after)
            except AtlasTrap as error:
                trap = (error.code, error.instruction_index, error.lane)
                break
            stage = plan.stage_entered_at(resume)
        return LaunchOutcome({h: bytes(b) for h, b in self.buffers.items()}, trap, [lane.jumps for lane in self.lanes])

    def _run_segment(self, lane: _Lane, resume: int, traps: list) -> int | None:
        """Run one lane through segment ``resume``; the resume point it suspended at, or None."""
        plan = self.plan
        missing = [str(v) for v in plan.boundaries[resume].reload if v.id not in lane.slots]
        assert not missing, f"segment {resume} reloads {missing}, which no boundary stored"
        lane.locals = {v.id: lane.slots[v.id] for v in plan.boundaries[resume].reload}
        lane.stack = []
        try:
            signal = self._body(lane, plan.segments[resume].body)
        except LaneTrap as trap:
            lane.live = False
            traps.append((lane.gid, trap.code, trap.index))
            return None
        assert signal is not None and signal[0] in ("end", "suspend"), f"segment {resume} fell off its end: {signal}"
        if signal[0] == "end":
            lane.live = False
            lane.slots = {v.id: self._local(lane, v, "at EndLane") for v in plan.lane_end_stores}
            return None
        _, target, index = signal
        assert plan.resume_points[target].after == index
        lane.slots = {v.id: self._local(lane, v, f"at Suspend({index})") for v in plan.boundaries[target].spill}
        return target

    # ---- statements ---------------------------------------------------------------------------------
    def _body(self, lane: _Lane, stmts) -> tuple | None:
        for stmt in stmts:
            signal = _STATEMENTS[type(stmt)](self, lane, stmt)
            if signal is not None:
                return signal
        return None

    def _nested(self, lane: _Lane, kind: str, label: int | None, stmts) -> tuple | None:
        lane.stack.append((kind, label))
        try:
            return self._body(lane, stmts)
        finally:
            lane.stack.pop()

    def _code(self, lane, stmt: Code):
        for index in range(stmt.start, stmt.end):
            instr = self.program[index]
            rule = _INSTRUCTIONS.get(instr.INFO.name)
            assert rule is not None, f"the test interpreter has no rule for {instr.INFO.name}"
            rule(self, lane, index, instr)

    def _block(self, lane, stmt: Block):
        signal = self._nested(lane, "block", stmt.label, stmt.body)
        if signal is not None and signal[0] == "br":
            if signal[1] == 0:
                assert signal[2] == stmt.label
                return None
            return ("br", signal[1] - 1, signal[2])
        return signal

    def _loop(self, lane, stmt: Loop):
        while True:
            signal = self._nested(lane, "loop", stmt.label, stmt.body)
            if signal is not None and signal[0] == "br":
                if signal[1] == 0:
                    assert signal[2] == stmt.label
                    continue
                return ("br", signal[1] - 1, signal[2])
            return signal

    def _if(self, lane, stmt: If):
        arm = stmt.then if self._test(lane, stmt.test) else stmt.orelse
        signal = self._nested(lane, "if", None, arm)
        if signal is not None and signal[0] == "br":
            assert signal[1] > 0, "a Br targets an If"
            return ("br", signal[1] - 1, signal[2])
        return signal

    def _br(self, lane, stmt: Br | BrIf):
        stack = lane.stack
        assert stmt.depth < len(stack) and stack[-1 - stmt.depth][1] == stmt.label, (stmt, stack)
        between = stack[len(stack) - stmt.depth:]
        assert stmt.crossed == sum(kind != "if" for kind, _ in between), (stmt, stack)
        return ("br", stmt.depth, stmt.label)

    def _br_if(self, lane, stmt: BrIf):
        return self._br(lane, stmt) if self._test(lane, stmt.test) else None

    def _count_jump(self, lane, stmt: CountJump):
        lane.jumps += 1
        if lane.jumps > self.budget:
            raise LaneTrap(TrapCode.BUDGET_EXCEEDED, stmt.index)

    def _dispatch(self, lane, stmt: Dispatch):
        case = stmt.entry
        while True:
            lane.stack.append(("case", stmt.label))
            try:
                signal = self._body(lane, stmt.cases[case])
            finally:
                lane.stack.pop()
            if signal is not None and signal[0] == "goto":
                case = signal[1]
                continue
            assert signal is not None and signal[0] != "br", f"a dispatch case fell through or broke out: {signal}"
            return signal

    def _goto(self, lane, stmt: Goto):
        ifs = 0
        for kind, label in reversed(lane.stack):
            if kind == "case":
                assert label == stmt.label
                break
            assert kind == "if", lane.stack
            ifs += 1
        assert ifs == stmt.depth, (stmt, lane.stack)
        return ("goto", stmt.case)

    def _test(self, lane, test) -> bool:
        instr = self.program[test.index]
        return _TESTS[instr.INFO.name](self, lane, test.index, instr) != test.negated

    # ---- registers ---------------------------------------------------------------------------------
    def _local(self, lane: _Lane, v: VirtualRegister, where: str):
        assert v.id in lane.locals, f"{v} is not defined {where} (liveness missed it)"
        return lane.locals[v.id]

    def read(self, lane: _Lane, index: int, path: str):
        """The stored bits (or a predicate's bool) operand ``path`` of instruction ``index`` reads."""
        v = self.reads[(index, path)]
        if v.is_special:
            return lane.specials[v.register.index]
        return self._local(lane, v, f"when instruction {index} reads {path!r}")

    def write(self, lane: _Lane, index: int, path: str, value) -> None:
        v = self.writes[(index, path)]
        lane.locals[v.id] = bool(value) if v.is_predicate else value & _mask(v.type)

    # ---- memory -------------------------------------------------------------------------------------
    def address(self, lane: _Lane, index: int, path: str, ty: Type, read_register) -> tuple[bytearray, int]:
        addr = getattr(self.program[index], path)
        if isinstance(addr, Address.BufferOffset):
            handle, offset = addr.handle, addr.offset
        elif isinstance(addr, Address.RegisterIndirect):
            pointer = read_register(f"{path}.base")
            handle, offset = pointer >> 32, (pointer & MAX_OFFSET) + addr.offset
        else:
            raise AssertionError(f"the test interpreter has no rule for {type(addr).__name__}")
        data = self.buffers.get(handle)
        if data is None:
            raise LaneTrap(TrapCode.INVALID_HANDLE, index)
        size = ty.size_bytes()
        if not 0 <= offset <= MAX_OFFSET or offset + size > len(data):
            raise LaneTrap(TrapCode.OUT_OF_BOUNDS, index)
        if offset % ty.alignment():
            raise LaneTrap(TrapCode.MISALIGNED, index)
        return data, offset

    def _cooperative(self, index: int) -> None:
        """Run cooperative instruction ``index`` once, reading global lane 0's state area."""
        instr = self.program[index]
        step = self.plan.cooperative_steps[index]
        lane0 = self.lanes[0]
        slots = {path: lane0.slots[v.id] for path, v in step.reads}
        assert instr.ty in (Type.I32, Type.U32), "the test interpreter maps 32-bit integers only"

        def span(path: str) -> tuple[bytearray, int]:
            try:
                data, offset = self.address(lane0, index, path, instr.ty, slots.__getitem__)
            except LaneTrap as trap:
                raise AtlasTrap(trap.code, index, -1) from None
            if offset + 4 * instr.count > len(data):
                raise AtlasTrap(TrapCode.OUT_OF_BOUNDS, index, -1)
            return data, offset

        name = instr.INFO.name
        sources = ["src_array"] if name == "ParallelMap" else ["src_a", "src_b"]
        target, target_offset = span("dst_array")  # operands are checked in operand order
        inputs = []
        for path in sources:
            data, offset = span(path)
            inputs.append([_signed(instr.ty, int.from_bytes(data[offset + 4 * k:offset + 4 * k + 4], "little"))
                           for k in range(instr.count)])
        operation = (_MAP if name == "ParallelMap" else _MAP2)[instr.operation]
        for k, args in enumerate(zip(*inputs)):
            at = target_offset + 4 * k
            target[at:at + 4] = (operation(*args) & 0xFFFFFFFF).to_bytes(4, "little")
        assert not step.writes, "the supported cooperative instructions write no register"


def _mov_imm(it: PlanInterpreter, lane, index, instr):
    it.write(lane, index, "dst", instr.value)


def _mov(it: PlanInterpreter, lane, index, instr):
    it.write(lane, index, "dst", it.read(lane, index, "src"))


def _binary(it: PlanInterpreter, lane, index, instr):
    op = _BINARY[instr.INFO.name]
    it.write(lane, index, "dst", op(it.read(lane, index, "lhs"), it.read(lane, index, "rhs")))


def _setcc(it: PlanInterpreter, lane, index, instr):
    a, b, ty, cond = it.read(lane, index, "lhs"), it.read(lane, index, "rhs"), instr.ty, instr.cond
    if cond in _UNSIGNED_COMPARE:
        holds = _COMPARE[_UNSIGNED_COMPARE[cond]](a, b)
    else:
        holds = _COMPARE[cond](_signed(ty, a), _signed(ty, b))
    it.write(lane, index, "pred", holds)


def _sel(it: PlanInterpreter, lane, index, instr):
    chosen = "true_val" if it.read(lane, index, "pred") else "false_val"
    it.write(lane, index, "dst", it.read(lane, index, chosen))


def _cvt(it: PlanInterpreter, lane, index, instr):
    assert instr.src_ty.is_integer() and instr.dst_ty.is_integer(), "the test interpreter converts integers only"
    it.write(lane, index, "dst", _signed(instr.src_ty, it.read(lane, index, "src")))


def _ldg(it: PlanInterpreter, lane, index, instr):
    assert instr.ty.bits == 32 and instr.ty.is_integer()
    data, offset = it.address(lane, index, "src", instr.ty, lambda p: it.read(lane, index, p))
    it.write(lane, index, "dst", int.from_bytes(data[offset:offset + 4], "little"))


def _stg(it: PlanInterpreter, lane, index, instr):
    assert instr.ty.bits == 32 and instr.ty.is_integer()
    data, offset = it.address(lane, index, "dst", instr.ty, lambda p: it.read(lane, index, p))
    data[offset:offset + 4] = it.read(lane, index, "src").to_bytes(4, "little")


def _nothing(it: PlanInterpreter, lane, index, instr):
    return None


_INSTRUCTIONS = {
    "MOV_IMM": _mov_imm, "MOV": _mov, **{name: _binary for name in _BINARY}, "SETcc": _setcc, "SEL": _sel,
    "CVT": _cvt, "LDG": _ldg, "STG": _stg, "MemFence": _nothing,
}


def _test_bra(it: PlanInterpreter, lane, index, instr) -> bool:
    return bool(it.read(lane, index, "pred")) != instr.negate


def _test_loop(it: PlanInterpreter, lane, index, instr) -> bool:
    count = it.read(lane, index, "count")
    if count == 0:
        it.write(lane, index, "count", 0)
        return False
    it.write(lane, index, "count", count - 1)
    return count - 1 != 0


_TESTS = {"BRA": _test_bra, "LOOP": _test_loop}

_STATEMENTS = {
    Code: PlanInterpreter._code, Block: PlanInterpreter._block, Loop: PlanInterpreter._loop, If: PlanInterpreter._if,
    Br: PlanInterpreter._br, BrIf: PlanInterpreter._br_if, CountJump: PlanInterpreter._count_jump,
    EndLane: lambda it, lane, stmt: ("end",), Suspend: lambda it, lane, stmt: ("suspend", stmt.resume, stmt.index),
    Dispatch: PlanInterpreter._dispatch, Goto: PlanInterpreter._goto,
}
