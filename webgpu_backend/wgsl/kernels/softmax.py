"""The kernels of Softmax and LogSoftmax (F32; F16 and BF16 read into f32 through gemm.INPUTS' readers, computed
in f32, each output rounded once to nearest even (conv2d.ROUNDING) and stored into its half of a word in one
atomic step (subword.merge_bits): a row's last word may be the next row's first, written by another workgroup): one workgroup per row,
workgroup reductions.

Each workgroup takes one row (a grid-stride loop over rows only where there are more rows than the device's
workgroups per dimension: SwiftShader and llvmpipe run barriers inside a loop slowly), as docs/semantics.md
(Softmax kernels) says:

1. the maximum m over the finite elements, compared as ordered integer keys of their bits (``float_key``: WGSL
   lets a device assume there are no NaNs or infinities and flush subnormals in comparisons); a NaN or +inf
   takes the key BAD above every finite one, -inf the key NONE below (branch-free selects);
2. a row with a NaN or +inf, or without a finite element (only -inf), is written NaN (bits); otherwise
   ``exp(x - m)`` by ``exp_nonpositive`` (XNNPACK's rr2-p5, 3.1 u, as the wasm kernel's; 0 for -inf and below
   f32's normal range) is summed, per invocation in element order, then over the invocations in their order;
3. Softmax: ``output = exp(x - m) * (1/s)``; LogSoftmax: ``output = (x - m) - log(s)`` (``log_f32``; a -inf
   element gives -inf, as bits).

Each workgroup reduction (max, sum) costs two barriers: every invocation's partial into workgroup memory, one
barrier, invocation 0 folds them in order, a uniform load (``_reduce``; SwiftShader and llvmpipe switch
through every invocation at each barrier, so a halving tree's log2(WG) barriers cost more than the fold).

A workgroup has WORKGROUP (16) invocations (LONG_WORKGROUP past LONG_ROW elements: ``row_walk``, shared with the
norm kernels), each walking the row's elements ``li, li + WG, ...`` three times (pass 3 computes each exponential
again rather than store and reload it). In one headless Chromium page (SwiftShader) 2.2-5.4x TF.js webgpu's
tf.softmax at 256 x 1024 and 1024 x 1024 (benchmarks/peers/softmax.py --webgpu), where 64 invocations with halving
trees measured 0.77-0.87x. Holding each invocation's elements in registers (the code unrolled) measured 3.8-3.9x
there but took 14 s to compile on llvmpipe at 1024 elements (a private array: 2.4-2.8x, 5.6 s); 16 invocations
compile in 3 s there and run a 1024 x 1024 launch in 148 ms against 136 ms with 64.

Each element is read and written by one invocation, so the output may be the input itself; an input in the
output's buffer at another offset is read through the output's binding (``binding.shared_sources``; a partial
overlap gives unspecified values, the contract). Arrays are bound as whole chunks with run-time byte offsets
(the launch's ``dst`` and ``src_a``); the host checked handle, bounds (the table's extents) and alignment of
both before the dispatch. n and rows are constants of the shader (one pipeline per shape). Standard library
only.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.types import Type

from ..emitter import ShaderFeatures
from ..library import HelperSet
from ..runtime_layout import GUARD_WGSL, REACHED, TRAPS, launch_struct
from . import DeviceLimits, Dispatch, Kernel, KernelPlan, register
from .binding import ROLE_BINDINGS, shared_sources
from .conv2d import KINDS, element_reader, element_writer
from .row_walk import WORKGROUP, check_loop_limit, row_workgroup

__all__ = ["SoftmaxSpec", "SoftmaxKernel", "LogSoftmaxKernel", "SOFTMAX_TYPES"]

#: the types the kernel computes
SOFTMAX_TYPES = frozenset({Type.F32, Type.F16, Type.BF16})
_NAN_BITS, _MINUS_INF_BITS, _PLUS_INF_BITS = 0x7FC00000, 0xFF800000, 0x7F800000
#: exp_nonpositive's polynomial (x^5 first) and cutoff, as WGSL literals (XNNPACK's f32 rr2-p5, as coop_softmax)
_P = tuple(repr(float.fromhex(c)) for c in ("0x1.0F9F9Cp-7", "0x1.573A1Ap-5", "0x1.555A80p-3", "0x1.FFFDC6p-2",
                                              "0x1.FFFFF6p-1"))
_CUTOFF = repr(float.fromhex("-0x1.5D589Ep6"))


@dataclass(frozen=True)
class SoftmaxSpec:
    """One Softmax/LogSoftmax shader (a shader spec of the kernel registry): the shape, whether it is the log
    form, how the input is read (``reads``: "ro" its own binding, "dst" through the output's), whether the
    step guard is checked; ``bound`` is always False (whole chunks, run-time offsets)."""

    rows: int
    n: int
    log: bool
    reads: str = "ro"
    guarded: bool = True
    bound: bool = False
    #: whether a workgroup loops over several rows (more rows than the device's workgroups per dimension)
    looped: bool = False
    #: the element type: "f32", or "f16" / "bf16" (read into f32, computed in f32, each output rounded once)
    kind: str = "f32"
    #: invocations per workgroup (``workgroup_size``)
    workgroup: int = WORKGROUP

    def source(self, features: ShaderFeatures) -> str:
        return softmax_source(self, features)

    def layout(self) -> dict[int, str]:
        layout = {0: "read-only-storage", 1: "storage", 3: "storage"}
        if self.reads != "dst":
            layout[4] = "read-only-storage" if self.reads == "ro" else "storage"
        return layout


def softmax_source(spec: SoftmaxSpec, features: ShaderFeatures) -> str:
    """The WGSL of ``spec``'s shader. Raises UnsupportedOperation for a row longer than the engine's loop limit
    allows one invocation to walk."""
    name = "LogSoftmax" if spec.log else "Softmax"
    check_loop_limit(name, spec.kind, "row", spec.n, spec.workgroup, features)
    helpers = HelperSet()
    for helper in ("float_key", "log_f32"):
        helpers.require(helper)
    halves = spec.kind != "f32"
    lines = [features.enable_directives + launch_struct(),
             "@group(0) @binding(0) var<storage, read> launch: Launch;",
             "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;",
             f"@group(0) @binding(3) var<storage, read_write> cmat: array<{'atomic<u32>' if halves else 'u32'}>;"]
    access = spec.layout().get(4)
    if access is not None:
        mode = "read" if access == "read-only-storage" else "read_write"
        lines.append(f"@group(0) @binding(4) var<storage, {mode}> amat: array<u32>;")
    guard = GUARD_WGSL if spec.guarded else "true"
    lines.append(_access(spec))
    lines.append(helpers.render())
    lines.append(f"""const TRAPS: u32 = {TRAPS}u;
const REACHED: u32 = {REACHED}u;
const N: u32 = {spec.n}u;
const ROWS: u32 = {spec.rows}u;
const WG: u32 = {spec.workgroup}u;
const BAD: i32 = 0x7fffffff;
const NONE: i32 = -0x7fffffff - 1;
var<workgroup> keys: array<i32, {spec.workgroup}>;
var<workgroup> sums: array<f32, {spec.workgroup}>;
var<workgroup> go: u32;

// exp(d) for d <= 0 or -inf (the row's maximum is finite): XNNPACK's rr2-p5 (Cody-Waite by ln2 in two parts, a
// degree-5 polynomial, 2^n from the magic-number sum's bits; 3.1 u), 0 below -87.34 where it leaves the normal
// range (the contract lets it flush); the magic sum's bits pass an xor with ``zero`` (launch.zero, read once per
// invocation: opaque_f32 without a load per element) so the compiler cannot cancel the sum
fn exp_nonpositive(d: f32, zero: u32) -> f32 {{
    let t = bitcast<f32>(bitcast<u32>(d * 1.44269502162933349609375 + 12582912.0 + 127.0) ^ zero);
    let scale = bitcast<f32>(bitcast<u32>(t) << 23u);
    let n = t - (12582912.0 + 127.0);
    let r = n * -0.693145751953125 + d + n * -1.428606765330187e-06;
    let p = (((({_P[0]} * r + {_P[1]}) * r + {_P[2]}) * r + {_P[3]}) * r + {_P[4]});
    return select(0.0, (r * scale) * p + scale, d >= {_CUTOFF});
}}

// the ordering key of an element's bits: a finite element's float_key, BAD for a NaN or +inf (above every finite
// key), NONE for -inf (below every finite key)
fn element_key(bits: u32) -> i32 {{
    let bad = (bits & 0x7fffffffu) > 0x7f800000u || bits == 0x{_PLUS_INF_BITS:08x}u;
    let finite = (bits & 0x7f800000u) != 0x7f800000u;
    return select(select(NONE, BAD, bad), float_key(bitcast<f32>(bits)), finite);
}}

// the f32 whose float_key is k (k of a finite value; -0 comes back as +0)
fn key_value(k: i32) -> f32 {{
    return bitcast<f32>(select(u32(k), u32(-k) | 0x80000000u, k < 0));
}}

@compute @workgroup_size({spec.workgroup})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let li = lid.x;
    if (li == 0u) {{ go = select(0u, 1u, {guard}); }}
    if (workgroupUniformLoad(&go) == 0u) {{ return; }}
    if (li == 0u && all(wid == vec3<u32>(0u))) {{ atomicStore(&rt[REACHED + launch.step], launch.resume); }}
    let zero = launch.zero;
    {_rows_header(spec)} {{
        let at = row * N;
{_body(spec)}
{"        workgroupBarrier();" if spec.looped else ""}
    }}
}}""")
    return "\n".join(lines)


def _reduce(array: str, value: str, op: str, result: str) -> str:
    """WGSL: ``let result`` := op over every invocation's ``value`` (op: "max" or "+"): each invocation's value
    into workgroup ``array``, one barrier, invocation 0 folds them in invocation order, read back uniformly (two
    barriers in all: SwiftShader and llvmpipe switch through every invocation at each barrier, so a halving tree's
    log2(WG) barriers cost more than WG - 1 operations in one invocation)."""
    fold = "max(acc, {0}[j])" if op == "max" else "acc + {0}[j]"
    return f"""        {array}[li] = {value};
        workgroupBarrier();
        if (li == 0u) {{
            var acc = {array}[0];
            for (var j = 1u; j < WG; j = j + 1u) {{ acc = {fold.format(array)}; }}
            {array}[0] = acc;
        }}
        let {result} = workgroupUniformLoad(&{array}[0]);"""


def _body(spec: SoftmaxSpec) -> str:
    """A row's three passes: each invocation walks its elements li, li + WG, ... (``at``: the row's first)."""
    return f"""        // 1: the largest key
        var key = NONE;
        for (var i = li; i < N; i = i + WG) {{ key = max(key, element_key(ld(at + i))); }}
{_reduce("keys", "key", "max", "row_key")}
        let m = key_value(row_key);
        if (row_key == BAD || row_key == NONE) {{
            for (var i = li; i < N; i = i + WG) {{ st(at + i, 0x{_NAN_BITS:08x}u); }}
        }} else {{
        // 2: exp(x - m), summed
        var total = 0.0;
        for (var i = li; i < N; i = i + WG) {{ total = total + exp_nonpositive(bitcast<f32>(ld(at + i)) - m, zero); }}
{_reduce("sums", "total", "+", "s")}
        // 3: scale (Softmax) or shift (LogSoftmax)
{_finish(spec)}
        }}"""


def _rows_header(spec: SoftmaxSpec) -> str:
    """The loop over the workgroup's rows: a grid-stride loop where the dispatch has fewer workgroups than rows,
    else the workgroup's one row (SwiftShader and llvmpipe run barriers inside a loop slowly)."""
    if spec.looped:
        return "for (var row = wid.x; row < ROWS; row = row + nwg.x)"
    return "let row = wid.x;\n    if (row < ROWS)"


def _access(spec: SoftmaxSpec) -> str:
    """WGSL ``ld(idx) -> u32``: the f32 bits of the input's element idx (f16/bf16 widened exactly by gemm.INPUTS'
    reader; from the output's binding, by atomicLoad for halves, where the input lies in its buffer), and ``st(idx,
    bits)``: output element idx := the f32 of ``bits`` (f16/bf16: rounded once, stored into its half of a word in
    one atomic step, the other half may be another invocation's)."""
    array = "cmat" if spec.reads == "dst" else "amat"
    if spec.kind == "f32":
        return f"""fn ld(idx: u32) -> u32 {{ return {array}[(launch.src_a >> 2u) + idx]; }}
fn st(idx: u32, bits: u32) {{ cmat[(launch.dst >> 2u) + idx] = bits; }}
"""
    return (element_reader(spec.kind, "element", "launch.src_a", array, array == "cmat")
            + element_writer(spec.kind, "store", "cmat")
            + """fn ld(idx: u32) -> u32 { return bitcast<u32>(element(idx)); }
fn st(idx: u32, bits: u32) { store(idx, bitcast<f32>(bits)); }
""")


def _finish(spec: SoftmaxSpec) -> str:
    if spec.log:
        return f"""        let shift = log_f32(s);
        for (var i = li; i < N; i = i + WG) {{
            let bits = ld(at + i);
            var y = 0x{_MINUS_INF_BITS:08x}u;
            if (bits != 0x{_MINUS_INF_BITS:08x}u) {{ y = bitcast<u32>((bitcast<f32>(bits) - m) - shift); }}
            st(at + i, y);
        }}"""
    return f"""        let scale = 1.0 / s;
        for (var i = li; i < N; i = i + WG) {{
            st(at + i, bitcast<u32>(exp_nonpositive(bitcast<f32>(ld(at + i)) - m, zero) * scale));
        }}"""


class SoftmaxKernel(Kernel):
    """Softmax's kernel (LogSoftmax's is the same with its last pass)."""

    instruction = "Softmax"
    launch_fields = ("dst", "src_a")
    log = False

    def supports(self, operation, ty) -> bool:
        return ty in SOFTMAX_TYPES

    def spec(self, instr, reads: str = "ro", guarded: bool = True, max_groups: int = 65535) -> SoftmaxSpec:
        return SoftmaxSpec(instr.rows, instr.n, self.log, reads, guarded, looped=instr.rows > max_groups,
                           kind=KINDS[instr.ty], workgroup=row_workgroup(instr.n))

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        spec = self.spec(instr, shared_sources(operands)[0], max_groups=device.max_groups)
        fields = {role: operands[role][1] for role in ("dst", "src_a")}
        groups = max(1, min(device.max_groups, instr.rows if instr.n else 1))
        return KernelPlan((Dispatch(spec, ROLE_BINDINGS, (groups, 1, 1)),), fields)

    def listing(self, instr):
        return [(self.instruction.lower(), self.spec(instr))]


class LogSoftmaxKernel(SoftmaxKernel):
    instruction = "LogSoftmax"
    log = True


register(SoftmaxKernel())
register(LogSoftmaxKernel())
