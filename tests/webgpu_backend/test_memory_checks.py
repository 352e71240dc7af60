"""Memory checks made once per run of straight-line code (issue 17 item 9, memory-heavy programs).

Every global access through a pointer register read the handle table and checked the handle again,
and checked bounds and alignment as two traps: each table read at a lane-dependent index is a loop
over the SIMD lanes in lavapipe, and the compile time of such code grew faster than its length
(a 400-instruction memory-heavy program: 14 CPU s). Now one table read and one handle check serve
every access through the same register until it is written or a scope opens or closes, and bounds
and alignment are one check choosing its code. The trap (code, instruction, lane and the record's
message) must stay the reference's, also where the register changes between accesses and in loops.
"""

from __future__ import annotations

import re

from atlas_web import AtlasTrap, ExecutionParams, LaunchConfig
from atlas_web.isa import ADD, LDG, LOOP, MOV_IMM, STG, Address, Register as R, Type
from atlas_web.reference import CpuBackend
from tests.lowering.programs import GID, lane_slot_pointer, out_presets, program, store

from .harness import assert_matches_reference, fresh_backend

CONFIG = LaunchConfig(grid=(2, 1, 1), block=(4, 1, 1))
U32, U64 = Type.U32, Type.U64
LANES = 8


def _segment(backend, prog) -> str:
    compiled = backend._compile(backend._pipeline.compile(prog, {R(20): U64}), CONFIG)
    source = compiled.stage_shaders(CONFIG, backend.features, len(backend._memory.chunks))[0].source
    return source[source.index("fn segment_0"):source.index("@compute")]


def _trap_message(backend, prog, buffers: list[bytes]) -> str | None:
    """The trap's full message (code, instruction, lane and the record's numbers) or None."""
    handles = [backend.allocate_buffer(len(data)) for data in buffers]
    try:
        backend.execute_program_with_params(prog, ExecutionParams(CONFIG, out_presets(len(buffers))))
    except AtlasTrap as error:
        return str(error)
    finally:
        for handle in handles:
            backend.free_buffer(handle)
    return None


def _same_trap(gpu_driver, prog, buffers: list[bytes]) -> str | None:
    expected = _trap_message(CpuBackend(), prog, buffers)
    backend = fresh_backend(gpu_driver)
    try:
        assert _trap_message(backend, prog, buffers) == expected
    finally:
        backend.close()
    return expected


def test_accesses_through_one_pointer_read_the_handle_table_once(webgpu, gpu_driver):
    body = [*lane_slot_pointer(), MOV_IMM(dst=R(1), value=7, ty=U32), ADD(dst=R(2), lhs=R(GID), rhs=R(1), ty=U32),
            store(2, 0), store(1, 1), LDG(dst=R(3), src=Address.RegisterIndirect(R(21), 0), ty=U32),
            ADD(dst=R(3), lhs=R(3), rhs=R(2), ty=U32), store(3, 2), store(2, 3)]
    prog = program(body)
    segment = _segment(webgpu, prog)
    assert len(re.findall(r"dtable\[", segment)) == 1
    assert segment.count("trap_if(") == 1 + 5          # the handle once, then bounds-and-alignment per access
    assert_matches_reference(gpu_driver, prog, CONFIG, [bytes(16 * LANES)], presets=out_presets())


def test_a_later_access_out_of_bounds_or_misaligned_traps_as_on_the_reference(gpu_driver):
    # 8 lanes x 16 bytes, one slot short: lane 7's third store is out of bounds
    short = [bytes(16 * LANES - 4)]
    body = [*lane_slot_pointer(), store(GID, 0), store(GID, 1), store(GID, 3)]
    assert "OUT_OF_BOUNDS" in _same_trap(gpu_driver, program(body), short)
    # out of bounds and misaligned at once: bounds come first
    both = [*lane_slot_pointer(), store(GID, 0), LDG(dst=R(4), src=Address.RegisterIndirect(R(21), 130), ty=U32)]
    assert "OUT_OF_BOUNDS" in _same_trap(gpu_driver, program(both), short)
    misaligned = [*lane_slot_pointer(), store(GID, 0), LDG(dst=R(4), src=Address.RegisterIndirect(R(21), 6), ty=U32)]
    assert "MISALIGNED" in _same_trap(gpu_driver, program(misaligned), short)


def test_a_pointer_written_between_accesses_is_checked_again(webgpu, gpu_driver):
    # after the first store the pointer names handle 99 (no buffer): the second store traps INVALID_HANDLE
    body = [*lane_slot_pointer(), store(GID, 0), MOV_IMM(dst=R(21), value=99 << 32, ty=U64), store(GID, 1)]
    prog = program(body)
    assert len(re.findall(r"dtable\[", _segment(webgpu, prog))) == 2
    assert "INVALID_HANDLE" in _same_trap(gpu_driver, prog, [bytes(16 * LANES)])


def test_a_pointer_advanced_in_a_loop_is_checked_at_every_iteration(gpu_driver):
    # three iterations store the count through r21 and move it a slot on, then the slot after them: 16 bytes a
    # lane; one buffer 8 bytes short traps in lane 7's third iteration, one 4 bytes short after its loop
    body = [*lane_slot_pointer(), MOV_IMM(dst=R(7), value=3, ty=U32), MOV_IMM(dst=R(8), value=4, ty=U64),
            "top", store(7, 0), ADD(dst=R(21), lhs=R(21), rhs=R(8), ty=U64), LOOP(count=R(7), body="top"),
            store(GID, 0)]
    prog = program(body)
    assert "instruction 6 in lane 7" in _same_trap(gpu_driver, prog, [bytes(16 * LANES - 8)])
    assert "instruction 9 in lane 7" in _same_trap(gpu_driver, prog, [bytes(16 * LANES - 4)])
    assert_matches_reference(gpu_driver, prog, CONFIG, [bytes(16 * LANES)], presets=out_presets())


def test_a_loop_that_moves_a_pointer_to_another_buffer_reads_its_entry_again(gpu_driver):
    # r21 is used before the loop; each iteration stores through it, then moves it to the next handle:
    # buffer 0, buffer 1, then handle 4 (none) must trap INVALID_HANDLE in the third iteration; an entry
    # kept from before the loop would write buffer 0 twice and miss the trap
    body = [*lane_slot_pointer(), store(GID, 1), MOV_IMM(dst=R(7), value=3, ty=U32),
            MOV_IMM(dst=R(8), value=1 << 32, ty=U64),
            "top", store(7, 0), ADD(dst=R(21), lhs=R(21), rhs=R(8), ty=U64), LOOP(count=R(7), body="top")]
    prog = program(body)
    buffers = [bytes(16 * LANES), bytes(16 * LANES)]
    assert "INVALID_HANDLE" in _same_trap(gpu_driver, prog, buffers)
    assert_matches_reference(gpu_driver, prog, CONFIG, buffers, presets=out_presets())
