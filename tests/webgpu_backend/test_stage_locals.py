"""Registers only one segment touches are variables of that segment's function (issue 17 item 9: a
10,000-instruction straight-line program spent most of its first launch in lavapipe's compiler, which
handles thousands of module-scope private variables several times slower than function variables).
The shader must still compute what the reference does: registers start at zero, float ones at a zero
the compiler cannot fold, and a register whose value must outlast a barrier stays private."""

from __future__ import annotations

import math
import re
import struct

from atlas_web import LaunchConfig
from atlas_web.isa import ADD, LDG, LOOP, MOV_IMM, MUL, STG, Address, BarSync, Register as R, Type
from tests.lowering.programs import GID, lane_slot_pointer, out_presets, program, store

from .harness import assert_matches_reference

CONFIG = LaunchConfig(grid=(2, 1, 1), block=(4, 1, 1))
U32, F32 = Type.U32, Type.F32


def _stage_source(backend, prog, config=CONFIG) -> str:
    compiled = backend._compile(backend._pipeline.compile(prog, {R(20): Type.U64}), config)
    return compiled.stage_shaders(config, backend.features, len(backend._memory.chunks))[0].source


def _private_registers(source: str) -> set[str]:
    return set(re.findall(r"var<private> (r\d+_\w+|p\d+):", source))


def test_a_straight_line_stage_keeps_its_registers_in_the_segment(webgpu, gpu_driver):
    body = [MOV_IMM(dst=R(1), value=3, ty=U32), ADD(dst=R(2), lhs=R(GID), rhs=R(1), ty=U32),
            MUL(dst=R(3), lhs=R(2), rhs=R(2), ty=U32), *lane_slot_pointer(), store(3, 0)]
    prog = program(body)
    source = _stage_source(webgpu, prog)
    segment = source[source.index("fn segment_0"):]
    assert {"r1_u32", "r2_u32", "r3_u32"} <= set(re.findall(r"\n    var (r\d+_\w+):", segment))
    assert not _private_registers(source) & {"r1_u32", "r2_u32", "r3_u32"}
    assert "r20_u64" in _private_registers(source)          # a preset: main loads it
    assert_matches_reference(gpu_driver, prog, CONFIG, [bytes(16 * 8)], presets=out_presets())


def test_float_registers_read_before_written_are_zero_the_compiler_cannot_fold(webgpu, gpu_driver):
    # r5 (f32) is never written: 0 * inf must give NaN, as on the reference (a folded 0 would give 0)
    body = [*lane_slot_pointer(), LDG(dst=R(4), src=Address.RegisterIndirect(R(23), 0), ty=F32),
            MUL(dst=R(6), lhs=R(5), rhs=R(4), ty=F32), store(6, 0, F32), store(5, 1, F32)]
    prog = program(body)
    presets = out_presets(2)
    source = _stage_source(webgpu, prog)
    assert re.search(r"var r5_f32: f32 = bitcast<f32>\(launch\.zero\);", source)
    got = assert_matches_reference(gpu_driver, prog, CONFIG, [bytes(16 * 8), struct.pack("<f", math.inf)],
                                   presets=presets, types=[F32, F32])
    assert math.isnan(struct.unpack_from("<f", got.buffers[0])[0])


def test_a_stage_of_several_segments_keeps_its_registers_private(webgpu, gpu_driver):
    # r1 counts across a BarSync in a loop: the segment after the barrier is entered again, so r1 must last
    body = [MOV_IMM(dst=R(1), value=0, ty=U32), MOV_IMM(dst=R(2), value=1, ty=U32), MOV_IMM(dst=R(7), value=3, ty=U32),
            "top", ADD(dst=R(1), lhs=R(1), rhs=R(2), ty=U32), BarSync(id=0), LOOP(count=R(7), body="top"),
            *lane_slot_pointer(), store(1, 0)]
    prog = program(body)
    source = _stage_source(webgpu, prog)
    assert "r1_u32" in _private_registers(source)
    assert_matches_reference(gpu_driver, prog, CONFIG, [bytes(16 * 8)], presets=out_presets())


def test_trap_checks_are_branchless(webgpu, gpu_driver):
    """Every bounds, alignment, handle and division check of a straight-line program is a trap_if call (selects),
    not an if: the branches cost lavapipe's compiler most of the time of memory-heavy code (issue 17 item 9).
    The first trap's record still matches the reference's."""
    from atlas_web.isa import DIV
    body = [*lane_slot_pointer(), LDG(dst=R(4), src=Address.RegisterIndirect(R(23), 0), ty=U32),
            MOV_IMM(dst=R(5), value=9, ty=U32), DIV(dst=R(6), lhs=R(5), rhs=R(4), ty=U32), store(6, 0),
            LDG(dst=R(7), src=Address.RegisterIndirect(R(23), 8), ty=U32)]     # out of bounds: a later trap
    prog = program(body)
    source = _stage_source(webgpu, prog)
    segment = source[source.index("fn segment_0"):source.index("@compute")]
    assert "trap_if(" in segment and "if (" not in segment
    got = assert_matches_reference(gpu_driver, prog, CONFIG, [bytes(16 * 8), bytes(4)], presets=out_presets(2))
    assert got.trap is not None and got.trap[0] == 4     # DIVISION_BY_ZERO first, not the later OUT_OF_BOUNDS
