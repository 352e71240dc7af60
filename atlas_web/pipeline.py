"""One compile pipeline for every backend: cached verify -> optimization hook -> lowering plan.

A backend keeps one :class:`CompilePipeline` and asks it, per launch, for the
:class:`PipelineProgram` of ``(program, preset register types)``:

1. **verify** (``atlas_web.verify.verify`` with the preset register types), cached
   in an ``atlas_web.cache.ProgramCache`` keyed by the program's digest and the
   preset types (``preset_key``);
2. **optimize**: the hook registered with :func:`register_optimizer` (none is
   registered today: the identity). An optimizer returns an
   :class:`Optimized`: the program it made, its ProgramInfo, and ``source_map``,
   for each instruction index of the optimized program the index of the
   original instruction it comes from, so traps and the budget still name the
   original instruction (the identity map today);
3. **plan**: the shared lowering plan (``atlas_web.lowering.plan.plan_program``)
   of the optimized program, built on first use per form and cached with it,
   for the compiled backends' code generators (the reference needs none).

Nothing is copied: cached values are shared between launches. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .cache import ProgramCache
from .isa.registers import Register
from .isa.types import Type

if TYPE_CHECKING:
    from .lowering.plan import LoweringPlan
    from .program import Program
    from .verify import ProgramInfo

__all__ = ["CompilePipeline", "Optimized", "PipelineProgram", "register_optimizer", "registered_optimizer",
           "preset_key", "identity_source_map"]


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


#: the optimization hook: ``(program, info) -> Optimized``; None runs the identity
_OPTIMIZER: list[Callable[["Program", "ProgramInfo"], Optimized] | None] = [None]


def register_optimizer(optimizer: Callable[["Program", "ProgramInfo"], Optimized] | None) -> None:
    """Install ``optimizer`` as the pipeline's optimization hook (None restores the identity).

    The optimizer gets a verified program and its ProgramInfo and returns an :class:`Optimized` whose
    program verifies with the same preset types and whose ``source_map`` has one original index per
    instruction. It applies to programs compiled after the call (cached results are kept). Raises
    TypeError for something that is not callable.
    """
    if optimizer is not None and not callable(optimizer):
        raise TypeError(f"register_optimizer needs a callable or None, got {optimizer!r}")
    _OPTIMIZER[0] = optimizer


def registered_optimizer() -> Callable[["Program", "ProgramInfo"], Optimized] | None:
    """The installed optimization hook, or None (the identity)."""
    return _OPTIMIZER[0]


@dataclass
class PipelineProgram:
    """A program through the pipeline: ``digest`` (the original program's), ``info`` (ProgramInfo of
    what runs), ``program`` (what runs: the optimized program), ``source_map`` (optimized -> original
    instruction index), ``preset_key``; ``plans`` caches the lowering plan per form (see
    :meth:`CompilePipeline.plan`) and what a backend derives from the program alone."""

    digest: str
    program: "Program"
    info: "ProgramInfo"
    source_map: tuple[int, ...]
    preset_key: tuple
    plans: dict = field(default_factory=dict)

    def original_index(self, index: int) -> int:
        """The original program's instruction index of instruction ``index`` of what runs."""
        return self.source_map[index] if 0 <= index < len(self.source_map) else index


class CompilePipeline:
    """Cached verify -> optimization hook -> lowering plan, for one backend (``capacity`` programs kept).

    ``programs`` maps ``(digest, preset_key)`` to the PipelineProgram. The last program compiled is looked
    up first (``ProgramCache.last``, by identity: a launch loop passes the same Program object), which
    skips the cache for repeated launches. Thread-safe as ``ProgramCache``
    is (two threads may both build a missing entry; one is kept).
    """

    def __init__(self, capacity: int = 256) -> None:
        self.programs = ProgramCache(capacity, plain_keys=True)

    def compile(self, program: "Program", preset_types: Mapping[Register, Type], key: tuple | None = None
                ) -> PipelineProgram:
        """The PipelineProgram of ``program`` with ``preset_types`` (``key``: their ``preset_key``, when the
        caller has it). Raises ProgramError (does not verify) and what the optimizer raises."""
        if key is None:
            key = preset_key(preset_types) if preset_types else ()
        last = self.programs.last   # ((program object, preset key), PipelineProgram) of the last compile
        if last is not None and last[0][0] is program and last[0][1] == key:
            return last[1]
        digest = program.digest()
        compiled = self.programs.get_or_build((digest, key),
                                              lambda: self._build(program, dict(preset_types), key, digest))
        self.programs.remember((program, key), compiled)
        return compiled

    @staticmethod
    def _build(program: "Program", preset_types: dict, key: tuple, digest: str) -> PipelineProgram:
        from .verify import verify
        info = verify(program, preset_types=preset_types)
        optimizer = _OPTIMIZER[0]
        if optimizer is None:
            return PipelineProgram(digest, program, info, identity_source_map(program), key)
        optimized = optimizer(program, info)
        if len(optimized.source_map) != len(optimized.program.instructions):
            raise ValueError(f"the optimizer's source map has {len(optimized.source_map)} entries for "
                             f"{len(optimized.program.instructions)} instructions")
        return PipelineProgram(digest, optimized.program, optimized.info, tuple(optimized.source_map), key)

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

