"""SparseGEMM's kernel (F32): C = alpha * A @ B + beta * C with A in CSR, checked on the device.

The extent of ``a_values`` and ``a_indices`` is ``a_ptr[m]``, known only at launch, so the host checks those two
arrays' handles and alignment (after the other arrays, as the reference orders it: ``host_steps``) and the
first dispatch, one workgroup of 256, checks the rest before anything is written, in the reference's order,
trapping with lane -1 (``Kernel.traps_on_device``: ``KERNEL_TRAP`` and lane 0's record):

1. ``a_ptr[m]`` values of 4 bytes past ``a_values``' allocation, then past ``a_indices``': OUT_OF_BOUNDS (operand,
   handle, byte offset, the bytes asked, the allocation's bytes), as the host's check of a known extent;
2. the first ``i`` with ``a_ptr[i] < a_ptr[i-1]``: INVALID_SPARSE (operand a_ptr, value a_ptr[i], extent i, limit
   a_ptr[i-1]), the invocations taking every 256th ``i`` and the first found by a workgroup ``atomicMin``;
3. the first entry ``a_ptr[0] <= e < a_ptr[m]`` with ``a_indices[e] >= k``: INVALID_SPARSE (operand a_indices,
   value, extent e, limit k).

The second dispatch runs only where the first did not trap: one invocation per element of C (64 columns per
workgroup, rows over the workgroups' y, grid-stride), summing the row's entries in order in f32 (each product
and sum rounded: within the contract's bound with r, the row's entry count, in place of k); an empty row gives
``beta * C`` (0 when beta is 0; C is not read then). Arrays are bound as whole chunks with run-time byte offsets;
a source in C's chunk is read through C's binding. One workgroup checks all of ``a_indices``: an invocation
loops ``nnz / 256`` times (llvmpipe ends loops past 65535 iterations: up to ~16M entries). Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.errors import TrapCode
from atlas_web.isa.types import Type
from atlas_web.trap_report import operand_position

from ..emitter import ShaderFeatures
from ..runtime_layout import GUARD_WGSL, KERNEL_TRAP, NO_TRAP, REACHED, TRAPS, launch_struct
from . import DeviceLimits, Dispatch, Kernel, KernelPlan, register
from .gemm import f32_bits

__all__ = ["SparseSpec", "SparseGemmKernel"]

#: the array operands' roles, in operand order (host_steps.binding_roles), and their bindings
_ROLES = ("dst", "src_a", "src_b", "src_c", "src_d")
_BINDINGS = {3: "dst", 4: "src_a", 5: "src_b", 6: "src_c", 7: "src_d"}
#: role -> the shader's array name
_NAMES = {"dst": "cmat", "src_a": "vals", "src_b": "idxs", "src_c": "ptrs", "src_d": "bmat"}
COLUMNS = 64
CHECKERS = 256


@dataclass(frozen=True)
class SparseSpec:
    """One of SparseGEMM's two shaders (``kind`` "check" or "compute") for one shape: sizes, leading dimensions
    (resolved), alpha and beta as f32 bits, its operands' trap-record numbers, how
    each source is read (``sources``: "ro" its own binding, "dst" through C's); ``bound`` always False."""

    kind: str
    m: int
    n: int
    k: int
    ldb: int
    ldc: int
    alpha_bits: int
    beta_bits: int
    operands: tuple[int, int, int]
    sources: tuple[str, str, str, str]
    guarded: bool = True
    bound: bool = False

    def source(self, features: ShaderFeatures) -> str:
        return _CHECK(self) if self.kind == "check" else _COMPUTE(self)

    def layout(self) -> dict[int, str]:
        out = {0: "read-only-storage", 1: "storage", 3: "storage"}
        for binding, access in zip((4, 5, 6, 7), self.sources):
            if access == "ro":
                out[binding] = "read-only-storage"
        return out


def _declarations(spec: SparseSpec) -> str:
    lines = [launch_struct(), "@group(0) @binding(0) var<storage, read> launch: Launch;",
             "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;",
             "@group(0) @binding(3) var<storage, read_write> cmat: array<u32>;"]
    for binding, access in zip((4, 5, 6, 7), spec.sources):
        if access == "ro":
            lines.append(f"@group(0) @binding({binding}) var<storage, read> {_NAMES[_BINDINGS[binding]]}: array<u32>;")
    arrays = {role: ("cmat" if access == "dst" else _NAMES[role]) for role, access in zip(_ROLES[1:], spec.sources)}
    lines.append(f"""const TRAPS: u32 = {TRAPS}u;
const REACHED: u32 = {REACHED}u;
const M: u32 = {spec.m}u;
const N: u32 = {spec.n}u;
const K: u32 = {spec.k}u;
fn val_at(e: u32) -> f32 {{ return bitcast<f32>({arrays["src_a"]}[(launch.src_a >> 2u) + e]); }}
fn idx_at(e: u32) -> u32 {{ return {arrays["src_b"]}[(launch.src_b >> 2u) + e]; }}
fn ptr_at(i: u32) -> u32 {{ return {arrays["src_c"]}[(launch.src_c >> 2u) + i]; }}
fn b_at(e: u32) -> f32 {{ return bitcast<f32>({arrays["src_d"]}[(launch.src_d >> 2u) + e]); }}
var<workgroup> go: u32;""")
    return "\n".join(lines)


def _CHECK(spec: SparseSpec) -> str:
    values, indices, pointers = spec.operands
    guard = GUARD_WGSL if spec.guarded else "true"
    return _declarations(spec) + f"""
var<workgroup> first: atomic<u32>;
var<workgroup> found: u32;

fn trap(code: u32, operand: u32, handle: u32, value: u32, extent: u32, limit: u32) {{
    let r = launch.trap_info;
    atomicStore(&rt[r], (launch.trap_index << 4u) | code);
    atomicStore(&rt[r + 1u], operand);
    atomicStore(&rt[r + 2u], handle);
    atomicStore(&rt[r + 3u], value);
    atomicStore(&rt[r + 4u], 0u);
    atomicStore(&rt[r + 5u], extent);
    atomicStore(&rt[r + 6u], limit);
    atomicMin(&rt[TRAPS + launch.step], {KERNEL_TRAP}u);
}}

fn outside(count: u32, offset: u32, size: u32) -> bool {{
    return offset > size || count > (size - offset) / 4u;
}}

// the first i (every CHECKERS-th from li) where bad_pointer, or 0xFFFFFFFF; uniform
fn first_of(found_here: u32, li: u32) -> u32 {{
    if (li == 0u) {{ atomicStore(&first, 0xFFFFFFFFu); }}
    workgroupBarrier();
    atomicMin(&first, found_here);
    workgroupBarrier();
    if (li == 0u) {{ found = atomicLoad(&first); }}
    return workgroupUniformLoad(&found);
}}

@compute @workgroup_size({CHECKERS})
fn main(@builtin(local_invocation_index) li: u32) {{
    if (li == 0u) {{ go = select(0u, 1u, {guard}); }}
    if (workgroupUniformLoad(&go) == 0u) {{ return; }}
    let count = ptr_at(M);
    var here = 0xFFFFFFFFu;
    if (li == 0u) {{
        if (outside(count, launch.values_offset, launch.values_size)) {{ here = 0u; }}
        else if (outside(count, launch.indices_offset, launch.indices_size)) {{ here = 1u; }}
    }}
    let bounds = first_of(here, li);
    if (bounds != 0xFFFFFFFFu) {{
        if (li == 0u) {{
            if (bounds == 0u) {{
                trap({int(TrapCode.OUT_OF_BOUNDS)}u, {values}u, launch.values_handle, launch.values_offset, count * 4u,
                     launch.values_size);
            }} else {{
                trap({int(TrapCode.OUT_OF_BOUNDS)}u, {indices}u, launch.indices_handle, launch.indices_offset, count * 4u,
                     launch.indices_size);
            }}
        }}
        return;
    }}
    here = 0xFFFFFFFFu;
    for (var i = 1u + li; i <= M; i = i + {CHECKERS}u) {{
        if (ptr_at(i) < ptr_at(i - 1u)) {{ here = i; break; }}
    }}
    let drop = first_of(here, li);
    if (drop != 0xFFFFFFFFu) {{
        if (li == 0u) {{
            trap({int(TrapCode.INVALID_SPARSE)}u, {pointers}u, 0u, ptr_at(drop), drop, ptr_at(drop - 1u));
        }}
        return;
    }}
    here = 0xFFFFFFFFu;
    for (var e = ptr_at(0u) + li; e < count; e = e + {CHECKERS}u) {{
        if (idx_at(e) >= K) {{ here = e; break; }}
    }}
    let column = first_of(here, li);
    if (column != 0xFFFFFFFFu && li == 0u) {{
        trap({int(TrapCode.INVALID_SPARSE)}u, {indices}u, 0u, idx_at(column), column, K);
    }}
}}"""


def _COMPUTE(spec: SparseSpec) -> str:
    guard = GUARD_WGSL if spec.guarded else "true"
    alpha = f"bitcast<f32>(launch.zero ^ {spec.alpha_bits}u)"
    beta = f"bitcast<f32>(launch.zero ^ {spec.beta_bits}u)"
    reads_c = spec.beta_bits & 0x7FFFFFFF != 0
    c_term = f" + {beta} * bitcast<f32>(cmat[at])" if reads_c else ""
    empty = f"{beta} * bitcast<f32>(cmat[at])" if reads_c else "0.0"
    return _declarations(spec) + f"""
@compute @workgroup_size({COLUMNS})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    if (li == 0u) {{ go = select(0u, 1u, ({guard}) && atomicLoad(&rt[TRAPS + launch.step]) == {NO_TRAP}u); }}
    if (workgroupUniformLoad(&go) == 0u) {{ return; }}
    if (li == 0u && all(wid == vec3<u32>(0u))) {{ atomicStore(&rt[REACHED + launch.step], launch.resume); }}
    for (var row = wid.y; row < M; row = row + nwg.y) {{
        let e0 = ptr_at(row);
        let e1 = ptr_at(row + 1u);
        for (var col = wid.x * {COLUMNS}u + li; col < N; col = col + nwg.x * {COLUMNS}u) {{
            var acc = 0.0;
            for (var e = e0; e < e1; e = e + 1u) {{
                acc = acc + val_at(e) * b_at(idx_at(e) * {spec.ldb}u + col);
            }}
            let at = (launch.dst >> 2u) + row * {spec.ldc}u + col;
            var value = {empty};
            if (e1 > e0) {{ value = {alpha} * acc{c_term}; }}
            cmat[at] = bitcast<u32>(value);
        }}
    }}
}}"""


def sparse_specs(instr, sources: tuple[str, str, str, str]) -> tuple[SparseSpec, SparseSpec]:
    """The check and compute shaders of SparseGEMM ``instr``."""
    operands = tuple(operand_position(instr, name) for name in ("a_values", "a_indices", "a_ptr"))
    common = dict(m=instr.m, n=instr.n, k=instr.k, ldb=instr.ldb or instr.n, ldc=instr.ldc or instr.n,
                  alpha_bits=f32_bits(instr.alpha), beta_bits=f32_bits(instr.beta),
                  operands=operands, sources=sources)
    return SparseSpec("check", **common), SparseSpec("compute", **common)


class SparseGemmKernel(Kernel):
    """SparseGEMM (F32): the CSR checked on the device, then one invocation per element of C."""

    instruction = "SparseGEMM"
    launch_fields = ("dst", "src_a", "src_b", "src_c", "src_d", "values_handle", "values_offset", "values_size",
                     "indices_handle", "indices_offset", "indices_size", "trap_info", "trap_index")
    traps_on_device = True

    def supports(self, operation, ty) -> bool:
        return ty is Type.F32

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        dst = operands["dst"][0]
        sources = tuple("dst" if operands[role][0] is dst else "ro" for role in _ROLES[1:])
        check, compute = sparse_specs(instr, sources)
        fields = {role: operands[role][1] for role in _ROLES}
        for prefix, role in (("values", "src_a"), ("indices", "src_b")):
            handle, offset, size = operands[f"{role}:alloc"]
            fields.update({f"{prefix}_handle": handle, f"{prefix}_offset": offset, f"{prefix}_size": size})
        groups = (max(1, min(device.max_groups, -(-instr.n // COLUMNS))), max(1, min(device.max_groups, instr.m)), 1)
        return KernelPlan((Dispatch(check, _BINDINGS, (1, 1, 1)), Dispatch(compute, _BINDINGS, groups)), fields)

    def listing(self, instr):
        check, compute = sparse_specs(instr, ("ro",) * 4)
        return [("spgemm check", check), ("spgemm", compute)]


register(SparseGemmKernel())
