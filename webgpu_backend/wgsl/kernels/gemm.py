"""The kernels of GEMM and BatchedGEMM (F32), MixedPrecisionGEMM (F16, BF16 A and B) and QuantizedGEMM (I8 A and
B; I8 or F32 C): one tiled shader per shape.

Each workgroup (16 x 16 invocations) computes 64 x 64 tiles of C; each invocation a 4 x 4 block of
it in registers. Per step of 16 along the depth, the workgroup stages a 16 x 64 slice of op(A) and
one of op(B) in workgroup memory (zero outside the matrices, so edges need no other case), then each
invocation runs 16 rank-1 updates of its block from those slices (``acc += a * b``: f32 products and
sums, each rounded: the contract allows fused or unfused multiply-adds). Tiles and batch items are
grid-stride loops over the dispatched workgroups, so any shape fits the device's workgroup-count
limit. The shapes (m, n, k, batch, the leading dimensions, strides, transposes) and alpha and beta
(as their bits) are constants of the shader: one pipeline per shape, no per-element branch on a
field (alpha and beta pass through ``launch.zero``: WGSL refuses a constant NaN or infinity). C is
written as ``alpha * acc + beta * c``; with beta == 0, C is not read (as docs/semantics.md says), and
with k == 0 every element is ``beta * c`` (0 when beta == 0), whatever alpha.

Arrays are bound as whole chunks with run-time byte offsets (the launch's ``dst``, ``src_a``, ``src_b``
fields): A or B in C's chunk buffer is read through C's binding (WebGPU forbids a writable binding
aliasing another), one in A's through A's (``binding.shared_sources``). Overlapping C with A or B
gives unspecified values (the contract). The host checked handle, bounds (the table's extents) and alignment of every array before
the dispatch. Standard library only.

The element types (``GemmSpec.inputs``): f32 words as they are; F16 halves unpacked from their u32 word with
``unpack2x16float`` (core WGSL: no shader-f16 needed; exact), BF16 halves shifted into an f32's high half
(exact); both then run the f32 arithmetic (the products of two f16 or bf16 values are exact in f32). I8 bytes
are sign-extended from their word (``extractBits``) and multiplied and summed in i32 (WGSL's i32 arithmetic
wraps, as the contract's i32 accumulation). QuantizedGEMM's output (``GemmSpec.output``): the i32 sum converted
to f32 exactly rounded (``exact_f32``: its high and low 16 bits converted exactly, one correctly rounded
addition; WGSL's own i32 to f32 conversion may round either way), times the host-rounded f32 scale
(``a_scale * b_scale``, and for I8 C ``/ c_scale``: the reference's f32 steps); I8 C then rounds half to even
(``round``), takes NaN to 0 (by its bits) and saturates, and stores its byte into its word in one atomic step
(``subword.merge_bits``: bytes of one word belong to several invocations), so the bytes around C keep their values.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from atlas_web.isa.types import Type

from ..emitter import ShaderFeatures
from ..runtime_layout import GUARD_WGSL, REACHED, TRAPS, launch_struct
from ..subword import merge_bits
from . import DeviceLimits, Dispatch, Kernel, KernelPlan, register
from .binding import ROLE_BINDINGS, shared_sources

__all__ = ["GemmSpec", "GemmKernel", "GEMM_TYPES", "tile_product"]

#: the types the kernel computes (GEMM's and BatchedGEMM's)
GEMM_TYPES = frozenset({Type.F32})
#: MixedPrecisionGEMM's and QuantizedGEMM's types (A's and B's; QuantizedGEMM: C's)
MIXED_TYPES = frozenset({Type.F16, Type.BF16})
QUANTIZED_TYPES = frozenset({Type.I8, Type.F32})
#: GemmSpec.inputs -> (the tile's scalar type, how element ``idx`` of an array starting at byte ``base`` of the
#: u32 array ``array`` is read; ``{word}`` is replaced by the word read)
INPUTS = {
    "f32": ("f32", "let at = ({base} >> 2u) + idx;\n    return bitcast<f32>({word});", "at"),
    "f16": ("f32", "let h = ({base} >> 1u) + idx;\n    return unpack2x16float({word})[h & 1u];", "h >> 1u"),
    "bf16": ("f32", "let h = ({base} >> 1u) + idx;\n    return bitcast<f32>((({word}) >> ((h & 1u) * 16u)) << 16u);",
             "h >> 1u"),
    "i8": ("i32", "let e = {base} + idx;\n    return extractBits(bitcast<i32>({word}), (e & 3u) * 8u, 8u);", "e >> 2u"),
}
#: rows and columns of C per workgroup, depth per staged slice, invocations per side
TILE, DEPTH, SIDE = 64, 16, 16


@dataclass(frozen=True)
class GemmSpec:
    """One GEMM shader (a shader spec of the kernel registry): the shape (leading dimensions and strides
    resolved: never 0), alpha and beta as f32 bits, how A and B are read (``sources``: "ro" / "rw" their
    own binding, "dst" / "a" through that role's), whether the step guard is checked (not first in a
    submission); ``bound`` is always False (whole chunks, run-time offsets)."""

    batch: int
    m: int
    n: int
    k: int
    trans_a: bool
    trans_b: bool
    lda: int
    ldb: int
    ldc: int
    stride_a: int
    stride_b: int
    stride_c: int
    alpha_bits: int
    beta_bits: int
    sources: tuple[str, str] = ("ro", "ro")
    guarded: bool = True
    bound: bool = False
    #: A's and B's element type: "f32", "f16", "bf16" or "i8" (INPUTS)
    inputs: str = "f32"
    #: how C is written: "gemm" (alpha * acc + beta * C), "q_f32" (f32(acc) * scale), "q_i8" (requantized)
    output: str = "gemm"
    #: QuantizedGEMM: the f32 bits of the scale (F32 C) or multiplier (I8 C)
    scale_bits: int = 0
    #: TensorContract: A or B gathered from a tensor in another axis order (None: a matrix with its ld): (the
    #: axes making op(X)'s row index, those making its column index), each ((size, stride in elements), ...)
    #: outermost first
    gather_a: tuple | None = None
    gather_b: tuple | None = None

    def source(self, features: ShaderFeatures) -> str:
        return gemm_source(self, features)

    def layout(self) -> dict[int, str]:
        return gemm_layout(self)


def f32_bits(value: float) -> int:
    """``value`` rounded to f32 (past its range: the infinity of its sign), as bits."""
    try:
        return struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:
        return 0x7F800000 | (0x80000000 if value < 0 else 0)


def _f32(value: float) -> float:
    """``value`` rounded to f32 (a finite value past f32's range to the infinity)."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _f32_divide(x: float, y: float) -> float:
    """x / y of two f32 values, rounded to f32 as IEEE (binary64 then f32 is correctly rounded for a quotient)."""
    if y == 0.0:
        return math.nan if x == 0.0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1.0, y)
    return _f32(x / y)


def quantized_scale(instr) -> float:
    """QuantizedGEMM's f32 factor, as the reference rounds it: f32(a_scale) * f32(b_scale), then for I8 C divided
    by f32(c_scale); each step rounded to f32."""
    scale = _f32(_f32(instr.a_scale) * _f32(instr.b_scale))
    return scale if instr.ty is Type.F32 else _f32_divide(scale, _f32(instr.c_scale))


def _kind(instr) -> tuple[str, str, int]:
    """(GemmSpec.inputs, .output, .scale_bits) of a GEMM-family instruction."""
    name = instr.INFO.name
    if name == "QuantizedGEMM":
        return "i8", "q_i8" if instr.ty is Type.I8 else "q_f32", f32_bits(quantized_scale(instr))
    if name == "MixedPrecisionGEMM":
        return instr.ty.name.lower(), "gemm", 0
    return "f32", "gemm", 0


def gemm_spec(instr, sources: tuple[str, str] = ("ro", "ro"), guarded: bool = True) -> GemmSpec:
    """The spec of a GEMM, BatchedGEMM, MixedPrecisionGEMM or QuantizedGEMM ``instr`` (packed leading
    dimensions and strides resolved; QuantizedGEMM's alpha 1 and beta 0 unused)."""
    rows_a, cols_a = (instr.k, instr.m) if instr.trans_a else (instr.m, instr.k)
    rows_b, cols_b = (instr.n, instr.k) if instr.trans_b else (instr.k, instr.n)
    lda, ldb, ldc = instr.lda or cols_a, instr.ldb or cols_b, instr.ldc or instr.n
    batch = getattr(instr, "batch", 1)
    return GemmSpec(batch, instr.m, instr.n, instr.k, bool(instr.trans_a), bool(instr.trans_b), lda, ldb, ldc,
                    getattr(instr, "stride_a", 0) or rows_a * lda, getattr(instr, "stride_b", 0) or rows_b * ldb,
                    getattr(instr, "stride_c", 0) or instr.m * ldc, f32_bits(getattr(instr, "alpha", 1.0)),
                    f32_bits(getattr(instr, "beta", 0.0)), sources, guarded, False, *_kind(instr))


def gemm_layout(spec: GemmSpec) -> dict[int, str]:
    """binding -> WebGPU binding type: 0 launch, 1 rt, 3 C, 4 A and 5 B unless read through another."""
    layout = {0: "read-only-storage", 1: "storage", 3: "storage"}
    for binding, access in zip((4, 5), spec.sources):
        if access in ("ro", "rw"):
            layout[binding] = "read-only-storage" if access == "ro" else "storage"
    return layout


def gemm_workgroups(spec: GemmSpec, max_groups: int) -> tuple[int, int, int]:
    """The dispatch: a workgroup per tile of C and per batch item, each dimension at most ``max_groups``
    (the shader's loops take the rest)."""
    return (max(1, min(max_groups, -(-spec.n // TILE))), max(1, min(max_groups, -(-spec.m // TILE))),
            max(1, min(max_groups, spec.batch)))


def _array_name(spec: GemmSpec, role: str) -> str:
    access = dict(zip("ab", spec.sources))[role]
    if access == "dst":
        return "cmat"
    if access == "a":
        return "amat"
    return {"a": "amat", "b": "bmat"}[role]


def _element(spec: GemmSpec, role: str, row: str, col: str) -> str:
    """The index (in elements, from the matrix item's start) of op(X)[row, col] for X = A or B."""
    if (spec.gather_a if role == "a" else spec.gather_b) is not None:
        return f"gather_{role}({row}, {col})"
    transposed, ld = (spec.trans_a, spec.lda) if role == "a" else (spec.trans_b, spec.ldb)
    return f"({col} * {ld}u + {row})" if transposed else f"({row} * {ld}u + {col})"


def _gather(spec: GemmSpec, role: str) -> str:
    """WGSL ``gather_<role>(row, col)``: the element index of op(X)[row, col] from its axes (empty: none)."""
    gather = spec.gather_a if role == "a" else spec.gather_b
    if gather is None:
        return ""
    lines = [f"fn gather_{role}(row: u32, col: u32) -> u32 {{", "    var at = 0u;"]
    for name, axes in zip(("row", "col"), gather):
        lines.append(f"    var {name}_left = {name};")
        for size, stride in reversed(axes):
            lines.append(f"    at = at + ({name}_left % {size}u) * {stride}u;")
            lines.append(f"    {name}_left = {name}_left / {size}u;")
    return "\n".join(lines + ["    return at;", "}", ""])


def _loader(spec: GemmSpec, role: str) -> str:
    """WGSL ``load_<role>(item, row, col)``: op(X)[row, col] of item ``item`` in the tile's type (0 outside)."""
    scalar, body, word_index = INPUTS[spec.inputs]
    rows, cols = ("M", "K") if role == "a" else ("K", "N")
    array = _array_name(spec, role)
    word = f"atomicLoad(&{array}[{word_index}])" if array == "cmat" and spec.output == "q_i8" else \
        f"{array}[{word_index}]"
    stride = spec.stride_a if role == "a" else spec.stride_b
    return _gather(spec, role) + f"""fn load_{role}(item: u32, row: u32, col: u32) -> {scalar} {{
    if (row >= {rows} || col >= {cols}) {{ return {scalar}(0); }}
    let idx = item * {stride}u + {_element(spec, role, "row", "col")};
    {body.format(base=f"launch.src_{role}", word=word)}
}}
"""


def gemm_source(spec: GemmSpec, features: ShaderFeatures) -> str:
    """The WGSL of ``spec``'s shader."""
    scalar = INPUTS[spec.inputs][0]
    c_type = "atomic<u32>" if spec.output == "q_i8" else "u32"
    lines = [features.enable_directives + launch_struct(),
             "@group(0) @binding(0) var<storage, read> launch: Launch;",
             "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;",
             f"@group(0) @binding(3) var<storage, read_write> cmat: array<{c_type}>;"]
    for binding, name in ((4, "amat"), (5, "bmat")):
        access = gemm_layout(spec).get(binding)
        if access is not None:
            mode = "read" if access == "read-only-storage" else "read_write"
            lines.append(f"@group(0) @binding({binding}) var<storage, {mode}> {name}: array<u32>;")
    guard = GUARD_WGSL if spec.guarded else "true"
    lines.append(f"""const TRAPS: u32 = {TRAPS}u;
const REACHED: u32 = {REACHED}u;
const M: u32 = {spec.m}u;
const N: u32 = {spec.n}u;
const K: u32 = {spec.k}u;
const BATCH: u32 = {spec.batch}u;
const TILES_M: u32 = {-(-spec.m // TILE)}u;
const TILES_N: u32 = {-(-spec.n // TILE)}u;
var<workgroup> a_tile: array<{scalar}, {DEPTH * TILE}>;
var<workgroup> b_tile: array<{scalar}, {DEPTH * TILE}>;
var<workgroup> go: u32;

{_loader(spec, "a")}
{_loader(spec, "b")}
{_EXACT_F32 if spec.output != "gemm" else ""}
fn store_c(item: u32, row: u32, col: u32, acc: {scalar}) {{
    if (row >= M || col >= N) {{ return; }}
    {_store(spec)}
}}

{tile_main(guard)}
    for (var item = wid.z; item < BATCH; item = item + nwg.z) {{
    for (var tm = wid.y; tm < TILES_M; tm = tm + nwg.y) {{
    for (var tn = wid.x; tn < TILES_N; tn = tn + nwg.x) {{
{tile_product("item", "item", "item", scalar)}
    }}
    }}
    }}
}}""")
    return "\n".join(lines)


#: an i32 as the nearest f32, ties to even (its halves convert exactly; one correctly rounded addition)
_EXACT_F32 = """fn exact_f32(v: i32) -> f32 {
    return f32(v >> 16u) * 65536.0 + f32(v & 0xFFFF);
}
"""


def tile_main(guard: str) -> str:
    """The start of a tiled shader's ``main`` (SIDE x SIDE invocations, ``li`` the local index): the step guard
    ``guard`` read uniformly by the workgroup, and the step marked reached by the first invocation."""
    return f"""@compute @workgroup_size({SIDE}, {SIDE})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let li = lid.y * {SIDE}u + lid.x;
    if (li == 0u) {{ go = select(0u, 1u, {guard}); }}
    if (workgroupUniformLoad(&go) == 0u) {{ return; }}
    if (li == 0u && all(wid == vec3<u32>(0u))) {{ atomicStore(&rt[REACHED + launch.step], launch.resume); }}"""


def tile_product(a_args: str, b_args: str, c_args: str, scalar: str = "f32") -> str:
    """The WGSL of one 64 x 64 tile of C = A @ B in ``scalar`` (f32; i32 for QuantizedGEMM), inside the loops
    giving ``tm`` and ``tn`` (K the depth): 16-deep slices staged by ``load_a(<a_args>, row, depth)`` and
    ``load_b(<b_args>, depth, col)`` in workgroup memory, 16 rank-1 updates of each invocation's 4 x 4 block, then
    ``store_c(<c_args>, row, col, acc)`` (shared by the GEMM and Conv2D kernels, whose loads and stores differ)."""
    return f"""        let row0 = tm * {TILE}u;
        let col0 = tn * {TILE}u;
        var acc: array<vec4<{scalar}>, 4>;
        for (var l0 = 0u; l0 < K; l0 = l0 + {DEPTH}u) {{
            for (var t = 0u; t < {DEPTH * TILE // (SIDE * SIDE)}u; t = t + 1u) {{
                let e = li + t * {SIDE * SIDE}u;
                let depth = e / {TILE}u;
                let along = e % {TILE}u;
                a_tile[e] = load_a({a_args}, row0 + along, l0 + depth);
                b_tile[e] = load_b({b_args}, l0 + depth, col0 + along);
            }}
            workgroupBarrier();
            for (var l = 0u; l < {DEPTH}u; l = l + 1u) {{
                let a = vec4<{scalar}>(a_tile[l * {TILE}u + lid.y * 4u], a_tile[l * {TILE}u + lid.y * 4u + 1u],
                                  a_tile[l * {TILE}u + lid.y * 4u + 2u], a_tile[l * {TILE}u + lid.y * 4u + 3u]);
                let bv = vec4<{scalar}>(b_tile[l * {TILE}u + lid.x * 4u], b_tile[l * {TILE}u + lid.x * 4u + 1u],
                                   b_tile[l * {TILE}u + lid.x * 4u + 2u], b_tile[l * {TILE}u + lid.x * 4u + 3u]);
                acc[0] = acc[0] + a.x * bv;
                acc[1] = acc[1] + a.y * bv;
                acc[2] = acc[2] + a.z * bv;
                acc[3] = acc[3] + a.w * bv;
            }}
            workgroupBarrier();
        }}
        for (var r = 0u; r < 4u; r = r + 1u) {{
            for (var c = 0u; c < 4u; c = c + 1u) {{
                store_c({c_args}, row0 + lid.y * 4u + r, col0 + lid.x * 4u + c, acc[r][c]);
            }}
        }}"""


def _store(spec: GemmSpec) -> str:
    """The statements writing C's element (row, col) of ``item`` from ``acc``."""
    scale = f"bitcast<f32>(launch.zero ^ {spec.scale_bits}u)"
    if spec.output == "q_f32":
        return (f"let at = (launch.dst >> 2u) + item * {spec.stride_c}u + row * {spec.ldc}u + col;\n"
                f"    cmat[at] = bitcast<u32>(exact_f32(acc) * {scale});")
    if spec.output == "q_i8":
        return f"""let at = launch.dst + item * {spec.stride_c}u + row * {spec.ldc}u + col;
    let x = round(exact_f32(acc) * {scale});
    var q = 0;
    if ((bitcast<u32>(x) & 0x7FFFFFFFu) <= 0x7F800000u) {{ q = i32(clamp(x, -128.0, 127.0)); }}
    let shift = (at & 3u) * 8u;
    {merge_bits("cmat[at >> 2u]", "0xFFu << shift", "(bitcast<u32>(q) & 0xFFu) << shift")}"""
    # through launch.zero: a constant NaN or infinity would be a shader-creation error in WGSL
    alpha = f"bitcast<f32>(launch.zero ^ {spec.alpha_bits}u)"
    beta = f"bitcast<f32>(launch.zero ^ {spec.beta_bits}u)"
    reads_c = spec.beta_bits & 0x7FFFFFFF != 0
    if spec.k == 0:
        value = f"{beta} * bitcast<f32>(cmat[at])" if reads_c else "0.0"
    else:
        value = f"{alpha} * acc + {beta} * bitcast<f32>(cmat[at])" if reads_c else f"{alpha} * acc"
    return (f"let at = (launch.dst >> 2u) + item * {spec.stride_c}u + row * {spec.ldc}u + col;\n"
            f"    cmat[at] = bitcast<u32>({value});")


class GemmKernel(Kernel):
    """GEMM's kernel (BatchedGEMM's is the same with its batch and strides)."""

    instruction = "GEMM"
    launch_fields = ("dst", "src_a", "src_b")

    def supports(self, operation, ty) -> bool:
        return ty in GEMM_TYPES

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        spec = gemm_spec(instr, shared_sources(operands))
        fields = {role: operands[role][1] for role in ("dst", "src_a", "src_b")}
        return KernelPlan((Dispatch(spec, ROLE_BINDINGS, gemm_workgroups(spec, device.max_groups)),), fields)

    def listing(self, instr):
        return [("gemm", gemm_spec(instr))]


class BatchedGemmKernel(GemmKernel):
    instruction = "BatchedGEMM"


class MixedPrecisionGemmKernel(GemmKernel):
    """F16 or BF16 A and B, f32 arithmetic and C."""

    instruction = "MixedPrecisionGEMM"

    def supports(self, operation, ty) -> bool:
        return ty in MIXED_TYPES


class QuantizedGemmKernel(GemmKernel):
    """I8 A and B summed in i32; I8 (requantized) or F32 C."""

    instruction = "QuantizedGEMM"

    def supports(self, operation, ty) -> bool:
        return ty in QUANTIZED_TYPES


for _kernel in (GemmKernel, BatchedGemmKernel, MixedPrecisionGemmKernel, QuantizedGemmKernel):
    register(_kernel())
