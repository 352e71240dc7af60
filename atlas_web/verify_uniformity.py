"""Uniformity: which values and which code are the same in every lane of the grid or block.

Levels (:class:`Uniformity`, ordered from most to least uniform):

* GRID: the same in every lane of the launch: immediates, GRID_DIM_*, BLOCK_DIM_*,
  preset registers, the zero/false at entry, results of cooperative instructions;
* BLOCK: the same in every lane of a block: BLOCK_IDX_*;
* VARYING: LANE_IDX_*, GLOBAL_LANE_ID, loads (LDG, LDS, PoolLoad, the per-lane
  Reduce*), PhaseGet, and whatever depends on them.

A definition has the level of its least uniform read, raised to the level of the
code it stands in. Code has the level of the conditional branches it is
control-dependent on (computed with post-dominators): the level of the branch's
condition (BRA's predicate, LOOP's count) or of the code holding the branch,
whichever is higher; a subroutine's code is at least at the level of its call
sites. A definition under a divergent branch is therefore VARYING, and so is a
value that merges definitions from both sides of one, or from different
iterations of a loop whose exit is divergent.

Ended lanes. A lane that has ended (EXIT, RET in the main procedure, running past
the end) counts as arrived at every later BarSync and cooperative step. The
*terminal region* of a procedure is the set of blocks from which every path ends
the lane without passing a BarSync or a cooperative instruction (also inside
subroutines it calls). The control dependences of the other blocks are computed
on the graph without the terminal region, so a branch whose other side only ends
lanes (``if lane >= n: exit``) does not make the code after it divergent; blocks
of the terminal region take theirs from the whole graph.

Rules: a BarSync must stand in code of level GRID or BLOCK, a cooperative
instruction in code of level GRID. Code in no procedure (unreachable) is not
checked.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass

from .errors import ProgramError
from .isa.opcodes import ExecKind
from .isa.registers import SpecialRegister
from .lowering.cfg import (
    ControlFlowGraph, Procedure, Terminator, control_dependences, immediate_post_dominators, predecessors_of,
)
from .verify_dataflow import ReachingDefinitions
from .verify_operands import OperandAccess, instruction_text

__all__ = ["Uniformity", "UniformityFacts", "analyse_uniformity", "SPECIAL_REGISTER_LEVELS", "RESULT_LEVELS"]


class Uniformity(enum.IntEnum):
    """How much a value or a piece of code varies between lanes (higher varies more)."""

    GRID = 0
    BLOCK = 1
    VARYING = 2


_G, _B, _V = Uniformity.GRID, Uniformity.BLOCK, Uniformity.VARYING

#: the level of each special register
SPECIAL_REGISTER_LEVELS: dict[SpecialRegister, Uniformity] = {
    SpecialRegister.LANE_IDX_X: _V, SpecialRegister.LANE_IDX_Y: _V, SpecialRegister.LANE_IDX_Z: _V,
    SpecialRegister.GLOBAL_LANE_ID: _V,
    SpecialRegister.BLOCK_IDX_X: _B, SpecialRegister.BLOCK_IDX_Y: _B, SpecialRegister.BLOCK_IDX_Z: _B,
    SpecialRegister.BLOCK_DIM_X: _G, SpecialRegister.BLOCK_DIM_Y: _G, SpecialRegister.BLOCK_DIM_Z: _G,
    SpecialRegister.GRID_DIM_X: _G, SpecialRegister.GRID_DIM_Y: _G, SpecialRegister.GRID_DIM_Z: _G,
}

#: instruction name -> the least level of what it writes (others: GRID, raised by reads and control)
RESULT_LEVELS: dict[str, Uniformity] = {
    "LDG": _V, "LDS": _V, "PoolLoad": _V, "PhaseGet": _V,
    "ReduceAdd": _V, "ReduceMin": _V, "ReduceMax": _V, "ReduceMul": _V,
}

#: branching instruction name -> the operand that decides the branch
_CONDITION_OPERAND = {"BRA": "pred", "LOOP": "count"}
_CONDITION_WORDS = {"BRA": "predicate", "LOOP": "count"}

#: the level each synchronizing instruction's code may have at most, and how to say it
_SYNC_LIMITS = {ExecKind.SYNC: (_B, "must be reached by every lane of its block"),
                ExecKind.COOPERATIVE: (_G, "must stand in grid-uniform control flow")}


@dataclass(frozen=True)
class UniformityFacts:
    """``definition_levels[id]`` per definition id, ``branch_levels`` (conditional branch index ->
    level of its condition) and ``block_levels`` (block id -> level of its code, the highest over
    the procedures holding it; unreachable blocks are absent)."""

    definition_levels: list[Uniformity]
    branch_levels: dict[int, Uniformity]
    block_levels: dict[int, Uniformity]


def _is_sync(instr) -> bool:
    return instr.INFO.name == "BarSync" or instr.INFO.kind is ExecKind.COOPERATIVE


def _terminal_region(proc: Procedure, syncs: set[int]) -> set[int]:
    """Blocks of ``proc`` from which every path ends the lane without passing a block in ``syncs``."""
    candidates = {b for b in proc.blocks if b not in syncs}
    preds = predecessors_of(proc.successors)
    region = {b for b in candidates if proc.ends_lane(b)}
    stack = list(region)
    while stack:
        for pred in preds[stack.pop()]:
            if pred in candidates and pred not in region:
                region.add(pred)
                stack.append(pred)
    stack = [b for b in region if any(s not in region for s in proc.successors[b])]
    while stack:
        b = stack.pop()
        if b in region:
            region.discard(b)
            stack.extend(p for p in preds[b] if p in region)
    return region


def _dependences(proc: Procedure, syncs: set[int]) -> dict[int, tuple[int, ...]]:
    terminal = _terminal_region(proc, syncs)
    pruned = {b: tuple(s for s in proc.successors[b] if s not in terminal) for b in proc.blocks if b not in terminal}
    deps = control_dependences(pruned, immediate_post_dominators(pruned)) if pruned else {}
    if terminal:
        full = proc.control_dependences
        for b in terminal:
            deps[b] = full[b]
    return deps


def analyse_uniformity(program, cfg: ControlFlowGraph, rd: ReachingDefinitions,
                       reads: list[list[OperandAccess]]) -> UniformityFacts:
    """Levels of every definition, branch and block. Raises ProgramError for a BarSync in
    lane-divergent code or a cooperative instruction in code that is not grid-uniform, naming
    the branch it depends on. ``cfg.call_order()`` must succeed."""
    instructions = program.instructions
    use_ids = rd.use_ids
    blocks = cfg.blocks
    order = cfg.call_order()

    sync_blocks = {blk.id for blk in blocks if any(_is_sync(instructions[i]) for i in range(blk.start, blk.end))}
    proc_syncs: dict[int, bool] = {}
    for entry in reversed(order):
        proc = cfg.procedures[entry]
        proc_syncs[entry] = any(b in sync_blocks or (blocks[b].terminator is Terminator.CALL
                                                     and proc_syncs.get(blocks[b].target, False))
                                for b in proc.blocks)
    syncs = sync_blocks | {blk.id for blk in blocks
                           if blk.terminator is Terminator.CALL and proc_syncs.get(blk.target, False)}
    dependents: dict[int, dict[int, list[int]]] = {}
    for entry, proc in cfg.procedures.items():
        inverse: dict[int, list[int]] = {}
        for b, branches in _dependences(proc, syncs).items():
            for a in branches:
                inverse.setdefault(a, []).append(b)
        dependents[entry] = inverse

    levels: list[Uniformity] = [_G] * len(rd.sites)
    for register, level in SPECIAL_REGISTER_LEVELS.items():
        levels[int(register)] = level
    users: list[list[int]] = [[] for _ in rd.sites]
    for (index, _), idents in use_ids.items():
        for ident in idents:
            users[ident].append(index)
    control: dict[tuple[int, int], tuple[Uniformity, int]] = {}
    branch_levels: dict[int, Uniformity] = {}
    owners = cfg.procedures_of_block
    queued = [True] * len(instructions)
    work = deque(range(len(instructions)))

    def raise_control(entry: int, block: int, level: Uniformity, cause: int) -> None:
        stack = [(entry, block)]
        while stack:
            entry, block = stack.pop()
            if control.get((entry, block), (_G, -1))[0] >= level:
                continue
            control[(entry, block)] = (level, cause)
            blk = blocks[block]
            for i in range(blk.start, blk.end):
                if not queued[i]:
                    queued[i] = True
                    work.append(i)
            stack.extend((entry, d) for d in dependents[entry].get(block, ()))
            if blk.terminator is Terminator.CALL:
                stack.extend((blk.target, b) for b in cfg.procedures[blk.target].blocks)  # type: ignore[index]

    def control_of(index: int) -> tuple[Uniformity, int]:
        b = cfg.block_of[index]
        return max((control.get((e, b), (_G, -1)) for e in owners[b]), default=(_G, -1))

    while work:
        index = work.popleft()
        queued[index] = False
        instr = instructions[index]
        info = instr.INFO
        if info.kind is ExecKind.COOPERATIVE:
            level = _G
        else:
            level = max(RESULT_LEVELS.get(info.name, _G), control_of(index)[0])
            for acc in reads[index]:
                for ident in use_ids.get((index, acc.path), ()):
                    if levels[ident] > level:
                        level = levels[ident]
        for _, ident in rd.def_ids[index]:
            if level > levels[ident]:
                levels[ident] = level
                for user in users[ident]:
                    if not queued[user]:
                        queued[user] = True
                        work.append(user)
        condition = _CONDITION_OPERAND.get(info.name)
        if condition is not None and getattr(instr, condition) is not None:
            level = max((levels[d] for d in use_ids.get((index, condition), ())), default=_G)
            if level > branch_levels.get(index, _G):
                branch_levels[index] = level
                b = cfg.block_of[index]
                for entry in owners[b]:
                    for dependent in dependents[entry].get(b, ()):
                        raise_control(entry, dependent, level, index)
            branch_levels.setdefault(index, level)

    for index, instr in enumerate(instructions):
        limit = _SYNC_LIMITS.get(instr.INFO.kind) if _is_sync(instr) else None
        if limit is None or not owners[cfg.block_of[index]]:
            continue
        level, cause = control_of(index)
        if level > limit[0]:
            branch = instructions[cause]
            operand = _CONDITION_OPERAND[branch.INFO.name]
            among = "lanes of a block" if branch_levels[cause] is _V else "blocks"
            raise ProgramError(
                f"{instr.INFO.name} {limit[1]}, but it depends on the branch at {cause} ({instruction_text(branch)}), "
                f"whose {_CONDITION_WORDS[branch.INFO.name]} {getattr(branch, operand)} may differ between {among}",
                index=index, text=instruction_text(instr))
    block_levels = {}
    for (entry, block), (level, _) in control.items():
        block_levels[block] = max(level, block_levels.get(block, _G))
    for blk in blocks:
        if owners[blk.id]:
            block_levels.setdefault(blk.id, _G)
    return UniformityFacts(levels, branch_levels, block_levels)
