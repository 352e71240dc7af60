"""The optimizer in the compile pipeline: levels on ExecutionParams and the backends, traps and the budget
reported for the original program on every backend."""

from __future__ import annotations

import pytest

from atlas_web import AtlasTrap, ExecutionFailed, ExecutionParams, LaunchConfig, Program, TrapCode
from atlas_web.isa import Type
from atlas_web.pipeline import DEFAULT_OPTIMIZE, CompilePipeline
from atlas_web.reference import CpuBackend

# dead code before the trapping DIV and inside the loop: the optimized program is shorter, its indices differ
DIVIDES = """
    mov_imm.u32 r1, 7
    mov_imm.u32 r9, 1
    add.u32 r10, r9, r9
    mul.u32 r11, r10, r10
    cvt.u32.u32 r2, r255
    set.eq.u32 p0, r2, r9
    sel.u32 r3, p0, r1, r2
    mov_imm.u32 r4, 0
    sel.u32 r5, p0, r4, r1
    div.u32 r6, r3, r5
    exit
"""

RUNAWAY = """
    mov_imm.u32 r1, 5
top:
    add.u32 r2, r1, r1
    mov.u32 r3, r2
    bra @top
"""


def _trap(backend, text: str, level: int, budget=None):
    with pytest.raises(AtlasTrap) as caught:
        backend.execute_program_with_params(Program.from_text(text),
                                            ExecutionParams(LaunchConfig(block=(4, 1, 1)), budget=budget,
                                                            optimize=level))
    t = caught.value
    return t.code, t.instruction_index, t.lane, str(t)


def test_a_trap_names_the_original_instruction_and_lane_at_every_level(available_backend):
    if not available_backend.supports("DIV", Type.U32):
        pytest.skip("no u32 division here")
    want = _trap(available_backend, DIVIDES, 0)
    assert want[:3] == (TrapCode.DIVISION_BY_ZERO, 9, 1)
    for level in (1, 2):
        assert _trap(available_backend, DIVIDES, level) == want
    compiled = available_backend._pipeline.compile(Program.from_text(DIVIDES), {}, optimize=2)
    assert len(compiled.program) < len(Program.from_text(DIVIDES)) and compiled.original_index(
        [i.INFO.name for i in compiled.program].index("DIV")) == 9


def test_the_budget_counts_the_same_backward_jumps_at_every_level(available_backend):
    want = _trap(available_backend, RUNAWAY, 0, budget=10)
    assert want[:3] == (TrapCode.BUDGET_EXCEEDED, 3, 0)
    for level in (1, 2):
        assert _trap(available_backend, RUNAWAY, level, budget=10) == want


def test_levels_are_checked():
    with pytest.raises(ExecutionFailed, match="optimize"):
        ExecutionParams(LaunchConfig(), optimize=3)
    with pytest.raises(ExecutionFailed, match="optimize"):
        ExecutionParams(LaunchConfig(), optimize=True)
    with pytest.raises(ExecutionFailed, match="optimize"):
        CpuBackend(optimize=-1)
    assert DEFAULT_OPTIMIZE == 1 and CpuBackend()._pipeline.optimize == 1
    assert CpuBackend(optimize=0)._pipeline.optimize == 0


def test_each_level_is_cached_apart():
    pipeline = CompilePipeline(8, optimize=0)
    program = Program.from_text(RUNAWAY)
    plain, optimized = pipeline.compile(program, {}), pipeline.compile(program, {}, optimize=2)
    assert plain.program is program and plain.level == 0 and optimized.level == 2
    assert [i.INFO.name for i in optimized.program] == ["BRA"] and optimized.source_map == (3,)  # all else dead
    assert pipeline.compile(program, {}, optimize=2) is optimized
