"""The WGSL generator without a GPU adapter (it needs only the standard library): it imports with wgpu and
js absent, what it supports, and the text it generates (trap words, what browsers refuse); naga's
validation of the same text is tests/webgpu_backend/test_codegen.py's (it needs a device)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from atlas_web import LaunchConfig, UnsupportedOperation
from atlas_web.isa import (
    DIV, MOV_IMM, OPCODE_TABLE, Address, BinaryMapOperation, MapOperation, ParallelMap, ReduceOperation,
    Register as R, Type,
)
from atlas_web.lowering.expansions import EXPANSIONS
from tests.lowering.programs import program
from webgpu_backend.docs import UNSUPPORTED
from webgpu_backend.wgsl import TYPE_MAP, WGSL_LANE_RULES, KernelSpec, ShaderFeatures, kernel_source, kernel_supported
from webgpu_backend.wgsl.kernels import KERNELS
from webgpu_backend.wgsl.support import STRUCTURAL, supports_instruction

#: imports the generator with wgpu and js unimportable and generates a kernel and a stage shader
_WITHOUT_ENGINE = """
import sys
sys.modules["wgpu"] = None
sys.modules["js"] = None
from atlas_web import ProgramBuilder, LaunchConfig
from atlas_web.isa import ADD, Address, MapOperation, ParallelMap, Register as R, Type
from atlas_web.verify import verify
from webgpu_backend.compiler import compile_program
from webgpu_backend.wgsl import ShaderFeatures
from webgpu_backend.wgsl.kernels import KERNELS
instr = ParallelMap(dst_array=Address.BufferOffset(2), src_array=Address.BufferOffset(2), count=8,
                    operation=MapOperation.Neg, ty=Type.I32)
sources = [spec.source(ShaderFeatures()) for _, spec in KERNELS["ParallelMap"].listing(instr)]
body = ProgramBuilder().add(ADD(dst=R(1), lhs=R(2), rhs=R(3), ty=Type.F32)).add(instr).build()
shaders = compile_program(verify(body), {}).stage_shaders(LaunchConfig.linear(4), ShaderFeatures(), 1)
assert sources and shaders and "@compute" in sources[0]
assert not [m for m in sys.modules if m.split(".")[0] in ("wgpu", "js") and sys.modules[m] is not None]
print("generated", len(sources), len(shaders))
"""


def test_the_generator_imports_and_runs_without_wgpu_or_js():
    done = subprocess.run([sys.executable, "-c", _WITHOUT_ENGINE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("generated 1 ")


def test_every_row_and_type_but_f64_is_supported_and_f64_never():
    """Every row but those documented unsupported (webgpu_backend.docs.UNSUPPORTED: some of their types, as its
    reason says, e.g. F16/BF16 Softmax); the backend's supports_op is supports_instruction for a type of the row."""
    for info in OPCODE_TABLE:
        if info.name in UNSUPPORTED:
            assert not all(supports_instruction(info, ty) for ty in info.types if ty is not Type.F64), info.name
            continue
        assert (info.name in WGSL_LANE_RULES or info.name in STRUCTURAL | set(KERNELS)
                or info.name in EXPANSIONS)
        for ty in sorted(info.types, key=lambda t: t.code) or [None]:
            assert supports_instruction(info, ty) == (ty is not Type.F64), (info.name, ty)


def test_the_type_map_covers_every_type_but_f64():
    assert set(TYPE_MAP) == set(Type) - {Type.F64}
    assert {wt.family for wt in TYPE_MAP.values()} == {"float", "word", "dword", "wide"}
    assert TYPE_MAP[Type.I4096].words == 128 and TYPE_MAP[Type.U8].mask == 0xFF


def test_a_kernel_for_an_operation_a_type_lacks_is_unsupported():
    assert not kernel_supported(MapOperation.Exp, Type.I32)
    with pytest.raises(UnsupportedOperation):
        kernel_source(KernelSpec("map", MapOperation.Exp, Type.F64), ShaderFeatures())


def test_a_step_never_reads_the_trap_word_its_own_dispatch_writes():
    """Each step records its traps in a word of its own and runs only if the step before it did not
    trap: a workgroup that starts after another of the same dispatch trapped still runs, so the
    lowest lane is reported however the device schedules workgroups (one shared trap word made
    later workgroups skip the stage in Chromium)."""
    from atlas_web.verify import verify
    from webgpu_backend.compiler import compile_program
    body = [MOV_IMM(dst=R(5), value=7, ty=Type.U32), DIV(dst=R(3), lhs=R(5), rhs=R(5), ty=Type.U32),
            ParallelMap(dst_array=Address.BufferOffset(handle=2, offset=0),
                        src_array=Address.BufferOffset(handle=2, offset=0), count=4, operation=MapOperation.Neg,
                        ty=Type.I32),
            DIV(dst=R(3), lhs=R(5), rhs=R(3), ty=Type.U32)]
    shaders = compile_program(verify(program(body)), {}).stage_shaders(LaunchConfig(grid=(3, 1, 1), block=(8, 1, 1)), ShaderFeatures(), 1)
    kernel = kernel_source(KernelSpec("map", MapOperation.Neg, Type.I32), ShaderFeatures())
    assert len(shaders) == 2
    for source in (shaders[1].source, kernel):
        source = source() if callable(source) else source
        assert "atomicLoad(&rt[TRAPS + launch.step - 1u])" in source
        assert "atomicLoad(&rt[TRAPS + launch.step])" not in source
    first = shaders[0].source() if callable(shaders[0].source) else shaders[0].source
    assert "atomicMin(&rt[TRAPS + launch.step], lane_id)" in first


_CONSTANT_NON_FINITE = __import__("re").compile(r"bitcast<f32>\(0x(?:7f8|7fc|ff8|ffc)[0-9a-f]{5}u\)")


def _browser_problems(source: str) -> list[str]:
    """What Tint (browsers) refuses or warns about and naga lets pass: constant infinities/NaNs
    (an error there) and statements after a return/break/continue in the same block (a warning)."""
    problems = [f"constant non-finite {m}" for m in _CONSTANT_NON_FINITE.findall(source)]
    lines = [line for line in source.splitlines() if line.strip() and not line.strip().startswith("//")]
    for line, after in zip(lines, lines[1:]):
        ends = line.strip().startswith(("return", "break;", "continue;")) and line.strip().endswith(";")
        if ends and not after.strip().startswith("}"):
            problems.append(f"unreachable after {line.strip()!r}: {after.strip()!r}")
    return problems


def test_generated_wgsl_has_nothing_browsers_refuse_or_warn_about():
    """Stage shaders of the conformance control-flow, trap and lane cases and every kernel variant."""
    from atlas_web.verify import verify
    from tests.conformance.control_cases import control_cases
    from tests.conformance.lane_cases import lane_cases
    from tests.conformance.trap_cases import trap_cases
    from webgpu_backend.compiler import compile_program
    features = ShaderFeatures(shader_f16=False)
    checked = 0
    cases = [*control_cases(), *trap_cases(), *(c for c in lane_cases() if c.ty in (Type.F32, Type.F16, Type.U8))]
    for case in cases:
        program = case.program([2 + k for k in range(len(case.buffers))])
        try:
            compiled = compile_program(verify(program), {})
            shaders = compiled.stage_shaders(case.config, features, 1)
        except UnsupportedOperation:
            continue
        for shader in shaders:
            source = shader.source() if callable(shader.source) else shader.source
            assert not _browser_problems(source), (case.name, _browser_problems(source)[:3])
            checked += 1
    for op in (BinaryMapOperation.Min, BinaryMapOperation.Add, BinaryMapOperation.Pow):
        for spec in (KernelSpec("binary", op, Type.F32), KernelSpec("binary", op, Type.F16, sources=("ro", "dst"))):
            assert not _browser_problems(kernel_source(spec, features))
    for op in ReduceOperation:
        assert not _browser_problems(kernel_source(KernelSpec("reduce_final", op, Type.F32), features))
    assert checked > 100
    assert _browser_problems("fn f() -> f32 {\n    return 1.0;\n    return bitcast<f32>(0x7f800000u);\n}") == [
        "constant non-finite bitcast<f32>(0x7f800000u)",
        "unreachable after 'return 1.0;': 'return bitcast<f32>(0x7f800000u);'"]


def test_an_f32_product_reaches_the_add_that_reads_it_rounded():
    """MUL then ADD must round twice (docs/semantics.md): NVIDIA's Vulkan compiler contracts a multiply and an
    add that reads it into one FMA, also across instructions (seen on an H200), so the stage shader passes
    every F32 product through the run-time XOR of ``opaque_f32`` before anything reads it; the vec4 map
    kernel stores its product straight away and keeps the plain ``*``."""
    from atlas_web.isa import ADD, MUL
    from atlas_web.verify import verify
    from webgpu_backend.compiler import compile_program
    body = program(MUL(dst=R(1), lhs=R(2), rhs=R(3), ty=Type.F32), ADD(dst=R(4), lhs=R(1), rhs=R(5), ty=Type.F32))
    shaders = compile_program(verify(body), {}).stage_shaders(LaunchConfig.linear(4), ShaderFeatures(), 1)
    source = "".join(s.source() if callable(s.source) else s.source for s in shaders)
    assert "opaque_f32((" in source and "fn opaque_f32" in source
    vec4 = kernel_source(KernelSpec("binary", BinaryMapOperation.Mul, Type.F32, vector=True), ShaderFeatures())
    assert "opaque_f32" not in vec4 and "(a" in vec4


def test_a_write_drops_the_known_values_that_name_the_register_whatever_else_they_name():
    """LaneContext.written's index (register -> known values): a value naming two registers goes with a write of
    either, also when it was dropped through one and made again; values naming only other registers (or text that
    is not a register name: ``entry5``, ``p12x``) stay; a predicate write drops the checks naming it."""
    from types import SimpleNamespace

    from atlas_web.isa import Predicate
    from atlas_web.lowering.liveness import VirtualRegister
    from webgpu_backend.wgsl.lane_context import LaneContext, ShaderResources
    from webgpu_backend.wgsl.library import HelperSet

    r5, r6, p2 = (VirtualRegister(0, R(5), Type.U32), VirtualRegister(1, R(6), Type.U32),
                  VirtualRegister(2, Predicate(2), None))
    writes = {(0, "dst"): r5, (1, "dst"): r6, (2, "dst"): p2}
    plan = SimpleNamespace(info=None, registers=SimpleNamespace(writes=writes, reads={}))
    ctx = LaneContext(plan, HelperSet(), ShaderFeatures(), ShaderResources(), chunks=1)
    both, only6, other = ctx.known("r5_u32 + r6_u32"), ctx.known("dtable[r6_u32]"), ctx.known("entry5 + p12x")
    assert not ctx.seen("p2 && r5_u32 > 3u")
    ctx.written(0)  # r5
    assert ctx.known("dtable[r6_u32]") == only6 and ctx.known("entry5 + p12x") == other
    again = ctx.known("r5_u32 + r6_u32")
    assert again != both and not ctx.seen("p2 && r5_u32 > 3u") and ctx.seen("p2 && r5_u32 > 3u")
    ctx.written(1)  # r6: the value made again goes too, and the one naming r6 alone
    assert ctx.known("r5_u32 + r6_u32") not in (both, again) and ctx.known("dtable[r6_u32]") != only6
    assert ctx.seen("p2 && r5_u32 > 3u")
    ctx.written(2)  # p2
    assert not ctx.seen("p2 && r5_u32 > 3u") and ctx.known("entry5 + p12x") == other
    ctx.forget()
    assert ctx.known("entry5 + p12x") != other
