"""The kernels of GEMM and BatchedGEMM (F32): one tiled shader per shape.

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
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from atlas_web.isa.types import Type

from ..emitter import ShaderFeatures
from ..runtime_layout import GUARD_WGSL, REACHED, TRAPS, launch_struct
from . import DeviceLimits, Dispatch, Kernel, KernelPlan, register
from .binding import ROLE_BINDINGS, shared_sources

__all__ = ["GemmSpec", "GemmKernel", "GEMM_TYPES"]

#: the types the kernel computes
GEMM_TYPES = frozenset({Type.F32})
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

    def source(self, features: ShaderFeatures) -> str:
        return gemm_source(self, features)

    def layout(self) -> dict[int, str]:
        return gemm_layout(self)


def _f32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def gemm_spec(instr, sources: tuple[str, str] = ("ro", "ro"), guarded: bool = True) -> GemmSpec:
    """The spec of GEMM or BatchedGEMM ``instr`` (packed leading dimensions and strides resolved)."""
    rows_a, cols_a = (instr.k, instr.m) if instr.trans_a else (instr.m, instr.k)
    rows_b, cols_b = (instr.n, instr.k) if instr.trans_b else (instr.k, instr.n)
    lda, ldb, ldc = instr.lda or cols_a, instr.ldb or cols_b, instr.ldc or instr.n
    batch = getattr(instr, "batch", 1)
    return GemmSpec(batch, instr.m, instr.n, instr.k, bool(instr.trans_a), bool(instr.trans_b), lda, ldb, ldc,
                    getattr(instr, "stride_a", 0) or rows_a * lda, getattr(instr, "stride_b", 0) or rows_b * ldb,
                    getattr(instr, "stride_c", 0) or instr.m * ldc, _f32_bits(instr.alpha), _f32_bits(instr.beta),
                    sources, guarded)


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
    transposed, ld = (spec.trans_a, spec.lda) if role == "a" else (spec.trans_b, spec.ldb)
    return f"({col} * {ld}u + {row})" if transposed else f"({row} * {ld}u + {col})"


def gemm_source(spec: GemmSpec, features: ShaderFeatures) -> str:
    """The WGSL of ``spec``'s shader."""
    lines = [features.enable_directives + launch_struct(),
             "@group(0) @binding(0) var<storage, read> launch: Launch;",
             "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;",
             "@group(0) @binding(3) var<storage, read_write> cmat: array<u32>;"]
    for binding, name in ((4, "amat"), (5, "bmat")):
        access = gemm_layout(spec).get(binding)
        if access is not None:
            mode = "read" if access == "read-only-storage" else "read_write"
            lines.append(f"@group(0) @binding({binding}) var<storage, {mode}> {name}: array<u32>;")
    guard = GUARD_WGSL if spec.guarded else "true"
    a_array, b_array = _array_name(spec, "a"), _array_name(spec, "b")
    lines.append(f"""const TRAPS: u32 = {TRAPS}u;
const REACHED: u32 = {REACHED}u;
const M: u32 = {spec.m}u;
const N: u32 = {spec.n}u;
const K: u32 = {spec.k}u;
const BATCH: u32 = {spec.batch}u;
const TILES_M: u32 = {-(-spec.m // TILE)}u;
const TILES_N: u32 = {-(-spec.n // TILE)}u;
var<workgroup> a_tile: array<f32, {DEPTH * TILE}>;
var<workgroup> b_tile: array<f32, {DEPTH * TILE}>;
var<workgroup> go: u32;

fn load_a(item: u32, row: u32, col: u32) -> f32 {{
    if (row >= M || col >= K) {{ return 0.0; }}
    let at = (launch.src_a >> 2u) + item * {spec.stride_a}u + {_element(spec, "a", "row", "col")};
    return bitcast<f32>({a_array}[at]);
}}

fn load_b(item: u32, row: u32, col: u32) -> f32 {{
    if (row >= K || col >= N) {{ return 0.0; }}
    let at = (launch.src_b >> 2u) + item * {spec.stride_b}u + {_element(spec, "b", "row", "col")};
    return bitcast<f32>({b_array}[at]);
}}

fn store_c(item: u32, row: u32, col: u32, acc: f32) {{
    if (row >= M || col >= N) {{ return; }}
    let at = (launch.dst >> 2u) + item * {spec.stride_c}u + row * {spec.ldc}u + col;
    {_store(spec)}
}}

@compute @workgroup_size({SIDE}, {SIDE})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let li = lid.y * {SIDE}u + lid.x;
    if (li == 0u) {{ go = select(0u, 1u, {guard}); }}
    if (workgroupUniformLoad(&go) == 0u) {{ return; }}
    if (li == 0u && all(wid == vec3<u32>(0u))) {{ atomicStore(&rt[REACHED + launch.step], launch.resume); }}
    for (var item = wid.z; item < BATCH; item = item + nwg.z) {{
    for (var tm = wid.y; tm < TILES_M; tm = tm + nwg.y) {{
    for (var tn = wid.x; tn < TILES_N; tn = tn + nwg.x) {{
        let row0 = tm * {TILE}u;
        let col0 = tn * {TILE}u;
        var acc: array<vec4<f32>, 4>;
        for (var l0 = 0u; l0 < K; l0 = l0 + {DEPTH}u) {{
            for (var t = 0u; t < {DEPTH * TILE // (SIDE * SIDE)}u; t = t + 1u) {{
                let e = li + t * {SIDE * SIDE}u;
                let depth = e / {TILE}u;
                let along = e % {TILE}u;
                a_tile[e] = load_a(item, row0 + along, l0 + depth);
                b_tile[e] = load_b(item, l0 + depth, col0 + along);
            }}
            workgroupBarrier();
            for (var l = 0u; l < {DEPTH}u; l = l + 1u) {{
                let a = vec4<f32>(a_tile[l * {TILE}u + lid.y * 4u], a_tile[l * {TILE}u + lid.y * 4u + 1u],
                                  a_tile[l * {TILE}u + lid.y * 4u + 2u], a_tile[l * {TILE}u + lid.y * 4u + 3u]);
                let b = vec4<f32>(b_tile[l * {TILE}u + lid.x * 4u], b_tile[l * {TILE}u + lid.x * 4u + 1u],
                                  b_tile[l * {TILE}u + lid.x * 4u + 2u], b_tile[l * {TILE}u + lid.x * 4u + 3u]);
                acc[0] = acc[0] + a.x * b;
                acc[1] = acc[1] + a.y * b;
                acc[2] = acc[2] + a.z * b;
                acc[3] = acc[3] + a.w * b;
            }}
            workgroupBarrier();
        }}
        for (var r = 0u; r < 4u; r = r + 1u) {{
            for (var c = 0u; c < 4u; c = c + 1u) {{
                store_c(item, row0 + lid.y * 4u + r, col0 + lid.x * 4u + c, acc[r][c]);
            }}
        }}
    }}
    }}
    }}
}}""")
    return "\n".join(lines)


def _store(spec: GemmSpec) -> str:
    """The statement writing C[at] from ``acc``: alpha * acc + beta * C (C not read when beta == 0; beta * C
    whatever alpha when k == 0)."""
    # through launch.zero: a constant NaN or infinity would be a shader-creation error in WGSL
    alpha = f"bitcast<f32>(launch.zero ^ {spec.alpha_bits}u)"
    beta = f"bitcast<f32>(launch.zero ^ {spec.beta_bits}u)"
    reads_c = spec.beta_bits & 0x7FFFFFFF != 0
    if spec.k == 0:
        value = f"{beta} * bitcast<f32>(cmat[at])" if reads_c else "0.0"
    else:
        value = f"{alpha} * acc + {beta} * bitcast<f32>(cmat[at])" if reads_c else f"{alpha} * acc"
    return f"cmat[at] = bitcast<u32>({value});"


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


register(GemmKernel())
register(BatchedGemmKernel())
