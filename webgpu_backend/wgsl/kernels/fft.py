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

__all__ = ["FftSpec", "BluesteinSpec", "FftKernel", "FFT_TYPES", "WORKGROUP", "bluestein_size", "cis_wgsl"]

FFT_TYPES = frozenset({Type.F32})
WORKGROUP = 256
FFT_BINDINGS = {3: "dst", 4: "src_a"}


def _f32(value: float) -> str:
    """A WGSL literal of ``value`` rounded to f32 (exactly that f32)."""
    return repr(struct.unpack("<f", struct.pack("<f", value))[0])


@dataclass(frozen=True)
class FftSpec:
    """One FFT shader (a shader spec of the kernel registry): ``h`` 0 for the bit reversal, else the stage's
    half-size; n (the transform's length), batch, inverse; ``reads`` how the reversal reads the input ("ro" its own
    binding, "dst" the output's, "same": the output is the input, swaps); ``last``: the step's last dispatch (marks
    it reached, and an inverse's stage scales by 1/n)."""

    n: int
    batch: int
    inverse: bool
    h: int
    reads: str = "ro"
    last: bool = False
    guarded: bool = True
    bound: bool = False
    #: -1: the items are the output's (at ``launch.dst``); else the word in the launcher's work buffer (bound at 3)
    #: where they start (Bluestein's transforms)
    base: int = -1

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


def cis_wgsl(name: str, big_n: int, inverse: bool) -> str:
    """WGSL ``fn name(k: u32) -> vec2<f32>``: exp(-+2*pi*i*k/big_n) (+ for inverse) for k < big_n (big_n < 2^29):
    k's octant found exactly in integers, the angle left (at most pi/4, one rounding) through the math library's
    ``sin_poly``/``cos_poly``, the quadrant a swap of components and signs (WGSL's own sin/cos are loose)."""
    sign = "" if inverse else "-"
    step = _f32(math.pi / 4 / big_n)
    return f"""// exp({sign}2*pi*i*k/{big_n}) for k < {big_n}: the octant of k reduced exactly, |angle| <= pi/4 through the polynomials
fn {name}(k: u32) -> vec2<f32> {{
    let m = 8u * k;
    let o = m / {big_n}u;
    let r = m - o * {big_n}u;
    var q = o / 2u;
    var psi = f32(r) * {step};
    if ((o & 1u) == 1u) {{
        q = (o + 1u) / 2u;
        psi = -(f32({big_n}u - r) * {step});
    }}
    let c = cos_poly(psi);
    let s = sin_poly(psi);
    var w = vec2<f32>(c, s);
    if (q == 1u) {{ w = vec2<f32>(-s, c); }} else if (q == 2u) {{ w = vec2<f32>(-c, -s); }} else if (q == 3u) {{ w = vec2<f32>(s, -c); }}
    return vec2<f32>(w.x, {sign}w.y);
}}"""


#: the arrays a shader may bind: binding -> its declaration
_ARRAYS = {3: "var<storage, read_write> cmat: array<u32>", 4: "var<storage, read> amat: array<u32>",
           6: "var<storage, read> wmat: array<u32>"}


def _frame(features: ShaderFeatures, layout: dict, *, guarded: bool, last: bool, consts: str, functions: str,
           per_item: int, total: int, dst: str, body: str) -> str:
    """The WGSL of one FFT shader: the arrays of ``layout``, the launch guard, the reached mark (``last``), then a
    grid-stride loop over ``total`` invocations g (``item = g / per_item``, ``t = g % per_item``, ``dst`` the
    word where binding 3's items start) running ``body``."""
    helpers = HelperSet()
    helpers.require("sin_cos_poly")
    lines = [features.enable_directives + launch_struct(),
             "@group(0) @binding(0) var<storage, read> launch: Launch;",
             "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;"]
    lines += [f"@group(0) @binding({b}) {_ARRAYS[b]};" for b in sorted(layout) if b in _ARRAYS]
    lines.append(helpers.render())
    guard = GUARD_WGSL if guarded else "true"
    reached = "    if (li == 0u && all(wid == vec3<u32>(0u))) { atomicStore(&rt[REACHED + launch.step], launch.resume); }"
    lines.append(f"""const TRAPS: u32 = {TRAPS}u;
const REACHED: u32 = {REACHED}u;
{consts}
const PER_ITEM: u32 = {per_item}u;
const TOTAL: u32 = {total}u;
var<workgroup> go: u32;

{functions}

@compute @workgroup_size({WORKGROUP})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let li = lid.x;
    if (li == 0u) {{ go = select(0u, 1u, {guard}); }}
    if (workgroupUniformLoad(&go) == 0u) {{ return; }}
{reached if last else ""}
    let dst = {dst};
    for (var g = wid.x * {WORKGROUP}u + li; g < TOTAL; g = g + nwg.x * {WORKGROUP}u) {{
        let item = g / PER_ITEM;
        let t = g % PER_ITEM;
{body}
    }}
}}""")
    return "\n".join(lines)


def fft_source(spec: FftSpec, features: ShaderFeatures) -> str:
    """The WGSL of ``spec``'s shader."""
    per_item = spec.n if spec.h == 0 else spec.n // 2
    return _frame(features, spec.layout(), guarded=spec.guarded, last=spec.last,
                  consts=f"const N: u32 = {spec.n}u;\nconst H: u32 = {max(1, spec.h)}u;",
                  functions=cis_wgsl("twiddle", spec.n, spec.inverse), per_item=per_item,
                  total=per_item * spec.batch, dst="launch.dst >> 2u" if spec.base < 0 else f"{spec.base}u",
                  body=_reversal(spec) if spec.h == 0 else _stage(spec))


def fft_reads(operands: dict) -> str:
    """How the bit reversal reads the input: "same" (the output is the input), "dst" (in the output's buffer
    elsewhere), "ro" (its own binding)."""
    (out_buffer, out_byte), (in_buffer, in_byte) = operands["dst"], operands["src_a"]
    if in_buffer is out_buffer:
        return "same" if in_byte == out_byte else "dst"
    return "ro"


def bluestein_size(n: int) -> int:
    """m: the power of two at least 2n - 1, the length of Bluestein's circular convolution."""
    return 1 << max(0, 2 * n - 2).bit_length()


@dataclass(frozen=True)
class BluesteinSpec:
    """One of the shaders Bluestein's algorithm adds (n not a power of two; the launcher's work buffer holds B at
    word 0 and item b's padded values at word 2m(1 + b)): ``part`` "b" (B's input, bit-reversed), "pre" (x*w
    padded, bit-reversed), "mid" (conj(A*B), bit-reversed in place), "post" (the output, the step's last)."""

    part: str
    n: int
    batch: int
    inverse: bool
    guarded: bool = True
    bound: bool = False

    def source(self, features: ShaderFeatures) -> str:
        return bluestein_source(self, features)

    def layout(self) -> dict[int, str]:
        layout = {0: "read-only-storage", 1: "storage", 3: "storage"}
        if self.part == "pre":
            layout[4] = "read-only-storage"
        if self.part == "post":
            layout[6] = "read-only-storage"
        return layout

    @property
    def bindings(self) -> dict[int, str]:
        return {"pre": {3: "work", 4: "src_a"}, "post": {3: "dst", 6: "work"}}.get(self.part, {3: "work"})

    @property
    def per_item(self) -> int:
        return self.n if self.part == "post" else bluestein_size(self.n)


_CMUL = """fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> { return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
fn conj(a: vec2<f32>) -> vec2<f32> { return vec2<f32>(a.x, -a.y); }
fn word2(at: u32) -> vec2<f32> { return vec2<f32>(bitcast<f32>(cmat[at]), bitcast<f32>(cmat[at + 1u])); }
fn put2(at: u32, v: vec2<f32>) { cmat[at] = bitcast<u32>(v.x); cmat[at + 1u] = bitcast<u32>(v.y); }"""


def _bluestein_functions(spec: BluesteinSpec) -> str:
    n, m = spec.n, bluestein_size(spec.n)
    return f"""{cis_wgsl("cis_2n", 2 * n, spec.inverse)}

// w[j] = exp(-+pi*i*j^2/n): j^2 modulo 2n exactly (doubling and adding, every value below 2^26)
fn chirp(j: u32) -> vec2<f32> {{
    var r = 0u;
    var a = j;
    for (var b = j; b != 0u; b = b >> 1u) {{
        if ((b & 1u) == 1u) {{ r = (r + a) % {2 * n}u; }}
        a = (2u * a) % {2 * n}u;
    }}
    return cis_2n(r);
}}

fn rev(t: u32) -> u32 {{ return reverseBits(t) >> {33 - m.bit_length()}u; }}

{_CMUL}"""


def _bluestein_body(spec: BluesteinSpec) -> str:
    n, m = spec.n, bluestein_size(spec.n)
    if spec.part == "b":
        return f"""        let j = rev(t);
        var v = vec2<f32>(0.0, 0.0);
        if (j < N) {{ v = conj(chirp(j)) * {_f32(1.0 / m)}; }} else if (j > M - N) {{ v = conj(chirp(M - j)) * {_f32(1.0 / m)}; }}
        put2(2u * t, v);"""
    if spec.part == "pre":
        return """        let j = rev(t);
        var v = vec2<f32>(0.0, 0.0);
        if (j < N) {
            let x = (launch.src_a >> 2u) + 2u * (item * N + j);
            v = cmul(vec2<f32>(bitcast<f32>(amat[x]), bitcast<f32>(amat[x + 1u])), chirp(j));
        }
        put2(2u * M * (item + 1u) + 2u * t, v);"""
    if spec.part == "mid":
        return """        let r = rev(t);
        let base = 2u * M * (item + 1u);
        if (t < r) {
            let a = word2(base + 2u * t);
            put2(base + 2u * t, conj(cmul(word2(base + 2u * r), word2(2u * r))));
            put2(base + 2u * r, conj(cmul(a, word2(2u * t))));
        } else if (t == r) {
            put2(base + 2u * t, conj(cmul(word2(base + 2u * t), word2(2u * t))));
        }"""
    scale = f" * {_f32(1.0 / n)}" if spec.inverse else ""
    return f"""        let at = 2u * M * (item + 1u) + 2u * t;
        let a = vec2<f32>(bitcast<f32>(wmat[at]), bitcast<f32>(wmat[at + 1u]));
        put2(dst + 2u * (item * N + t), cmul(conj(a), chirp(t)){scale});"""


def bluestein_source(spec: BluesteinSpec, features: ShaderFeatures) -> str:
    """The WGSL of one of Bluestein's own shaders."""
    per_item = spec.per_item
    total = per_item * (1 if spec.part == "b" else spec.batch)
    return _frame(features, spec.layout(), guarded=spec.guarded, last=spec.part == "post",
                  consts=f"const N: u32 = {spec.n}u;\nconst M: u32 = {bluestein_size(spec.n)}u;",
                  functions=_bluestein_functions(spec), per_item=per_item, total=total,
                  dst="launch.dst >> 2u" if spec.part == "post" else "0u", body=_bluestein_body(spec))


def bluestein_specs(n: int, batch: int, inverse: bool) -> list:
    """Bluestein's dispatches: B's input, its transform (at word 0), x*w, its transforms and conj(A*B) between
    them (the items from word 2m), the output."""
    m = bluestein_size(n)
    halves = [1 << s for s in range(m.bit_length() - 1)]
    work = [FftSpec(m, batch, False, h, base=2 * m) for h in halves]
    return [BluesteinSpec("b", n, batch, inverse), *(FftSpec(m, 1, False, h, base=0) for h in halves),
            BluesteinSpec("pre", n, batch, inverse), *work, BluesteinSpec("mid", n, batch, inverse), *work,
            BluesteinSpec("post", n, batch, inverse)]


class FftKernel(Kernel):
    """FFT's kernel (F32): radix-2 for a power of two, else Bluestein's algorithm over radix-2 transforms in the
    launcher's work buffer (``8 * m * (batch + 1)`` bytes, m the power of two at least 2n - 1)."""

    instruction = "FFT"
    launch_fields = ("dst", "src_a")

    def supports(self, operation, ty) -> bool:
        return ty in FFT_TYPES

    def scratch(self, instr) -> dict[str, int]:
        if instr.n & (instr.n - 1) == 0 or instr.batch == 0:
            return {}
        return {"work": 8 * bluestein_size(instr.n) * (instr.batch + 1)}

    def specs(self, instr, reads: str = "ro") -> list:
        n, batch, inverse = instr.n, instr.batch, bool(instr.inverse)
        if n & (n - 1):
            return bluestein_specs(n, batch, inverse)
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
            if isinstance(spec, BluesteinSpec):
                total, bindings = spec.per_item * (1 if spec.part == "b" else spec.batch), spec.bindings
            else:
                total = (spec.n if spec.h == 0 else spec.n // 2) * spec.batch
                bindings = FFT_BINDINGS if spec.base < 0 else {3: "work"}
            groups = max(1, min(device.max_groups, -(-total // WORKGROUP)))
            dispatches.append(Dispatch(spec, bindings, (groups, 1, 1)))
        return KernelPlan(tuple(dispatches), fields)

    def listing(self, instr):
        if instr.n & (instr.n - 1):
            return [(f"fft_bluestein_{s.part}", s) for s in self.specs(instr) if isinstance(s, BluesteinSpec)]
        return [(f"fft_{'reverse' if s.h == 0 else f'stage_{s.h}'}", s) for s in self.specs(instr)[:2]]


register(FftKernel())
