"""Shared memory is zero at launch, per block (docs/semantics.md), on every backend: no block sees another
block's data, no launch sees an earlier launch's (of the same program or of others, whatever their shared
memory size), and what a block wrote survives its cooperative steps within the launch.

Each program reads its lane's slot before writing it, stores what it read to an output buffer, then writes
a marker there (the issue 17 program); the launches run in a row on one backend."""

from __future__ import annotations

import pytest

from atlas_web import LaunchConfig, Program
from atlas_web.reference import CpuBackend

from .backends import compiled_backends

BACKENDS = {"cpu": CpuBackend(), **compiled_backends()}
GRID = LaunchConfig(grid=(2, 1, 1), block=(4, 1, 1), shared_memory=16)
LANES = GRID.total_threads


def _read_then_mark(ty: str, slot: int) -> str:
    """out[GLOBAL_LANE_ID] = the lane's ``slot``-byte slot of shared memory (of ``ty``) as read before this
    launch wrote it; then the marker there."""
    return f"""
    mov_imm.u32 r1, {slot}
    mul.u32 r2, r252, r1
    mul.u32 r6, r255, r1
    lds.{ty} r3, [r2 + 0]
    mov_imm.u32 r4, {{h0}}
    stg.{ty} [r4 + r6], r3
    mov_imm.{ty} r5, {{mark}}
    sts.{ty} [r2 + 0], r5
"""


READ_THEN_MARK = _read_then_mark("u32", 4)
#: the same, then a cooperative step (a stage boundary), then the slot is read again (it must hold the
#: marker) into out[LANES + GLOBAL_LANE_ID] and overwritten with marker + 1
ACROSS_A_STAGE = READ_THEN_MARK + """
    preduce.sum.u32 r9, [buf{h1} + 0], 4
    lds.u32 r8, [r2 + 0]
    mov_imm.u32 r10, {lanes4}
    add.u32 r11, r6, r10
    stg.u32 [r4 + r11], r8
    mov_imm.u32 r12, 1
    add.u32 r13, r5, r12
    sts.u32 [r2 + 0], r13
"""
#: a cooperative step first (the first stage has no lane code), then READ_THEN_MARK
AFTER_A_STAGE = """
    preduce.sum.u32 r9, [buf{h1} + 0], 4
""" + READ_THEN_MARK
#: 32-byte slots (a wide type)
WIDE = _read_then_mark("u256", 32)
#: every lane writes the marker over all of a large shared memory (another size than the others)
FILL = """
    mov_imm.u32 r1, 4
    mul.u32 r2, r252, r1
    mov_imm.u32 r3, {mark}
    mov_imm.u32 r4, 64
    mov_imm.u32 r5, 64
fill:
    sts.u32 [r2 + 0], r3
    add.u32 r2, r2, r5
    loop r4, @fill
"""
FILL_CONFIG = LaunchConfig(grid=(3, 1, 1), block=(16, 1, 1), shared_memory=4096)


def _launch(backend, template: str, config: LaunchConfig, mark: int, out_words: int) -> list[int]:
    out = backend.allocate_buffer(4 * out_words)
    src = backend.allocate_buffer(16)
    backend.copy_to_buffer(out, b"\xff" * (4 * out_words))   # a lane that does not run shows
    backend.copy_to_buffer(src, bytes(16))
    program = Program.from_text(template.format(h0=int(out), h1=int(src), mark=mark, lanes4=4 * LANES))
    try:
        backend.execute_program(program, config)
        data = bytes(backend.copy_from_buffer(out))[:4 * out_words]
    finally:
        backend.free_buffer(out)
        backend.free_buffer(src)
    return [int.from_bytes(data[k:k + 4], "little") for k in range(0, len(data), 4)]


def _supported(backend, template: str) -> bool:
    program = Program.from_text(template.format(h0=2, h1=3, mark=1, lanes4=4))
    return all(backend.supports(ins.INFO.name, ins.type) for ins in program.instructions)


WIDE_CONFIG = LaunchConfig(grid=(2, 1, 1), block=(4, 1, 1), shared_memory=128)
#: name -> (program text, launch shape, output words)
PROGRAMS = {"read-then-mark": (READ_THEN_MARK, GRID, LANES), "fill": (FILL, FILL_CONFIG, 1),
            "across-a-stage": (ACROSS_A_STAGE, GRID, 2 * LANES), "after-a-stage": (AFTER_A_STAGE, GRID, LANES),
            "wide": (WIDE, WIDE_CONFIG, 8 * LANES)}


def _run_and_check(backend, name: str, mark: int, what: str) -> None:
    template, config, words = PROGRAMS[name]
    if name == "wide":
        mark = (mark << 224) | (mark << 96) | 9
    got = _launch(backend, template, config, mark, words)
    if name == "fill":
        return
    want = [0] * words
    if name == "across-a-stage":
        want[LANES:] = [mark] * LANES       # the marker this block wrote before the step survives it
    assert got == want, f"{what}: {[hex(v) for v in got]}"


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("name", [n for n in PROGRAMS if n != "fill"])
def test_every_block_reads_zero_launch_after_launch(backend_name, name):
    backend = BACKENDS[backend_name]
    if not _supported(backend, PROGRAMS[name][0]):
        pytest.skip("a wide type this backend lacks")
    for launch in range(3):
        _run_and_check(backend, name, 0xDEAD0000 + launch, f"{name}, launch {launch}")


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
def test_programs_in_a_row_never_see_each_others_shared_memory(backend_name):
    """Different programs (other shared sizes, wide types, several stages) in a row, twice over."""
    backend = BACKENDS[backend_name]
    for launch in range(2):
        for number, name in enumerate(PROGRAMS):
            if _supported(backend, PROGRAMS[name][0]):
                _run_and_check(backend, name, 0x5EED0000 + 16 * launch + number, f"round {launch}, {name}")


def test_every_backend_runs_the_shared_memory_programs():
    """The programs above use only what every backend here supports (so no check above is skipped),
    except wide types, which a backend may lack."""
    for name, backend in BACKENDS.items():
        for template in (READ_THEN_MARK, FILL, ACROSS_A_STAGE, AFTER_A_STAGE):
            assert _supported(backend, template), (name, template)
