"""The element-wise kernels' shared plan: ParallelMap and ParallelMapBinary (``map.py``,
``binary_map.py``) over ``count`` elements of ``ty`` with a cooperative ``operation``.

One invocation per element (or per destination word for 8- and 16-bit types); with every array
16-byte aligned and a vec4 form of the operation, whole vec4s first and then the scalar tail
kernel (one workgroup) for the count % 4 left. Their shaders are the "map" and "binary" kinds
(``shader.SHADER_KINDS``), registered here. Standard library only.
"""

from __future__ import annotations

from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES, OPERATION_ENUMS

from ..emitter import CodeWriter
from ..rules import value
from ..rules_memory import load_value
from ..types import WgslType
from . import DeviceLimits, Dispatch, Kernel, KernelPlan
from .binding import ROLE_BINDINGS, binding_plan
from .shader import (
    BINARY_INSTRUCTIONS, MAP_INSTRUCTIONS, SHADER_KINDS, WORKGROUP, KernelSpec, ShaderKind, kernel_supported,
    source_array, value_bits,
)

__all__ = ["ElementwiseKernel", "VECTOR_TYPES"]

#: element types with vec4 views (32-bit words)
VECTOR_TYPES = ("F32", "U32", "I32")


class ElementwiseKernel(Kernel):
    """A cooperative instruction with ``dst``, its sources, ``count``, ``ty`` and ``operation``;
    ``shader_kind``: the KernelSpec kind of its shaders."""

    launch_fields = ("dst", "src_a", "src_b", "count")
    snapshot_sources = True
    shader_kind = ""

    def operations(self, ty):
        return tuple(op for op in OPERATION_ENUMS[self.instruction] if ty in COOPERATIVE_OPERATION_TYPES[op])

    def operation_of(self, instr):
        return instr.operation

    def supports(self, operation, ty) -> bool:
        return operation is not None and kernel_supported(operation, ty)

    def vector(self, operation, ty) -> bool:
        """Whether a vec4 form of ``operation`` on ``ty`` exists (every array 16-byte aligned)."""
        return False

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        ty, count, operation, kind = instr.ty, instr.count, instr.operation, self.shader_kind
        size = ty.size_bytes()
        offsets = {role: byte for role, (_, byte) in operands.items()}
        vector = all(byte % 16 == 0 for byte in offsets.values()) and self.vector(operation, ty)
        bound, sources = binding_plan(operands, count * size, device.bind_alignment)
        fields = {"count": count}
        if not bound:
            fields.update(dst=offsets.get("dst", 0), src_a=offsets.get("src_a", 0), src_b=offsets.get("src_b", 0))
        if vector:
            # whole vec4s, then the tail kernel (the count % 4 elements left; it marks the step)
            dispatches = [Dispatch(KernelSpec(kind, operation, ty, False, bound, tail=True, sources=sources),
                                   ROLE_BINDINGS, (1, 1, 1))]
            if count >= 4:
                groups = -(-(count // 4) // WORKGROUP)
                dispatches.insert(0, Dispatch(KernelSpec(kind, operation, ty, True, bound, sources=sources),
                                              ROLE_BINDINGS, device.split(groups)))
            return KernelPlan(tuple(dispatches), fields)
        invocations = count if size >= 4 else -(-((offsets["dst"] & 3) + count * size) // 4)
        groups = max(1, -(-invocations // WORKGROUP))
        spec = KernelSpec(kind, operation, ty, False, bound, sources=sources)
        return KernelPlan((Dispatch(spec, ROLE_BINDINGS, device.split(groups)),), fields)

    def listing(self, instr):
        return [(self.shader_kind, KernelSpec(self.shader_kind, instr.operation, instr.ty))]


# ---- the shaders ----------------------------------------------------------------------------------
def _invocation(w: CodeWriter, spec: KernelSpec) -> None:
    if spec.tail:
        w.emit("let i = (launch.count & ~3u) + gid.x;")
    else:
        w.emit(f"let i = gid.x + {WORKGROUP}u * nwg.x * (gid.y + nwg.y * gid.z);")
    w.emit("if (all(gid == vec3<u32>(0u))) { atomicStore(&rt[REACHED + launch.step], launch.resume); }")


def _element(w: CodeWriter, spec: KernelSpec, wt: WgslType, index: str) -> str:
    """The result expression for element ``index``."""
    a = w.temp(load_value(w, wt, "load_a", f"(base_a() + {index} * {wt.size}u)"), "a")
    if spec.kind == "map":
        return value(w, MAP_INSTRUCTIONS[spec.operation], spec.ty, (a,))
    b = w.temp(load_value(w, wt, "load_b", f"(base_b() + {index} * {wt.size}u)"), "b")
    return value(w, BINARY_INSTRUCTIONS[spec.operation], spec.ty, (a, b))


def _elementwise_main(w: CodeWriter, spec: KernelSpec, wt: WgslType) -> None:
    _invocation(w, spec)
    if wt.size >= 4:
        w.emit("if (i >= launch.count) { return; }")
        result = _element(w, spec, wt, "i")
        words = value_bits(w, wt, result)
        first = w.temp(f"(base_dst() >> 2u) + i * {wt.words}u")
        for k, word in enumerate(words):
            w.emit(f"dstm[{first} + {k}u] = {word};")
        return
    per_word = 4 // wt.size
    mask = "0xffu" if wt.size == 1 else "0xffffu"
    w.emit("let end = base_dst() + launch.count * " + f"{wt.size}u;")
    w.emit("let word_byte = (base_dst() & ~3u) + i * 4u;")
    w.emit("if (word_byte >= end) { return; }")
    word = w.var("u32", "dstm[word_byte >> 2u]", "word")
    with w.block(f"for (var j = 0u; j < {per_word}u; j = j + 1u)"):
        w.emit(f"let byte = word_byte + j * {wt.size}u;")
        with w.block("if (byte >= base_dst() && byte < end)"):
            w.emit(f"let e = (byte - base_dst()) / {wt.size}u;")
            bits = value_bits(w, wt, _element(w, spec, wt, "e"))[0]
            w.emit("let shift = (byte & 3u) * 8u;")
            w.emit(f"{word} = ({word} & ~({mask} << shift)) | (({bits} & {mask}) << shift);")
    w.emit(f"dstm[word_byte >> 2u] = {word};")


def _vector_main(w: CodeWriter, spec: KernelSpec, wt: WgslType) -> None:
    """Whole vec4s only: the count % 4 elements left are the ``tail`` kernel's (with a branch to
    them here, llvmpipe's vectorized loop runs about 30% slower); that kernel marks the step."""
    load = (lambda e: f"bitcast<vec4<f32>>({e})") if wt.family == "float" else (lambda e: e)
    store = (lambda e: f"bitcast<vec4<u32>>({e})") if wt.family == "float" else (lambda e: e)
    w.emit(f"let i = gid.x + {WORKGROUP}u * nwg.x * (gid.y + nwg.y * gid.z);")
    w.emit("if (i >= (launch.count >> 2u)) { return; }")
    a = w.temp(load(f"{source_array(spec, 'a', True)}[(base_a() >> 4u) + i]"), "a")
    b = w.temp(load(f"{source_array(spec, 'b', True)}[(base_b() >> 4u) + i]"), "b")
    w.vector = True
    result = value(w, BINARY_INSTRUCTIONS[spec.operation], spec.ty, (a, b))
    w.emit(f"dstm4[(base_dst() >> 4u) + i] = {store(result)};")


def _body(w: CodeWriter, spec: KernelSpec, wt: WgslType) -> tuple[str, str]:
    if spec.vector:
        _vector_main(w, spec, wt)
    else:
        _elementwise_main(w, spec, wt)
    w.lines.insert(0, "    if (!guard()) { return; }")
    return "@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>", ""


SHADER_KINDS["map"] = ShaderKind(
    {0: "read-only-storage", 1: "storage", 3: "storage", 4: "storage"}, _body,
    lambda spec: () if spec.vector else ("a",), sources_follow_spec=True)
SHADER_KINDS["binary"] = ShaderKind(
    {0: "read-only-storage", 1: "storage", 3: "storage", 4: "storage", 5: "storage"}, _body,
    lambda spec: () if spec.vector else ("a", "b"), sources_follow_spec=True, vector_bindings=(7, 8, 9),
    vector_views_only=True)
