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

    # plain ints in the loop (0 GRID, 1 BLOCK, 2 VARYING); Uniformity members in the result
    levels = [0] * len(rd.sites)
    for register, level in SPECIAL_REGISTER_LEVELS.items():
        levels[rd.entry_ids[register]] = int(level)
    users: list[list[int]] = [[] for _ in rd.sites]
    condition_read: list[int | None] = [None] * len(instructions)
    for index, row in enumerate(use_ids):
        if row is None:
            continue
        for idents in row:
            for ident in idents:
                users[ident].append(index)
        condition = _CONDITION_OPERAND.get(instructions[index].INFO.name)
        for k, acc in enumerate(reads[index]):
            if acc.path == condition:
                condition_read[index] = k
    result_levels = [0 if ins.INFO.kind is ExecKind.COOPERATIVE else int(RESULT_LEVELS.get(ins.INFO.name, _G))
                     for ins in instructions]
    control: dict[tuple[int, int], int] = {}
    block_control: list[tuple[int, int]] = [(0, -1)] * len(blocks)  # highest over procedures, with its cause
    branch_levels: dict[int, int] = {}
    owners = cfg.procedures_of_block
    block_of = cfg.block_of
    relevant = [index for index in range(len(instructions))
                if use_ids[index] is not None and (rd.def_ids[index] or condition_read[index] is not None)]
    queued = [False] * len(instructions)
    for index in relevant:
        queued[index] = True
    work = deque(relevant)

    def raise_control(entry: int, block: int, level: int, cause: int) -> None:
        stack = [(entry, block)]
        while stack:
            entry, block = stack.pop()
            if control.get((entry, block), 0) >= level:
                continue
            control[(entry, block)] = level
            blk = blocks[block]
            if level > block_control[block][0]:
                block_control[block] = (level, cause)
                for i in range(blk.start, blk.end):
                    if not queued[i] and (rd.def_ids[i] or condition_read[i] is not None):
                        queued[i] = True
                        work.append(i)
            stack.extend((entry, d) for d in dependents[entry].get(block, ()))
            if blk.terminator is Terminator.CALL:
                stack.extend((blk.target, b) for b in cfg.procedures[blk.target].blocks)  # type: ignore[index]

    while work:
        index = work.popleft()
        queued[index] = False
        row = use_ids[index]
        if instructions[index].INFO.kind is ExecKind.COOPERATIVE:
            level = 0
        else:
            level = max(result_levels[index], block_control[block_of[index]][0])
            for idents in row:  # type: ignore[union-attr]
                for ident in idents:
                    if levels[ident] > level:
                        level = levels[ident]
        for ident in rd.def_ids[index]:
            if level > levels[ident]:
                levels[ident] = level
                for user in users[ident]:
                    if not queued[user]:
                        queued[user] = True
                        work.append(user)
        k = condition_read[index]
        if k is not None:
            level = max((levels[d] for d in row[k]), default=0)  # type: ignore[index]
            if level > branch_levels.get(index, 0):
                b = block_of[index]
                for entry in owners[b]:
                    for dependent in dependents[entry].get(b, ()):
                        raise_control(entry, dependent, level, index)
            branch_levels[index] = max(level, branch_levels.get(index, 0))

    for index, instr in enumerate(instructions):
        limit = _SYNC_LIMITS.get(instr.INFO.kind) if _is_sync(instr) else None
        if limit is None or not owners[block_of[index]]:
            continue
        level, cause = block_control[block_of[index]]
        if level > limit[0]:
            branch = instructions[cause]
            operand = _CONDITION_OPERAND[branch.INFO.name]
            among = "lanes of a block" if branch_levels[cause] == _V else "blocks"
            raise ProgramError(
                f"{instr.INFO.name} {limit[1]}, but it depends on the branch at {cause} ({instruction_text(branch)}), "
                f"whose {_CONDITION_WORDS[branch.INFO.name]} {getattr(branch, operand)} may differ between {among}",
                index=index, text=instruction_text(instr))
    block_levels = {blk.id: Uniformity(block_control[blk.id][0]) for blk in blocks if owners[blk.id]}
    return UniformityFacts([Uniformity(level) for level in levels],
                           {i: Uniformity(level) for i, level in branch_levels.items()}, block_levels)
