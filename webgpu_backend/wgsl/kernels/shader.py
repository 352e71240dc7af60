"""The shaders of cooperative kernels: what every kernel's WGSL shares (``KernelSpec``, the header,
bindings, the snapshot copy) and ``kernel_source``, which emits the body registered for the spec's
``kind`` (``SHADER_KINDS``: ``elementwise`` registers "map" and "binary", ``reduce`` "reduce" and
"reduce_final").

The host resolves the array operands (chunk and byte offset; it checked handle, range and
alignment) and binds the chunks by role: ``dstm``, ``srca``, ``srcb``. Element computations
use the same value rules as the per-lane instructions (Add is ADD's rule, Gelu is GELU's),
so a kernel and a lane agree bit for bit.

The kernels, per (kind, operation, type, vector):

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
from typing import Callable

from atlas_web.isa.enums import BinaryMapOperation, MapOperation, ReduceOperation
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES, ELEMENT_FUNCTIONS
from atlas_web.isa.types import Type

from ..emitter import CodeWriter, ShaderFeatures
from ..library import HelperSet
from ..rules import unsupported, value_rule
from ..rules_word import sext, wrap
from ..runtime_layout import GUARD_WGSL, launch_struct, REACHED, TRAPS
from ..types import TYPE_MAP, WgslType

__all__ = ["value_bits", "source_array", "KernelSpec", "kernel_source", "ShaderKind", "SHADER_KINDS", "kernel_layout", "MAP_INSTRUCTIONS",
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

#: bindings: 0 launch, 1 rt, 3 dst, 4 src a, 5 src b, 6 partials; the vec4 views of dst, a and b at 7, 8, 9
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


@dataclass(frozen=True)
class ShaderKind:
    """What a kernel module registers for one ``KernelSpec.kind``: its bind group ``layout`` (binding ->
    WebGPU binding type; a source's type follows KernelSpec.sources where ``sources_follow_spec``),
    ``vector_bindings`` (the vec4 views a vector variant adds; ``vector_views_only``: it drops the
    scalar 3-5), ``scalar_reads(spec)`` (the source roles "a", "b" read through ``load_a``/``load_b``)
    and ``body(w, spec, wt) -> (main's builtins, module-scope declarations)``, which emits main's body."""

    layout: dict
    body: Callable
    scalar_reads: Callable
    sources_follow_spec: bool = False
    vector_bindings: tuple = ()
    vector_views_only: bool = False


#: KernelSpec.kind -> its ShaderKind (registered by the kernel modules)
SHADER_KINDS: dict[str, ShaderKind] = {}


def kernel_layout(spec: "KernelSpec") -> dict[int, str]:
    """The bind group layout of a kernel (binding -> WebGPU binding type)."""
    kind = SHADER_KINDS[spec.kind]
    layout = dict(kind.layout)
    if kind.sources_follow_spec:
        for role, access in zip("ab", spec.sources):
            binding = _SOURCE_BINDINGS[role]
            if binding in layout:
                if access in _SHARED:
                    del layout[binding]
                else:
                    layout[binding] = "read-only-storage" if access == "ro" else "storage"
    if spec.vector:
        scalar = dict(layout)
        if kind.vector_views_only:      # whole vec4s only, through the vec4 views alone
            layout = {b: t for b, t in layout.items() if b not in (3, 4, 5)}
        layout.update({b: scalar[b - 4] for b in kind.vector_bindings if b - 4 in scalar})
    return layout


def source_array(spec: "KernelSpec", role: str, vector: bool = False) -> str:
    """The array a source role reads (its own binding's, or the one it shares)."""
    access = dict(zip("ab", spec.sources)).get(role, "rw")
    if access == "a" and role != "a":
        return source_array(spec, "a", vector)
    binding = _SHARED.get(access, _SOURCE_BINDINGS[role])
    return _ARRAYS[binding + 4 * vector][0]


@dataclass(frozen=True)
class KernelSpec:
    """One kernel: ``kind`` (a SHADER_KINDS key: "map", "binary", "reduce", "reduce_final"), the cooperative
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
    from ..rules import VALUE_RULES
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
def _header(spec: KernelSpec, features: ShaderFeatures, layout: dict[int, str], reads: tuple[str, ...]) -> str:
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
    for role in reads:   # scalar reads
        lines.append(f"fn load_{role}(w: u32) -> u32 {{ return {source_array(spec, role)}[w]; }}")
    return "\n".join(lines)


def value_bits(w: CodeWriter, wt: WgslType, expr: str) -> list[str]:
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


def kernel_source(spec: KernelSpec, features: ShaderFeatures) -> str:
    """The WGSL of a cooperative kernel. Raises UnsupportedOperation for an operation or type without rules."""
    wt = TYPE_MAP.get(spec.ty)
    if wt is None or not kernel_supported(spec.operation, spec.ty):
        raise unsupported(type(spec.operation).__name__ + "." + spec.operation.name, spec.ty)
    helpers = HelperSet()
    w = CodeWriter(helpers, features)
    layout = kernel_layout(spec)
    kind = SHADER_KINDS[spec.kind]
    builtins, extra = kind.body(w, spec, wt)
    header = _header(spec, features, layout, kind.scalar_reads(spec))
    main = (f"@compute @workgroup_size({WORKGROUP})\nfn main({builtins}) {{\n{w.text()}\n}}")
    return "\n\n".join(part for part in (header, extra, helpers.render(), main) if part)
