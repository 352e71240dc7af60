"""The default expansion tier: a cooperative instruction a backend has no kernel for runs as a sequence
of cooperative instructions the backend does have (like JAX's ``lower_fun``).

A cooperative instruction runs once per launch whatever the launch shape (one lane, lanes that exited
before it), reads its register operands from global lane 0 and traps with lane -1; so does each
cooperative instruction of its expansion, which therefore keeps those semantics for every launch shape.
An expansion begins with one bounds check per array operand, in operand order, over the operand's whole
extent (a ``ParallelReduce Min`` into a scratch register nothing reads: it checks handle, bounds and
alignment exactly as the reference's ``checked_arrays`` does), so nothing is written before every array
passed, then computes. Backward jumps (the budget) are unchanged: cooperative instructions take none.

``expand_program`` rewrites a program once (cached per program digest and backend) and keeps, for every
instruction of the result, the index of the instruction it came from: ``ExpandedProgram.original_trap``
reports a trap of the result as (code, original index, lane) with the original instruction's name.

A new kernel instruction runs on every compiled backend once it has a table row (atlas_web/isa/opcodes.py),
a reference rule (atlas_web/reference/exec_cooperative.py) and a ``@default_expansion`` here; its fast
kernels come later and take over (a backend expands only what it has no kernel for). Standard library only.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterable

from ..cache import ProgramCache
from ..errors import AtlasTrap, ProgramError, UnsupportedOperation
from ..isa import Address, BinaryMapOperation, ParallelMapBinary, ParallelReduce, ReduceOperation, Register
from ..isa.extents import array_operands
from ..isa.instructions import INSTRUCTION_CLASSES
from ..isa.opcodes import ExecKind, OpcodeInfo
from ..isa.registers import FIRST_SPECIAL_REGISTER
from ..program import Program
from ..trap_report import moved

__all__ = ["Expansion", "ExpandedProgram", "EXPANSIONS", "default_expansion", "expansion_supported",
           "expand_program", "original_traps", "run_expanded", "shifted"]

_MAX_COUNT = (1 << 32) - 1
_CACHE_SIZE = 64


@dataclass(frozen=True)
class Expansion:
    """How instruction ``name`` expands: ``build(instr, scratch)`` returns the instructions that compute it
    (after the bounds checks); ``uses`` the (instruction name, operation) pairs it emits, for support."""

    name: str
    build: Callable
    uses: tuple[tuple[str, object], ...]


#: instruction name -> its default expansion
EXPANSIONS: dict[str, Expansion] = {}


def default_expansion(name: str, *, uses: Iterable[tuple[str, object]]):
    """Register the decorated ``build(instr, scratch) -> list of instructions`` as ``name``'s expansion.
    Raises ProgramError when ``name`` has one already."""
    def register(build: Callable) -> Callable:
        if name in EXPANSIONS:
            raise ProgramError(f"{name} has a default expansion already")
        EXPANSIONS[name] = Expansion(name, build, tuple(uses))
        return build
    return register


def expansion_supported(info: OpcodeInfo, ty, supports_op: Callable, supports_operation: Callable) -> bool:
    """Whether a backend whose support answers are ``supports_op(info, ty)`` and ``supports_operation(op,
    ty)`` runs ``info`` for ``ty`` by its expansion: every operation the expansion uses, and the
    bounds-check reduction, for ``ty``."""
    expansion = EXPANSIONS.get(info.name)
    if expansion is None or ty not in info.types:
        return False
    needed = (*expansion.uses, ("ParallelReduce", ReduceOperation.Min))
    return all(supports_op(INSTRUCTION_CLASSES[name].INFO, ty) and supports_operation(op, ty)
               for name, op in needed)


def shifted(address: object, delta: int, instr, operand: str) -> object:
    """``instr``'s address ``operand`` (``address``) moved ``delta`` bytes on. Raises UnsupportedOperation
    where the address mode cannot say it."""
    if delta == 0:
        return address
    if isinstance(address, Address.RegisterIndirectComputed):
        raise _unsupported(instr, f"{operand}: a RegisterIndirectComputed address cannot be offset; "
                                  "use RegisterIndirect")
    try:
        return dataclasses.replace(address, offset=address.offset + delta)
    except ProgramError as error:
        raise _unsupported(instr, f"{operand}: {error}") from None


def _unsupported(instr, detail: str) -> UnsupportedOperation:
    return UnsupportedOperation(instr.INFO.name, instr.ty, "default expansion", f"{instr}: {detail}")


@dataclass(frozen=True)
class ExpandedProgram:
    """``program`` with every expanded instruction replaced; ``origin[i]`` is the index in ``source`` of
    the instruction that instruction ``i`` came from."""

    source: Program
    program: Program
    origin: tuple[int, ...]
    #: index in ``program`` of a bounds check -> the source instruction's operand it checks
    checks: dict = dataclasses.field(default_factory=dict)

    def original_trap(self, trap: AtlasTrap) -> AtlasTrap:
        """``trap`` (raised by ``program``) as the source program's: its instruction index and text, and
        its numbers (a bounds check's are those of the operand it checks), worded by the one trap report."""
        index = self.origin[trap.instruction_index]
        return moved(trap, self.program.instructions[trap.instruction_index], index, self.source.instructions[index],
                     self.checks.get(trap.instruction_index))


#: (program digest, has_kernel) -> ExpandedProgram or None; ``last``: ((program object, has_kernel), result)
_CACHE = ProgramCache(_CACHE_SIZE, plain_keys=True)


def expand_program(program: Program, has_kernel: Callable[[OpcodeInfo], bool]) -> ExpandedProgram | None:
    """``program`` with each cooperative instruction that ``has_kernel`` says no to and that has an
    expansion replaced by it; None when nothing is expanded. Cached per (digest, has_kernel).

    Raises UnsupportedOperation (a shape the expansion cannot express: a count over 2**32 - 1, a
    RegisterIndirectComputed address that must be offset).
    """
    last = _CACHE.last   # a repeated launch: the same program object
    if last is not None and last[0][0] is program and last[0][1] is has_kernel:
        return last[1]
    result = _CACHE.get_or_build((program.digest(), has_kernel), lambda: _expand_wanted(program, has_kernel))
    _CACHE.remember((program, has_kernel), result)
    return result


def _expand_wanted(program: Program, has_kernel: Callable[[OpcodeInfo], bool]) -> ExpandedProgram | None:
    wanted = [i for i, instr in enumerate(program.instructions)
              if instr.INFO.kind is ExecKind.COOPERATIVE and instr.INFO.name in EXPANSIONS
              and not has_kernel(instr.INFO)]
    return _expand(program, set(wanted)) if wanted else None


def _expand(program: Program, wanted: set[int]) -> ExpandedProgram:
    scratch = _scratch_register(program)
    instructions, origin, starts, checks = [], [], [], {}
    for index, instr in enumerate(program.instructions):
        starts.append(len(instructions))
        emitted = _expansion_of(instr, scratch) if index in wanted else [instr]
        if index in wanted:
            for k, array in enumerate(array_operands(instr)):
                checks[len(instructions) + k] = array.name
        instructions.extend(emitted)
        origin.extend([index] * len(emitted))
    starts.append(len(instructions))
    labels = {name: starts[at] for name, at in program.labels.items()}
    return ExpandedProgram(program, Program(instructions, labels), tuple(origin), checks)


def _expansion_of(instr, scratch: Register) -> list:
    checks = []
    for array in array_operands(instr):
        if array.elements > _MAX_COUNT:
            raise _unsupported(instr, f"{array.name} covers {array.elements} elements, more than {_MAX_COUNT}")
        checks.append(ParallelReduce(dst=scratch, src_array=array.address, count=array.elements,
                                     operation=ReduceOperation.Min, ty=array.ty))
    return checks + list(EXPANSIONS[instr.INFO.name].build(instr, scratch))


def _scratch_register(program: Program) -> Register:
    """The highest general register no instruction of ``program`` names (written by the bounds checks)."""
    used = set()
    for instr in program.instructions:
        for value in _field_values(instr):
            if isinstance(value, Register):
                used.add(value.index)
    free = [i for i in range(FIRST_SPECIAL_REGISTER - 1, -1, -1) if i not in used]
    if not free:
        raise UnsupportedOperation("default expansion", None, "any", "it needs a register the program does not "
                                   "name, and every general register is named")
    return Register(free[0])


def _field_values(value: object):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _field_values(getattr(value, f.name))
    else:
        yield value


# ---- the expansions -----------------------------------------------------------------------------------------

@default_expansion("LayerScale", uses=(("ParallelMapBinary", BinaryMapOperation.Mul),))
def _layer_scale(instr, scratch: Register) -> list:
    """One ``ParallelMapBinary Mul`` per row (f16/bf16: the product is exact in f32 and rounded once, as
    the reference computes it)."""
    row_bytes = instr.n * instr.ty.size_bytes()
    return [ParallelMapBinary(dst_array=shifted(instr.output, r * row_bytes, instr, "output"),
                              src_a=shifted(instr.input, r * row_bytes, instr, "input"), src_b=instr.scale,
                              count=instr.n, operation=BinaryMapOperation.Mul, ty=instr.ty)
            for r in range(instr.rows)]


# The collectives on one device (a backend alone; atlas_web.distributed runs larger groups): AllReduce and
# Broadcast are their bounds checks only; AllGather and ReduceScatter copy input to output as MAX(x, x), which
# is x for every value but NaN (a NaN stays a NaN, its payload is the backend's).
@default_expansion("AllReduce", uses=())
def _all_reduce(instr, scratch: Register) -> list:
    return []


@default_expansion("Broadcast", uses=())
def _broadcast(instr, scratch: Register) -> list:
    return []


@default_expansion("ReduceScatter", uses=(("ParallelMapBinary", BinaryMapOperation.Max),))
@default_expansion("AllGather", uses=(("ParallelMapBinary", BinaryMapOperation.Max),))
def _copy_input(instr, scratch: Register) -> list:
    return [ParallelMapBinary(dst_array=instr.output, src_a=instr.input, src_b=instr.input, count=instr.n,
                              operation=BinaryMapOperation.Max, ty=instr.ty)]


@contextmanager
def original_traps(expanded: ExpandedProgram | None):
    """Within: an AtlasTrap of ``expanded.program`` is re-raised as the source program's."""
    if expanded is None:
        yield
        return
    try:
        yield
    except AtlasTrap as trap:
        raise expanded.original_trap(trap) from None


def run_expanded(program: object, has_kernel: Callable[[OpcodeInfo], bool]) -> tuple[object, ExpandedProgram | None]:
    """(the program a backend without the kernels ``has_kernel`` names runs, its ExpandedProgram or None).
    A non-Program is passed through for the backend to refuse."""
    if not isinstance(program, Program):
        return program, None
    expanded = expand_program(program, has_kernel)
    return (program, None) if expanded is None else (expanded.program, expanded)
