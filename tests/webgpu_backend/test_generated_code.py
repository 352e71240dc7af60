"""WebGpuBackend.generated_code: the WGSL of the stage shaders and kernels a launch runs (the demo's code view)."""

from __future__ import annotations

import pytest

import examples
from atlas_web import LaunchConfig, Program, ProgramError

# r3 is u32 on one path and f32 on the other: parses, does not verify
BAD_TYPES = """\
    mov_imm.u32 r1, 1
    set.eq.u32 p0, r1, r1
    bra.p0 @float
    mov_imm.u32 r3, 2
    bra @use
float:
    mov_imm.f32 r3, 2.0
use:
    add.u32 r4, r3, r1
    exit
"""


def test_listing_has_the_stage_shader_a_launch_compiles(webgpu):
    example = examples.build_all(40)[3]  # collatz: per-lane loop, one stage shader
    program = example.program_object()
    text = webgpu.generated_code(program, example.config)
    compiled = webgpu._compile(webgpu._pipeline.compile(program, {}), LaunchConfig())
    shader = compiled.stage_shaders(example.config, webgpu.features, len(webgpu._memory.chunks))[0]
    assert shader.source in text and "@compute" in text
    assert text == webgpu.generated_code(program, example.config)


def test_cooperative_steps_show_their_kernels(webgpu):
    vector_add, softmax = examples.build_all(32)[0], examples.build_all(32)[2]
    text = webgpu.generated_code(vector_add.program_object(), vector_add.config)
    assert "binary kernel" in text and "@compute" in text
    reduce_text = webgpu.generated_code(softmax.program_object(), softmax.config)
    assert "reduce kernel" in reduce_text and "reduce_final kernel" in reduce_text and "map kernel" in reduce_text


def test_a_program_that_does_not_verify_raises_program_error(webgpu):
    bad = Program.from_text(BAD_TYPES)
    with pytest.raises(ProgramError):
        webgpu.generated_code(bad, LaunchConfig())
    with pytest.raises(ProgramError, match="needs a Program"):
        webgpu.generated_code("exit", LaunchConfig())
