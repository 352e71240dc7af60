"""The pass manager: ``ProgramOptimizer(level).optimize(program) -> OptimizedProgram``.

Levels: 0 runs nothing (the program as given); 1 runs one round of every pass of
``atlas_web.opt.passes.PASSES`` in order; 2 repeats rounds until one changes nothing (at most
``MAX_ROUNDS``). The passes of a round share one analysis (``atlas_web.opt.analysis``: the verifier's
ProgramInfo plus def-use and blocks) of the round's program; their changes are made together at the end of
the round and the result verified again (with the same preset register types), so every round starts from a
verified program and the result verifies.

The **source map** gives, for every instruction of the result, the index of the original instruction it
came from (a MOV_IMM folded from an ADD, a MAD fused at an ADD's place: the ADD's index). Passes only remove
or replace instructions in place and never touch one that may trap or jumps, so those keep their text,
their order and their operands' values: a trap of the result, mapped through the source map
(:meth:`OptimizedProgram.original_trap`), has the original's code, index, lane and message, and every lane
takes the same backward jumps (the budget). Labels move with the instructions (one on a removed instruction
names the next one kept). Standard library only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping

from ..errors import AtlasTrap, ProgramError
from ..launch import OPTIMIZE_LEVELS, check_optimize
from ..program import Program
from ..trap_report import renumbered
from .analysis import Analysis
from .passes import EXACT, PASSES, Changes, Target

if TYPE_CHECKING:
    from ..verify import ProgramInfo

__all__ = ["ProgramOptimizer", "OptimizedProgram", "LEVELS", "MAX_ROUNDS"]

#: the optimization levels (0: none, 1: one round of every pass, 2: rounds until nothing changes)
LEVELS = OPTIMIZE_LEVELS
#: the most rounds level 2 runs
MAX_ROUNDS = 8


@dataclass(frozen=True)
class OptimizedProgram:
    """``program`` (what runs), ``source`` (what was given), ``source_map[i]``: the index in ``source`` of
    instruction ``i`` of ``program``; ``info``: ``program``'s ProgramInfo; ``removed`` / ``replaced``:
    instructions each pass removed or replaced, by pass name; ``seconds``: the time it took."""

    source: Program
    program: Program
    source_map: tuple[int, ...]
    info: "ProgramInfo"
    level: int
    removed: Mapping[str, int] = field(default_factory=dict)
    replaced: Mapping[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def original_index(self, index: int) -> int:
        """The source program's index of instruction ``index`` of ``program``."""
        return self.source_map[index]

    def original_trap(self, trap: AtlasTrap) -> AtlasTrap:
        """``trap`` (raised running ``program``) as the source program's: its instruction index (the trapping
        instruction and its text are the source's, which no pass changes)."""
        return renumbered(trap, self.source_map[trap.instruction_index])


def _applied(program: Program, changes: Changes) -> tuple[Program, list[int]]:
    """``program`` with ``changes`` made, and for each resulting instruction its index in ``program``."""
    instructions, origin, starts = [], [], []
    for index, instr in enumerate(program.instructions):
        starts.append(len(instructions))
        new = changes.get(index, instr)
        if new is not None:
            instructions.append(new)
            origin.append(index)
    starts.append(len(instructions))
    labels = {name: starts[at] for name, at in program.labels.items()}
    return Program(instructions, labels), origin


class ProgramOptimizer:
    """Optimizes programs at ``level`` (0, 1 or 2) for ``target`` (an object with ``supports(op, ty)`` and
    ``ulp_tolerance(op, ty)``, e.g. a Backend: a rewrite it cannot run or would round otherwise is not made;
    default: the reference's exact semantics). ``passes``: names of PASSES to run (default: all, in order).
    Raises ValueError for a bad level or an unknown pass name."""

    def __init__(self, level: int = 1, *, target: Target = EXACT, passes: tuple[str, ...] | None = None) -> None:
        self.level = check_optimize(level, "ProgramOptimizer level", ValueError)
        self.target = target
        names = tuple(PASSES) if passes is None else tuple(passes)
        unknown = [n for n in names if n not in PASSES]
        if unknown:
            raise ValueError(f"unknown optimization passes {unknown} (known: {', '.join(PASSES)})")
        self.passes: tuple[tuple[str, Callable], ...] = tuple((n, PASSES[n]) for n in names)

    def optimize(self, program: Program, info: "ProgramInfo | None" = None, *,
                 preset_types: Mapping | None = None) -> OptimizedProgram:
        """The optimized ``program`` (verified with ``preset_types``; ``info``: its ProgramInfo when the caller
        has it). Raises ProgramError when ``program`` does not verify, and (a bug of a pass, never expected)
        when a pass made a program that does not verify, naming the pass."""
        from ..verify import verify

        start = time.perf_counter()
        if not isinstance(program, Program):
            raise ProgramError(f"ProgramOptimizer.optimize takes a Program, got {type(program).__name__}")
        if info is None:
            info = verify(program, preset_types=preset_types)
        presets = dict(info.preset_types)
        current, current_info = program, info
        source_map = list(range(len(program.instructions)))
        removed: dict[str, int] = {}
        replaced: dict[str, int] = {}
        rounds = 0 if self.level == 0 else 1 if self.level == 1 else MAX_ROUNDS
        for _ in range(rounds):
            analysis = Analysis(current_info)
            # what the target cannot run stays as written (mapped to itself: no pass touches it), so the
            # backend refuses the program as it would unoptimized, even where that instruction is dead
            pinned: Changes = {i: instr for i, instr in enumerate(current.instructions)
                               if not self.target.supports(instr.INFO.name, instr.type)}
            taken: Changes = dict(pinned)
            for name, run in self.passes:
                changes = run(analysis, self.target, taken)
                gone = sum(1 for v in changes.values() if v is None)
                removed[name] = removed.get(name, 0) + gone
                replaced[name] = replaced.get(name, 0) + len(changes) - gone
                taken.update(changes)
            if len(taken) == len(pinned):
                break
            current, origin = _applied(current, taken)
            source_map = [source_map[k] for k in origin]
            try:
                current_info = verify(current, preset_types=presets)
            except ProgramError as error:
                raise ProgramError(f"optimization passes {', '.join(n for n, _ in self.passes)} made a program "
                                   f"that does not verify (a bug of the optimizer): {error}") from None
        return OptimizedProgram(program, current, tuple(source_map), current_info, self.level, removed, replaced,
                                time.perf_counter() - start)
