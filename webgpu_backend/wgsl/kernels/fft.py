"""The kernel of FFT (F32): an iterative radix-2 FFT, one dispatch per pass.

The first dispatch permutes the input into the output in bit-reversed order (``reverseBits``; a gather, or, when
the output is the input itself, swaps of the pairs j < rev(j)); then one dispatch per stage h = 1, 2, ..., n/2
runs the n/2 butterflies of every batch item, ``x[i] +- w * x[i + h]`` in the output, one per invocation
(grid-stride loops over the dispatched workgroups: any size fits the device's workgroup-count limit). The
twiddle ``w = exp(-+2*pi*i*k/n)`` (k = j*n/(2h)) is computed in the shader without WGSL's ``sin``/``cos``
(whose accuracy WGSL leaves loose): k is reduced exactly in integers to an octant, the angle left (at most
pi/4, one rounding: k/n is exact) goes through the math library's ``sin_poly``/``cos_poly``, and the quadrant
is a swap of components and signs; so every twiddle is within a few f32 ulps and the transform meets
docs/semantics.md's normwise bound. The inverse's 1/n (exact) is applied in the last stage. Complex products
are f32 ``b.x*w.x - b.y*w.y`` etc. (fused or not, as the device compiles them). The output is bound as a whole
chunk with a run-time offset (the launch's ``dst``; the input's ``src_a``, read through the output's binding when
it lies in the output's buffer). Standard library only.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from atlas_web.isa.types import Type

from ..emitter import ShaderFeatures
from ..library import HelperSet
from ..runtime_layout import GUARD_WGSL, REACHED, TRAPS, launch_struct
from . import DeviceLimits, Dispatch, Kernel, KernelPlan, register

__all__ = ["FftSpec", "FftKernel", "FFT_TYPES", "WORKGROUP"]

FFT_TYPES = frozenset({Type.F32})
WORKGROUP = 256
FFT_BINDINGS = {3: "dst", 4: "src_a"}


def _f32(value: float) -> str:
    """A WGSL literal of ``value`` rounded to f32 (exactly that f32)."""
    return repr(struct.unpack("<f", struct.pack("<f", value))[0])


@dataclass(frozen=True)
class FftSpec:
    """One FFT shader (a shader spec of the kernel registry): ``h`` 0 for the bit reversal, else the stage's
    half-size; n, batch, inverse; ``reads`` how the reversal reads the input ("ro" its own binding, "dst" the
    output's, "same": the output is the input, swaps); ``last``: the step's last dispatch (marks it reached)."""

    n: int
    batch: int
    inverse: bool
    h: int
    reads: str = "ro"
    last: bool = False
    guarded: bool = True
    bound: bool = False

    def source(self, features: ShaderFeatures) -> str:
        return fft_source(self, features)

    def layout(self) -> dict[int, str]:
        layout = {0: "read-only-storage", 1: "storage", 3: "storage"}
        if self.h == 0 and self.reads == "ro":
            layout[4] = "read-only-storage"
        return layout


def _reversal(spec: FftSpec) -> str:
    bits = spec.n.bit_length() - 1
    rev = f"reverseBits(t) >> {32 - bits}u" if bits else "0u"
    if spec.reads == "same":
        return f"""        let j = t;
        let r = {rev};
        if (j < r) {{
            let p = dst + 2u * (item * N + j);
            let q = dst + 2u * (item * N + r);
            let re = cmat[p];
            let im = cmat[p + 1u];
            cmat[p] = cmat[q];
            cmat[p + 1u] = cmat[q + 1u];
            cmat[q] = re;
            cmat[q + 1u] = im;
        }}"""
    src = "cmat" if spec.reads == "dst" else "amat"
    return f"""        let r = {rev};
        let p = dst + 2u * (item * N + t);
        let q = (launch.src_a >> 2u) + 2u * (item * N + r);
        cmat[p] = {src}[q];
        cmat[p + 1u] = {src}[q + 1u];"""


def _stage(spec: FftSpec) -> str:
    scale = f" * {_f32(1.0 / spec.n)}" if spec.inverse and spec.last else ""
    return f"""        let j = t % H;
        let i0 = dst + 2u * (item * N + (t / H) * {2 * spec.h}u + j);
        let i1 = i0 + {2 * spec.h}u;
        let w = twiddle(j * {spec.n // (2 * spec.h)}u);
        let a = vec2<f32>(bitcast<f32>(cmat[i0]), bitcast<f32>(cmat[i0 + 1u]));
        let b = vec2<f32>(bitcast<f32>(cmat[i1]), bitcast<f32>(cmat[i1 + 1u]));
        let tb = vec2<f32>(b.x * w.x - b.y * w.y, b.x * w.y + b.y * w.x);
        let top = (a + tb){scale};
        let bottom = (a - tb){scale};
        cmat[i0] = bitcast<u32>(top.x);
        cmat[i0 + 1u] = bitcast<u32>(top.y);
        cmat[i1] = bitcast<u32>(bottom.x);
        cmat[i1 + 1u] = bitcast<u32>(bottom.y);"""


def fft_source(spec: FftSpec, features: ShaderFeatures) -> str:
    """The WGSL of ``spec``'s shader."""
    helpers = HelperSet()
    helpers.require("sin_cos_poly")
    lines = [features.enable_directives + launch_struct(),
             "@group(0) @binding(0) var<storage, read> launch: Launch;",
             "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;",
             "@group(0) @binding(3) var<storage, read_write> cmat: array<u32>;"]
    if 4 in spec.layout():
        lines.append("@group(0) @binding(4) var<storage, read> amat: array<u32>;")
    lines.append(helpers.render())
    guard = GUARD_WGSL if spec.guarded else "true"
    per_item = spec.n if spec.h == 0 else spec.n // 2
    sign = "" if spec.inverse else "-"
    body = _reversal(spec) if spec.h == 0 else _stage(spec)
    reached = "    if (li == 0u && all(wid == vec3<u32>(0u))) { atomicStore(&rt[REACHED + launch.step], launch.resume); }"
    lines.append(f"""const TRAPS: u32 = {TRAPS}u;
const REACHED: u32 = {REACHED}u;
const N: u32 = {spec.n}u;
const H: u32 = {max(1, spec.h)}u;
const PER_ITEM: u32 = {per_item}u;
const TOTAL: u32 = {per_item * spec.batch}u;
var<workgroup> go: u32;

// exp({sign}2*pi*i*k/N) for k < N/2: the octant of k reduced exactly, |angle| <= pi/4 through the polynomials
fn twiddle(k: u32) -> vec2<f32> {{
    let m = 8u * k;
    let o = m / N;
    let r = m - o * N;
    var q = o / 2u;
    var psi = f32(r) * {_f32(math.pi / 4 / spec.n)};
    if ((o & 1u) == 1u) {{
        q = (o + 1u) / 2u;
        psi = -(f32(N - r) * {_f32(math.pi / 4 / spec.n)});
    }}
    let c = cos_poly(psi);
    let s = sin_poly(psi);
    var w = vec2<f32>(-c, -s);
    if (q == 0u) {{ w = vec2<f32>(c, s); }} else if (q == 1u) {{ w = vec2<f32>(-s, c); }}
    return vec2<f32>(w.x, {sign}w.y);
}}

@compute @workgroup_size({WORKGROUP})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let li = lid.x;
    if (li == 0u) {{ go = select(0u, 1u, {guard}); }}
    if (workgroupUniformLoad(&go) == 0u) {{ return; }}
{reached if spec.last else ""}
    let dst = launch.dst >> 2u;
    for (var g = wid.x * {WORKGROUP}u + li; g < TOTAL; g = g + nwg.x * {WORKGROUP}u) {{
        let item = g / PER_ITEM;
        let t = g % PER_ITEM;
{body}
    }}
}}""")
    return "\n".join(lines)


def fft_reads(operands: dict) -> str:
    """How the bit reversal reads the input: "same" (the output is the input), "dst" (in the output's buffer
    elsewhere), "ro" (its own binding)."""
    (out_buffer, out_byte), (in_buffer, in_byte) = operands["dst"], operands["src_a"]
    if in_buffer is out_buffer:
        return "same" if in_byte == out_byte else "dst"
    return "ro"


class FftKernel(Kernel):
    """FFT's kernel (F32)."""

    instruction = "FFT"
    launch_fields = ("dst", "src_a")

    def supports(self, operation, ty) -> bool:
        return ty in FFT_TYPES

    def specs(self, instr, reads: str = "ro") -> list[FftSpec]:
        n, batch, inverse = instr.n, instr.batch, bool(instr.inverse)
        halves = [1 << s for s in range(n.bit_length() - 1)]
        out = [FftSpec(n, batch, inverse, 0, reads, last=not halves)]
        out += [FftSpec(n, batch, inverse, h, last=h == halves[-1]) for h in halves]
        return out

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        fields = {role: operands[role][1] for role in ("dst", "src_a")}
        if instr.n * instr.batch == 0:
            return KernelPlan((), fields)
        dispatches = []
        for spec in self.specs(instr, fft_reads(operands)):
            total = (spec.n if spec.h == 0 else spec.n // 2) * spec.batch
            groups = max(1, min(device.max_groups, -(-total // WORKGROUP)))
            dispatches.append(Dispatch(spec, FFT_BINDINGS, (groups, 1, 1)))
        return KernelPlan(tuple(dispatches), fields)

    def listing(self, instr):
        return [(f"fft_{'reverse' if s.h == 0 else f'stage_{s.h}'}", s) for s in self.specs(instr)[:2]]


register(FftKernel())
