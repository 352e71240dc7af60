"""Cooperative kernels: ParallelMap, ParallelMapBinary and ParallelReduce as shaders of their own.

The host resolves the array operands (chunk and byte offset; it checked handle, range and
alignment) and binds the chunks by role: ``dstm``, ``srca``, ``srcb``. Element computations
use the same value rules as the per-lane instructions (Add is ADD's rule, Gelu is GELU's),
so a kernel and a lane agree bit for bit.

Kernels, per (kind, operation, type, vector):

* ``map`` / ``binary``: one invocation per element (8- to 32-bit words per element or more),
  or per destination word for 8- and 16-bit types (it assembles the word, so no two
  invocations write the same word); ``vector``: 4 elements of a 32-bit type per invocation
  through ``vec4`` views (every array 16-byte aligned), then the scalar ``tail`` kernel (one
  workgroup) for the count % 4 elements left.
* ``reduce``: partial results of up to MAX_GROUPS workgroups of 256 (grid stride, then a tree
  in workgroup memory), then ``reduce_final``: one workgroup combines the partials, rounds
  once to the type and writes the uniform result word(s) of ``rt``. Floats accumulate in f32.

A source array that overlaps the destination at another offset is first copied to scratch by
the ``SNAPSHOT_SOURCE`` kernel (workgroups cannot wait for each other to finish reading).

Every kernel first checks the launch guard (the previous step reached this one, nothing
trapped; left out first in a submission) and marks its step as reached. Array operands are
bound at their own offsets where those meet the device's binding alignment (``bound``): with a
run-time base offset lavapipe gives up contiguous vector loads (2-3x slower).
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.enums import BinaryMapOperation, MapOperation, ReduceOperation
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES, ELEMENT_FUNCTIONS
from atlas_web.isa.types import Type

from .emitter import CodeWriter, ShaderFeatures
from .library import HelperSet, helper
from .rules import unsupported, value, value_rule
from .rules_float import finish
from .rules_lane import literal
from .rules_memory import load_value
from .rules_word import sext, wrap
from .runtime_layout import GUARD_WGSL, launch_struct, REACHED, TRAPS
from .types import TYPE_MAP, WgslType

__all__ = ["KernelSpec", "kernel_source", "KERNEL_LAYOUTS", "kernel_layout", "VECTOR_BINDINGS", "MAP_INSTRUCTIONS",
           "BINARY_INSTRUCTIONS", "REDUCE_INSTRUCTIONS", "WORKGROUP", "MAX_GROUPS", "VECTOR_BINARY",
           "ELEMENTS_PER_INVOCATION", "kernel_supported", "SNAPSHOT_LAYOUT", "SNAPSHOT_SOURCE"]

WORKGROUP = 256
#: the most workgroups of a reduction's first pass
MAX_GROUPS = 1024
#: elements (4 per vector) each invocation of a reduction's vector first pass reads at least
ELEMENTS_PER_INVOCATION = 256

#: operation -> the lane function (a VALUE_RULES name) the kernels apply, by enumeration: views of
#: atlas_web.isa.operations.ELEMENT_FUNCTIONS
MAP_INSTRUCTIONS, BINARY_INSTRUCTIONS, REDUCE_INSTRUCTIONS = (
    {op: ELEMENT_FUNCTIONS[op] for op in enum} for enum in (MapOperation, BinaryMapOperation, ReduceOperation))
#: binary operations whose WGSL expression is the same for vec4 operands (32-bit types)
VECTOR_BINARY = {BinaryMapOperation.Add, BinaryMapOperation.Sub, BinaryMapOperation.Mul}

#: kind -> binding -> WebGPU binding type (0 launch, 1 rt, 3 dst, 4 src a, 5 src b, 6 partials;
#: the vec4 views of dst, a and b at 7, 8, 9); a source's type follows KernelSpec.sources
KERNEL_LAYOUTS = {
    "map": {0: "read-only-storage", 1: "storage", 3: "storage", 4: "storage"},
    "binary": {0: "read-only-storage", 1: "storage", 3: "storage", 4: "storage", 5: "storage"},
    "reduce": {0: "read-only-storage", 1: "storage", 4: "read-only-storage", 6: "storage"},
    "reduce_final": {0: "read-only-storage", 1: "storage", 6: "storage"},
}
#: the extra vec4 bindings of the vector variants
VECTOR_BINDINGS = {"binary": (7, 8, 9), "reduce": (8,)}
#: binding -> (array name, element type)
_ARRAYS = {3: ("dstm", "u32"), 4: ("srca", "u32"), 5: ("srcb", "u32"), 6: ("partials", "u32"),
           7: ("dstm4", "vec4<u32>"), 8: ("srca4", "vec4<u32>"), 9: ("srcb4", "vec4<u32>")}
#: source role -> its scalar binding; a role's vec4 view is 4 bindings further
_SOURCE_BINDINGS = {"a": 4, "b": 5}
#: KernelSpec.sources value -> the scalar binding a shared source reads through
_SHARED = {"dst": 3, "a": 4}


#: the snapshot kernel: copies the words of a source array that overlaps the destination at
#: another offset (bound at binding 0) to scratch (binding 1) before the step's kernel, which
#: then reads the copy: every element is computed from the values before the instruction, as
#: the contract's read-everything-then-write order wants
SNAPSHOT_LAYOUT = {0: "read-only-storage", 1: "storage"}
SNAPSHOT_SOURCE = f"""@group(0) @binding(0) var<storage, read> source: array<u32>;
@group(0) @binding(1) var<storage, read_write> copy: array<u32>;

@compute @workgroup_size({WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let i = gid.x + {WORKGROUP}u * nwg.x * (gid.y + nwg.y * gid.z);
    if (i < arrayLength(&source)) {{ copy[i] = source[i]; }}
}}"""


def kernel_layout(spec: "KernelSpec") -> dict[int, str]:
    """The bind group layout of a kernel (binding -> WebGPU binding type)."""
    layout = dict(KERNEL_LAYOUTS[spec.kind])
    if spec.kind in ("map", "binary"):
        for role, access in zip("ab", spec.sources):
            binding = _SOURCE_BINDINGS[role]
            if binding in layout:
                if access in _SHARED:
                    del layout[binding]
                else:
                    layout[binding] = "read-only-storage" if access == "ro" else "storage"
    if spec.vector:
        scalar = dict(layout)
        if spec.kind == "binary":      # whole vec4s only, through the vec4 views alone
            layout = {b: t for b, t in layout.items() if b not in (3, 4, 5)}
        layout.update({b: scalar[b - 4] for b in VECTOR_BINDINGS[spec.kind] if b - 4 in scalar})
    return layout


def _array(spec: "KernelSpec", role: str, vector: bool = False) -> str:
    """The array a source role reads (its own binding's, or the one it shares)."""
    access = dict(zip("ab", spec.sources)).get(role, "rw")
    if access == "a" and role != "a":
        return _array(spec, "a", vector)
    binding = _SHARED.get(access, _SOURCE_BINDINGS[role])
    return _ARRAYS[binding + 4 * vector][0]


@dataclass(frozen=True)
class KernelSpec:
    """One kernel: ``kind`` ("map", "binary", "reduce", "reduce_final"), the cooperative
    ``operation`` enum member, the element type, and its variant: ``vector`` (vec4 body),
    ``bound`` (each array is bound at its own offset, so the shader adds none: a run-time base
    keeps lavapipe from using contiguous vector loads), ``sources`` (per source a, b: "ro" its
    own read-only binding, "rw" its own writable one (the destination's buffer at another
    range), "dst"/"a" read through that role's binding: WebGPU forbids aliasing bindings of a
    buffer where one is writable), ``guarded`` (check that nothing trapped
    and the previous step reached this one; not needed first in a submission, where the host
    knows both), ``tail`` (the scalar kernel of the count % 4 elements after a vector kernel's
    whole vec4s: one workgroup)."""

    kind: str
    operation: object
    ty: Type
    vector: bool = False
    bound: bool = False
    guarded: bool = True
    tail: bool = False
    sources: tuple[str, str] = ("rw", "rw")

    def source(self, features: ShaderFeatures) -> str:
        """The WGSL (``kernel_source``)."""
        return kernel_source(self, features)

    def layout(self) -> dict[int, str]:
        """The bind group layout (``kernel_layout``)."""
        return kernel_layout(self)


def kernel_supported(operation: object, ty: Type) -> bool:
    """Whether a kernel exists for ``operation`` on ``ty`` (checked against the value rules)."""
    wt = TYPE_MAP.get(ty)
    if wt is None or ty not in COOPERATIVE_OPERATION_TYPES[operation]:
        return False
    from .rules import VALUE_RULES
    name = ELEMENT_FUNCTIONS[operation]
    family = "float" if isinstance(operation, ReduceOperation) and wt.family == "float" else wt.family
    return (name, family) in VALUE_RULES


# ---- value rules of the cooperative-only operations ----------------------------------------------
@value_rule("RELU", family="float")
def _relu_float(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{w.helper('fmax')}({args[0]}, 0.0)"


@value_rule("RELU", family="word")
def _relu_word(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    if not wt.signed:
        return args[0]
    return wrap(wt, f"bitcast<u32>(max({sext(wt, args[0])}, 0))")


@value_rule("RELU", family="dword")
def _relu_dword(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    if not wt.signed:
        return args[0]
    x = w.temp(args[0])
    return f"select({x}, vec2<u32>(0u, 0u), ({x}.y >> 31u) != 0u)"


# ---- shared pieces ------------------------------------------------------------------------------
def _header(spec: KernelSpec, features: ShaderFeatures, layout: dict[int, str]) -> str:
    lines = [features.enable_directives + launch_struct(),
             "@group(0) @binding(0) var<storage, read> launch: Launch;",
             "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;"]
    for binding, (name, element) in _ARRAYS.items():
        if binding in layout:
            access = "read" if layout[binding] == "read-only-storage" else "read_write"
            lines.append(f"@group(0) @binding({binding}) var<storage, {access}> {name}: array<{element}>;")
    lines.append(f"const TRAPS: u32 = {TRAPS}u;\nconst REACHED: u32 = {REACHED}u;")
    if spec.guarded:
        lines.append(f"fn guard() -> bool {{\n    return {GUARD_WGSL};\n}}")
    else:
        lines.append("fn guard() -> bool { return true; }")
    for role, field in (("dst", "dst"), ("a", "src_a"), ("b", "src_b")):
        lines.append(f"fn base_{role}() -> u32 {{ return {'0u' if spec.bound else 'launch.' + field}; }}")
    if spec.kind == "reduce" or (spec.kind in ("map", "binary") and not spec.vector):   # scalar reads
        lines.append(f"fn load_a(w: u32) -> u32 {{ return {_array(spec, 'a')}[w]; }}")
        if spec.kind == "binary":
            lines.append(f"fn load_b(w: u32) -> u32 {{ return {_array(spec, 'b')}[w]; }}")
    return "\n".join(lines)


def _bits(w: CodeWriter, wt: WgslType, expr: str) -> list[str]:
    """The u32 words of a value of ``wt`` (8/16-bit values as their low bits)."""
    if wt.family == "float":
        if wt.format == "f16":
            return [f"{w.helper('f16_bits')}({expr})"]
        if wt.format == "bf16":
            return [f"(bitcast<u32>({expr}) >> 16u)"]
        return [f"bitcast<u32>({expr})"]
    if wt.family == "word":
        return [expr]
    name = w.temp(expr)
    return [f"{name}[{k}]" for k in range(wt.words)]


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
        words = _bits(w, wt, result)
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
            bits = _bits(w, wt, _element(w, spec, wt, "e"))[0]
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
    a = w.temp(load(f"{_array(spec, 'a', True)}[(base_a() >> 4u) + i]"), "a")
    b = w.temp(load(f"{_array(spec, 'b', True)}[(base_b() >> 4u) + i]"), "b")
    result = value(w, BINARY_INSTRUCTIONS[spec.operation], spec.ty, (a, b))
    w.emit(f"dstm4[(base_dst() >> 4u) + i] = {store(result)};")


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
            for k, word in enumerate(_bits(w, acc_type, "total")):
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


def kernel_source(spec: KernelSpec, features: ShaderFeatures) -> str:
    """The WGSL of a cooperative kernel. Raises UnsupportedOperation for an operation or type without rules."""
    wt = TYPE_MAP.get(spec.ty)
    if wt is None or not kernel_supported(spec.operation, spec.ty):
        raise unsupported(type(spec.operation).__name__ + "." + spec.operation.name, spec.ty)
    helpers = HelperSet()
    w = CodeWriter(helpers, features)
    layout = kernel_layout(spec)
    extra = ""
    if spec.kind in ("map", "binary"):
        builtins = "@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>"
        if spec.vector:
            _vector_main(w, spec, wt)
        else:
            _elementwise_main(w, spec, wt)
        w.lines.insert(0, "    if (!guard()) { return; }")
    else:
        builtins = ("@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,\n"
                    "        @builtin(num_workgroups) nwg: vec3<u32>")
        acc_wgsl = _reduce_main(w, spec, wt)
        extra = f"var<workgroup> scratch: array<{acc_wgsl}, {WORKGROUP}>;\nvar<workgroup> go: u32;"
    header = _header(spec, features, layout)
    main = (f"@compute @workgroup_size({WORKGROUP})\nfn main({builtins}) {{\n{w.text()}\n}}")
    return "\n\n".join(part for part in (header, extra, helpers.render(), main) if part)
