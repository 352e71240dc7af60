"""compile_program: one verified Atlas program over one launch shape -> one WebAssembly module.

The lowering plan of the shared front-end (``atlas_web.lowering.plan_program``) gives the segments,
resume points and stages. The module imports the backend's memory (and the host functions it needs)
and exports ``launch()``, which runs the whole launch and returns ``layout.STATUS_DONE`` or
``STATUS_TRAPPED`` (the trap record is in the header). Inside:

* one function per segment (``segment_function``);
* ``run_stage(entry)``: for every block (in order), run the entry segment for each live lane of the
  block (lanes in increasing order), then, while the lanes suspended at a BARRIER resume point,
  that point's segment; the block is done when its lanes ended or suspended at a COOPERATIVE point
  (recorded in the ``coop_at`` global). A block in which a lane trapped ends the stage;
* one function per cooperative instruction (``coop_<index>``), for each map its exported
  element-wise kernel ``map_kernel_<index>`` (``coop_map``), for each chunked reduction its chunk
  function and, when it may run on threads, its exported ``reduce_kernel_<index>`` (``coop_reduce``);
* ``launch``: zeroes the per-launch state, then alternates ``run_stage`` and the cooperative step
  the lanes suspended at, until every lane ended or one trapped.

``shared_memory`` declares the imported memory shared (as the runner's memory is); ``parallel``
lets large maps hand their kernel to the host's threads (``env.parallel_map``), large reductions
their chunks (``env.parallel_reduce``), large SIMD lane-mode launches ranges of lanes
(``env.parallel_lanes``, ``simd_function``) and large GEMMs ranges of rows (``env.parallel_gemm``, ``coop_gemm``).

Raises UnsupportedOperation (an instruction, type or cooperative operation without a rule, or a
program whose inlining needs too many copies) before writing any code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atlas_web.isa.opcodes import ExecKind
from atlas_web.lowering.plan import LoweringPlan, plan_program
from atlas_web.lowering.stages import ResumeKind

from .. import layout
from ..encoding.types import ValType
from . import (  # noqa: F401  (the rule modules register themselves on import)
    coop_attention, coop_gemm, coop_kvcache, coop_layer_scale, coop_map, coop_norm, coop_pools, coop_qgemm,
    coop_reduce, coop_rope,
    coop_softmax, coop_sparse, extended, mathlib_adapter, rules_atlas, rules_compare, rules_control, rules_convert,
    rules_data, rules_extended, rules_float, rules_int, rules_math, rules_reduce, runtime,
)
from . import coop_conv, coop_fft, coop_fft_bluestein  # noqa: F401  (issue 11's convolution kernels register themselves on import)
from . import coop_contract  # noqa: F401  (TensorContract, issue 10)
from .coop_context import CoopContext
from .coop_fusion import absorbed_maps, build_absorbed, build_fused, fused_chains
from ..thread_policy import parallel_lanes_wanted, parallel_map_threshold
from .coop_gemm import gemm_kernel_name, parallel_gemm_wanted, threaded_gemm
from .coop_map import map_kernel_elements_per_chunk, map_kernel_name
from .coop_reduce import parallel_reduce_wanted, reduce_kernel_name
from .lane_context import STOP_TRAPPED
from .lane_state import RECORD_ENDED, LaneState, plan_lane_state
from .launch_layout import LaunchLayout, plan_launch_area
from .module_context import ModuleContext
from .rules import BACKEND_NAME, COOPERATIVE_RULES, check_cooperative, lookup_lane_rule, lane_supported
from .segment_function import STOP_SUSPENDED, build_segment_function
from .simd_function import SIMD_CHUNK, build_simd_function

__all__ = ["CompiledProgram", "compile_program", "check_supported"]

I32 = ValType.I32


@dataclass(frozen=True)
class CompiledProgram:
    """A program's module and what the host needs to run it."""

    wasm: bytes
    plan: LoweringPlan
    state: LaneState
    launch: LaunchLayout
    host_imports: tuple[str, ...]
    uses_resaccum: bool
    #: whether the module runs most lanes in SIMD lane mode (``simd_lanes``)
    simd: bool = False
    #: instruction index -> (kernel export, elements per vector chunk) of the maps that may call
    #: ``env.parallel_map``
    parallel_maps: dict = field(default_factory=dict)
    #: instruction index -> chunk kernel export of the reductions that may call ``env.parallel_reduce``
    parallel_reduces: dict = field(default_factory=dict)
    #: whether the SIMD function may call ``env.parallel_lanes`` (it then exports ``simd_chunk``)
    parallel_lanes: bool = False
    #: instruction index -> (export, the count its ``lo .. hi`` range over: rows, GEMV outputs or batch items,
    #: range step, scratch bytes per thread) of the GEMMs that may call ``env.parallel_gemm``
    parallel_gemms: dict = field(default_factory=dict)
    #: the chains of adjacent maps run as one pass where their arrays allow (``coop_fusion``)
    fused: tuple = ()
    #: the (map, reduction) pairs whose map runs inside the reduction where their arrays allow
    absorbed: tuple = ()


def check_supported(program) -> None:
    """Raise UnsupportedOperation for the first instruction (type, operation) without a rule (cooperative
    instructions: as their registered rule answers, ``rules.check_cooperative``)."""
    for instr in program.instructions:
        info = instr.INFO
        if info.kind is ExecKind.COOPERATIVE:
            check_cooperative(instr)
        elif not lane_supported(info.name, instr.type):
            lookup_lane_rule(info.name, instr.type)


_MAPS = ("ParallelMap", "ParallelMapBinary")


def _parallel_maps(program, parallel: bool) -> dict[int, tuple[str, int]]:
    if not parallel:
        return {}
    return {index: (map_kernel_name(index), map_kernel_elements_per_chunk(instr.ty))
            for index, instr in enumerate(program.instructions)
            if instr.INFO.name in _MAPS and instr.count >= parallel_map_threshold(instr.operation)}


def _parallel_reduces(program, parallel: bool) -> dict[int, str]:
    if not parallel:
        return {}
    return {index: reduce_kernel_name(index) for index, instr in enumerate(program.instructions)
            if instr.INFO.name == "ParallelReduce" and parallel_reduce_wanted(instr.operation, instr.ty, instr.count)}


def _parallel_gemms(program, parallel: bool) -> dict[int, tuple[str, int, int, int]]:
    return {index: (gemm_kernel_name(index), *threaded_gemm(instr))
            for index, instr in enumerate(program.instructions) if parallel_gemm_wanted(parallel, instr)}


def _host_imports(program, parallel_maps: dict, parallel_reduces: dict, lanes: bool,
                  parallel_gemms: dict) -> tuple[str, ...]:
    names = {instr.INFO.name for instr in program.instructions}
    wanted = []
    if "PoolAlloc" in names:
        wanted.append("pool_alloc")
    if "PoolFree" in names:
        wanted.append("pool_free")
    if "ParallelMapBinary" in names:
        wanted.append("scratch")
    if parallel_maps:
        wanted.append("parallel_map")
    if parallel_reduces:
        wanted.append("parallel_reduce")
    if lanes:
        wanted.append("parallel_lanes")
    if parallel_gemms:
        wanted.append("parallel_gemm")
    return tuple(wanted)


def compile_program(program, info, config, *, name: str = "atlas", shared_memory: bool = False,
                    parallel: bool = False, plan=None, fuse: bool = False) -> CompiledProgram:
    """The module of ``program`` (verified, ``info`` its ProgramInfo) for launches of ``config``; see the
    module docstring for ``shared_memory`` and ``parallel``. ``plan``: the program's lowering plan
    (structured form) where the caller has it (``atlas_web.pipeline``), else it is made here. ``fuse``: run
    chains of adjacent maps as one pass (``coop_fusion``; the backend asks for it at optimization level 1
    and above)."""
    check_supported(program)
    if plan is None:
        plan = plan_program(info, backend=BACKEND_NAME)
    state = plan_lane_state(plan)
    launch = plan_launch_area(info, state, config)
    parallel_maps = _parallel_maps(program, parallel)
    parallel_reduces = _parallel_reduces(program, parallel)
    lanes_wanted = parallel_lanes_wanted(parallel, config) and not state.sync
    parallel_gemms = _parallel_gemms(program, parallel)
    imports = _host_imports(program, parallel_maps, parallel_reduces, lanes_wanted, parallel_gemms)
    m = ModuleContext(name, imports, shared_memory=shared_memory)
    m.helper("trap")
    segments = {seg.resume.id: build_segment_function(m, plan, state, config, launch, seg) for seg in plan.segments}
    coops = {}
    for index in sorted(plan.cooperative_steps):
        cc = CoopContext(m, state, launch, config, index)
        COOPERATIVE_RULES[program.instructions[index].INFO.name].build(cc)
        coops[index] = cc.fb.index
    chains = fused_chains(program, parallel_maps) if fuse else ()
    for chain in chains:
        coops.update(build_fused(m, state, launch, config, chain, coops))
    absorbed = absorbed_maps(program, parallel_maps, parallel_reduces) if fuse else ()
    for pair in absorbed:
        coops.update(build_absorbed(m, state, launch, config, pair, coops))
    stage = _build_stage(m, plan, state, launch, config, segments)
    simd = build_simd_function(m, plan, state, config)
    _build_launch(m, plan, launch, stage, coops, simd, segments[0], config)
    return CompiledProgram(m.to_bytes(), plan, state, launch, imports, bool(info.uses_resaccum), simd is not None,
                           parallel_maps, parallel_reduces, SIMD_CHUNK in m.functions, parallel_gemms, chains,
                           absorbed)


def _lanes_loop(m: ModuleContext, e, state: LaneState, launch: LaunchLayout, config, function: int,
                locals_: dict) -> None:
    """Run segment ``function`` for every live lane of the current block; ``next`` := the resume point
    they suspended at (-1: none suspended)."""
    block, lane_index, gid, record, result, next_ = (locals_[k] for k in ("block", "lane", "gid", "record",
                                                                         "result", "next"))
    base = m.global_index("launch_base")
    e.i32(0).set(lane_index)
    with e.loop("lanes"):
        with e.block("skip"):
            e.get(block).i32(config.block_lanes).op("i32.mul").get(lane_index).op("i32.add").set(gid)
            if state.sync:
                e.op("global.get", base).i32(launch.records).op("i32.add")
                e.get(gid).i32(state.record_size).op("i32.mul").op("i32.add").tee(record)
                e.op("i32.load", RECORD_ENDED).br_if("skip")
            elif launch.scratch_record is not None:
                e.op("global.get", base).i32(launch.scratch_record).op("i32.add").set(record)
            e.get(gid).get(lane_index).get(block).get(record).call(function)
            if state.sync:
                e.tee(result).i32(STOP_TRAPPED).op("i32.le_u")
                with e.if_():
                    e.get(record).i32(1).op("i32.store", RECORD_ENDED)
                    e.else_()
                    e.get(result).i32(STOP_SUSPENDED).op("i32.sub").set(next_)
            else:
                e.op("drop")
        e.get(lane_index).i32(1).op("i32.add").tee(lane_index).i32(config.block_lanes).op("i32.lt_u").br_if("lanes")


def _build_stage(m: ModuleContext, plan: LoweringPlan, state: LaneState, launch: LaunchLayout, config,
                 segments: dict[int, int]) -> int:
    fb, e = m.define("run_stage", (ValType.I32,), (ValType.I32,))
    entry = 0
    locals_ = {name: fb.add_local(ValType.I32, name) for name in ("block", "lane", "gid", "record", "result",
                                                                   "next", "resume")}
    block, resume, next_ = locals_["block"], locals_["resume"], locals_["next"]
    base = m.global_index("launch_base")
    cooperative = [rp.id for rp in plan.resume_points if rp.kind is ResumeKind.COOPERATIVE]
    e.i32(0).set(block)
    with e.loop("blocks"):
        if launch.shared_bytes:
            e.op("global.get", base).i32(launch.shared).op("i32.add")
            if launch.shared_per_block:
                e.get(block).i32(config.shared_memory).op("i32.mul").op("i32.add")
                e.op("global.set", m.global_index("shared_base"))
            else:
                e.op("global.set", m.global_index("shared_base"))
                e.op("global.get", m.global_index("shared_base")).i32(0).i32(config.shared_memory)
                e.op("memory.fill", 0)
        e.get(entry).set(resume)
        with e.block("block_done"):
            with e.loop("segments"):
                e.i32(-1).set(next_)
                for rid, function in segments.items():
                    e.get(resume).i32(rid).op("i32.eq")
                    with e.if_():
                        _lanes_loop(m, e, state, launch, config, function, locals_)
                e.get(next_).i32(-1).op("i32.eq").br_if("block_done")
                for rid in cooperative:
                    e.get(next_).i32(rid).op("i32.eq")
                    with e.if_():
                        e.get(next_).op("global.set", m.global_index("coop_at")).br("block_done")
                e.get(next_).set(resume).br("segments")
        e.i32(0).op("i32.load", layout.HEADER_TRAP_CODE)
        with e.if_():
            e.i32(layout.STATUS_TRAPPED).op("return")
        e.get(block).i32(1).op("i32.add").tee(block).i32(config.num_blocks).op("i32.lt_u").br_if("blocks")
    e.i32(layout.STATUS_DONE)
    return fb.index


def _simd_first(e, simd: tuple[int, int], entry_segment: int, config, gid: int) -> None:
    """SIMD lane mode over its lanes, then, from the first lane it did not run (its lanes, or where a step
    stopped), the other lanes through the scalar segment; when it ran none (a check of its prologue
    failed, or the first step stopped) the stages below run every lane."""
    simd, _covered = simd
    e.call(simd).tee(gid)
    with e.if_():
        with e.block("tail_done"):
            with e.loop("tail"):
                e.get(gid).i32(config.total_threads).op("i32.ge_u").br_if("tail_done")
                e.get(gid).get(gid).i32(config.block_lanes).op("i32.rem_u").get(gid).i32(config.block_lanes)
                e.op("i32.div_u").i32(0).call(entry_segment).op("drop")
                e.get(gid).i32(1).op("i32.add").set(gid)
                e.br("tail")
        e.i32(0).op("i32.load", layout.HEADER_TRAP_CODE)
        with e.if_():
            e.i32(layout.STATUS_TRAPPED).op("return")
        e.i32(layout.STATUS_DONE).op("return")


def _build_launch(m: ModuleContext, plan: LoweringPlan, launch: LaunchLayout, stage: int,
                  coops: dict[int, int], simd: tuple[int, int] | None, entry_segment: int, config) -> None:
    fb, e = m.define("launch", (), (ValType.I32,), export=True)
    g = m.global_index
    info = plan.info
    entry = fb.add_local(ValType.I32, "entry")
    e.i32(0).op("i32.load", layout.HEADER_TABLE_BASE).op("global.set", g("table_base"))
    e.i32(0).op("i32.load", layout.HEADER_TABLE_CAPACITY).op("global.set", g("table_capacity"))
    e.i32(0).op("i64.load", layout.HEADER_BUDGET).op("global.set", g("budget"))
    e.i32(0).op("i32.load", layout.HEADER_LAUNCH_BASE).op("global.set", g("launch_base"))
    e.i32(0).i32(0).op("i32.store", layout.HEADER_TRAP_CODE)
    e.i32(-1).op("global.set", g("fused_until"))
    if info.uses_resaccum:
        e.i32(layout.RES_SUMS).i32(0).i32(layout.RES_SUMS_BYTES).op("memory.fill", 0)
    if launch.records_bytes:
        e.op("global.get", g("launch_base")).i32(launch.records).op("i32.add").i32(0).i32(launch.records_bytes)
        e.op("memory.fill", 0)
    if launch.shared_per_block:
        e.op("global.get", g("launch_base")).i32(launch.shared).op("i32.add").i32(0).i32(launch.shared_bytes)
        e.op("memory.fill", 0)
    if simd is not None:
        tail = fb.add_local(ValType.I32, "tail")
        _simd_first(e, simd, entry_segment, config, tail)
    e.i32(0).set(entry)
    with e.loop("stages"):
        e.i32(-1).op("global.set", g("coop_at"))
        e.get(entry).call(stage)
        with e.if_():
            e.i32(layout.STATUS_TRAPPED).op("return")
        e.op("global.get", g("coop_at")).tee(entry).i32(-1).op("i32.eq")
        with e.if_():
            e.i32(layout.STATUS_DONE).op("return")
        for rp in plan.resume_points:
            if rp.kind is not ResumeKind.COOPERATIVE:
                continue
            e.get(entry).i32(rp.id).op("i32.eq")
            with e.if_():
                e.call(coops[rp.after])
                with e.if_():
                    e.i32(layout.STATUS_TRAPPED).op("return")
        e.br("stages")
    e.i32(layout.STATUS_DONE)
