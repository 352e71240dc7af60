"""The reference executor: runs a verified program over all lanes of a launch with NumPy.

Scheduling is min-PC lockstep: the lanes standing at the smallest
instruction index among the runnable lanes form a *group* and execute that
instruction together; the group keeps going while it stays converged and
ahead of every other lane (the common case: no masks, no copies). Divergent
lanes reconverge where their indices meet. BarSync holds lanes until their
block has arrived (lanes that ended count as arrived); a cooperative
instruction runs once when every live lane stands at it, which ends a stage.
A lane that traps stops; the others run to the end of the stage, then the
trap of the lowest global lane id of that stage is raised as AtlasTrap.

The dispatch table ``RULES`` is keyed by instruction name: the pure per-lane
rules of ``numeric.PURE_LANE_RULES`` plus the executor's own (memory, control,
Atlas state, cooperative).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ExecutionFailed, TrapCode
from ..isa.opcodes import ExecKind, OperandKind
from ..isa.registers import Register
from ..isa.types import Type
from ..launch import LaunchConfig
from ..trap_report import TrapRecord, trap
from . import numeric
from .exec_atlas import ATLAS_STATE_RULES
from .exec_attention import ATTENTION_RULES
from .exec_collective import COLLECTIVE_RULES
from .exec_control import CONTROL_RULES, WAIT
from .exec_conv import CONV_RULES
from .exec_cooperative import COOPERATIVE_RULES, CooperativeStep
from .exec_fft import FFT_RULES
from .exec_matrix import MATRIX_RULES
from .exec_contract import CONTRACT_RULES
from .exec_memory import MEMORY_RULES, reduction_rules
from .exec_norm import NORM_RULES
from .exec_softmax import SOFTMAX_RULES
from .exec_state import CallStacks, LaneGeometry, PredicateFile, RegisterFile
from .exec_step import Plan, Step, plan_slots
from .exec_store import MemoryStore
from .numeric_flush import FLUSHED_ROWS, FLUSHING_LANE_RULES, flushing_lane_reduce
from .numeric_outcome import lane_record

__all__ = ["RULES", "FLUSHING_RULES", "EXECUTOR_RULES", "Machine", "prepare", "run_program"]

_NEVER = np.iinfo(np.int64).max


def _lane_rule(name: str, rule: Callable) -> Callable[[Step], None]:
    """Adapt a pure per-lane rule of numeric.PURE_LANE_RULES: read its operands, trap, write its destination."""

    def run(step: Step) -> None:
        args = {field: step.read(field) for field in step.plan.reads}
        outcome = rule(step.instr, args, step.count)
        for code, mask in outcome.traps:
            step.trap(code, mask, lane_record(step.instr, outcome, code))
        step.write_dest(outcome.value)

    run.__name__ = f"lane_rule_{name}"
    return run


#: the executor's own rules (everything that touches memory, control or launch state)
EXECUTOR_RULES: dict[str, Callable[[Step], Any]] = {
    **MEMORY_RULES, **CONTROL_RULES, **ATLAS_STATE_RULES, **COOPERATIVE_RULES, **MATRIX_RULES, **NORM_RULES,
    **SOFTMAX_RULES,
    **ATTENTION_RULES,
    **CONV_RULES, **FFT_RULES,
    **CONTRACT_RULES,
    **COLLECTIVE_RULES,
}
#: instruction name -> rule; every row of the opcode table has one
RULES: dict[str, Callable[[Step], Any]] = {
    **{name: _lane_rule(name, rule) for name, rule in numeric.PURE_LANE_RULES.items()}, **EXECUTOR_RULES,
}


#: the flush mode's rules (CpuBackend(subnormals="flushed"), numeric_flush): RULES with the flushing form of
#: every row of the opcode table's may_flush_subnormals column
FLUSHING_RULES: dict[str, Callable[[Step], Any]] = {
    **RULES, **{name: _lane_rule(name, rule) for name, rule in FLUSHING_LANE_RULES.items()},
    **{name: rule for name, rule in reduction_rules(flushing_lane_reduce).items() if name in FLUSHED_ROWS},
}
assert {name for name in RULES if FLUSHING_RULES[name] is not RULES[name]} == FLUSHED_ROWS, \
    "the flush mode must replace the rule of every may-flush row and only those"


def _use_type_lookup(info: Any, index: int) -> Callable[[str, str | None], Type | None]:
    """The verifier's read type of an operand (path ``field`` or ``field.sub`` for an address register), or None."""
    use_types: Mapping = getattr(info, "use_types", None) or {}

    def lookup(field: str, sub: str | None = None) -> Type | None:
        return use_types.get((index, field if sub is None else f"{field}.{sub}"))

    return lookup


@dataclass(frozen=True)
class Prepared:
    """A program ready to execute: one Plan per instruction and the call depth to plan for."""

    plans: tuple[Plan, ...]
    call_depth: int
    barrier_at: np.ndarray


def prepare(program: Any, info: Any = None, rules: Mapping[str, Callable[[Step], Any]] = RULES) -> Prepared:
    """Plans for every instruction of ``program`` (operand types from the verifier's ``info`` where it has them),
    each with its rule from ``rules`` (RULES, or the flush mode's FLUSHING_RULES).

    Raises ProgramError for a label that is not defined.
    """
    plans = []
    for index, instr in enumerate(program.instructions):
        row = instr.INFO
        lookup = _use_type_lookup(info, index)
        reads, dest = plan_slots(instr, lookup)
        target = None
        address_types = {}
        for op in row.operands:
            if op.kind is OperandKind.LABEL:
                target = program.target(getattr(instr, op.name))
            elif op.kind is OperandKind.ADDR:
                address = getattr(instr, op.name)
                for sub in ("base", "handle_reg", "offset_reg"):
                    if hasattr(address, sub):
                        address_types[(op.name, sub)] = lookup(op.name, sub)
        plans.append(Plan(index, instr, rules[row.name], row.kind, reads, dest, target, address_types))
    barrier_at = np.array([p.instr.INFO.name == "BarSync" for p in plans] + [False], dtype=bool)
    return Prepared(tuple(plans), int(getattr(info, "max_call_depth", 0) or 0), barrier_at)


class Machine:
    """The lane state of one launch and the scheduler that runs it (see the module docstring)."""

    def __init__(self, prepared: Prepared, config: LaunchConfig, memory: MemoryStore, budget: int,
                 accumulator: np.ndarray, geometry: LaneGeometry | None = None) -> None:
        self.prepared = prepared
        self.plans = prepared.plans
        #: the instruction index that ends a lane
        self.end = len(prepared.plans)
        if geometry is None or geometry.config != config:
            geometry = LaneGeometry(config)
        self.geometry = geometry
        n = self.n = geometry.n
        self.regs = RegisterFile(geometry)
        self.preds = PredicateFile(n)
        self.memory = memory
        self.shared_bytes = config.shared_memory
        self.shared = np.zeros(geometry.num_blocks * config.shared_memory, dtype=np.uint8)
        self.accumulator = accumulator
        self.phase = np.zeros(n, dtype=np.uint32)
        self.calls = CallStacks(n, prepared.call_depth)
        self.budget = budget
        self.backjumps = np.zeros(n, dtype=np.int64)
        self.max_backjumps = 0
        self.pc = np.zeros(n, dtype=np.int64)
        self.live = np.ones(n, dtype=bool)
        self.n_live = n
        self.waiting = np.zeros(n, dtype=bool)
        self.n_waiting = 0
        #: (global lane id, code, instruction index, TrapRecord or None) of the lowest lane that trapped in
        #: this stage
        self.first_trap: tuple[int, TrapCode, int, TrapRecord | None] | None = None

    # ---- set-up and traps ------------------------------------------------------
    def preset(self, registers: Mapping[Register, tuple[Type, Any]]) -> None:
        """Give general registers a uniform typed value in every lane (ExecutionParams.registers)."""
        for reg, (ty, value) in registers.items():
            self.regs.write(reg.index, ty, numeric.constant(ty, value, self.n), None)

    def lanes_trapped(self, lanes: np.ndarray, code: TrapCode, index: int, record=None) -> None:
        """Stop ``lanes`` (global ids), which trapped with ``code`` at instruction ``index``; ``record(k)``:
        the TrapRecord of ``lanes[k]`` (made only for the lane the launch reports)."""
        self.live[lanes] = False
        self.n_live -= len(lanes)
        k = int(np.argmin(lanes))
        lowest = int(lanes[k])
        if self.first_trap is None or lowest < self.first_trap[0]:
            self.first_trap = (lowest, TrapCode(code), index, None if record is None else record(k))

    # ---- the launch -----------------------------------------------------------
    def run(self) -> None:
        """Run stage after stage; raises AtlasTrap (a lane or a cooperative step trapped) or
        ExecutionFailed (lanes wait at barriers or cooperative instructions that can never complete)."""
        while True:
            self._run_stage()
            if self.first_trap is not None:
                lane, code, index, record = self.first_trap
                raise trap(code, index, lane, self.plans[index].instr, record, budget=self.budget)
            if self.n_live == 0:
                return
            self._run_cooperative()

    def _run_stage(self) -> None:
        """Run until every live lane has ended or waits at a cooperative instruction."""
        while True:
            group = self._form_group()
            if group is None:
                if self._release_barriers():
                    continue
                return
            self._run_group(*group)

    def _form_group(self) -> tuple[np.ndarray | None, int, int] | None:
        """``(lanes, index, others)``: the runnable lanes at the smallest index (None: every lane of
        the launch), that index, and the smallest index of the other runnable lanes."""
        if self.n_live == self.n and self.n_waiting == 0:
            low, high = int(self.pc.min()), int(self.pc.max())
            if low == high:
                return None, low, _NEVER
            candidates = None
            pcs = self.pc
        else:
            runnable = self.live if self.n_waiting == 0 else (self.live & ~self.waiting)
            candidates = np.flatnonzero(runnable)
            if candidates.size == 0:
                return None
            pcs = self.pc[candidates]
            low = int(pcs.min())
        at_low = pcs == low
        idx = np.flatnonzero(at_low) if candidates is None else candidates[at_low]
        rest = pcs[~at_low]
        others = int(rest.min()) if rest.size else _NEVER
        return (None if len(idx) == self.n else idx), low, others

    def _run_group(self, idx: np.ndarray | None, pc: int, others: int) -> None:
        """Execute instructions for one converged group until it must merge, split, wait or end."""
        plans, end = self.plans, self.end
        count = self.n if idx is None else len(idx)
        while True:
            if pc >= end:
                self._end_lanes(idx, count)
                return
            if pc >= others:
                self._store_pc(idx, pc)
                return
            plan = plans[pc]
            if plan.kind is ExecKind.COOPERATIVE:
                self._wait(idx, count, pc)
                return
            step = Step(self, plan, idx, count)
            flow = plan.rule(step)
            if flow is WAIT:
                if count == self.n_live:  # the whole launch is here: every block has arrived
                    pc += 1
                    continue
                self._wait(idx, count, pc)
                return
            if step.trapped is not None:
                keep = ~step.trapped
                idx = step.lanes()[keep]
                count = len(idx)
                if isinstance(flow, np.ndarray):
                    flow = flow[keep]
                if count == 0:
                    return
            if flow is None:
                pc += 1
            elif isinstance(flow, np.ndarray):
                first = flow[0]
                if not (flow == first).all():
                    self._diverge(idx, flow)
                    return
                pc = int(first)
            else:
                pc = int(flow)

    def _store_pc(self, idx: np.ndarray | None, pc: int) -> None:
        if idx is None:
            self.pc.fill(pc)
        else:
            self.pc[idx] = pc

    def _end_lanes(self, idx: np.ndarray | None, count: int) -> None:
        if idx is None:
            self.live.fill(False)
        else:
            self.live[idx] = False
        self.n_live -= count

    def _diverge(self, idx: np.ndarray | None, next_pcs: np.ndarray) -> None:
        lanes = self.geometry.global_ids() if idx is None else idx
        self.pc[lanes] = next_pcs
        ended = next_pcs >= self.end
        if ended.any():
            self._end_lanes(lanes[ended], int(ended.sum()))

    def _wait(self, idx: np.ndarray | None, count: int, pc: int) -> None:
        self._store_pc(idx, pc)
        if idx is None:
            self.waiting.fill(True)
        else:
            self.waiting[idx] = True
        self.n_waiting += count

    # ---- barriers and cooperative steps --------------------------------------------
    def _release_barriers(self) -> bool:
        """Let through the BarSync waiters of every block none of whose live lanes waits at a
        cooperative instruction; True when some were let through."""
        if self.n_waiting == 0:
            return False
        waiters = np.flatnonzero(self.waiting & self.live)
        at_barrier = self.prepared.barrier_at[self.pc[waiters]]
        if not at_barrier.any():
            return False
        if not at_barrier.all():
            blocks = self.geometry.block_index()[waiters]
            at_barrier &= ~np.isin(blocks, blocks[~at_barrier])
        released = waiters[at_barrier]
        if released.size == 0:
            return False
        self.waiting[released] = False
        self.n_waiting -= released.size
        self.pc[released] += 1
        return True

    def _run_cooperative(self) -> None:
        waiters = np.flatnonzero(self.waiting & self.live)
        pcs = self.pc[waiters]
        low, high = int(pcs.min()), int(pcs.max())
        plan = self.plans[low]
        if low != high or plan.kind is not ExecKind.COOPERATIVE:
            names = ", ".join(f"{int(i)} ({self.plans[int(i)].instr.INFO.name})" for i in np.unique(pcs))
            raise ExecutionFailed(
                f"lanes wait at instructions {names}: a barrier or cooperative instruction that not every lane "
                "reaches (BarSync needs block-uniform, cooperative instructions grid-uniform control flow)")
        plan.rule(CooperativeStep(self, plan))
        self.waiting.fill(False)
        self.n_waiting = 0
        self.pc[waiters] = plan.index + 1


def run_program(program: Any, info: Any, config: LaunchConfig, memory: MemoryStore, *, budget: int,
                registers: Mapping[Register, tuple[Type, Any]], accumulator: np.ndarray,
                prepared: Prepared | None = None, geometry: LaneGeometry | None = None) -> None:
    """Run ``program`` (already verified; ``info`` is the verifier's ProgramInfo or None) over ``config``.

    Writes buffers in ``memory`` and sums into ``accumulator`` (96 f64, zeroed
    by the caller). ``geometry`` may be a LaneGeometry of an earlier launch of
    the same config (its read-only lane-id arrays are reused). Raises
    AtlasTrap or ExecutionFailed.
    """
    machine = Machine(prepared or prepare(program, info), config, memory, budget, accumulator, geometry)
    machine.preset(registers)
    machine.run()
