"""atlas_web.pipeline: cached verify -> optimization hook -> lowering plan, and the Backend template method."""

from __future__ import annotations

import pytest

from atlas_web import AtlasTrap, LaunchConfig, Program, ProgramError
from atlas_web.isa import Register, Type
from atlas_web.launch import ExecutionParams
from atlas_web.pipeline import CompilePipeline, Optimized, register_optimizer, registered_optimizer
from atlas_web.reference import CpuBackend

TEXT = """
    mov_imm.u32 r1, 7
    mov_imm.u32 r2, 0
    div.u32 r3, r1, r2
    exit
"""


@pytest.fixture
def no_optimizer():
    yield
    register_optimizer(None)


def test_verify_is_cached_by_digest_and_preset_types():
    pipeline = CompilePipeline(4)
    first = pipeline.compile(Program.from_text(TEXT), {})
    assert pipeline.compile(Program.from_text(TEXT), {}) is first  # an equal program: same entry
    typed = pipeline.compile(Program.from_text(TEXT), {Register(9): Type.F32})
    assert typed is not first and typed.preset_key == ((9, Type.F32.code),)
    assert (pipeline.programs.hits, pipeline.programs.misses) == (1, 2)
    assert first.source_map == (0, 1, 2, 3) and first.digest == Program.from_text(TEXT).digest()


def test_a_program_that_does_not_verify_is_not_cached():
    pipeline = CompilePipeline(4)
    with pytest.raises(ProgramError):
        pipeline.compile(Program.from_text("    mov_imm.f32 r1, 1.0\n    add.u32 r2, r1, r1\n    exit\n"), {})
    assert len(pipeline.programs) == 0


def test_the_plan_is_built_once_per_form():
    pipeline = CompilePipeline(4)
    compiled = pipeline.compile(Program.from_text(TEXT), {})
    plan = pipeline.plan(compiled)
    assert pipeline.plan(compiled) is plan
    assert pipeline.plan(compiled, form="dispatch") is not plan


def test_the_optimization_hook_runs_and_its_source_map_names_the_original_instruction(no_optimizer):
    seen = []

    def drop_first(program, info, level, target):
        assert level == 1 and target is None
        seen.append(program.digest())
        shorter = Program.from_text("\n".join(TEXT.strip().splitlines()[1:]).replace("r1", "r2"))
        return Optimized(shorter, shorter.verify(), (1, 2, 3))

    register_optimizer(drop_first)
    assert registered_optimizer() is drop_first
    compiled = CompilePipeline().compile(Program.from_text(TEXT), {})
    assert seen and len(compiled.program.instructions) == 3
    assert compiled.original_index(1) == 2 and compiled.digest == Program.from_text(TEXT).digest()
    with pytest.raises(TypeError):
        register_optimizer("not callable")


def test_an_optimizer_with_a_wrong_source_map_is_refused(no_optimizer):
    register_optimizer(lambda program, info, level, target: Optimized(program, info, (0,)))
    with pytest.raises(ValueError, match="source map"):
        CompilePipeline().compile(Program.from_text(TEXT), {})


def test_the_template_method_checks_arguments_then_runs_the_hooks():
    backend = CpuBackend()
    with pytest.raises(ProgramError, match="needs a Program"):
        backend.execute_program("exit", LaunchConfig())
    with pytest.raises(Exception, match="needs ExecutionParams"):
        backend.execute_program_with_params(Program.from_text(TEXT), LaunchConfig())
    with pytest.raises(AtlasTrap) as trap:
        backend.execute_program_with_params(Program.from_text(TEXT), ExecutionParams(LaunchConfig()))
    assert str(trap.value) == ("trap DIVISION_BY_ZERO at instruction 2 in lane 0: div.u32 r3, r1, r2: "
                               "lhs = 7, rhs = 0: " + trap.value.code.meaning)
    assert len(backend._pipeline.programs) == 1


def test_a_repeated_compile_returns_the_cached_entry_until_it_leaves_the_cache():
    pipeline = CompilePipeline(1)
    program = Program.from_text(TEXT)
    first = pipeline.compile(program, {})
    assert pipeline.compile(program, {}) is first and pipeline.compile(program, {}, ()) is first
    pipeline.programs.clear()                     # the last entry left: the next compile builds again
    again = pipeline.compile(program, {})
    assert again is not first and pipeline.programs.misses == 1
    pipeline.compile(Program.from_text(TEXT.replace("7", "8")), {})   # evicts it (capacity 1)
    assert pipeline.compile(program, {}) is not again
