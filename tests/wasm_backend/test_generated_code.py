"""WasmBackend.generated_code: the disassembly of the module a launch runs (the demo's code view)."""

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
from wasm_backend import WasmBackend
from wasm_backend.encoding import disassemble


@pytest.fixture(scope="module")
def wasm():
    backend = WasmBackend(threads=1)
    yield backend
    backend.close()


def test_listing_is_the_disassembly_of_the_module_a_launch_loads(wasm):
    example = examples.build_all(40)[3]  # collatz: per-lane loop
    program = example.program_object()
    before = wasm.generated_code(program, example.config)
    handles = examples.allocate_buffers(example, fresh := WasmBackend(threads=1))
    fresh.execute_program(program, example.config)
    loaded = next(iter(fresh._loaded.values()))
    assert before == fresh.generated_code(program, example.config)
    assert before.split("\n", 1)[1] == disassemble(loaded.compiled.wasm)
    assert "(module" in before and "loop" in before
    for handle in handles.values():
        fresh.free_buffer(handle)
    fresh.close()


def test_each_example_has_its_own_listing_and_nothing_runs(wasm):
    listings = {ex.name: wasm.generated_code(ex.program_object(), ex.config) for ex in examples.build_all(16)}
    assert len(set(listings.values())) == len(listings)
    assert not wasm._loaded  # listing compiles, it loads and runs nothing


def test_a_program_that_does_not_verify_raises_program_error(wasm):
    bad = Program.from_text(BAD_TYPES)
    with pytest.raises(ProgramError):
        wasm.generated_code(bad, LaunchConfig())
    with pytest.raises(ProgramError, match="needs a Program"):
        wasm.generated_code("exit", LaunchConfig())
