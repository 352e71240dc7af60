"""The WebGPU kernel registry (webgpu_backend/wgsl/kernels/) without a GPU adapter: every cooperative row has a
kernel, a default expansion or a documented-unsupported entry, registration and the launch record, and
the dispatch plans (tests/test_rule_modules.py checks that every kernel module is imported)."""

from __future__ import annotations

import pytest

from atlas_web.isa import OPCODE_TABLE, Address, BinaryMapOperation, MapOperation, ParallelMapBinary, ReduceOperation
from atlas_web.isa import ParallelMap, ParallelReduce, Register as R, Type
from atlas_web.isa.opcodes import ExecKind
from atlas_web.lowering.expansions import EXPANSIONS
from webgpu_backend.docs import UNSUPPORTED
from webgpu_backend.wgsl import ShaderFeatures
from webgpu_backend.wgsl.kernels import KERNELS, DeviceLimits, Kernel, register
from webgpu_backend.wgsl.runtime_layout import declare_launch_fields, launch_fields, launch_struct
from webgpu_backend.wgsl.support import operation_supported, supports_instruction

_DEVICE = DeviceLimits(max_groups=65535, bind_alignment=256)


class _Buffer:
    def __init__(self, size: int) -> None:
        self.size = size


def test_every_cooperative_row_has_a_kernel_an_expansion_or_is_documented_unsupported():
    for info in OPCODE_TABLE:
        if info.kind is ExecKind.COOPERATIVE:
            assert info.name in KERNELS or info.name in EXPANSIONS or info.name in UNSUPPORTED, info.name


def test_registered_kernels_answer_the_support_queries():
    for name, kernel in KERNELS.items():
        assert kernel.instruction == name and isinstance(kernel, Kernel)
    assert operation_supported(MapOperation.Exp, Type.F32) and not operation_supported(MapOperation.Exp, Type.I32)
    info = ParallelReduce.INFO
    assert supports_instruction(info, Type.I32) and not supports_instruction(info, Type.F64)


def test_a_second_kernel_for_one_instruction_is_refused():
    class Again(Kernel):
        instruction = "ParallelMap"
    with pytest.raises(ValueError, match="ParallelMap already has a WebGPU kernel"):
        register(Again())


def test_the_launch_record_is_the_common_fields_then_the_kernels_then_resume():
    assert launch_fields() == ("zero", "budget", "table_entries", "step", "expect", "lanes", "dst", "src_a", "src_b",
                               "count", "result", "groups", "src_c", "src_d", "src_e", "values_handle",
                               "values_offset", "values_size", "indices_handle", "indices_offset", "indices_size",
                               "trap_info", "trap_index", "resume")
    assert launch_struct().startswith("struct Launch {\n    zero: u32,\n")
    declare_launch_fields(("count", "dst"))       # declared already: shared, not added
    assert len(launch_fields()) == 24
    with pytest.raises(ValueError, match="at most 64 words"):
        declare_launch_fields(tuple(f"w{k}" for k in range(60)))
    assert len(launch_fields()) == 24                # nothing declared by the refused call


def _binary(count: int, ty: Type = Type.F32, op=BinaryMapOperation.Add):
    return ParallelMapBinary(dst_array=Address.BufferOffset(2, 0), src_a=Address.BufferOffset(3, 0),
                             src_b=Address.BufferOffset(4, 0), count=count, operation=op, ty=ty)


def test_an_aligned_binary_map_plans_vec4s_then_the_tail():
    instr = _binary(1030)
    a, b, out = _Buffer(1 << 20), _Buffer(1 << 20), _Buffer(1 << 20)
    plan = KERNELS["ParallelMapBinary"].plan(instr, {"dst": (out, 0), "src_a": (a, 4096), "src_b": (b, 8192)},
                                             _DEVICE)
    vector, tail = plan.dispatches
    assert vector.shader.vector and vector.shader.bound and vector.workgroups == (2, 1, 1)   # 257 vec4s
    assert tail.shader.tail and tail.workgroups == (1, 1, 1)
    assert plan.fields == {"count": 1030}                          # bound: no offsets in the record
    assert set(plan.fields) <= set(launch_fields())
    source = tail.shader.source(ShaderFeatures())
    assert "launch.count & ~3u" in source and "launch.src_a" not in source


def test_unaligned_operands_are_read_at_run_time_offsets():
    buffer = _Buffer(1 << 20)
    plan = KERNELS["ParallelMap"].plan(
        ParallelMap(dst_array=Address.BufferOffset(2, 0), src_array=Address.BufferOffset(2, 40), count=10,
                    operation=MapOperation.Neg, ty=Type.I8),
        {"dst": (buffer, 3), "src_a": (buffer, 40)}, _DEVICE)
    (only,) = plan.dispatches
    assert not only.shader.bound and only.shader.sources == ("dst", "rw")
    assert plan.fields == {"count": 10, "dst": 3, "src_a": 40, "src_b": 0} and only.workgroups == (1, 1, 1)


def test_a_reduction_plans_its_partials_then_the_final_pass():
    instr = ParallelReduce(dst=R(1), src_array=Address.BufferOffset(2, 0), count=1 << 22,
                           operation=ReduceOperation.Sum, ty=Type.F32)
    plan = KERNELS["ParallelReduce"].plan(instr, {"src_a": (_Buffer(1 << 24), 0)}, _DEVICE)
    first, final = plan.dispatches
    assert first.shader.vector and first.bindings[6] == "partials" and final.workgroups == (1, 1, 1)
    assert plan.fields["groups"] == first.workgroups[0] == 16
