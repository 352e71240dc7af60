"""Compiling a verified program for the WebGPU backend: the lowering plan, the lane-state and
uniform layouts, the cooperative steps, and (per launch shape) the stage shaders.

``CompiledProgram`` is launch-shape independent and cached per (program digest, preset types);
``stage_shaders(config, features, chunks)`` generates and caches the WGSL of every stage for one
launch shape. Nothing here touches a device: the launcher turns sources into pipelines.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atlas_web.cache import ProgramCache
from atlas_web.errors import ExecutionFailed
from atlas_web.isa.addresses import Address
from atlas_web.launch import LaunchConfig
from atlas_web.lowering import plan_program
from atlas_web.lowering.liveness import VirtualRegister
from atlas_web.lowering.structure import EndLane, Suspend

from .wgsl import ShaderFeatures, StageShader, build_stage_shader
from .wgsl.stage_shader import shared_backup_words, wide_register_file_base
from .wgsl.lane_state import LaneStateLayout
from .wgsl.runtime_layout import RuntimeLayout
from .wgsl.kernels import KERNELS, Kernel
from .state_windows import StateWindows, plan_state_windows
from .wgsl.support import check_program

__all__ = ["CompiledProgram", "CooperativePlan", "compile_program"]

_STATIC_MODES = (Address.BufferOffset, Address.PoolOffset, Address.Class)
#: launch shapes whose stage shaders a CompiledProgram keeps (a program launched over many shapes, e.g. one
#: size per call in a notebook, would otherwise keep every shape's WGSL as long as it stays compiled)
SHADER_SHAPES = 16


def _shader_cache() -> ProgramCache:
    return ProgramCache(SHADER_SHAPES, plain_keys=True)


@dataclass(frozen=True)
class CooperativePlan:
    """Cooperative instruction ``index`` (``instr``) whose lanes continue at resume point ``resume``:
    its registered ``kernel`` (wgsl.kernels), whether the host must act before it runs (``host``: host steps, and kernels
    with register-based addresses, which read lane 0's registers), the virtual registers it
    reads (operand path -> vreg) and the one it writes with its uniform word (or None)."""

    index: int
    instr: object
    resume: int
    kernel: Kernel
    host: bool
    reads: dict[str, VirtualRegister]
    result: tuple[VirtualRegister, int] | None


@dataclass
class CompiledProgram:
    """A verified program lowered for the WebGPU backend (see the module docstring)."""

    info: object
    plan: object
    presets: dict[int, VirtualRegister]
    state: LaneStateLayout
    multi_stage: bool
    steps: dict[int, CooperativePlan]
    #: stage id -> the resume point its lanes all suspend at, for stages with no code (never dispatched)
    passes_to: dict[int, int] = field(default_factory=dict)
    #: stages with no code that only end every lane (never dispatched)
    empty_stages: frozenset[int] = frozenset()
    _shaders: ProgramCache = field(default_factory=_shader_cache, repr=False)

    @property
    def digest(self) -> str:
        return self.info.program.digest()

    def runtime_layout(self, config: LaunchConfig, may_trap: bool) -> RuntimeLayout:
        return RuntimeLayout(self.state.uniform_total, config.total_threads, may_trap, config.block_lanes)

    def stage_shaders(self, config: LaunchConfig, features: ShaderFeatures, chunks: int,
                      windows: StateWindows | None = None) -> tuple[StageShader, ...]:
        """The stage shaders for one launch shape (cached), lane state over ``windows`` when given. Raises
        UnsupportedOperation, ProgramError, or ExecutionFailed (a register the windows cannot hold)."""
        last = self._shaders.last   # a repeated launch: the same config and features objects
        if (last is not None and last[0][0] is config and last[0][1] is features and last[0][2] == chunks
                and last[0][3] == windows):
            return last[1]

        def build() -> tuple[StageShader, ...]:
            runtime = self.runtime_layout(config, True)
            return tuple(build_stage_shader(self.plan, stage, config, features, chunks, self.state, runtime,
                                            self.multi_stage, self.presets, windows) for stage in self.plan.stages)

        shaders = self._shaders.get_or_build((config, features, chunks, windows), build)
        self._shaders.remember((config, features, chunks, windows), shaders)
        return shaders

    def state_windows(self, config: LaunchConfig, binding_limit: int) -> StateWindows | None:
        """Windows for the lane state of a launch of ``config`` when its slots exceed ``binding_limit`` bytes
        and can be split (state_windows' docstring says which can); None otherwise (one binding, refused
        by the launcher if it is too large)."""
        if not self.multi_stage or 4 * self.state.total_slots * config.total_threads <= binding_limit:
            return None
        if self.state.wide_slots or self.state.wide_register_slots or shared_backup_words(
                self.plan, self.state, config, self.multi_stage)[1]:
            return None
        return plan_state_windows(self.state.total_slots, config.total_threads, binding_limit)

    def shared_backup(self, config: LaunchConfig) -> tuple[int, int]:
        """(byte offset, bytes) of the blocks' shared-memory copies in the state buffer ((0, 0): none)."""
        first, words = shared_backup_words(self.plan, self.state, config, self.multi_stage)
        return 4 * first, 4 * words

    def state_layout(self, config: LaunchConfig, shaders, windows: StateWindows | None = None
                     ) -> tuple[int, int, int]:
        """(bytes of the state buffer, byte offset and byte size of the wide register file) one
        launch of ``config`` needs with the stage ``shaders`` (with its lane state over ``windows``: the bytes
        of window 0, the state buffer; the other windows are buffers of their own)."""
        if windows is not None:
            if any(s.wide_slots for s in shaders):
                raise ExecutionFailed(
                    f"the launch of {config.total_threads:,} lanes needs wide (over 64-bit) register scratch and its "
                    "lane state exceeds one storage binding (maxStorageBufferBindingSize): the scratch cannot be "
                    "split over bindings; use fewer lanes")
            return windows.sizes()[0], 0, 0   # window 0 is the state buffer; the others are their own buffers
        base = wide_register_file_base(self.plan, self.state, config, self.multi_stage)
        wide = max((s.wide_slots for s in shaders), default=0) * config.total_threads
        if not self.multi_stage and not wide:
            return 4, 0, 0
        return 4 * max(1, base + wide), 4 * base, 4 * wide


def _cooperative_plans(plan, state: LaneStateLayout) -> dict[int, CooperativePlan]:
    out = {}
    for rp in plan.resume_points:
        if rp.after is None or rp.after not in plan.cooperative_steps:
            continue
        step = plan.cooperative_steps[rp.after]
        instr = plan.info.program.instructions[rp.after]
        kernel = KERNELS[instr.INFO.name]   # check_program refused a cooperative instruction without one
        registers = any(not isinstance(getattr(instr, o.name), _STATIC_MODES)
                        for o in instr.INFO.operands if o.kind.value == "addr")
        result = None
        if step.writes:
            vreg = step.writes[0][1]
            result = (vreg, state.uniform_words[("result", rp.after, vreg.id)])
        out[rp.id] = CooperativePlan(rp.after, instr, rp.id, kernel, kernel.host or registers, dict(step.reads), result)
    return out


def compile_program(info, preset_types: dict, *, plan=None) -> CompiledProgram:
    """Lower the verified program of ``info`` (a ProgramInfo) with ``preset_types`` (Register -> Type);
    ``plan``: its structured lowering plan where the caller has it (``atlas_web.pipeline``).

    Raises UnsupportedOperation (an instruction or type this backend cannot compile).
    """
    check_program(info.program)
    if plan is None:
        plan = plan_program(info, form="structured", backend="webgpu")
    presets = {}
    for reg, ty in preset_types.items():
        vreg = plan.registers.find(reg, ty)
        if vreg is not None:
            presets[vreg.id] = vreg
    multi_stage = len(plan.stages) > 1
    state = LaneStateLayout.build(plan, presets, multi_stage)
    passes, empty = _trivial_stages(plan)
    return CompiledProgram(info, plan, presets, state, multi_stage, _cooperative_plans(plan, state), passes, empty)


def _trivial_stages(plan) -> tuple[dict[int, int], frozenset[int]]:
    """(stage -> the resume point a stage with no code suspends every lane at, the stages that only
    end their lanes): dispatches the launcher leaves out. A stage passes through only when skipping
    it leaves the lane state as it would have been: at the start nothing is live (presets would be
    spilled), later nothing the previous step wrote uniformly is live."""
    passes = {}
    for stage in plan.stages:
        body = plan.segments[stage.entry].body
        if len(stage.segments) != 1 or len(body) != 1 or not isinstance(body[0], Suspend):
            continue
        resume = body[0].resume
        spilled = {v.id for v in plan.boundaries[resume].spill if not v.is_special}
        written = spilled if stage.id == 0 else {v.id for v in plan.boundaries[stage.entry].uniform} & spilled
        if not written and resume in stage.cooperative_exits:
            passes[stage.id] = resume
    empty = frozenset(stage.id for stage in plan.stages
                      if not stage.cooperative_exits and len(stage.segments) == 1
                      and plan.segments[stage.entry].body == (EndLane(),))
    return passes, empty
