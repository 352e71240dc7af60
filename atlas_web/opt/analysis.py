"""The analyses every optimization pass shares, computed once per program from the verifier's ProgramInfo.

The verifier already solves the lane graph (labels, jumps, LOOP, calls, barriers: ``info.cfg``) and the
reaching definitions of every register and predicate read (``info.reaching``, calls composed by summaries).
:class:`Analysis` adds what the passes ask about it:

* def-use: ``uses_of[d]``, the reads (instruction index, operand path) that definition ``d`` (an instruction
  index) may reach, and ``reaching(i, path)``;
* the reads and writes of each instruction (``verify_operands.operand_accesses``);
* ``block_of`` / ``same_block``: basic blocks (a jump target or the instruction after a jump, LOOP, CALL,
  RET or EXIT starts one), so a local pass may reason about straight-line code;
* which instructions a pass may touch (:func:`is_pure`) and which it must keep exactly as written
  (:func:`is_pinned`), both read from the opcode table's effects column.

Nothing here copies or mutates the program. Standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..isa.opcodes import ExecKind
from ..verify_operands import OperandAccess, operand_accesses

if TYPE_CHECKING:
    from ..verify import ProgramInfo

__all__ = ["Analysis", "is_pure", "is_pinned"]

_REGISTERS_ONLY = frozenset({"registers"})


def is_pure(instr) -> bool:
    """Whether ``instr`` only computes registers from registers: a per-lane instruction that writes nothing
    but registers, may not trap and is no barrier (the effects column). Such an instruction may be removed
    when nothing reads what it writes, or replaced by another that writes the same values."""
    effects = instr.INFO.effects
    return (instr.INFO.kind is ExecKind.LANE and effects.writes <= _REGISTERS_ONLY and not effects.traps
            and not effects.barrier and effects.reads <= _REGISTERS_ONLY | {"atlas"})


def is_pinned(instr) -> bool:
    """Whether a pass must keep ``instr`` exactly as written, at its place among the pinned instructions:
    anything that may trap (its trap names it, its operands and its numbers), writes memory, pools or the
    Atlas state, waits at a barrier, runs cooperatively or transfers control (the budget counts its backward
    jumps). Only an instruction that provably cannot trap with the operands it is given (a folded integer
    DIV by a known non-zero divisor) may be replaced."""
    return not is_pure(instr)


class Analysis:
    """Def-use, accesses and blocks of ``info.program`` (see the module docstring)."""

    def __init__(self, info: "ProgramInfo") -> None:
        self.info = info
        self.program = info.program
        self.instructions = info.program.instructions
        done = getattr(info, "_analysis", None)  # the verifier's own accesses, when it kept them
        if done is not None and done.program is info.program:
            self.accesses: list[tuple[list[OperandAccess], list[OperandAccess]]] = list(zip(done.reads, done.writes))
        else:
            self.accesses = [operand_accesses(instr) for instr in self.instructions]
        self._reaching = info.reaching
        uses: list[list[tuple[int, str]]] = [[] for _ in self.instructions]
        for (index, path), defs in self._reaching.items():
            for d in defs:
                if d >= 0:
                    uses[d].append((index, path))
        self.uses_of = uses
        self.block_of = info.cfg.block_of
        # a cooperative step reads global lane 0's registers as they are when it runs, also where lane 0 ended
        # on a path that never reaches it: reaching definitions do not see those reads, so a definition of a
        # register any cooperative instruction reads is never removed
        self.cooperative_reads = frozenset(
            acc.location for i in info.cooperative for acc in self.accesses[i][0])

    def removable(self, index: int) -> bool:
        """Whether instruction ``index`` may be removed when nothing reads it: pure, and writing no register
        a cooperative instruction reads."""
        return is_pure(self.instructions[index]) and not any(
            acc.location in self.cooperative_reads for acc in self.accesses[index][1])

    def reaching(self, index: int, path: str) -> tuple[int, ...]:
        """The definitions (instruction indices; -1: the value at entry) that may reach read ``path`` of
        instruction ``index`` (empty in unreachable code)."""
        return self._reaching.get((index, path), ())

    def use_type(self, index: int, path: str):
        """The type read ``path`` of instruction ``index`` reads its register as."""
        return self.info.use_types.get((index, path))

    def def_type(self, index: int, path: str = "dst"):
        """The type write ``path`` of instruction ``index`` gives its register."""
        return self.info.def_types.get((index, path))

    def same_block(self, first: int, last: int) -> bool:
        """Whether instructions ``first`` .. ``last`` all lie in one basic block (straight-line code)."""
        return self.block_of[first] == self.block_of[last]

    def written_between(self, location: int, first: int, last: int) -> bool:
        """Whether an instruction strictly between ``first`` and ``last`` writes ``location``."""
        for k in range(first + 1, last):
            for acc in self.accesses[k][1]:
                if acc.location == location:
                    return True
        return False

    def writes(self, index: int) -> list[OperandAccess]:
        """The registers and predicates instruction ``index`` writes."""
        return self.accesses[index][1]

    def reads(self, index: int) -> list[OperandAccess]:
        """The registers and predicates instruction ``index`` reads (addresses' registers included)."""
        return self.accesses[index][0]
