"""ParallelReduce's kernel: partial results of up to MAX_GROUPS workgroups, then one workgroup
combines them and writes the register result (``rt[launch.result]``); F32 Sum and Product read
vec4s when the source is 16-byte aligned. Its shaders are the "reduce" and "reduce_final" kinds
(``shader.SHADER_KINDS``), registered here: floats accumulate in f32 (sums split by magnitude and
products as mantissa and exponent, so no partial over- or underflows). Standard library only."""

from __future__ import annotations

from atlas_web.isa.enums import ReduceOperation
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES, OPERATION_ENUMS
from atlas_web.isa.types import Type

from ..emitter import CodeWriter
from ..library import helper
from ..rules import value
from ..rules_float import finish
from ..rules_lane import literal
from ..rules_memory import load_value
from ..types import TYPE_MAP, WgslType
from . import DeviceLimits, Dispatch, Kernel, KernelPlan, register
from .binding import ROLE_BINDINGS, binding_plan
from .shader import (
    ELEMENTS_PER_INVOCATION, MAX_GROUPS, REDUCE_INSTRUCTIONS, SHADER_KINDS, WORKGROUP, KernelSpec, ShaderKind,
    kernel_supported, value_bits,
)

__all__ = ["ReduceKernel"]

#: binding 6: the partial results of the first pass
_BINDINGS = {**ROLE_BINDINGS, 6: "partials"}


class ReduceKernel(Kernel):
    instruction = "ParallelReduce"
    launch_fields = ("dst", "src_a", "src_b", "count", "result", "groups")

    def operations(self, ty):
        return tuple(op for op in OPERATION_ENUMS[self.instruction] if ty in COOPERATIVE_OPERATION_TYPES[op])

    def operation_of(self, instr):
        return instr.operation

    def supports(self, operation, ty) -> bool:
        return operation is not None and kernel_supported(operation, ty)

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        ty, count, operation = instr.ty, instr.count, instr.operation
        offsets = {role: byte for role, (_, byte) in operands.items()}
        vector = (all(byte % 16 == 0 for byte in offsets.values()) and ty.name == "F32"
                  and operation in (ReduceOperation.Sum, ReduceOperation.Product))
        bound, _ = binding_plan(operands, count * ty.size_bytes(), device.bind_alignment)
        per_group = WORKGROUP * (4 * ELEMENTS_PER_INVOCATION if vector else 1)
        groups = max(1, min(MAX_GROUPS, -(-count // per_group)))
        fields = {"count": count, "groups": groups}
        if not bound:
            fields.update(dst=offsets.get("dst", 0), src_a=offsets.get("src_a", 0), src_b=offsets.get("src_b", 0))
        return KernelPlan((Dispatch(KernelSpec("reduce", operation, ty, vector, bound), _BINDINGS, (groups, 1, 1)),
                           Dispatch(KernelSpec("reduce_final", operation, ty), _BINDINGS, (1, 1, 1))), fields)

    def listing(self, instr):
        return [(kind, KernelSpec(kind, instr.operation, instr.ty)) for kind in ("reduce", "reduce_final")]



# ---- the shaders ----------------------------------------------------------------------------------
def _accumulator(wt: WgslType) -> tuple[WgslType, str]:
    """(the type reductions accumulate in, its WGSL type): floats in f32, integers in their own type."""
    if wt.family == "float":
        return TYPE_MAP[Type.F32], "f32"
    return wt, wt.wgsl


def _identity(operation: ReduceOperation, wt: WgslType) -> str:
    if wt.family == "float":
        values = {ReduceOperation.Sum: 0.0, ReduceOperation.Product: 1.0, ReduceOperation.Min: float("inf"),
                  ReduceOperation.Max: float("-inf")}
        return literal(TYPE_MAP[Type.F32], values[operation])
    lo, hi = wt.ty.int_range()
    values = {ReduceOperation.Sum: 0, ReduceOperation.Product: 1, ReduceOperation.Min: hi, ReduceOperation.Max: lo}
    return literal(wt, values[operation])


def _tree(w: CodeWriter, combine) -> None:
    w.emit("scratch[li] = acc;")
    w.emit("workgroupBarrier();")
    with w.block(f"for (var width = {WORKGROUP // 2}u; width > 0u; width = width / 2u)"):
        with w.block("if (li < width)"):
            w.emit(f"scratch[li] = {combine('scratch[li]', 'scratch[li + width]')};")
        w.emit("workgroupBarrier();")


def _guarded_uniformly(w: CodeWriter) -> None:
    w.emit("if (li == 0u) { go = select(0u, 1u, guard()); }")
    w.emit("if (workgroupUniformLoad(&go) == 0u) { return; }")


def _first_pass_loop(w: CodeWriter, spec: KernelSpec, setup, step, finish) -> str:
    """A reduction's first pass: with ``spec.vector`` emit ``setup()``, a grid-stride loop calling
    ``step(x4)`` on each whole vec4<f32> ``x4`` of the source, then ``finish()``; return the header of
    the loop over the elements folded one by one (all of them, grid stride; after the vectors the
    count % 4 left, taken by the first invocation)."""
    if not spec.vector:
        return f"for (var e = wid.x * {WORKGROUP}u + li; e < launch.count; e = e + nwg.x * {WORKGROUP}u)"
    w.emit("let vectors = launch.count / 4u;")
    setup()
    with w.block(f"for (var v = wid.x * {WORKGROUP}u + li; v < vectors; v = v + nwg.x * {WORKGROUP}u)"):
        step("bitcast<vec4<f32>>(srca4[(base_a() >> 4u) + v])")
    finish()
    w.emit("let tail_start = select(launch.count, vectors * 4u, wid.x == 0u && li == 0u);")
    return "for (var e = tail_start; e < launch.count; e = e + 1u)"


#: float sums keep values of at least SCALE_THRESHOLD in magnitude, times 1 / SCALE_THRESHOLD, apart
SCALE_THRESHOLD = 2.0 ** 64


def _float_sum_main(w: CodeWriter, spec: KernelSpec, wt: WgslType) -> str:
    """A float Sum that no finite values can overflow: f32 accumulators ``vec2(small, big)``, ``small``
    adding the values under SCALE_THRESHOLD in magnitude and ``big`` the others times its inverse
    (exact), so no partial of fewer than 2^32 finite values leaves the f32 range; the final kernel
    joins them (``big * SCALE_THRESHOLD + small``, which overflows only when the sum itself is beyond
    the range) and rounds once. An infinity or NaN in the result therefore comes only from one among
    the values, as docs/semantics.md wants."""
    f32 = TYPE_MAP[Type.F32]
    threshold, inverse = literal(f32, SCALE_THRESHOLD), literal(f32, 1.0 / SCALE_THRESHOLD)
    _guarded_uniformly(w)
    w.emit("var acc = vec2<f32>(0.0);")
    if spec.kind == "reduce":
        def step(x4: str) -> None:
            w.emit(f"let x4 = {x4};")
            w.emit(f"let big_lanes = abs(x4) >= vec4<f32>({threshold});")
            w.emit("small4 = small4 + select(x4, vec4<f32>(0.0), big_lanes);")
            w.emit(f"big4 = big4 + select(vec4<f32>(0.0), x4 * {inverse}, big_lanes);")
        loop = _first_pass_loop(
            w, spec, lambda: [w.emit(f"var {name} = vec4<f32>(0.0);") for name in ("small4", "big4")], step,
            lambda: w.emit("acc = vec2<f32>((small4.x + small4.y) + (small4.z + small4.w), "
                           "(big4.x + big4.y) + (big4.z + big4.w));"))
        with w.block(loop):
            element = w.temp(load_value(w, wt, "load_a", f"(base_a() + e * {wt.size}u)"), "x")
            w.emit(f"acc = acc + select(vec2<f32>({element}, 0.0), vec2<f32>(0.0, {element} * {inverse}), "
                   f"abs({element}) >= {threshold});")
        _tree(w, lambda x, y: f"({x} + {y})")
        with w.block("if (li == 0u)"):
            w.emit("partials[wid.x * 2u] = bitcast<u32>(scratch[0].x);")
            w.emit("partials[wid.x * 2u + 1u] = bitcast<u32>(scratch[0].y);")
        return "vec2<f32>"
    with w.block(f"for (var g = li; g < launch.groups; g = g + {WORKGROUP}u)"):
        w.emit("acc = acc + bitcast<vec2<f32>>(vec2<u32>(partials[g * 2u], partials[g * 2u + 1u]));")
    _tree(w, lambda x, y: f"({x} + {y})")
    with w.block("if (li == 0u)"):
        total = w.temp(f"scratch[0].y * {threshold} + scratch[0].x", "total")
        w.emit(f"atomicStore(&rt[launch.result], bitcast<u32>({finish(w, wt, total)}));")
        w.emit("atomicStore(&rt[REACHED + launch.step], launch.resume);")
    return "vec2<f32>"


@helper("product_part")
def _product_part_source() -> str:
    """A float product's partial kept as vec2(m, e) = m * 2^e: m in [0.5, 1) (or 0, an infinity or NaN,
    which IEEE multiplication then propagates: 0 * inf is NaN), e an integer-valued f32 held within
    +-2^20 (far past where the product is 0 or infinite either way), so no partial over- or underflows.
    A subnormal is scaled by 2^64 before frexp (lavapipe's frexp gets subnormals wrong; a device that
    flushes them reads zero either way)."""
    return """fn product_part(m: f32, e: f32) -> vec2<f32> {
    if ((bitcast<u32>(m) & 0x7f800000u) == 0x7f800000u || m == 0.0) { return vec2<f32>(m, e); }
    var x = m;
    var shift = e;
    if ((bitcast<u32>(m) & 0x7f800000u) == 0u) { x = m * 18446744073709551616.0; shift = e - 64.0; }
    let parts = frexp(x);
    return vec2<f32>(parts.fract, clamp(shift + f32(parts.exp), -1048576.0, 1048576.0));
}"""


@helper("product_parts", deps=("product_part",))
def _product_parts_source() -> str:
    """Two partials multiplied: mantissas in f32 (products of [0.5, 1) stay in [0.25, 1)), exponents added."""
    return """fn product_parts(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return product_part(a.x * b.x, a.y + b.y);
}"""


@helper("product_value")
def _product_value_source() -> str:
    """m * 2^e rounded once to f32: exact steps of 2^+-100 first, so only the last ldexp rounds (to a
    subnormal, zero or infinity where the product is)."""
    return """fn product_value(p: vec2<f32>) -> f32 {
    if ((bitcast<u32>(p.x) & 0x7f800000u) == 0x7f800000u || p.x == 0.0) { return p.x; }
    var m = p.x;
    var e = i32(clamp(p.y, -400.0, 400.0));
    for (var k = 0; k < 3; k = k + 1) {
        if (e > 100) { m = ldexp(m, 100); e = e - 100; }
        if (e < -100) { m = ldexp(m, -100); e = e + 100; }
    }
    return ldexp(m, e);
}"""


def _float_product_main(w: CodeWriter, spec: KernelSpec, wt: WgslType) -> str:
    """A float Product whose partials cannot over- or underflow: each value becomes vec2(m, e) (see the
    product_part helper), partials multiply mantissas and add exponents, and the final kernel scales
    once. NaN therefore comes only from a NaN among the values or a zero times an infinity, and the
    result is the product rounded in f32 (docs/semantics.md, Reductions)."""
    part, parts = w.helper("product_part"), w.helper("product_parts")
    _guarded_uniformly(w)
    w.emit("var acc = vec2<f32>(1.0, 0.0);")
    if spec.kind == "reduce":
        def step(x4: str) -> None:
            w.emit(f"let x4 = {x4};")
            for lane in "xyzw":
                w.emit(f"acc4_{lane} = {parts}(acc4_{lane}, {part}(x4.{lane}, 0.0));")
        loop = _first_pass_loop(
            w, spec, lambda: [w.emit(f"var acc4_{lane} = vec2<f32>(1.0, 0.0);") for lane in "xyzw"], step,
            lambda: w.emit(f"acc = {parts}({parts}(acc4_x, acc4_y), {parts}(acc4_z, acc4_w));"))
        with w.block(loop):
            element = w.temp(load_value(w, wt, "load_a", f"(base_a() + e * {wt.size}u)"), "x")
            w.emit(f"acc = {parts}(acc, {part}({element}, 0.0));")
        _tree(w, lambda x, y: f"{parts}({x}, {y})")
        with w.block("if (li == 0u)"):
            w.emit("partials[wid.x * 2u] = bitcast<u32>(scratch[0].x);")
            w.emit("partials[wid.x * 2u + 1u] = bitcast<u32>(scratch[0].y);")
        return "vec2<f32>"
    with w.block(f"for (var g = li; g < launch.groups; g = g + {WORKGROUP}u)"):
        w.emit(f"acc = {parts}(acc, bitcast<vec2<f32>>(vec2<u32>(partials[g * 2u], partials[g * 2u + 1u])));")
    _tree(w, lambda x, y: f"{parts}({x}, {y})")
    with w.block("if (li == 0u)"):
        total = w.temp(f"{w.helper('product_value')}(scratch[0])", "total")
        w.emit(f"atomicStore(&rt[launch.result], bitcast<u32>({finish(w, wt, total)}));")
        w.emit("atomicStore(&rt[REACHED + launch.step], launch.resume);")
    return "vec2<f32>"


def _reduce_main(w: CodeWriter, spec: KernelSpec, wt: WgslType) -> str:
    if spec.operation is ReduceOperation.Sum and wt.family == "float":
        return _float_sum_main(w, spec, wt)
    if spec.operation is ReduceOperation.Product and wt.family == "float":
        return _float_product_main(w, spec, wt)
    acc_type, acc_wgsl = _accumulator(wt)
    name = REDUCE_INSTRUCTIONS[spec.operation]

    def combine(x: str, y: str) -> str:
        return value(w, name, acc_type.ty, (x, y))

    _guarded_uniformly(w)
    w.emit(f"var acc: {acc_wgsl} = {_identity(spec.operation, wt)};")
    if spec.kind == "reduce":
        def finish_vectors() -> None:
            w.emit(f"acc = {combine(combine('acc4.x', 'acc4.y'), combine('acc4.z', 'acc4.w'))};")
        loop = _first_pass_loop(w, spec, lambda: w.emit("var acc4 = vec4<f32>(acc);"),
                                lambda x4: w.emit(f"acc4 = {combine('acc4', x4)};"), finish_vectors)
        with w.block(loop):
            element = w.temp(load_value(w, wt, "load_a", f"(base_a() + e * {wt.size}u)"), "x")
            w.emit(f"acc = {combine('acc', element)};")
        _tree(w, combine)
        with w.block("if (li == 0u)"):
            w.emit("let total = scratch[0];")
            for k, word in enumerate(value_bits(w, acc_type, "total")):
                w.emit(f"partials[wid.x * {acc_type.words}u + {k}u] = {word};")
        return acc_wgsl
    with w.block(f"for (var g = li; g < launch.groups; g = g + {WORKGROUP}u)"):
        words = [f"partials[g * {acc_type.words}u + {k}u]" for k in range(acc_type.words)]
        element = w.temp(_assemble(acc_type, words), "x")
        w.emit(f"acc = {combine('acc', element)};")
    _tree(w, combine)
    with w.block("if (li == 0u)"):
        total = w.temp("scratch[0]", "total")
        result = finish(w, wt, total) if wt.family == "float" else total
        for k, word in enumerate(_result_words(w, wt, result)):
            w.emit(f"atomicStore(&rt[launch.result + {k}u], {word});")
        w.emit("atomicStore(&rt[REACHED + launch.step], launch.resume);")
    return acc_wgsl


def _assemble(wt: WgslType, words: list[str]) -> str:
    if wt.family == "float":
        return f"bitcast<f32>({words[0]})"
    if wt.family == "word":
        return words[0]
    return f"{wt.wgsl}({', '.join(words)})"


def _result_words(w: CodeWriter, wt: WgslType, expr: str) -> list[str]:
    """The register words of a value (the lane-state form: f32 bits for every float format)."""
    if wt.family == "float":
        return [f"bitcast<u32>({expr})"]
    if wt.family == "word":
        return [expr]
    name = w.temp(expr)
    return [f"{name}[{k}]" for k in range(wt.words)]


def _body(w: CodeWriter, spec: KernelSpec, wt: WgslType) -> tuple[str, str]:
    acc_wgsl = _reduce_main(w, spec, wt)
    return (("@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,\n"
             "        @builtin(num_workgroups) nwg: vec3<u32>"),
            f"var<workgroup> scratch: array<{acc_wgsl}, {WORKGROUP}>;\nvar<workgroup> go: u32;")


SHADER_KINDS["reduce"] = ShaderKind({0: "read-only-storage", 1: "storage", 4: "read-only-storage", 6: "storage"},
                                    _body, lambda spec: ("a",), vector_bindings=(8,))
SHADER_KINDS["reduce_final"] = ShaderKind({0: "read-only-storage", 1: "storage", 6: "storage"}, _body,
                                          lambda spec: ())


register(ReduceKernel())
