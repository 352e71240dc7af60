"""The verifier: every rule the backends rely on, checked once per program.

:func:`verify` runs from ``ProgramBuilder.build()`` and before every launch
(backends cache its result by program digest) and returns a
:class:`ProgramInfo` with what the code generators need. It checks:

1. structure: every instruction is one of the table's classes, every label
   is defined, every target lies in ``0 … len(program)`` (a target at the end
   ends the lane);
2. the special registers r243 … r255 are never written, and ``preset_types``
   name general registers with types; each instruction meets its row's
   ``requires`` conditions on its shape fields (a GEMM's leading dimensions);
3. no recursion through CALL (the cycle is reported);
4. register types (``verify_types``): each read sees one type among its
   reaching definitions (``verify_dataflow``) and that type meets the
   operand's rule;
5. uniformity (``verify_uniformity``): BarSync only in block-uniform,
   cooperative instructions only in grid-uniform control flow.

:func:`verify_launch` (``verify_memory``) checks the static addresses against
the live allocations when a launch starts. Every violation is a ProgramError
carrying the instruction index and text. Nothing here copies the program.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Mapping

from .errors import ProgramError
from .isa.addresses import BOUNDARY_HANDLE
from .isa.extents import unmet_requirements
from .isa.instructions import INSTRUCTION_CLASSES
from .isa.opcodes import ExecKind
from .isa.registers import FIRST_SPECIAL_REGISTER, Predicate, Register, SpecialRegister
from .isa.types import Type
from .lowering.cfg import ControlFlowGraph, build_cfg, resolve_targets
from .program import Program
from .verify_dataflow import reaching_definitions
from .verify_memory import StaticAccess, scan_addresses, verify_launch
from .verify_operands import NUM_LOCATIONS, PREDICATE_BASE, instruction_text, operand_accesses
from .verify_types import infer_types
from .verify_uniformity import Uniformity, analyse_uniformity

__all__ = ["verify", "verify_launch", "ProgramInfo", "Uniformity", "StaticAccess"]

#: flag -> the instructions whose presence sets it
FLAG_INSTRUCTIONS: dict[str, frozenset[str]] = {
    "uses_shared": frozenset({"LDS", "STS"}),
    "uses_pools": frozenset({"PoolAlloc", "PoolFree", "PoolLoad", "PoolStore"}),
    "uses_phase": frozenset({"PhaseGet", "PhaseAdv", "PhaseWrite"}),
    "uses_resaccum": frozenset({"ResAccum"}),
    "uses_boundary": frozenset(),
}
#: flag -> the static address spaces whose presence sets it
FLAG_SPACES: dict[str, frozenset[str]] = {
    "uses_shared": frozenset({"shared"}), "uses_pools": frozenset({"pool"}), "uses_boundary": frozenset({"boundary"}),
    "uses_phase": frozenset(), "uses_resaccum": frozenset(),
}


class _Analysis:
    """What ProgramInfo's lazily computed views are made from."""

    def __init__(self, program, cfg, rd, reads, writes, uniformity) -> None:
        self.program, self.cfg, self.rd, self.reads, self.writes = program, cfg, rd, reads, writes
        self._uniformity = uniformity

    @property
    def uniformity(self):
        if self._uniformity is None:  # no BarSync or cooperative instruction: nothing to reject
            self._uniformity = analyse_uniformity(self.program, self.cfg, self.rd, self.reads)
        return self._uniformity


@dataclass(frozen=True, eq=False)
class ProgramInfo:
    """What the verifier learned about a program (read-only mappings; keys ``(i, path)`` are an
    instruction index and an operand path: a field name, or ``"src.base"``,
    ``"dst.handle_reg"``, ``"dst.offset_reg"`` for registers inside addresses).

    * ``use_types``: the type each register read is read as (see ``verify_types``);
    * ``def_types``: the type each register write gives its register;
    * ``reaching``: for each register or predicate read, the indices of the instructions whose
      definitions may reach it (-1: the value at entry: zero, a preset or a special register;
      empty in unreachable code);
    * ``def_uniformity``: level of each register or predicate write; ``divergent_branches``:
      conditional branches (BRA with a predicate, LOOP) whose condition is not grid-uniform,
      with its level; ``block_uniformity``: level of each reachable block's code (these four are
      computed on first use);
    * ``targets``: BRA/CALL/LOOP index -> target index (``len(program)`` ends the lane);
    * ``cooperative``, ``barriers``: indices of cooperative instructions and BarSync;
    * ``uses_shared`` (LDS/STS), ``uses_boundary`` (static Class or handle-1 addresses),
      ``uses_pools`` (pool instructions or PoolOffset), ``uses_phase``, ``uses_resaccum``,
      ``uses_pointers`` (register-based global addresses, which may name any allocation,
      the boundary memory included);
    * ``max_call_depth``: the most calls pending at once from the main procedure;
    * ``registers_read``/``registers_written``, ``predicates_read``/``predicates_written``;
    * ``static_accesses``: the static addresses ``verify_launch`` checks;
    * ``cfg``: the control-flow graph; ``preset_types``: as given.
    """

    program: Program
    cfg: ControlFlowGraph
    use_types: Mapping[tuple[int, str], Type]
    def_types: Mapping[tuple[int, str], Type]
    targets: Mapping[int, int]
    cooperative: tuple[int, ...]
    barriers: tuple[int, ...]
    uses_shared: bool
    uses_boundary: bool
    uses_pools: bool
    uses_phase: bool
    uses_resaccum: bool
    uses_pointers: bool
    max_call_depth: int
    registers_read: frozenset[Register]
    registers_written: frozenset[Register]
    predicates_read: frozenset[Predicate]
    predicates_written: frozenset[Predicate]
    static_accesses: tuple[StaticAccess, ...]
    preset_types: Mapping[Register, Type]
    _analysis: _Analysis = field(repr=False, compare=False)

    @cached_property
    def reaching(self) -> Mapping[tuple[int, str], tuple[int, ...]]:
        analysis = self._analysis
        sites = analysis.rd.sites
        out: dict[tuple[int, str], tuple[int, ...]] = {}
        for index, instr_reads in enumerate(analysis.reads):
            row = analysis.rd.use_ids[index]
            for k, acc in enumerate(instr_reads):
                out[(index, acc.path)] = tuple(sorted({sites[d][0] for d in row[k]})) if row is not None else ()
        return MappingProxyType(out)

    @cached_property
    def def_uniformity(self) -> Mapping[tuple[int, str], Uniformity]:
        analysis = self._analysis
        levels = analysis.uniformity.definition_levels
        return MappingProxyType({(index, acc.path): levels[ident]
                                 for index, ids in enumerate(analysis.rd.def_ids)
                                 for acc, ident in zip(analysis.writes[index], ids)})

    @cached_property
    def divergent_branches(self) -> Mapping[int, Uniformity]:
        branches = self._analysis.uniformity.branch_levels
        return MappingProxyType({i: level for i, level in sorted(branches.items()) if level is not Uniformity.GRID})

    @cached_property
    def block_uniformity(self) -> Mapping[int, Uniformity]:
        return MappingProxyType(dict(sorted(self._analysis.uniformity.block_levels.items())))


def _checked_presets(preset_types: object) -> dict[Register, Type]:
    if preset_types is None:
        return {}
    if not isinstance(preset_types, Mapping):
        raise ProgramError(f"preset_types must map Register to Type, got {preset_types!r}")
    for reg, ty in preset_types.items():
        if not isinstance(reg, Register):
            raise ProgramError(f"preset_types: key {reg!r} is not a Register")
        if reg.is_special:
            raise ProgramError(f"preset_types: {reg} is the special register {reg.special.name} (read-only)")
        if not isinstance(ty, Type):
            raise ProgramError(f"preset_types: the type of {reg} must be a Type, got {ty!r}")
    return dict(preset_types)


def _fail(program: Program, index: int, reason: str) -> ProgramError:
    return ProgramError(reason, index=index, text=instruction_text(program.instructions[index]))


def _procedure_name(program: Program, entry: int) -> str:
    names = program.labels_at(entry)
    return f"@{names[0]} ({entry})" if names else f"instruction {entry}"


def verify(program: Program, *, preset_types: Mapping[Register, Type] | None = None) -> ProgramInfo:
    """Check ``program`` against every static rule and return its ProgramInfo.

    ``preset_types`` gives the registers defined at entry (ExecutionParams.registers) their
    types. Raises ProgramError naming the instruction, its text and what is wrong.
    """
    if not isinstance(program, Program):
        raise ProgramError(f"verify takes a Program, got {type(program).__name__}")
    presets = _checked_presets(preset_types)
    instructions = program.instructions
    reads: list = []
    writes: list = []
    names: set[str] = set()
    read_locations: set[int] = set()
    written_locations: set[int] = set()
    for index, instr in enumerate(instructions):
        name = instr.INFO.name
        if INSTRUCTION_CLASSES.get(name) is not instr.__class__:
            raise ProgramError(f"{type(instr).__name__} is not an instruction class of the opcode table", index=index)
        names.add(name)
        if instr.INFO.requires:
            unmet = unmet_requirements(instr)
            if unmet:
                raise _fail(program, index, "; ".join(unmet))
        instr_reads, instr_writes = operand_accesses(instr)
        for acc in instr_writes:
            written_locations.add(acc.location)
            if FIRST_SPECIAL_REGISTER <= acc.location < PREDICATE_BASE:
                raise _fail(program, index, f"operand '{acc.path}' writes r{acc.location}, the special register "
                                            f"{SpecialRegister(acc.location).name}, which is read-only")
        for acc in instr_reads:
            read_locations.add(acc.location)
        reads.append(instr_reads)
        writes.append(instr_writes)
    try:
        targets = resolve_targets(program)
    except ProgramError as error:
        raise _fail(program, error.index, error.reason) from None  # type: ignore[arg-type]

    cfg = build_cfg(program, targets)
    cycle = cfg.call_cycle()
    if cycle is not None:
        start = cycle.index(min(cycle))
        cycle = cycle[start:] + cycle[:start]
        steps = ", ".join(f"the CALL at {c} enters {_procedure_name(program, targets[c])}" for c in cycle)
        raise _fail(program, cycle[0], f"recursion through CALL: {steps}, which leads back to the CALL at {cycle[0]}")

    rd = reaching_definitions(cfg, reads, writes)
    types = infer_types(program, rd, reads, writes, presets)
    cooperative = tuple(i for i, ins in enumerate(instructions) if ins.INFO.kind is ExecKind.COOPERATIVE)
    barriers = tuple(i for i, ins in enumerate(instructions) if ins.INFO.name == "BarSync")
    uniformity = analyse_uniformity(program, cfg, rd, reads) if cooperative or barriers else None

    accesses, pointers = scan_addresses(program)
    spaces = {acc.space for acc in accesses} | ({"boundary"} if any(acc.handle == BOUNDARY_HANDLE
                                                                    for acc in accesses) else set())
    flags = {flag: bool(names & FLAG_INSTRUCTIONS[flag]) or bool(spaces & FLAG_SPACES[flag])
             for flag in FLAG_INSTRUCTIONS}
    proxy = MappingProxyType
    return ProgramInfo(
        program=program, cfg=cfg, use_types=proxy(types.use_types), def_types=proxy(types.def_types),
        targets=proxy(targets), cooperative=cooperative, barriers=barriers,
        **flags, uses_pointers=pointers, max_call_depth=cfg.call_depth(),
        registers_read=_registers(read_locations), registers_written=_registers(written_locations),
        predicates_read=_predicates(read_locations), predicates_written=_predicates(written_locations),
        static_accesses=accesses, preset_types=proxy(presets),
        _analysis=_Analysis(program, cfg, rd, reads, writes, uniformity),
    )


_REGISTERS = tuple(Register(i) for i in range(PREDICATE_BASE))
_PREDICATES = tuple(Predicate(i) for i in range(NUM_LOCATIONS - PREDICATE_BASE))


def _registers(locations: set[int]) -> frozenset[Register]:
    return frozenset(_REGISTERS[loc] for loc in locations if loc < PREDICATE_BASE)


def _predicates(locations: set[int]) -> frozenset[Predicate]:
    return frozenset(_PREDICATES[loc - PREDICATE_BASE] for loc in locations if loc >= PREDICATE_BASE)
