"""The effects column of the opcode table: derived from each row, overridable, and true to the reference (every
trap the conformance trap cases raise is among the effects of the instruction that raised it)."""

from __future__ import annotations

import pytest

from atlas_web.errors import TrapCode
from atlas_web.isa import OPCODE_TABLE
from atlas_web.isa.effects import ADDRESS_TRAPS, STATE, Effects, derive_effects
from atlas_web.isa.instructions import by_name
from atlas_web.isa.opcodes import STRUCTURAL_INSTRUCTIONS
from atlas_web.reference import CpuBackend

from .conformance.control_cases import run_preset_case
from .conformance.harness import run_case
from .conformance.trap_cases import budget_cases, trap_cases
from .table_rows import gemm_row

ROWS = {info.name: info for info in OPCODE_TABLE}


def test_a_new_row_gets_its_effects_from_its_operands():
    effects = gemm_row().effects
    assert effects == Effects(frozenset({"registers", "global"}), frozenset({"global"}), ADDRESS_TRAPS["global"],
                              order_free=False)
    assert effects.may_trap


@pytest.mark.parametrize("name, reads, writes, order_free", [
    ("ADD", {"registers"}, {"registers"}, True),
    ("LDG", {"registers", "global"}, {"registers"}, True),
    ("STG", {"registers"}, {"global"}, False),
    ("STS", {"registers"}, {"shared"}, False),
    ("ResAccum", {"registers"}, {"atlas"}, False),
    ("PhaseAdv", {"atlas"}, {"atlas"}, True),       # the lane's own phase
    ("PoolStore", {"registers"}, {"pool"}, False),
    ("MemFence", set(), set(), True),
    ("BarSync", set(), set(), False),
    ("ParallelMap", {"registers", "global"}, {"global"}, False),
])
def test_rows_say_what_they_read_and_write(name, reads, writes, order_free):
    effects = ROWS[name].effects
    assert (effects.reads, effects.writes, effects.order_free) == (reads, writes, order_free)
    assert effects.reads | effects.writes <= set(STATE)


def test_pure_computations_cannot_trap_and_traps_are_declared():
    assert not ROWS["ADD"].effects.may_trap and not ROWS["SQRT"].effects.may_trap
    assert ROWS["DIV"].effects.traps == {TrapCode.DIVISION_BY_ZERO, TrapCode.INTEGER_OVERFLOW}
    assert TrapCode.BUDGET_EXCEEDED in ROWS["BRA"].effects.traps and not ROWS["EXIT"].effects.traps
    assert ROWS["PoolAlloc"].effects.traps == {TrapCode.POOL_EXHAUSTED}
    assert STRUCTURAL_INSTRUCTIONS == {"BRA", "CALL", "RET", "LOOP", "EXIT", "BarSync"}


def test_effects_refuse_unknown_state():
    with pytest.raises(ValueError, match="unknown state"):
        derive_effects(ROWS["ADD"], writes={"disk"})


def _handles(case) -> list[int]:
    return list(range(2, 2 + len(case.buffers)))


@pytest.mark.parametrize("case, runner", [*((c, run_case) for c in trap_cases()),
                                          *((c, run_preset_case) for c in budget_cases())], ids=str)
def test_every_trap_of_the_reference_is_in_the_effects_of_its_instruction(case, runner):
    trap = runner(CpuBackend(), case).trap  # (code, instruction index, lane)
    assert trap is not None
    code, index = TrapCode(trap[0]), trap[1]
    name = case.program(_handles(case)).instructions[index].INFO.name
    assert code in by_name(name).INFO.effects.traps, f"{name} raised {code.name}"
