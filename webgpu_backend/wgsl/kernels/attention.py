"""The kernels of the attention rows (docs/semantics.md, Attention kernels): RoPE, KVCacheUpdate, Attention and
FlashAttention. Standard library only.

* **RoPE** (F32; F16 and BF16 read into f32, each output rounded once and stored into its half of a word in
  one atomic step, as Conv2D's): one invocation per pair, a grid-stride loop: ``theta = f32(position + s) *
  freqs[p]`` (one rounding: the contract's ``u * |theta|``), the library's ``cos_f32``/``sin_f32``
  (range-reduced), then ``x1*c - x2*s``, ``x1*s + x2*c``; each invocation reads its pair before writing it, so
  the output may be the input.
* **KVCacheUpdate** (every scalar type): a host step: a position past the cache (``position >= max_seq``)
  traps OUT_OF_BOUNDS naming position (lane -1) before the arrays are checked; else one buffer copy per row
  (bits as they are), or the rows read and written through whole words (1- and 2-byte types, one buffer).
* **Attention and FlashAttention** (F32; F16 and BF16 as RoPE's): one workgroup of ``tile`` invocations per
  query row (a grid-stride loop over ``batch * heads * seq_len`` rows), an online softmax over tiles of ``tile``
  keys: Attention's TILE (64), FlashAttention's block_size (at most MAX_TILE, 256: WebGPU's default limit of
  invocations per workgroup), so FlashAttention's workgroup memory is ``12 * tile + 8 * head_dim + 4`` bytes, set by
  block_size and head_dim alone: each invocation scores one key of the tile (the query row
  is in workgroup memory), the tile's maximum over its finite scores (ordered as ``float_key``: WGSL lets a
  device assume no NaN or infinity), a NaN or +inf score flags the row (all NaN, as IEEE arithmetic of the
  max-subtracted formula gives), ``alpha = exp(m - m')`` rescales the running sum and the output row, the
  weights ``exp(s - m')`` (0 for -inf and hidden keys) are summed in key order by one invocation (as the
  tile's maximum: one barrier each, not a halving tree's six) and applied to the tile's values,
  each invocation owning output elements ``li, li + tile, ...``; at the end ``o / l``. A causal row walks only the
  keys it sees (hidden values are never read).

The arrays are bound as whole chunk buffers with run-time byte offsets (launch fields ``dst``, ``src_a`` ...):
one binding per distinct buffer (the output's read-write, slot 0), as the normalization kernels bind them. The
host checked handle, bounds (the table's extents) and alignment of every array before the dispatch.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from atlas_web.errors import TrapCode
from atlas_web.isa.extents import array_operands
from atlas_web.isa.opcodes import SCALARS
from atlas_web.isa.types import Type
from atlas_web.trap_report import TrapRecord, operand_position

from ...host_steps import kernel_operands, step_trap
from ..emitter import ShaderFeatures
from ..library import HelperSet
from ..rules import unsupported
from ..runtime_layout import GUARD_WGSL, REACHED, TRAPS, launch_struct
from . import DeviceLimits, Dispatch, Kernel, KernelPlan, register
from .conv2d import KINDS, element_reader, element_writer
from .norm import binding_slots

__all__ = ["AttentionSpec", "RopeSpec", "ATTENTION_TYPES", "KV_CACHE_TYPES", "TILE", "MAX_TILE", "MAX_HEAD_DIM"]

ATTENTION_TYPES = frozenset({Type.F16, Type.BF16, Type.F32})
#: KVCacheUpdate's types: every scalar type (a copy; F64 is refused by the backend for every instruction)
KV_CACHE_TYPES = SCALARS
#: invocations per workgroup, and keys per tile of the attention kernel
TILE = 64
#: the most keys a FlashAttention tile holds (block_size beyond it: tiles of MAX_TILE keys; WebGPU's default
#: limit of invocations per workgroup)
MAX_TILE = 256
#: RoPE's pairs per invocation (its grid-stride loop): a quarter of the workgroups; in one Chromium page
#: (SwiftShader) 1 x 256 x 8 x 64 ran 1.12-1.18x TF.js webgpu's composition, against 0.77-0.88x with one pair each
#: (benchmarks/peers/nn_webgpu.py; SwiftShader pays per workgroup)
ROPE_PAIRS = 4
#: the longest output row the attention kernel keeps in workgroup memory
MAX_HEAD_DIM = 1024
_ROLES = ("dst", "src_a", "src_b", "src_c")


@dataclass(frozen=True)
class _Spec:
    """What every spec of this module has: the binding slot of each role (one per distinct buffer, the output's
    0), the step guard, whole-chunk bindings."""

    slots: tuple[int, ...]
    guarded: bool = True
    bound: bool = False
    #: the element type: "f32", or "f16" / "bf16" (read into f32, computed in f32, each output rounded once)
    kind: str = "f32"

    def layout(self) -> dict[int, str]:
        layout = {0: "read-only-storage", 1: "storage", 3: "storage"}
        for slot in set(self.slots) - {0}:
            layout[3 + slot] = "read-only-storage"
        return layout

    def header(self, features: ShaderFeatures, helpers: HelperSet | None = None) -> str:
        """Launch, rt, the array bindings, ``ld<k>(i) -> f32`` (element i of role k) and ``st(i, v)`` (output
        element i := v, rounded once to f16/bf16 and stored into its half of a word in one atomic step
        (subword.merge_bits): the other half may be another invocation's), helpers, constants."""
        halves = self.kind != "f32"
        lines = [features.enable_directives + launch_struct(),
                 "@group(0) @binding(0) var<storage, read> launch: Launch;",
                 "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;"]
        for slot in sorted(set(self.slots)):
            mode = "read_write" if slot == 0 else "read"
            element = "atomic<u32>" if slot == 0 and halves else "u32"
            lines.append(f"@group(0) @binding({3 + slot}) var<storage, {mode}> buf{slot}: array<{element}>;")
        for k, slot in enumerate(self.slots):
            lines.append(element_reader(self.kind, f"ld{k}", f"launch.{_ROLES[k]}", f"buf{slot}", slot == 0 and halves))
        lines.append(element_writer(self.kind, "st", "buf0"))
        if helpers is not None:
            lines.append(helpers.render())
        lines.append(f"const TRAPS: u32 = {TRAPS}u;\nconst REACHED: u32 = {REACHED}u;\nvar<workgroup> go: u32;")
        return "\n".join(lines)

    def prologue(self, barriers: bool = True) -> str:
        """The start of ``main``: the guard, the reached mark. ``barriers``: whether the body has workgroup
        barriers, which need the guard's outcome uniform (one invocation evaluates it, a uniform load shares it);
        without them each invocation evaluates the guard itself and no barrier is spent (SwiftShader and
        llvmpipe switch through every invocation of the workgroup at a barrier: RoPE's one barrier per
        workgroup of 64 pairs was most of its time)."""
        guard = GUARD_WGSL if self.guarded else "true"
        if not barriers:
            return f"""    if (!({guard})) {{ return; }}
    if (lid == 0u && all(wid == vec3<u32>(0u))) {{ atomicStore(&rt[REACHED + launch.step], launch.resume); }}"""
        return f"""    if (lid == 0u) {{ go = select(0u, 1u, {guard}); }}
    if (workgroupUniformLoad(&go) == 0u) {{ return; }}
    if (lid == 0u && all(wid == vec3<u32>(0u))) {{ atomicStore(&rt[REACHED + launch.step], launch.resume); }}"""


def _main(workgroup: int = TILE) -> str:
    """The entry point's header with ``workgroup`` invocations."""
    return f"""@compute @workgroup_size({workgroup})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {{"""


_MAIN = _main()


@dataclass(frozen=True)
class RopeSpec(_Spec):
    rows: int = 0
    seq_len: int = 0
    heads: int = 0
    half: int = 0
    position: int = 0
    interleaved: bool = False

    def source(self, features: ShaderFeatures) -> str:
        helpers = HelperSet()
        helpers.require("sin_cos_f32")
        first, second = ("2u * p", "2u * p + 1u") if self.interleaved else ("p", "p + HALF")
        return self.header(features, helpers) + f"""
const PAIRS: u32 = {self.rows * self.half}u;
const HALF: u32 = {self.half}u;
{_MAIN}
{self.prologue(barriers=False)}
    let stride = nwg.x * {TILE}u;
    for (var t = wid.x * {TILE}u + lid; t < PAIRS; t = t + stride) {{
        let row = t / HALF;
        let p = t % HALF;
        let token = (row / {self.heads}u) % {self.seq_len}u;
        let theta = f32({self.position}u + token) * ld2(p);
        let sc = sin_cos_f32(theta);   // sin_f32 and cos_f32's bits, one range reduction
        let c = sc.y;
        let s = sc.x;
        let base = row * 2u * HALF;
        let x1 = ld1(base + {first});
        let x2 = ld1(base + {second});
        st(base + {first}, x1 * c - x2 * s);
        st(base + {second}, x1 * s + x2 * c);
    }}
}}"""


@dataclass(frozen=True)
class AttentionSpec(_Spec):
    rows: int = 0        # batch * heads * seq_len query rows
    heads: int = 0
    seq_len: int = 0
    dim: int = 0
    kv_heads: int = 0
    kv_len: int = 0
    max_seq: int = 0
    causal: bool = False
    #: keys per tile (invocations per workgroup): TILE for Attention, FlashAttention's block_size up to MAX_TILE
    tile: int = TILE

    def source(self, features: ShaderFeatures) -> str:
        if self.dim > MAX_HEAD_DIM:
            raise unsupported("Attention", Type.F32, f"head_dim {self.dim} is more than the {MAX_HEAD_DIM} this "
                              "kernel keeps in workgroup memory")
        helpers = HelperSet()
        for name in ("float_key", "exp_f32"):
            helpers.require(name)
        scale = struct.unpack("<I", struct.pack("<f", 1.0 / math.sqrt(self.dim)))[0]
        group = self.heads // self.kv_heads
        seen = f"min({self.kv_len}u, i + {self.kv_len - self.seq_len + 1}u)" if self.causal else f"{self.kv_len}u"
        return self.header(features, helpers) + f"""
const D: u32 = {self.dim}u;
var<workgroup> qrow: array<f32, {self.dim}>;
var<workgroup> orow: array<f32, {self.dim}>;
var<workgroup> keys: array<i32, {self.tile}>;
var<workgroup> flags: array<u32, {self.tile}>;
var<workgroup> tile_sum: f32;
var<workgroup> weights: array<f32, {self.tile}>;

fn key_value(k: i32) -> f32 {{ return bitcast<f32>(select(u32(k), u32(-k) | 0x80000000u, k < 0)); }}

{_main(self.tile)}
{self.prologue()}
    let scale = bitcast<f32>(launch.zero ^ {scale}u);
    for (var row = wid.x; row < {self.rows}u; row = row + nwg.x) {{
        let i = row % {self.seq_len}u;
        let bh = row / {self.seq_len}u;
        let kv = ((bh / {self.heads}u) * {self.kv_heads}u + (bh % {self.heads}u) / {group}u) * {self.max_seq}u * D;
        let seen = {seen};
        for (var d = lid; d < D; d = d + {self.tile}u) {{ qrow[d] = ld1(row * D + d); orow[d] = 0.0; }}
        workgroupBarrier();
        var m = 0.0;          // the running maximum of the finite scores (when any)
        var l = 0.0;
        var any_finite = false;
        var bad = false;      // a NaN or +inf score
        for (var j0 = 0u; j0 < seen; j0 = j0 + {self.tile}u) {{
            let j = j0 + lid;
            var s = 0.0;
            var bits = 0xff800000u;   // -inf: a hidden key
            if (j < seen) {{
                for (var d = 0u; d < D; d = d + 1u) {{ s = s + qrow[d] * ld2(kv + j * D + d); }}
                s = s * scale;
                bits = bitcast<u32>(s);
            }}
            var flag = 0u;
            var key = float_key(-3.4028234663852886e38);
            if ((bits & 0x7fffffffu) > 0x7f800000u || bits == 0x7f800000u) {{
                flag = 1u;
            }} else if (bits != 0xff800000u) {{
                flag = 2u;
                key = float_key(s);
            }}
            keys[lid] = key;
            flags[lid] = flag;
            workgroupBarrier();
            // the tile's maximum and flags folded by one invocation (one barrier, not a halving tree's six:
            // SwiftShader and llvmpipe switch through every invocation at each barrier)
            if (lid == 0u) {{
                var k = keys[0];
                var f = flags[0];
                for (var t = 1u; t < {self.tile}u; t = t + 1u) {{ k = max(k, keys[t]); f = f | flags[t]; }}
                keys[0] = k;
                flags[0] = f;
            }}
            let tile_flags = workgroupUniformLoad(&flags[0]);
            let tile_max = key_value(workgroupUniformLoad(&keys[0]));
            bad = bad || (tile_flags & 1u) != 0u;
            if ((tile_flags & 2u) == 0u || bad) {{ continue; }}   // nothing finite here (or the row is NaN)
            let m_new = select(tile_max, max(m, tile_max), any_finite);
            let alpha = select(0.0, exp_f32(m - m_new), any_finite);
            any_finite = true;
            m = m_new;
            var w = 0.0;
            if (flag == 2u) {{ w = exp_f32(s - m_new); }}
            weights[lid] = w;
            workgroupBarrier();
            if (lid == 0u) {{   // the tile's weights summed in key order by one invocation
                var total = weights[0];
                for (var t = 1u; t < {self.tile}u; t = t + 1u) {{ total = total + weights[t]; }}
                tile_sum = total;
            }}
            l = alpha * l + workgroupUniformLoad(&tile_sum);
            let count = min({self.tile}u, seen - j0);
            for (var d = lid; d < D; d = d + {self.tile}u) {{
                var acc = alpha * orow[d];
                for (var k = 0u; k < count; k = k + 1u) {{
                    acc = acc + weights[k] * ld3(kv + (j0 + k) * D + d);
                }}
                orow[d] = acc;
            }}
            workgroupBarrier();
        }}
        for (var d = lid; d < D; d = d + {self.tile}u) {{
            st(row * D + d, select(orow[d] / l, bitcast<f32>(launch.zero ^ 0x7fc00000u), bad || !any_finite));
        }}
        workgroupBarrier();
    }}
}}"""


def _fields(instr, operands: dict, count: int) -> dict:
    return {role: operands[role][1] for role in _ROLES[:count]}


def _bindings(slots: tuple[int, ...]) -> dict:
    out: dict = {}
    for role, slot in zip(_ROLES, slots):
        out.setdefault(3 + slot, role)
    return out


class _AttentionFamily(Kernel):
    launch_fields = _ROLES
    types = ATTENTION_TYPES

    def __init__(self, instruction: str) -> None:
        self.instruction = instruction

    def supports(self, operation, ty) -> bool:
        return ty in self.types

    def spec(self, instr, slots: tuple[int, ...]):
        kv_len = instr.kv_len or instr.seq_len
        if not self.groups(instr):   # nothing to compute: a shader that only marks the step reached
            return AttentionSpec(slots, kind=KINDS[instr.ty], rows=0, heads=1, seq_len=1, dim=1, kv_heads=1,
                                 kv_len=1, max_seq=1)
        return AttentionSpec(slots, kind=KINDS[instr.ty], rows=instr.batch * instr.heads * instr.seq_len,
                             heads=instr.heads,
                             seq_len=instr.seq_len, dim=instr.head_dim, kv_heads=instr.kv_heads or instr.heads,
                             kv_len=kv_len, max_seq=instr.max_seq or kv_len, causal=bool(instr.causal),
                             tile=min(getattr(instr, "block_size", TILE), MAX_TILE))

    def groups(self, instr) -> int:
        return instr.batch * instr.heads * instr.seq_len if instr.head_dim else 0

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        count = len(array_operands(instr))
        slots = binding_slots(operands, count)
        groups = max(1, min(device.max_groups, self.groups(instr)))
        return KernelPlan((Dispatch(self.spec(instr, slots), _bindings(slots), (groups, 1, 1)),),
                          _fields(instr, operands, count))

    def listing(self, instr):
        return [(self.instruction.lower(), self.spec(instr, tuple(range(len(array_operands(instr))))))]


class _RopeKernel(_AttentionFamily):
    def spec(self, instr, slots):
        return RopeSpec(slots, kind=KINDS[instr.ty], rows=instr.batch * instr.seq_len * instr.heads,
                        seq_len=max(1, instr.seq_len),
                        heads=max(1, instr.heads), half=instr.head_dim // 2, position=instr.position,
                        interleaved=bool(instr.interleaved))

    def groups(self, instr) -> int:
        return -(-instr.batch * instr.seq_len * instr.heads * (instr.head_dim // 2) // (TILE * ROPE_PAIRS))


class _KvCacheKernel(Kernel):
    """KVCacheUpdate: a host step (between two submissions): the position check, the arrays' checks, then one
    buffer-to-buffer copy per row (bits as they are). WebGPU copies and writes whole 32-bit words between two
    buffers: where a row is not whole words apart (1- and 2-byte types) or both arrays lie in one chunk buffer,
    the new rows are read and each written into the words that hold it (the words read first where the row
    covers only part of them)."""

    instruction = "KVCacheUpdate"
    host = True

    def supports(self, operation, ty) -> bool:
        return ty in KV_CACHE_TYPES

    def run_host(self, step, lane0: dict, memory, driver, rt, uniforms_byte: int) -> None:
        """Raises AtlasTrap (lane -1): OUT_OF_BOUNDS naming position for a position past the cache (before the
        arrays are checked), or the array checks' traps."""
        instr = step.instr
        if instr.max_seq and instr.position >= instr.max_seq:
            raise step_trap(step, TrapCode.OUT_OF_BOUNDS,
                            TrapRecord(operand_position(instr, "position"), 0, instr.position, 0, instr.max_seq))
        operands = kernel_operands(memory, step, lane0)
        (cache, at), (new, start) = operands["dst"], operands["src_a"]
        row = instr.head_dim * instr.ty.size_bytes()
        slots = instr.max_seq or instr.position + 1
        rows = instr.batch * instr.heads if row else 0
        targets = [at + (r * slots + instr.position) * row for r in range(rows)]
        if not rows:
            return
        if new is not cache and not (row | start | at) % 4:
            for r, target in enumerate(targets):
                driver.copy_buffer(new, start + r * row, cache, target, row)
            return
        data = bytes(driver.read_buffer(new, start, rows * row))
        for r, target in enumerate(targets):
            _write_bytes(driver, cache, target, data[r * row:(r + 1) * row])


def _write_bytes(driver, buffer, at: int, data: bytes) -> None:
    """Write ``data`` at byte ``at`` of ``buffer`` through whole 32-bit words (the bytes around it kept)."""
    lo, hi = at & ~3, (at + len(data) + 3) & ~3
    if (lo, hi) != (at, at + len(data)):
        window = bytearray(driver.read_buffer(buffer, lo, hi - lo))
        window[at - lo:at - lo + len(data)] = data
        data = bytes(window)
    driver.write_buffer(buffer, lo, data)


register(_RopeKernel("RoPE"))
register(_KvCacheKernel())
register(_AttentionFamily("Attention"))
register(_AttentionFamily("FlashAttention"))
