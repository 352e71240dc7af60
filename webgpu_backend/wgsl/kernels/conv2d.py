"""The kernel of Conv2D (F32): an implicit GEMM, the GEMM kernel's tiling with im2col done while staging.

For each batch item b and group g (``item = b*groups + g``, a grid-stride loop over the dispatch's z) the output
channels of the group are the product ``W_g (cout_g x K) @ cols (K x out_h*out_w)``, K = cin_g*kernel_h*kernel_w,
as in the wasm kernel; here ``cols`` is never stored: staging the 16 x 64 slice of it for a depth step, each
invocation computes its elements' input positions (row (c, p, q) of cols, column (i, j): input[b, g*cin_g + c,
i*stride_h - padding_h + p*dilation_h, j*stride_w - padding_w + q*dilation_w], or 0 outside the input: the
padding's zeros take part in the products, 0 * inf = NaN, as the contract says). Each workgroup (16 x 16
invocations) computes 64 x 64 tiles of the output, each invocation a 4 x 4 block in registers (f32 products and
sums, ``acc += a * b``), then adds the bias (``has_bias``) and writes the NCHW output. The shape is constant in the
shader (one pipeline per shape). Arrays are bound as whole chunks with run-time byte offsets (the launch's ``dst``,
``src_a`` (input), ``src_b`` (kernel), ``src_c`` (bias)); an input in the output's buffer is read through the
output's binding (WebGPU forbids a writable binding aliasing another); overlapping the output with an input gives
unspecified values (the contract). The host checked handle, bounds and alignment of every array before the
dispatch. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.extents import conv_out
from atlas_web.isa.types import Type

from ..emitter import ShaderFeatures
from ..runtime_layout import GUARD_WGSL, REACHED, TRAPS, launch_struct
from ..subword import merge_bits
from . import DeviceLimits, Dispatch, Kernel, KernelPlan, register
from .gemm import INPUTS, DEPTH, TILE, tile_main, tile_product

__all__ = ["ConvSpec", "Conv2DKernel", "CONV_TYPES", "KINDS", "ROUNDING", "element_reader", "element_writer"]

CONV_TYPES = frozenset({Type.F32, Type.F16, Type.BF16})
#: the stored type's name (gemm.INPUTS' reader of an element)
KINDS = {Type.F32: "f32", Type.F16: "f16", Type.BF16: "bf16"}
#: binding -> array role (3 output, 4 input, 5 kernel, 6 bias)
CONV_BINDINGS = {3: "dst", 4: "src_a", 5: "src_b", 6: "src_c"}
_ARRAYS = {4: ("src_a", "xin"), 5: ("src_b", "wk"), 6: ("src_c", "bias")}


@dataclass(frozen=True)
class ConvSpec:
    """One Conv2D shader (a shader spec of the kernel registry): the shape, whether it has a bias, how each
    source is read (``reads``: per source binding 4, 5, 6, "ro" its own binding or "dst" the output's), whether
    the step guard is checked; ``bound`` is always False (whole chunks, run-time offsets)."""

    batch: int
    cin: int
    cout: int
    h: int
    w: int
    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    dh: int
    dw: int
    groups: int
    bias: bool
    reads: tuple[str, str, str] = ("ro", "ro", "ro")
    #: the element type: "f32", or "f16" / "bf16" (read into f32, computed in f32, each output rounded once)
    kind: str = "f32"
    guarded: bool = True
    bound: bool = False

    @property
    def out_hw(self) -> tuple[int, int]:
        return conv_out(self.h, self.ph, self.dh, self.kh, self.sh), conv_out(self.w, self.pw, self.dw, self.kw, self.sw)

    def source(self, features: ShaderFeatures) -> str:
        return conv_source(self, features)

    def layout(self) -> dict[int, str]:
        layout = {0: "read-only-storage", 1: "storage", 3: "storage"}
        for binding, read in zip((4, 5, 6), self.reads):
            if binding == 6 and not self.bias:
                continue
            if read != "dst":
                layout[binding] = "read-only-storage"
        return layout


def conv_spec(instr, reads=("ro", "ro", "ro"), guarded: bool = True) -> ConvSpec:
    return ConvSpec(instr.batch, instr.in_channels, instr.out_channels, instr.height, instr.width, instr.kernel_h,
                    instr.kernel_w, instr.stride_h, instr.stride_w, instr.padding_h, instr.padding_w,
                    instr.dilation_h, instr.dilation_w, instr.groups, bool(instr.has_bias), tuple(reads),
                    KINDS[instr.ty], guarded)


def _reader(spec: ConvSpec, binding: int, function: str) -> str:
    """WGSL ``function(idx) -> f32``: element idx of the array of ``binding`` (its launch offset, its type)."""
    role, array = _ARRAYS[binding]
    if spec.reads[binding - 4] == "dst":
        array = "cmat"
    return element_reader(spec.kind, function, f"launch.{role}", array, array == "cmat" and spec.kind != "f32")


def element_reader(kind: str, function: str, base: str, array: str, atomic: bool) -> str:
    """WGSL ``function(idx) -> f32``: element idx of the ``kind`` ("f32", "f16", "bf16") array starting at byte
    ``base`` of ``array`` (u32 words; ``atomic``: atomic<u32> words, read by atomicLoad), widened exactly to f32
    by gemm.INPUTS' reader."""
    _, body, word_index = INPUTS[kind]
    word = f"atomicLoad(&{array}[{word_index}])" if atomic else f"{array}[{word_index}]"
    return f"""fn {function}(idx: u32) -> f32 {{
    {body.format(base=base, word=word)}
}}
"""


#: f32 -> the bits of the nearest f16 / bf16 (ties to even; overflow to infinity; NaN stays NaN), integer steps
ROUNDING = {
    "f16": """fn rounded_bits(v: f32) -> u32 {
    let u = bitcast<u32>(v);
    let sign = (u >> 16u) & 0x8000u;
    let a = u & 0x7fffffffu;
    if (a > 0x7f800000u) { return sign | 0x7e00u; }
    if (a >= 0x477ff000u) { return sign | 0x7c00u; }
    if (a >= 0x38800000u) {
        let r = a - 0x38000000u;
        return sign | ((r + 0xfffu + ((r >> 13u) & 1u)) >> 13u);
    }
    let e = a >> 23u;
    if (e < 102u) { return sign; }
    let m = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - e;
    let q = m >> shift;
    let rem = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    return sign | (q + select(0u, 1u, rem > half || (rem == half && (q & 1u) == 1u)));
}
""",
    "bf16": """fn rounded_bits(v: f32) -> u32 {
    let u = bitcast<u32>(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) { return (u >> 16u) | 0x40u; }
    return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}
""",
}


def element_writer(kind: str, function: str, array: str) -> str:
    """WGSL ``function(idx, v)``: element idx of the output (byte ``launch.dst`` of ``array``) := v (f32), or v
    rounded once to f16/bf16 (ROUNDING) and stored into its half of a word in one atomic step (subword.merge_bits;
    ``array`` holds atomic<u32>: the other half may be another invocation's)."""
    if kind == "f32":
        return f"fn {function}(idx: u32, v: f32) {{\n    {array}[(launch.dst >> 2u) + idx] = bitcast<u32>(v);\n}}\n"
    return ROUNDING[kind] + f"""fn {function}(idx: u32, v: f32) {{
    let h = (launch.dst >> 1u) + idx;
    let shift = (h & 1u) * 16u;
    {merge_bits(f"{array}[h >> 1u]", "0xffffu << shift", "rounded_bits(v) << shift")}
}}
"""


def conv_source(spec: ConvSpec, features: ShaderFeatures) -> str:
    """The WGSL of ``spec``'s shader."""
    oh, ow = spec.out_hw
    cin_g, cout_g = spec.cin // spec.groups, spec.cout // spec.groups
    k = cin_g * spec.kh * spec.kw
    c_type = "u32" if spec.kind == "f32" else "atomic<u32>"
    lines = [features.enable_directives + launch_struct(),
             "@group(0) @binding(0) var<storage, read> launch: Launch;",
             "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;",
             f"@group(0) @binding(3) var<storage, read_write> cmat: array<{c_type}>;"]
    for binding in (4, 5, 6):
        if binding in spec.layout():
            lines.append(f"@group(0) @binding({binding}) var<storage, read> {_ARRAYS[binding][1]}: array<u32>;")
    lines += [_reader(spec, 4, "read_input"), _reader(spec, 5, "read_kernel"), element_writer(spec.kind, "write", "cmat")]
    if spec.bias:
        lines.append(_reader(spec, 6, "read_bias"))
    guard = GUARD_WGSL if spec.guarded else "true"
    bias = f"acc + read_bias(g * {cout_g}u + row)" if spec.bias else "acc"
    lines.append(f"""const TRAPS: u32 = {TRAPS}u;
const REACHED: u32 = {REACHED}u;
const M: u32 = {cout_g}u;
const N: u32 = {oh * ow}u;
const K: u32 = {k}u;
const ITEMS: u32 = {spec.batch * spec.groups}u;
const TILES_M: u32 = {-(-cout_g // TILE)}u;
const TILES_N: u32 = {-(-(oh * ow) // TILE)}u;
var<workgroup> a_tile: array<f32, {DEPTH * TILE}>;
var<workgroup> b_tile: array<f32, {DEPTH * TILE}>;
var<workgroup> go: u32;

// W_g[row, col]: the kernel's row g*cout_g + row
fn load_a(g: u32, row: u32, col: u32) -> f32 {{
    if (row >= M || col >= K) {{ return 0.0; }}
    return read_kernel((g * M + row) * K + col);
}}

// cols[row, col] of item (b, g): row = (c, p, q), col = (i, j); 0 in the padding
fn load_b(b: u32, g: u32, row: u32, col: u32) -> f32 {{
    if (row >= K || col >= N) {{ return 0.0; }}
    let c = row / {spec.kh * spec.kw}u;
    let tap = row % {spec.kh * spec.kw}u;
    let y = i32((col / {ow}u) * {spec.sh}u + (tap / {spec.kw}u) * {spec.dh}u) - {spec.ph};
    let x = i32((col % {ow}u) * {spec.sw}u + (tap % {spec.kw}u) * {spec.dw}u) - {spec.pw};
    if (y < 0 || y >= {spec.h} || x < 0 || x >= {spec.w}) {{ return 0.0; }}
    let channel = b * {spec.cin}u + g * {cin_g}u + c;
    return read_input((channel * {spec.h}u + u32(y)) * {spec.w}u + u32(x));
}}

fn store_c(b: u32, g: u32, row: u32, col: u32, acc: f32) {{
    if (row >= M || col >= N) {{ return; }}
    write((b * {spec.cout}u + g * M + row) * N + col, {bias});
}}

{tile_main(guard)}
    for (var item = wid.z; item < ITEMS; item = item + nwg.z) {{
    let b = item / {spec.groups}u;
    let g = item % {spec.groups}u;
    for (var tm = wid.y; tm < TILES_M; tm = tm + nwg.y) {{
    for (var tn = wid.x; tn < TILES_N; tn = tn + nwg.x) {{
{tile_product("g", "b, g", "b, g")}
    }}
    }}
    }}
}}""")
    return "\n".join(lines)


def conv_reads(operands: dict) -> tuple[str, str, str]:
    """Per source role (input, kernel, bias): "dst" when it lies in the output's buffer (read through the
    output's binding), else "ro" (read-only sources may share a buffer)."""
    dst = operands["dst"][0]
    return tuple("dst" if role in operands and operands[role][0] is dst else "ro"
                 for role in ("src_a", "src_b", "src_c"))


class Conv2DKernel(Kernel):
    """Conv2D's kernel (F32)."""

    instruction = "Conv2D"
    launch_fields = ("dst", "src_a", "src_b", "src_c")

    def supports(self, operation, ty) -> bool:
        return ty in CONV_TYPES

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        spec = conv_spec(instr, conv_reads(operands))
        oh, ow = spec.out_hw
        fields = {role: operands[role][1] for role in ("dst", "src_a", "src_b", "src_c") if role in operands}
        if spec.batch * spec.cout * oh * ow == 0:
            return KernelPlan((), fields)
        cout_g = spec.cout // spec.groups
        groups = (max(1, min(device.max_groups, -(-(oh * ow) // TILE))), max(1, min(device.max_groups, -(-cout_g // TILE))),
                  max(1, min(device.max_groups, spec.batch * spec.groups)))
        return KernelPlan((Dispatch(spec, CONV_BINDINGS, groups),), fields)

    def listing(self, instr):
        return [("conv2d", conv_spec(instr))]


register(Conv2DKernel())
