"""compile_program: one verified Atlas program over one launch shape -> one WebAssembly module.

The module imports the backend's memory (and the host functions it needs) and exports ``launch()``,
which runs the whole launch and returns ``layout.STATUS_DONE`` or ``STATUS_TRAPPED`` (the trap record
is in the header). Inside: the lane function (``lane_function``), ``run_stage`` (every block, every
lane of a block in increasing order; with barriers, segment after segment until no lane of the block
stops at one; after a block in which a lane trapped, the stage ends), one function per cooperative
instruction (``coop_<index>``) and ``launch``, which zeroes the per-launch state, then alternates
stages and cooperative steps until every lane has ended or one trapped.

Raises UnsupportedOperation (an instruction, type or cooperative operation without a rule) before
writing any code.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.errors import UnsupportedOperation
from atlas_web.isa.opcodes import ExecKind

from .. import layout
from ..encoding.types import ValType
from . import (  # noqa: F401  (the rule modules register themselves on import)
    coop_map, coop_pools, coop_reduce, rules_atlas, rules_compare, rules_control, rules_convert, rules_data,
    rules_extended, rules_float, rules_int, rules_math, rules_reduce, extended, runtime,
)
from .coop_context import CoopContext
from .coop_map import map_operation_supported
from .lane_context import STOP_BARRIER, STOP_TRAPPED
from .lane_function import build_lane_function
from .lane_plan import RECORD_STATUS, STATUS_ENDED, LanePlan, plan_lanes
from .launch_layout import LaunchLayout, plan_launch_area
from .module_context import ModuleContext
from .rules import BACKEND_NAME, COOPERATIVE_RULES, COOPERATIVE_SUPPORT, lookup_lane_rule

__all__ = ["CompiledProgram", "compile_program", "check_supported"]

I32 = ValType.I32


@dataclass(frozen=True)
class CompiledProgram:
    """A program's module and what the host needs to run it."""

    wasm: bytes
    plan: LanePlan
    launch: LaunchLayout
    host_imports: tuple[str, ...]
    uses_resaccum: bool


def check_supported(program) -> None:
    """Raise UnsupportedOperation for the first instruction (type, operation) without a rule."""
    for instr in program.instructions:
        info = instr.INFO
        if info.kind is not ExecKind.COOPERATIVE:
            lookup_lane_rule(info.name, instr.type)
            continue
        if info.name not in COOPERATIVE_RULES:
            raise UnsupportedOperation(info.name, instr.type, BACKEND_NAME, "no cooperative rule")
        operation = getattr(instr, "operation", None)
        if operation is None:
            continue
        supported = (map_operation_supported(operation, instr.ty) if info.name != "ParallelReduce"
                     else instr.ty in COOPERATIVE_SUPPORT.get(operation, ()))
        if not supported:
            raise UnsupportedOperation(f"{info.name}.{operation.name}", instr.ty, BACKEND_NAME,
                                       "needs a function of the math library (wasm_backend.mathlib), "
                                       "which is not registered")


def _host_imports(program) -> tuple[str, ...]:
    names = {instr.INFO.name for instr in program.instructions}
    wanted = []
    if "PoolAlloc" in names:
        wanted.append("pool_alloc")
    if "PoolFree" in names:
        wanted.append("pool_free")
    if "ParallelMapBinary" in names:
        wanted.append("scratch")
    return tuple(wanted)


def compile_program(program, info, config, *, name: str = "atlas") -> CompiledProgram:
    """The module of ``program`` (verified, ``info`` its ProgramInfo) for launches of ``config``."""
    check_supported(program)
    plan = plan_lanes(program, info)
    launch = plan_launch_area(program, info, plan, config)
    imports = _host_imports(program)
    m = ModuleContext(name, imports)
    m.helper("trap")
    lane = build_lane_function(m, program, info, plan, config, launch)
    coops = {}
    for index in plan.cooperative:
        cc = CoopContext(m, program, info, plan, launch, config, index)
        COOPERATIVE_RULES[program.instructions[index].INFO.name](cc)
        coops[index] = cc.fb.index
    stage = _build_stage(m, plan, launch, config, lane)
    _build_launch(m, info, plan, launch, stage, coops)
    return CompiledProgram(m.to_bytes(), plan, launch, imports, bool(info.uses_resaccum))


def _build_stage(m: ModuleContext, plan: LanePlan, launch: LaunchLayout, config, lane: int) -> int:
    fb, e = m.define("run_stage", (), (I32,))
    block, lane_index, gid, record, again, result = (fb.add_local(I32) for _ in range(6))
    base = m.global_index("launch_base")
    lanes_per_block = config.block_lanes
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
        with e.loop("segments"):
            e.i32(0).set(again).i32(0).set(lane_index)
            with e.loop("lanes"):
                with e.block("skip"):
                    e.get(block).i32(lanes_per_block).op("i32.mul").get(lane_index).op("i32.add").set(gid)
                    if plan.sync:
                        e.op("global.get", base).i32(launch.records).op("i32.add")
                        e.get(gid).i32(plan.record_size).op("i32.mul").op("i32.add").tee(record)
                        e.op("i32.load", RECORD_STATUS).i32(STATUS_ENDED).op("i32.eq").br_if("skip")
                    elif launch.scratch_record is not None:
                        e.op("global.get", base).i32(launch.scratch_record).op("i32.add").set(record)
                    e.get(gid).get(lane_index).get(block).get(record).call(lane)
                    if plan.sync:
                        e.tee(result).i32(STOP_BARRIER).op("i32.eq")
                        with e.if_():
                            e.i32(1).set(again)
                        e.get(result).i32(STOP_TRAPPED).op("i32.le_u")
                        with e.if_():
                            e.get(record).i32(STATUS_ENDED).op("i32.store", RECORD_STATUS)
                    else:
                        e.op("drop")
                e.get(lane_index).i32(1).op("i32.add").tee(lane_index).i32(lanes_per_block).op("i32.lt_u")
                e.br_if("lanes")
            if plan.barriers:
                e.get(again).br_if("segments")
        e.i32(0).op("i32.load", layout.HEADER_TRAP_CODE)
        with e.if_():
            e.i32(layout.STATUS_TRAPPED).op("return")
        e.get(block).i32(1).op("i32.add").tee(block).i32(config.num_blocks).op("i32.lt_u").br_if("blocks")
    e.i32(layout.STATUS_DONE)
    return fb.index


def _build_launch(m: ModuleContext, info, plan: LanePlan, launch: LaunchLayout, stage: int,
                  coops: dict[int, int]) -> None:
    fb, e = m.define("launch", (), (I32,), export=True)
    g = m.global_index
    e.i32(0).op("i32.load", layout.HEADER_TABLE_BASE).op("global.set", g("table_base"))
    e.i32(0).op("i32.load", layout.HEADER_TABLE_CAPACITY).op("global.set", g("table_capacity"))
    e.i32(0).op("i64.load", layout.HEADER_BUDGET).op("global.set", g("budget"))
    e.i32(0).op("i32.load", layout.HEADER_LAUNCH_BASE).op("global.set", g("launch_base"))
    e.i32(0).i32(0).op("i32.store", layout.HEADER_TRAP_CODE)
    if info.uses_resaccum:
        e.i32(layout.RES_SUMS).i32(0).i32(layout.RES_SUMS_BYTES).op("memory.fill", 0)
    if launch.records_bytes:
        e.op("global.get", g("launch_base")).i32(launch.records).op("i32.add").i32(0).i32(launch.records_bytes)
        e.op("memory.fill", 0)
    if launch.shared_per_block:
        e.op("global.get", g("launch_base")).i32(launch.shared).op("i32.add").i32(0).i32(launch.shared_bytes)
        e.op("memory.fill", 0)
    with e.loop("stages"):
        e.i32(-1).op("global.set", g("coop_at"))
        e.call(stage)
        with e.if_():
            e.i32(layout.STATUS_TRAPPED).op("return")
        e.op("global.get", g("coop_at")).i32(-1).op("i32.eq")
        with e.if_():
            e.i32(layout.STATUS_DONE).op("return")
        for index, function in coops.items():
            e.op("global.get", g("coop_at")).i32(index).op("i32.eq")
            with e.if_():
                e.call(function)
                with e.if_():
                    e.i32(layout.STATUS_TRAPPED).op("return")
        e.br("stages")
    e.i32(layout.STATUS_DONE)
