"""The default expansion tier (atlas_web/lowering/expansions.py): what a program becomes, where its
instructions came from, how traps and labels map back, and when a backend may rely on it."""

from __future__ import annotations

import pytest

from atlas_web import Program, ProgramError, TrapCode, UnsupportedOperation, trap_report
from atlas_web.isa import (
    BRA, EXIT, MOV_IMM, Address, BinaryMapOperation, LayerScale, ParallelMapBinary, ParallelReduce,
    ReduceOperation, Register, Type,
)
from atlas_web.isa.instructions import INSTRUCTION_CLASSES
from atlas_web.lowering.expansions import (
    EXPANSIONS, default_expansion, expand_program, expansion_supported, shifted,
)


def _no_kernel(info) -> bool:
    return False


def _program(rows: int = 3) -> Program:
    layer = LayerScale(output=Address.BufferOffset(2, 8), input=Address.RegisterIndirect(Register(4), 4),
                       scale=Address.BufferOffset(3), n=5, rows=rows, ty=Type.F16)
    return Program([MOV_IMM(dst=Register(4), value=3 << 32, ty=Type.U64), layer, BRA(target="end"), EXIT()],
                   {"end": 4, "mid": 2})


def test_layer_scale_becomes_checks_then_one_binary_map_per_row():
    expanded = expand_program(_program(), _no_kernel)
    instrs = expanded.program.instructions
    checks = [i for i in instrs if isinstance(i, ParallelReduce)]
    rows = [i for i in instrs if isinstance(i, ParallelMapBinary)]
    assert [(c.count, c.operation, c.ty) for c in checks] == [(15, ReduceOperation.Min, Type.F16)] * 2 + [
        (5, ReduceOperation.Min, Type.F16)]
    assert [c.src_array for c in checks] == [Address.BufferOffset(2, 8), Address.RegisterIndirect(Register(4), 4),
                                             Address.BufferOffset(3)]
    assert [(r.dst_array.offset, r.src_a.offset, r.count, r.operation) for r in rows] == [
        (8 + 10 * k, 4 + 10 * k, 5, BinaryMapOperation.Mul) for k in range(3)]
    assert expanded.origin == (0, 1, 1, 1, 1, 1, 1, 2, 3)
    assert dict(expanded.program.labels) == {"end": 9, "mid": 7}
    # the scratch register of the checks is one the program does not name
    assert checks[0].dst == Register(242) and all(c.dst == checks[0].dst for c in checks)


def test_traps_map_back_to_the_source_instruction():
    expanded = expand_program(_program(), _no_kernel)
    ran = expanded.program.instructions[5]
    trap = expanded.original_trap(trap_report.trap(TrapCode.OUT_OF_BOUNDS, 5, -1, ran))
    assert (trap.code, trap.instruction_index, trap.lane) == (TrapCode.OUT_OF_BOUNDS, 1, -1)
    assert str(trap) == ("trap OUT_OF_BOUNDS at instruction 1 in the cooperative step: layerscale.f16 [buf2 + 8], "
                         "[r4 + 4], [buf3 + 0], 5, 3: " + TrapCode.OUT_OF_BOUNDS.meaning)
    # a bounds check's numbers name the operand of the source instruction it checks (the second: input)
    checked = trap_report.trap(TrapCode.OUT_OF_BOUNDS, 2, -1, expanded.program.instructions[2],
                               trap_report.TrapRecord(0, 4, 4, 30, 16))
    assert str(expanded.original_trap(checked)).endswith(
        "layerscale.f16 [buf2 + 8], [r4 + 4], [buf3 + 0], 5, 3: input: 30 bytes at offset 4 of handle 4 leave the "
        "allocation of 16 bytes")


def test_nothing_to_expand_where_the_backend_has_the_kernel():
    assert expand_program(_program(), lambda info: True) is None


def test_support_needs_every_operation_the_expansion_uses():
    info = INSTRUCTION_CLASSES["LayerScale"].INFO
    assert expansion_supported(info, Type.F32, lambda i, t: True, lambda op, t: True)
    assert not expansion_supported(info, Type.F32, lambda i, t: True,
                                   lambda op, t: op is not BinaryMapOperation.Mul)
    assert not expansion_supported(info, Type.F32, lambda i, t: i.name != "ParallelReduce", lambda op, t: True)
    assert not expansion_supported(info, Type.I32, lambda i, t: True, lambda op, t: True)  # not in the row


def test_an_offset_the_mode_cannot_hold_is_refused_clearly():
    computed = Address.RegisterIndirectComputed(Register(1), Register(2))
    layer = LayerScale(output=computed, input=computed, scale=computed, n=1, rows=2)
    assert shifted(computed, 0, layer, "input") is computed
    with pytest.raises(UnsupportedOperation, match="output: a RegisterIndirectComputed"):
        expand_program(Program([layer]), _no_kernel)


def test_an_expansion_is_registered_once():
    with pytest.raises(ProgramError, match="LayerScale"):
        default_expansion("LayerScale", uses=())(lambda instr, scratch: [])
    assert "LayerScale" in EXPANSIONS


def test_expansions_are_cached_per_digest_and_rebuilt_after_leaving_the_cache():
    from atlas_web.lowering import expansions
    program = _program()
    first = expand_program(program, _no_kernel)
    assert expand_program(program, _no_kernel) is first          # the same object: the last result
    assert expand_program(_program(), _no_kernel) is first       # an equal program: the cache, by digest
    expansions._CACHE.clear()
    assert expand_program(program, _no_kernel) is not first
