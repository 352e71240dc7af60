"""The kernels of LayerNorm, RMSNorm, GroupNorm and BatchNorm (F32; F16 and BF16 read into f32 through
gemm.INPUTS' readers, computed in f32, each output rounded once to nearest even (conv2d.ROUNDING) and stored into
its half of a word in one atomic step (subword.merge_bits): neighbouring elements, and a group's last and the next
group's first, share a word): a workgroup per statistics group.

A *group* is a LayerNorm/RMSNorm row (``n`` elements), a GroupNorm group of one item (``channels / groups *
spatial`` consecutive elements) or a BatchNorm run of one item and channel (``spatial`` elements). Groups are a
grid-stride loop over the dispatched workgroups (at most the device's count per dimension). In each group the
workgroup's invocations (16, 64 past 2^19 elements: ``NormSpec.workgroup``) stride over its elements, and every
statistic is reduced in workgroup memory: each invocation's partial stored, one barrier, invocation 0 adds the
partials in order, and ``workgroupUniformLoad`` hands the total to all (two barriers a statistic: llvmpipe pays
for each barrier once per invocation):

1. ``A = max |x|`` (an infinity or NaN counts as infinite), and the exact power of two ``c`` that brings ``A``
   into [1, 2) (2**126 at most; 1 when ``A`` is 0 or not finite), so sums and squares of ``x * c`` neither
   overflow nor vanish in f32 whatever the row holds (docs/semantics.md, Normalization kernels: "a backend
   computing in f32 scales");
2. LayerNorm, GroupNorm: ``mu = sum(x * c) / N``, then ``v = sum((x * c - mu)**2) / N`` (two passes); RMSNorm:
   ``v = sum((x * c)**2) / N``;
3. ``s = 1 / sqrt(v + eps * c * c)`` (the scaled row's ``s / c``), or ``(1 / sqrt(eps)) / c`` where
   ``eps * c * c`` overflows (``v`` <= 4 is negligible beside it);
4. each output in the reference's order: ``((x * c - mu) * s) * gamma + beta`` (RMSNorm ``((x * c) * s) *
   weight``: no ``+ 0``, so zeros keep their sign), gamma and beta the element's (LayerNorm) or its channel's.

BatchNorm has no statistics: ``((x - mean[c]) * s) * gamma[c] + beta[c]`` with ``s = 1 / sqrt(variance[c] +
eps)``. All arithmetic is f32 (eps rounded once to f32), NaN and infinities as IEEE arithmetic gives them.
Every invocation reads element ``i`` before it writes element ``i`` and a group's statistics are complete before
any of its outputs is written, so the output may be the input (in place).

The arrays are bound as whole chunk buffers with run-time byte offsets (launch fields ``dst``, ``src_a`` ...
``src_e`` in operand order): one binding per distinct buffer, so an array in the output's buffer is read through
the output's read-write binding (WebGPU forbids a writable binding aliasing another). The host checked handle,
bounds (the table's extents) and alignment of every array before the dispatch. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.extents import array_operands
from atlas_web.isa.types import Type

from ..emitter import ShaderFeatures
from ..runtime_layout import GUARD_WGSL, REACHED, TRAPS, launch_struct
from . import DeviceLimits, Dispatch, Kernel, KernelPlan, register
from .conv2d import KINDS, element_reader, element_writer
from .gemm import f32_bits
from .row_walk import check_loop_limit, row_workgroup

__all__ = ["NormSpec", "NORM_TYPES", "norm_spec"]

#: the types the kernels compute
NORM_TYPES = frozenset({Type.F32, Type.F16, Type.BF16})
#: the launch words holding the arrays' byte offsets, in binding-role order
_ROLES = ("dst", "src_a", "src_b", "src_c", "src_d", "src_e")
#: the source arrays of each row, in operand order (after the output)
_SOURCES = {"LayerNorm": ("input", "gamma", "beta"), "RMSNorm": ("input", "weight"),
            "GroupNorm": ("input", "gamma", "beta"), "BatchNorm": ("input", "gamma", "beta", "mean", "variance")}


@dataclass(frozen=True)
class NormSpec:
    """One normalization shader (a shader spec of the kernel registry): the row's name, its groups (count and
    elements each), the channel layout (GroupNorm: channels per group and groups per item; BatchNorm:
    channels; ``spatial``), eps as f32 bits, and ``slots``: for each role of ``_ROLES`` that the row has, the
    binding (3 + slot) it is read through (the output's is slot 0, read-write)."""

    name: str
    groups: int
    size: int
    spatial: int
    channels: int
    per_group: int
    items_groups: int
    eps_bits: int
    slots: tuple[int, ...]
    guarded: bool = True
    bound: bool = False
    #: the element type: "f32", or "f16" / "bf16" (read into f32, computed in f32, each output rounded once)
    kind: str = "f32"

    @property
    def workgroup(self) -> int:
        """Invocations per workgroup: Softmax's (row_walk.row_workgroup: 16, 64 past 2^19 elements for llvmpipe's
        loop limit; few, as SwiftShader and llvmpipe switch through every invocation at each barrier: in one
        Chromium page, SwiftShader, LayerNorm/RMSNorm 256 x 1024 ran 2.2-2.8x TF.js webgpu's composition with
        16, about 1x with 64, benchmarks/peers/nn_webgpu.py)."""
        return row_workgroup(self.size)

    def source(self, features: ShaderFeatures) -> str:
        return norm_source(self, features)

    def layout(self) -> dict[int, str]:
        layout = {0: "read-only-storage", 1: "storage", 3: "storage"}
        for slot in set(self.slots) - {0}:
            layout[3 + slot] = "read-only-storage"
        return layout


def binding_slots(operands: dict | None, count: int) -> tuple[int, ...]:
    """For each of the first ``count`` roles, the binding slot of its buffer (one per distinct buffer, in role
    order; the output's is 0). Without operands (a listing), every array its own slot."""
    if operands is None:
        return tuple(range(count))
    buffers: list = []
    slots = []
    for role in _ROLES[:count]:
        buffer = operands[role][0]
        for k, known in enumerate(buffers):
            if known is buffer:
                slots.append(k)
                break
        else:
            buffers.append(buffer)
            slots.append(len(buffers) - 1)
    return tuple(slots)


def norm_spec(instr, operands: dict | None = None, guarded: bool = True) -> NormSpec:
    """The spec of normalization instruction ``instr`` (``operands``: role -> (buffer, byte), for the slots)."""
    name = type(instr).__name__
    count = 1 + len(_SOURCES[name])
    eps_bits = f32_bits(float(instr.eps))
    slots = binding_slots(operands, count)
    kind = KINDS[instr.ty]
    if name in ("LayerNorm", "RMSNorm"):
        return NormSpec(name, instr.rows, instr.n, 0, 0, 0, 0, eps_bits, slots, guarded, kind=kind)
    if name == "GroupNorm":
        per_group = instr.channels // instr.groups
        return NormSpec(name, instr.batch * instr.groups, per_group * instr.spatial, instr.spatial, instr.channels,
                        per_group, instr.groups, eps_bits, slots, guarded, kind=kind)
    return NormSpec(name, instr.batch * instr.channels, instr.spatial, instr.spatial, instr.channels, 0, 0,
                    eps_bits, slots, guarded, kind=kind)


def _bindings(spec: NormSpec) -> list[str]:
    lines = []
    for slot in sorted(set(spec.slots)):
        mode = "read_write" if slot == 0 else "read"
        element = "atomic<u32>" if slot == 0 and spec.kind != "f32" else "u32"
        lines.append(f"@group(0) @binding({3 + slot}) var<storage, {mode}> buf{slot}: array<{element}>;")
    return lines


def _loaders(spec: NormSpec) -> str:
    """``ld_<array>(idx) -> f32`` for each source array (f16/bf16 widened exactly; from the output's binding by
    atomicLoad for halves) and ``st(idx, v)`` for the output (f16/bf16: v rounded once, stored into its half of a
    word in one atomic step (subword.merge_bits): the other half may be another invocation's)."""
    names = ("output",) + _SOURCES[spec.name]
    halves = spec.kind != "f32"
    out = [element_reader(spec.kind, f"ld_{name}", f"launch.{_ROLES[k]}", f"buf{spec.slots[k]}",
                          spec.slots[k] == 0 and halves) for k, name in enumerate(names) if k]
    out.append(element_writer(spec.kind, "st", "buf0"))
    return "".join(out)


def _reductions(wg: int) -> str:
    """WGSL ``wg_sum(v, lid)`` and ``wg_max(v, lid)``: every invocation's v folded in order by invocation 0
    between two barriers, read back uniformly."""
    return "\n".join(f"""
fn wg_{kind}(v: f32, lid: u32) -> f32 {{
    red[lid] = v;
    workgroupBarrier();
    if (lid == 0u) {{
        var r = red[0];
        for (var k = 1u; k < {wg}u; k = k + 1u) {{ r = {expr}; }}
        total = r;
    }}
    return workgroupUniformLoad(&total);
}}""" for kind, expr in (("sum", "r + red[k]"), ("max", "max(r, red[k])")))


def _statistics_body(spec: NormSpec) -> str:
    """The WGSL of one group (``g``, ``base``) of LayerNorm, RMSNorm or GroupNorm."""
    centred = spec.name != "RMSNorm"
    if spec.name == "GroupNorm":
        channel = f"(g % {spec.items_groups}u) * {spec.per_group}u + i / {spec.spatial}u"
        gamma, beta = f"ld_gamma({channel})", f"ld_beta({channel})"
    elif spec.name == "LayerNorm":
        gamma, beta = "ld_gamma(i)", "ld_beta(i)"
    else:
        gamma, beta = "ld_weight(i)", None
    wg = spec.workgroup
    mean = f"""
        var t = 0.0;
        for (var i = lid; i < N; i = i + {wg}u) {{ t = t + ld_input(base + i) * c; }}
        let mu = wg_sum(t, lid) / f32(N);
        t = 0.0;
        for (var i = lid; i < N; i = i + {wg}u) {{ let d = ld_input(base + i) * c - mu; t = t + d * d; }}""" \
        if centred else f"""
        var t = 0.0;
        for (var i = lid; i < N; i = i + {wg}u) {{ let d = ld_input(base + i) * c; t = t + d * d; }}"""
    centre = " - mu" if centred else ""
    affine = f"(((ld_input(base + i) * c){centre}) * s) * {gamma}" + (f" + {beta}" if beta else "")
    return f"""
        var a = 0.0;
        for (var i = lid; i < N; i = i + {wg}u) {{
            let v = ld_input(base + i);
            a = max(a, select(inf, abs(v), finite(v)));
        }}
        let big = wg_max(a, lid);
        var c = one;
        if (finite(big) && big > 0.0) {{
            let k = clamp(127 - i32((bitcast<u32>(big) >> 23u) & 0xffu), -126, 126);
            c = bitcast<f32>(u32(k + 127) << 23u);
        }}{mean}
        let v = wg_sum(t, lid) / f32(N);
        let tt = eps * c * c;
        let s = select(one / sqrt(eps) / c, one / sqrt(v + tt), finite(tt));
        for (var i = lid; i < N; i = i + {wg}u) {{ st(base + i, {affine}); }}"""


def _batch_body(spec: NormSpec) -> str:
    wg = spec.workgroup
    return f"""
        let ch = g % {spec.channels}u;
        let m = ld_mean(ch);
        let s = one / sqrt(ld_variance(ch) + eps);
        let gm = ld_gamma(ch);
        let bt = ld_beta(ch);
        for (var i = lid; i < N; i = i + {wg}u) {{ st(base + i, ((ld_input(base + i) - m) * s) * gm + bt); }}"""


def norm_source(spec: NormSpec, features: ShaderFeatures) -> str:
    """The WGSL of ``spec``'s shader. Raises UnsupportedOperation for a group longer than the engine's loop limit
    allows one invocation to walk."""
    check_loop_limit(spec.name, spec.kind, "group", spec.size, spec.workgroup, features)
    guard = GUARD_WGSL if spec.guarded else "true"
    body = _batch_body(spec) if spec.name == "BatchNorm" else _statistics_body(spec)
    return "\n".join([features.enable_directives + launch_struct(),
                      "@group(0) @binding(0) var<storage, read> launch: Launch;",
                      "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;",
                      *_bindings(spec), f"""const TRAPS: u32 = {TRAPS}u;
const REACHED: u32 = {REACHED}u;
const GROUPS: u32 = {spec.groups}u;
const N: u32 = {spec.size}u;
var<workgroup> red: array<f32, {spec.workgroup}>;
var<workgroup> total: f32;
var<workgroup> go: u32;

fn finite(v: f32) -> bool {{ return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u; }}
{_loaders(spec)}
{_reductions(spec.workgroup)}

@compute @workgroup_size({spec.workgroup})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    if (lid == 0u) {{ go = select(0u, 1u, {guard}); }}
    if (workgroupUniformLoad(&go) == 0u) {{ return; }}
    if (lid == 0u && all(wid == vec3<u32>(0u))) {{ atomicStore(&rt[REACHED + launch.step], launch.resume); }}
    // through launch.zero: WGSL refuses constant infinities and may rewrite 1 / sqrt(x)
    let one = bitcast<f32>(launch.zero ^ 0x3f800000u);
    let inf = bitcast<f32>(launch.zero ^ 0x7f800000u);
    let eps = bitcast<f32>(launch.zero ^ {spec.eps_bits}u);
    for (var g = wid.x; g < GROUPS; g = g + nwg.x) {{
        let base = g * N;{body}
    }}
}}"""])


class _NormKernel(Kernel):
    """The kernel of one normalization row (``instruction``)."""

    launch_fields = _ROLES

    def __init__(self, instruction: str) -> None:
        self.instruction = instruction

    def supports(self, operation, ty) -> bool:
        return ty in NORM_TYPES

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        spec = norm_spec(instr, operands)
        count = len(array_operands(instr))
        fields = {role: operands[role][1] for role in _ROLES[:count]}
        bindings = {}
        for role, slot in zip(_ROLES, spec.slots):
            bindings.setdefault(3 + slot, role)
        groups = max(1, min(device.max_groups, spec.groups))
        return KernelPlan((Dispatch(spec, bindings, (groups, 1, 1)),), fields)

    def listing(self, instr):
        return [(self.instruction.lower(), norm_spec(instr))]


for _name in _SOURCES:
    register(_NormKernel(_name))
