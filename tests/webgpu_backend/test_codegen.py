"""The WGSL generator on a device: every helper and kernel passes naga's validation, unsupported programs
fail at compile time with the documented error, and the registry routes F64 programs past webgpu.
What needs no adapter (support tables, generated text) is tests/wgsl/test_generator.py."""

from __future__ import annotations

import pytest

from atlas_web import LaunchConfig, ProgramBuilder, UnsupportedOperation
from atlas_web.isa import (
    ADD, BRA, BarSync, BinaryMapOperation, CVT, MapOperation, ParallelMap, Predicate, ReduceOperation,
    Register as R, SETcc, Condition, Type, Address,
)
from webgpu_backend.wgsl import (
    ShaderFeatures, kernel_layout, kernel_source, kernel_supported, KernelSpec,
)
from webgpu_backend.wgsl.library import FAMILY_HELPERS, HELPERS, HelperSet



def test_an_f64_program_raises_unsupported_operation_naming_webgpu(webgpu):
    program = ProgramBuilder().add(CVT(dst=R(1), src=R(2), src_ty=Type.F32, dst_ty=Type.F64)).build()
    with pytest.raises(UnsupportedOperation, match="'webgpu' backend: WGSL has no 64-bit float") as error:
        webgpu.execute_program(program, LaunchConfig.linear(1))
    assert error.value.ty is Type.F64 and error.value.backend == "webgpu"


def test_a_barrier_some_lanes_skip_by_ending_still_runs_as_on_the_reference(gpu_driver):
    """The verifier accepts a BarSync that lanes may bypass only by ending (they count as arrived); the
    generated shader keeps its barrier in uniform control flow whatever the program's branches."""
    from tests.lowering.programs import program
    from .harness import assert_matches_reference
    from .test_memory import lane_pointer
    from atlas_web.isa import STG
    body = program(*lane_pointer(10, 2, 4), SETcc(pred=Predicate(0), lhs=R(255), rhs=R(2), cond=Condition.LT,
                                                    ty=Type.U32),
                   BRA(target="skip", pred=Predicate(0), negate=True), BarSync(id=0),
                   STG(dst=Address.RegisterIndirect(R(10), 0), src=R(255), ty=Type.U32),
                   "skip", ADD(dst=R(1), lhs=R(1), rhs=R(1), ty=Type.U32))
    presets = {R(2): (Type.U32, 5)}
    got = assert_matches_reference(gpu_driver, body, LaunchConfig.linear(8), [bytes(32)], presets=presets)
    assert got.buffers[0] == b"".join(i.to_bytes(4, "little") for i in range(5)) + bytes(12)


def _library_module(features: ShaderFeatures) -> str:
    helpers = HelperSet()
    for name in HELPERS:
        helpers.require(name)
    for name in FAMILY_HELPERS:
        for param in ((0, 1, 2) if name == "round_top" else (2, 4, 128)):
            helpers.require(name, param)
    return (features.enable_directives
            + "struct Launch { zero: u32, }\n@group(0) @binding(0) var<storage, read> launch: Launch;\n"
            "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;\n"
            "@group(0) @binding(2) var<storage, read_write> state: array<u32>;\n"
            "var<private> lane_id: u32;\nconst WIDE_BASE: u32 = 0u;\nconst LANES: u32 = 1u;\n"
            "const RESONANCE: u32 = 0u;\n"
            + helpers.render()
            + "\n@compute @workgroup_size(1)\nfn main() { state[0] = u32(exp_f32(bitcast<f32>(state[1]))); }\n")


def test_every_helper_of_the_library_passes_naga(gpu_driver):
    """All helpers (each family at a few sizes) in one module: naga validates every function."""
    features = ShaderFeatures(shader_f16="shader-f16" in gpu_driver.features)
    gpu_driver.compile(_library_module(features))
    if features.shader_f16:
        gpu_driver.compile(_library_module(ShaderFeatures(shader_f16=False)))


@pytest.mark.parametrize("kind, enum", [("map", MapOperation), ("binary", BinaryMapOperation),
                                        ("reduce", ReduceOperation), ("reduce_final", ReduceOperation)])
def test_every_kernel_source_passes_naga(gpu_driver, kind, enum):
    features = ShaderFeatures(shader_f16="shader-f16" in gpu_driver.features)
    for operation in enum:
        for ty in (Type.F16, Type.BF16, Type.F32, Type.I8, Type.U16, Type.I32, Type.U64):
            if kernel_supported(operation, ty):
                gpu_driver.compile(kernel_source(KernelSpec(kind, operation, ty), features))
    assert kernel_layout(KernelSpec("binary", BinaryMapOperation.Add, Type.F32, True)).keys() >= {7, 8, 9}


def test_kernel_variants_pass_naga(gpu_driver):
    """Vector bodies, tails, arrays bound at their offsets, unguarded kernels and the snapshot copy."""
    from webgpu_backend.wgsl.kernels.shader import SNAPSHOT_SOURCE
    features = ShaderFeatures(shader_f16="shader-f16" in gpu_driver.features)
    variants = [KernelSpec("binary", BinaryMapOperation.Add, Type.F32, True, True, False),
                KernelSpec("binary", BinaryMapOperation.Mul, Type.I32, True, False, True),
                KernelSpec("binary", BinaryMapOperation.Sub, Type.U32, False, True, False, tail=True),
                KernelSpec("map", MapOperation.Neg, Type.I8, False, True, False),
                KernelSpec("reduce", ReduceOperation.Sum, Type.F32, True, True, False)]
    for spec in variants:
        source = kernel_source(spec, features)
        assert ("launch.src_a" in source) is not spec.bound and ("rt[TRAPS" in source) is spec.guarded
        gpu_driver.compile(source)
    assert 3 not in kernel_layout(variants[0]) and 3 in kernel_layout(variants[2])
    gpu_driver.compile(SNAPSHOT_SOURCE)



def test_auto_selection_routes_a_program_to_a_backend_that_supports_all_of_it():
    from atlas_web.registry import init_backend
    f64 = ProgramBuilder().add(ParallelMap(dst_array=Address.BufferOffset(2), src_array=Address.BufferOffset(2),
                                           count=1, operation=MapOperation.Exp, ty=Type.F64)).build()
    f32 = ProgramBuilder().add(ADD(dst=R(1), lhs=R(2), rhs=R(3), ty=Type.F32)).build()
    chosen = init_backend(program=f64)
    try:
        assert chosen.name != "webgpu" and chosen.supports(f64.instructions[0].INFO, Type.F64)
    finally:
        chosen.close()
    chosen = init_backend("webgpu", program=f32)
    try:
        assert chosen.name == "webgpu"
    finally:
        chosen.close()
    with pytest.raises(UnsupportedOperation, match="F64"):
        init_backend("webgpu", program=f64)
