"""One compile pipeline for every backend: cached verify -> optimization hook -> lowering plan.

A backend keeps one :class:`CompilePipeline` and asks it, per launch, for the
:class:`PipelineProgram` of ``(program, preset register types)``:

1. **verify** (``atlas_web.verify.verify`` with the preset register types), cached
   in an ``atlas_web.cache.ProgramCache`` keyed by the program's digest and the
   preset types (``preset_key``);
2. **optimize** at the pipeline's level (``optimize=0/1/2``, per backend, a launch may ask for
   another: ``ExecutionParams.optimize``): level 0 is the identity; otherwise the hook registered
   with :func:`register_optimizer`, by default ``atlas_web.opt``'s ProgramOptimizer for the
   backend (``target``: what it supports and computes exactly). An optimizer returns an
   :class:`Optimized`: the program it made, its ProgramInfo, and ``source_map``,
   for each instruction index of the optimized program the index of the
   original instruction it comes from, so traps (:meth:`PipelineProgram.original_trap`) and
   the budget still name the original instruction;
3. **plan**: the shared lowering plan (``atlas_web.lowering.plan.plan_program``)
   of the optimized program, built on first use per form and cached with it,
   for the compiled backends' code generators (the reference needs none).

Nothing is copied: cached values are shared between launches. Standard library only.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .cache import ProgramCache
from .errors import AtlasTrap, ExecutionFailed
from .isa.registers import Register
from .isa.types import Type

if TYPE_CHECKING:
    from .lowering.plan import LoweringPlan
    from .program import Program
    from .verify import ProgramInfo

__all__ = ["CompilePipeline", "Optimized", "PipelineProgram", "register_optimizer", "registered_optimizer",
           "preset_key", "identity_source_map", "DEFAULT_OPTIMIZE", "Optimizer"]

#: the optimization level of a backend that names none (atlas_web.opt: 0 none, 1 one round, 2 to a fixpoint)
DEFAULT_OPTIMIZE = 1


def preset_key(preset_types: Mapping[Register, Type]) -> tuple:
    """The hashable form of preset register types: sorted ``(register index, type code)`` pairs."""
    return tuple(sorted((reg.index, ty.code) for reg, ty in preset_types.items()))


def identity_source_map(program: "Program") -> tuple[int, ...]:
    """The source map of an unchanged program: instruction ``i`` comes from instruction ``i``."""
    return tuple(range(len(program.instructions)))


@dataclass(frozen=True)
class Optimized:
    """What the optimization hook returns: the program to lower, its ProgramInfo, and ``source_map``
    (``source_map[i]``: the original instruction index of optimized instruction ``i``)."""

    program: "Program"
    info: "ProgramInfo"
    source_map: tuple[int, ...]


#: an optimization hook: ``(program, info, level, target) -> Optimized`` (level 1 or 2; ``target``: the
#: backend, or None)
Optimizer = Callable[["Program", "ProgramInfo", int, Any], Optimized]


def _default_optimizer(program: "Program", info: "ProgramInfo", level: int, target: Any) -> Optimized:
    """atlas_web.opt's ProgramOptimizer at ``level`` for ``target`` (None: the reference's semantics)."""
    from .opt import EXACT, ProgramOptimizer
    done = ProgramOptimizer(level, target=EXACT if target is None else target).optimize(program, info)
    return Optimized(done.program, done.info, done.source_map)


#: the optimization hook; None runs the default (atlas_web.opt)
_OPTIMIZER: list[Optimizer | None] = [None]


def register_optimizer(optimizer: Optimizer | None) -> None:
    """Install ``optimizer`` as the pipeline's optimization hook (None restores the default, atlas_web.opt's
    ProgramOptimizer).

    The optimizer gets a verified program, its ProgramInfo, the level (1 or 2: level 0 never calls it) and
    the target backend (or None), and returns an :class:`Optimized` whose program verifies with the same
    preset types and whose ``source_map`` has one original index per instruction. It applies to programs
    compiled after the call (cached results are kept). Raises TypeError for something that is not callable.
    """
    if optimizer is not None and not callable(optimizer):
        raise TypeError(f"register_optimizer needs a callable or None, got {optimizer!r}")
    _OPTIMIZER[0] = optimizer


def registered_optimizer() -> Optimizer | None:
    """The installed optimization hook, or None (the default)."""
    return _OPTIMIZER[0]


@dataclass
class PipelineProgram:
    """A program through the pipeline: ``digest`` (the original program's), ``info`` (ProgramInfo of
    what runs), ``program`` (what runs: the optimized program), ``source_map`` (optimized -> original
    instruction index), ``preset_key``, ``level`` (the optimization level); ``plans`` caches the lowering
    plan per form (see :meth:`CompilePipeline.plan`) and what a backend derives from the program alone."""

    digest: str
    program: "Program"
    info: "ProgramInfo"
    source_map: tuple[int, ...]
    preset_key: tuple
    level: int = 0
    plans: dict = field(default_factory=dict)

    def original_index(self, index: int) -> int:
        """The original program's instruction index of instruction ``index`` of what runs."""
        return self.source_map[index] if 0 <= index < len(self.source_map) else index

    def original_trap(self, trap: AtlasTrap) -> AtlasTrap:
        """``trap`` (raised running ``program``) as the original program's: at its original index, everything
        else kept (the optimizer never changes an instruction that may trap: its text and numbers stand)."""
        index = self.original_index(trap.instruction_index)
        if index == trap.instruction_index:
            return trap
        from .trap_report import renumbered
        return renumbered(trap, index)


class CompilePipeline:
    """Cached verify -> optimization hook -> lowering plan, for one backend (``capacity`` programs kept).

    ``programs`` maps ``(digest, preset_key, level)`` to the PipelineProgram. The last program compiled is
    looked up first (``ProgramCache.last``, by identity: a launch loop passes the same Program object), which
    skips the cache for repeated launches. ``optimize``: the level programs are optimized at unless a compile
    names another (0, 1 or 2); ``target``: the backend the optimizer rewrites for (its ``supports`` and
    ``ulp_tolerance``), None for the reference's semantics; held weakly (the backend owns its pipeline: a
    strong reference back made a cycle, and an unclosed backend lived until the cycle collector ran). Raises
    ExecutionFailed for a bad level (as for a backend's other arguments). Thread-safe as ``ProgramCache`` is
    (two threads may both build a missing entry; one is kept).
    """

    def __init__(self, capacity: int = 256, *, optimize: int = DEFAULT_OPTIMIZE, target: Any = None) -> None:
        from .launch import check_optimize
        self.programs = ProgramCache(capacity, plain_keys=True)
        self.optimize = check_optimize(optimize, "optimize")
        self._target = None if target is None else weakref.ref(target)

    @property
    def target(self) -> Any:
        """The backend the optimizer rewrites for, or None (the reference's semantics). Raises
        ExecutionFailed once that backend was collected (its pipeline outlived it)."""
        if self._target is None:
            return None
        target = self._target()
        if target is None:
            raise ExecutionFailed("this CompilePipeline's target backend was collected: a pipeline compiles "
                                  "for its backend only while that backend lives")
        return target

    def compile(self, program: "Program", preset_types: Mapping[Register, Type], key: tuple | None = None,
                *, optimize: int | None = None) -> PipelineProgram:
        """The PipelineProgram of ``program`` with ``preset_types`` (``key``: their ``preset_key``, when the
        caller has it) at optimization level ``optimize`` (None: the pipeline's). Raises ProgramError (does
        not verify) and what the optimizer raises."""
        if key is None:
            key = preset_key(preset_types) if preset_types else ()
        level = self.optimize if optimize is None else optimize
        last = self.programs.last   # ((program object, preset key, level), PipelineProgram) of the last compile
        if last is not None and last[0][0] is program and last[0][1] == key and last[0][2] == level:
            return last[1]
        digest = program.digest()
        compiled = self.programs.get_or_build((digest, key, level),
                                              lambda: self._build(program, dict(preset_types), key, digest, level))
        self.programs.remember((program, key, level), compiled)
        return compiled

    def _build(self, program: "Program", preset_types: dict, key: tuple, digest: str, level: int
               ) -> PipelineProgram:
        from .verify import verify
        info = verify(program, preset_types=preset_types)
        if level == 0:
            return PipelineProgram(digest, program, info, identity_source_map(program), key, level)
        optimizer = _OPTIMIZER[0] or _default_optimizer
        optimized = optimizer(program, info, level, self.target)
        if len(optimized.source_map) != len(optimized.program.instructions):
            raise ValueError(f"the optimizer's source map has {len(optimized.source_map)} entries for "
                             f"{len(optimized.program.instructions)} instructions")
        return PipelineProgram(digest, optimized.program, optimized.info, tuple(optimized.source_map), key, level)

    @staticmethod
    def plan(compiled: PipelineProgram, *, form: str = "structured", backend: str = "lowering") -> "LoweringPlan":
        """The lowering plan of ``compiled`` in ``form`` (see ``plan_program``), built once and kept with it.
        Raises UnsupportedOperation naming ``backend`` (too many instruction copies)."""
        plan = compiled.plans.get(form)
        if plan is None:
            from .lowering.plan import plan_program
            plan = compiled.plans.setdefault(form, plan_program(compiled.info, form=form, backend=backend))
        return plan

    def clear(self) -> None:
        """Drop every cached program."""
        self.programs.clear()

