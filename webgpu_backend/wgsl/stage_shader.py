"""One compute shader per stage: bindings, registers, segment functions and the stage loop.

Bindings (group 0)::

    0  launch  storage, ro  this dispatch's Launch slot
    1  rt      storage      runtime words (trap record, steps reached, uniforms, ResAccum, trap info)
    2  dtable  storage, ro  the device handle table
    3  state   storage      lane state (multi-stage programs; a placeholder otherwise)
    64 …       storage      state1, state2, ...: more windows of lane state (state_windows), only for
                            a launch whose slots exceed one binding
    4 …        storage      chunk k (mem<k>): array<u32>, or array<atomic<u32>> when 8/16-bit
                            stores exist (then every access is atomic: WebGPU forbids a second,
                            aliasing binding of a buffer next to a writable one)

The block index is rebuilt from a dispatch split over up to three dimensions; workgroups
past the launch return at once (uniformly). A stage guard skips a later stage when an earlier step
trapped or the lanes did not suspend where this stage starts (the first stage always runs); in
a stage with barriers one lane reads it and everyone gets it through ``workgroupUniformLoad``,
so the barriers stay in uniform control flow. Barriers cost much compile time on CPU adapters
(lavapipe splits the shader around each), so a stage without BarSync has none. With barriers
the stage loop runs segment after segment: every live lane writes the resume point it
suspended at, ``workgroupUniformLoad`` (a workgroupBarrier) gives the block's agreed value;
three rotating slots make the reset of the next slot race-free with one barrier per BarSync.
Barriers therefore only ever stand in uniform control flow, whatever the program's branches.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.errors import ExecutionFailed
from atlas_web.isa.registers import SpecialRegister
from atlas_web.launch import LaunchConfig
from atlas_web.lowering.stages import ResumeKind

from .emitter import CodeWriter, ShaderFeatures
from .lane_context import (
    LaneContext, ShaderResources, register_name, register_names, register_wgsl_type, special_name,
)
from .lane_state import LaneStateLayout, load_words, store_words, vreg_words
from .library import HelperSet
from .rules_atlas import neighbour_table_wgsl
from .runtime_layout import GUARD_WGSL, NO_TRAP, launch_struct, RuntimeLayout
from .segments import NO_LABEL, render_segment
from .subword import merge_bits
from ..state_windows import StateWindows

__all__ = ["StageShader", "build_stage_shader", "FIRST_CHUNK_BINDING", "SHARED_RESERVED_BYTES",
           "wide_register_file_base", "shared_backup_words"]

FIRST_CHUNK_BINDING = 4
#: workgroup bytes the stage loop itself uses (the three agreement slots and the guard)
SHARED_RESERVED_BYTES = 16


@dataclass(frozen=True)
class StageShader:
    """A generated stage shader: its WGSL source and what its bindings and host need to know."""

    stage: int
    source: str
    atomic_memory: bool
    may_trap: bool
    uses_resonance: bool
    #: slots of the wide register file the shader uses (its registers and scratch)
    wide_slots: int = 0


def shared_backup_words(plan, state: LaneStateLayout, config: LaunchConfig, multi_stage: bool) -> tuple[int, int]:
    """(first word, words) of the blocks' shared-memory copies in the ``state`` buffer, after the
    lane-state slots: (0, 0) unless a multi-stage program uses shared memory. A stage that ends
    saves its block's shared memory there and the next stage loads it, so shared memory lasts the
    whole launch; the host zeroes the copies when the first stage is not dispatched."""
    if not (multi_stage and plan.info.uses_shared):
        return 0, 0
    return state.total_slots * config.total_threads, config.num_blocks * max(1, -(-config.shared_memory // 4))


def wide_register_file_base(plan, state: LaneStateLayout, config: LaunchConfig, multi_stage: bool) -> int:
    """The first word of the wide register file in the ``state`` buffer: after the lane-state slots
    and the blocks' shared-memory copies."""
    words = state.total_slots * config.total_threads if multi_stage else 0
    return words + shared_backup_words(plan, state, config, multi_stage)[1]


def _k(k) -> str:
    return k if isinstance(k, str) else f"{k}u"


def _special_values(config: LaunchConfig) -> dict[int, str]:
    gx, gy, _gz = config.grid
    return {
        SpecialRegister.LANE_IDX_X: "lid.x", SpecialRegister.LANE_IDX_Y: "lid.y", SpecialRegister.LANE_IDX_Z: "lid.z",
        SpecialRegister.BLOCK_IDX_X: f"block % {gx}u", SpecialRegister.BLOCK_IDX_Y: f"(block / {gx}u) % {gy}u",
        SpecialRegister.BLOCK_IDX_Z: f"block / {gx * gy}u",
        **{reg: f"{value}u" for reg, value in config.uniform_specials().items()},
        SpecialRegister.GLOBAL_LANE_ID: "lane_id",
    }


def _memory_accessors(chunks: int, atomic: bool) -> str:
    def dispatch(body) -> str:
        if chunks == 1:
            return "    " + body(0)
        cases = "".join(f"        case {k}u: {{ {body(k)} }}\n" for k in range(1, chunks))
        return f"    switch current_chunk {{\n{cases}        default: {{ {body(0)} }}\n    }}"
    if atomic:     # the chunks are atomic arrays: every access is atomic (one binding per chunk)
        load, store = (lambda k: f"return atomicLoad(&mem{k}[w]);"), (lambda k: f"atomicStore(&mem{k}[w], v);")
    else:
        load, store = (lambda k: f"return mem{k}[w];"), (lambda k: f"mem{k}[w] = v;")
    parts = [
        "fn mem_load(w: u32) -> u32 {\n" + dispatch(load) + "\n}",
        "fn mem_store(w: u32, v: u32) {\n    if (!alive) { return; }\n" + dispatch(store) + "\n}",
    ]
    if atomic:     # an 8/16-bit store: its bits of the word, in one atomic step
        parts.append("fn mem_merge(w: u32, mask: u32, v: u32) {\n    if (!alive) { return; }\n"
                     + dispatch(lambda k: merge_bits(f"mem{k}[w]", "mask", "v")) + "\n}")
    return "\n\n".join(parts)


def _shared_accessors(atomic: bool) -> str:
    if atomic:
        return ("fn shm_load(w: u32) -> u32 { return atomicLoad(&shm[w]); }\n"
                "fn shm_store(w: u32, v: u32) { if (alive) { atomicStore(&shm[w], v); } }\n"
                "fn shm_merge(w: u32, mask: u32, v: u32) {\n    if (!alive) { return; }\n    "
                + merge_bits("shm[w]", "mask", "v") + "\n}")
    return ("fn shm_load(w: u32) -> u32 { return shm[w]; }\n"
            "fn shm_store(w: u32, v: u32) { if (alive) { shm[w] = v; } }")


class _StageBuilder:
    def __init__(self, plan, stage, config: LaunchConfig, features: ShaderFeatures, chunks: int,
                 state: LaneStateLayout, runtime: RuntimeLayout, multi_stage: bool,
                 presets: dict[int, object], windows: StateWindows | None = None) -> None:
        self.plan, self.stage, self.config = plan, stage, config
        self.windows = windows
        self.features, self.chunks, self.state, self.runtime = features, chunks, state, runtime
        self.multi_stage = multi_stage
        self.presets = presets
        self.helpers = HelperSet()
        self.resources = ShaderResources()
        self.ctx = LaneContext(plan, self.helpers, features, self.resources, chunks, state.wide_slots,
                               state.wide_register_slots)
        self.shared_spill = multi_stage and plan.info.uses_shared
        self.lanes = config.total_threads
        self.wide_base = wide_register_file_base(plan, state, config, multi_stage)
        #: registers declared in the stage's one segment function (segment_locals)
        self.locals: list = []

    # ---- lane state I/O -------------------------------------------------------------------------
    def state_word(self, slot: int):
        if self.windows is None:
            return lambda k: f"state[({slot}u + {_k(k)}) * {self.lanes}u + lane_id]"

        def windowed(k):
            if isinstance(k, str):  # a register of more than four words, addressed in a loop
                raise ExecutionFailed(
                    f"the launch of {self.lanes:,} lanes keeps a register of more than four words between stages "
                    "and its lane state exceeds one storage binding (maxStorageBufferBindingSize): such "
                    "registers cannot be split over bindings; use fewer lanes")
            return self.windows.word(slot + k)
        return windowed

    def reload(self, w: CodeWriter, vregs, uniform_key) -> None:
        for vreg in vregs:
            if vreg.is_special:
                continue
            key = uniform_key(vreg)
            if key in self.state.uniform_words and vreg.id in self.state.wide_slots:
                base, slot = self.state.uniform_words[key], self.state.wide_slots[vreg.id]
                with w.block(f"for (var k = 0u; k < ({vreg_words(vreg)}u ^ launch.zero); k = k + 1u)"):
                    w.emit(f"state[WIDE_BASE + ({slot}u + k) * LANES + lane_id] = "
                           f"atomicLoad(&rt[UNIFORMS + {base}u + k]);")
            elif key in self.state.uniform_words:
                base = self.state.uniform_words[key]
                load_words(w, vreg, lambda k, b=base: f"atomicLoad(&rt[UNIFORMS + {b}u + {_k(k)}])")
            elif vreg.id in self.state.slots:
                load_words(w, vreg, self.state_word(self.state.slots[vreg.id]))

    def spill(self, w: CodeWriter, vregs) -> None:
        for vreg in vregs:
            if vreg.is_special or vreg.id not in self.state.slots:
                continue
            word = self.state_word(self.state.slots[vreg.id])
            store_words(w, vreg, lambda k, value, word=word: f"{word(k)} = {value};")

    def spill_counters(self, w: CodeWriter) -> None:
        if self.state.jumps_slot is not None:
            w.emit(f"{self.state_word(self.state.jumps_slot)(0)} = jumps;")
        if self.state.phase_slot is not None:
            w.emit(f"{self.state_word(self.state.phase_slot)(0)} = phase;")

    # ---- the shader -----------------------------------------------------------------------------
    def build(self) -> StageShader:
        segments = [render_segment(self.ctx, self.plan.segments[r]) for r in self.stage.segments]
        self.locals = self.segment_locals(segments)
        main = self.main()
        if self.locals and register_names(main) & {register_name(v) for v in self.locals}:
            self.locals = []                      # main touches one after all: keep them all private
            main = self.main()
        if self.locals:
            segments[0] = self.declare_locals(segments[0])
        source = "\n\n".join(part for part in (
            self.features.enable_directives + launch_struct(), self.bindings(), self.runtime.wgsl_constants(),
            self.constants(), self.module_vars(), _memory_accessors(self.chunks, self.resources.atomic_memory),
            _shared_accessors(self.resources.atomic_shared) if self.resources.shared or self.shared_spill else "",
            self.trap_at(), self.helpers.render(), *segments, main) if part)
        return StageShader(self.stage.id, source, self.resources.atomic_memory, self.resources.may_trap,
                           self.resources.resonance, self.ctx.wide_slots_used)

    def bindings(self) -> str:
        lines = ["@group(0) @binding(0) var<storage, read> launch: Launch;",
                 "@group(0) @binding(1) var<storage, read_write> rt: array<atomic<u32>>;",
                 "@group(0) @binding(2) var<storage, read> dtable: array<vec4<u32>>;",
                 "@group(0) @binding(3) var<storage, read_write> state: array<u32>;"]
        # one binding per chunk (WebGPU forbids binding a buffer twice where one binding is writable)
        element = "atomic<u32>" if self.resources.atomic_memory else "u32"
        for k in range(self.chunks):
            lines.append(f"@group(0) @binding({FIRST_CHUNK_BINDING + k}) var<storage, read_write> "
                         f"mem{k}: array<{element}>;")
        for j in range(1, self.windows.count if self.windows else 1):
            lines.append(f"@group(0) @binding({StateWindows.binding(j)}) var<storage, read_write> "
                         f"{StateWindows.name(j)}: array<u32>;")
        return "\n".join(lines)

    def constants(self) -> str:
        shared_words = max(1, -(-self.config.shared_memory // 4))
        return (f"const BLOCKS: u32 = {self.config.num_blocks}u;\n"
                f"const LANES: u32 = {self.lanes}u;\n"
                f"const WIDE_BASE: u32 = {self.wide_base}u;\n"
                f"const BLOCK_LANES: u32 = {self.config.block_lanes}u;\n"
                f"const SHARED_BYTES: u32 = {self.config.shared_memory}u;\n"
                f"const SHARED_WORDS: u32 = {shared_words}u;\n"
                f"const NO_LABEL: u32 = 0x{NO_LABEL:08x}u;")

    def module_vars(self) -> str:
        lines = ["var<private> lane_id: u32;", "var<private> alive: bool = true;", "var<private> jumps: u32;",
                 "var<private> trap_record: array<u32, TRAP_WORDS>;",
                 "var<private> dispatch_jumps: u32;", "var<private> phase: u32;"]
        if self.chunks > 1:
            lines.append("var<private> current_chunk: u32;")
        for index in sorted(self.resources.specials):
            lines.append(f"var<private> {special_name(index)}: u32;")
        local = {vreg.id for vreg in self.locals}
        for vreg in self.plan.registers.vregs:
            if not vreg.is_special and vreg.id not in self.state.wide_slots and vreg.id not in local:
                lines.append(f"var<private> {register_name(vreg)}: {register_wgsl_type(vreg)};")
        if self.resources.shared or self.shared_spill:
            atomic = "atomic<u32>" if self.resources.atomic_shared else "u32"
            lines.append(f"var<workgroup> shm: array<{atomic}, SHARED_WORDS>;")
        if self.block_records:
            lines.append("var<private> trapped_here: bool;")
            lines.append("var<workgroup> block_trap: atomic<u32>;")
        lines.append("var<workgroup> agreed_resume: array<u32, 3>;")
        lines.append("var<workgroup> stage_go: u32;")
        if self.resources.neighbours:
            lines.append(neighbour_table_wgsl())
        return "\n".join(lines)

    def trap_at(self) -> str:
        # the record stays in private variables until the lane retires (after_segment): a check costs no
        # memory access where it does not trap (llvmpipe runs both sides of a branch under a lane mask).
        # Branchless: every check of a long program was an if in the lane's code, and the diamonds (with a
        # phi for each record word at each) cost LLVM most of lavapipe's compile time of memory-heavy code:
        # 300 loads and stores, Mesa's shader cache off, 6.7 -> 4.2 CPU s
        return ("fn trap_if(cond: bool, code: u32, index: u32, operand: u32, handle: u32, value_low: u32, "
                "value_high: u32, extent: u32, limit: u32) {\n"
                "    let hit = cond && alive;\n"
                "    alive = alive && !cond;\n"
                + "".join(f"    trap_record[{k}] = select(trap_record[{k}], {value}, hit);\n" for k, value in enumerate(
                    ("(index << 4u) | code", "operand", "handle", "value_low", "value_high", "extent", "limit")))
                + "}")

    @property
    def block_records(self) -> bool:
        """One trap record per block (RuntimeLayout.block_records; known once the segments are rendered)."""
        return self.runtime.block_records and self.resources.may_trap

    def record_trap(self, w: CodeWriter) -> None:
        """The retiring lane's trap: the stage's lowest trapping lane (atomicMin) and the lane's record (with
        block records: the block's lowest trapping lane, whose record write_block_record writes)."""
        w.emit("atomicMin(&rt[TRAPS + launch.step], lane_id);")
        if self.block_records:
            w.emit("atomicMin(&block_trap, lane_id);")
            w.emit("trapped_here = true;")
            return
        w.emit("let record = TRAP_INFO + TRAP_WORDS * lane_id;")
        w.emit("for (var k = 0u; k < TRAP_WORDS; k = k + 1u) { atomicStore(&rt[record + k], trap_record[k]); }")

    def write_block_record(self, w: CodeWriter) -> None:
        """After every lane of the block retired (a barrier in uniform control flow): the block's lowest
        trapping lane writes its record to the block's slot; one writer, so no record is torn."""
        w.emit("workgroupBarrier();")
        with w.block("if (trapped_here && atomicLoad(&block_trap) == lane_id)"):
            w.emit("let record = TRAP_INFO + TRAP_WORDS * block;")
            w.emit("for (var k = 0u; k < TRAP_WORDS; k = k + 1u) { atomicStore(&rt[record + k], trap_record[k]); }")

    def main(self) -> str:
        w = CodeWriter(self.helpers, self.features)
        stage, plan = self.stage, self.plan
        entry = plan.resume_points[stage.entry]
        w.emit("let block = wid.x + nwg.x * (wid.y + nwg.y * wid.z);")
        w.emit("if (block >= BLOCKS) { return; }")
        w.emit("lane_id = block * BLOCK_LANES + li;")
        specials = _special_values(self.config)
        for index in sorted(self.resources.specials):
            w.emit(f"{special_name(index)} = {specials[index]};")
        has_shared = bool(self.resources.shared or self.shared_spill)
        barriers = len(stage.segments) > 1 or self.shared_spill or has_shared or self.block_records
        if entry.kind is not ResumeKind.ENTRY or stage.id != 0:
            guard = GUARD_WGSL
            if barriers:
                w.emit(f"if (li == 0u) {{ stage_go = select(0u, 1u, {guard}); }}")
                w.emit("if (workgroupUniformLoad(&stage_go) == 0u) { return; }")
            else:
                w.emit(f"if (!({guard})) {{ return; }}")
        if self.block_records:
            w.emit(f"if (li == 0u) {{ atomicStore(&block_trap, 0x{NO_TRAP:08x}u); }}")
            w.emit("workgroupBarrier();")
        w.emit("var live = true;")
        if self.multi_stage and entry.kind is not ResumeKind.ENTRY:
            w.emit(f"live = {self.state_word(self.state.flags_slot)(0)} == 0u;")
            with w.block("if (live)"):
                if self.state.jumps_slot is not None:
                    w.emit(f"jumps = {self.state_word(self.state.jumps_slot)(0)};")
                if self.state.phase_slot is not None:
                    w.emit(f"phase = {self.state_word(self.state.phase_slot)(0)};")
                boundary = plan.boundaries[entry.id]
                self.reload(w, boundary.reload, lambda v: ("result", entry.after, v.id))
        else:
            if self.multi_stage:
                w.emit(f"{self.state_word(self.state.flags_slot)(0)} = 0u;")
            self.zero_float_registers(w)
            self.reload(w, self.presets.values(), lambda v: ("preset", v.id))
        if entry.kind is ResumeKind.ENTRY and has_shared:
            self.shared_zero(w)
        elif self.shared_spill:
            self.shared_copy(w, load=True)
        cooperative = [r for r in stage.cooperative_exits]
        if len(stage.segments) == 1:
            w.emit("var next = LANE_ENDED;")
            w.emit(f"if (live) {{ next = segment_{stage.entry}(); }}")
            self.after_segment(w, cooperative)
        else:
            w.emit(f"var resume = {stage.entry}u;")
            w.emit("var barrier_round = 0u;")
            with w.block("loop"):
                w.emit("var next = LANE_ENDED;")
                with w.block("if (live)"):
                    with w.block("switch resume"):
                        for r in stage.segments:
                            w.emit(f"case {r}u: {{ next = segment_{r}(); }}")
                        w.emit("default: {}")
                self.after_segment(w, cooperative)
                w.emit("if (live) { agreed_resume[barrier_round % 3u] = next + 1u; }")
                w.emit("if (li == 0u) { agreed_resume[(barrier_round + 1u) % 3u] = 0u; }")
                w.emit("let agreed = workgroupUniformLoad(&agreed_resume[barrier_round % 3u]);")
                w.emit("barrier_round = barrier_round + 1u;")
                w.emit("if (agreed == 0u) { break; }")
                w.emit("resume = agreed - 1u;")
                if cooperative:
                    stops = " || ".join(f"resume == {r}u" for r in cooperative)
                    w.emit(f"if ({stops}) {{ break; }}")
        if self.shared_spill:
            self.shared_copy(w, load=False)
        if self.block_records:
            self.write_block_record(w)
        head = ("@compute @workgroup_size({}, {}, {})\n".format(*self.config.block)
                + "fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(local_invocation_index) li: u32,\n"
                "        @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {")
        return head + "\n" + w.text() + "\n}"

    def zero_float_registers(self, w: CodeWriter) -> None:
        """Float registers start at a zero the compiler cannot see: a register read before any
        write is a constant 0 otherwise, and the shader compiler folds ``0 * x`` to 0 (the
        contract wants NaN for an infinite or NaN ``x``). Registers local to the segment start
        there (declare_locals)."""
        local = {vreg.id for vreg in self.locals}
        for vreg in self.plan.registers.vregs:
            if vreg.is_special or vreg.type is None or not vreg.type.is_float() or vreg.id in self.state.wide_slots \
                    or vreg.id in local:
                continue
            w.emit(f"{register_name(vreg)} = {_hidden_zero(vreg)};")

    # ---- registers local to the segment ------------------------------------------------------------
    def segment_locals(self, segments: list[str]) -> list:
        """The registers of a stage of ONE segment that only that segment touches: they become variables
        of the segment's function instead of module-scope private ones. A stage of one segment calls it
        once per lane and dispatch, and such a variable starts at zero as a private one does, so nothing
        changes but the shader compiler's work: it turns function variables into values directly, where
        thousands of private variables cost LLVM (lavapipe) several times the compile time (a 3,000
        instruction straight-line program: 4.7 -> 1.4 s). In a stage of several segments a register's
        value may have to last from one call of a segment to the next, so they all stay private."""
        if len(segments) != 1:
            return []
        kept = {vreg.id for vreg in self.presets.values()}     # main loads these
        if self.multi_stage:                                     # and reloads or spills these
            entry = self.plan.resume_points[self.stage.entry]
            if entry.kind is not ResumeKind.ENTRY:
                kept |= {vreg.id for vreg in self.plan.boundaries[entry.id].reload}
            kept |= {vreg.id for vreg in self.plan.lane_end_stores}
            for r in self.stage.cooperative_exits:
                kept |= {vreg.id for vreg in self.plan.boundaries[r].spill}
        used = register_names(segments[0])
        return [vreg for vreg in self.plan.registers.vregs
                if not vreg.is_special and vreg.id not in self.state.wide_slots and vreg.id not in kept
                and register_name(vreg) in used]

    def declare_locals(self, segment: str) -> str:
        head, _, body = segment.partition("{\n")
        lines = []
        for vreg in self.locals:
            float_register = vreg.type is not None and vreg.type.is_float()
            init = f" = {_hidden_zero(vreg)}" if float_register else ""
            lines.append(f"    var {register_name(vreg)}: {register_wgsl_type(vreg)}{init};\n")
        return head + "{\n" + "".join(lines) + body

    def after_segment(self, w: CodeWriter, cooperative: list[int]) -> None:
        """Retire a lane that ended or trapped; spill a lane that suspended at a cooperative step."""
        plan = self.plan
        w.emit("if (!alive) { next = LANE_TRAPPED; }")
        with w.block("if (live && next >= LANE_TRAPPED)"):
            w.emit("live = false;")
            if self.resources.may_trap:
                with w.block("if (next == LANE_TRAPPED)"):
                    self.record_trap(w)
            if self.multi_stage:
                with w.block("if (next == LANE_ENDED)"):
                    self.spill(w, plan.lane_end_stores)
                w.emit(f"{self.state_word(self.state.flags_slot)(0)} = 1u;")
        for r in cooperative:
            with w.block(f"if (live && next == {r}u)"):
                if self.multi_stage:
                    self.spill(w, plan.boundaries[r].spill)
                    self.spill_counters(w)
                w.emit(f"atomicStore(&rt[REACHED + launch.step], {r + 1}u);")

    def shared_zero(self, w: CodeWriter) -> None:
        """Zero the block's shared memory where its lanes start (the contract: zero at launch, per
        block). Workgroup memory is not reliably zeroed between dispatches (lavapipe hands a
        workgroup what an earlier one, of this launch or another, left there), so the shader does it,
        every lane a share, and a barrier orders it before any lane's first access. Only the stage
        where lanes start does it: later stages load the copy the stage before them saved, and so must
        any later dispatch that resumes lanes in the middle of a stage (a stage split over dispatches)."""
        with w.block("for (var k = li; k < SHARED_WORDS; k = k + BLOCK_LANES)"):
            w.emit("shm_store(k, 0u);")
        w.emit("workgroupBarrier();")

    def shared_copy(self, w: CodeWriter, load: bool) -> None:
        """Copy the block's shared memory from (``load``) or to its lane-state backup."""
        first, _ = shared_backup_words(self.plan, self.state, self.config, self.multi_stage)
        base = f"{first}u + block * SHARED_WORDS"
        if not load:
            w.emit("workgroupBarrier();")
        with w.block("for (var k = li; k < SHARED_WORDS; k = k + BLOCK_LANES)"):
            if load:
                w.emit(f"shm_store(k, state[{base} + k]);")
            else:
                w.emit(f"state[{base} + k] = shm_load(k);")
        if load:
            w.emit("workgroupBarrier();")


def _hidden_zero(vreg) -> str:
    zero = "bitcast<f32>(launch.zero)"
    wgsl = register_wgsl_type(vreg)
    return zero if wgsl == "f32" else f"{wgsl}({zero})"


def build_stage_shader(plan, stage, config: LaunchConfig, features: ShaderFeatures, chunks: int,
                       state: LaneStateLayout, runtime: RuntimeLayout, multi_stage: bool,
                       presets: dict[int, object], windows: StateWindows | None = None) -> StageShader:
    """The WGSL of ``stage`` of ``plan`` for launch shape ``config`` over ``chunks`` memory chunks, its lane
    state in one binding or over ``windows``.

    Raises UnsupportedOperation (an instruction or type without a rule), ProgramError, or ExecutionFailed
    (windowed lane state with a register the windows cannot hold).
    """
    return _StageBuilder(plan, stage, config, features, chunks, state, runtime, multi_stage, presets,
                         windows).build()
