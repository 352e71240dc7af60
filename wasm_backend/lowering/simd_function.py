"""The SIMD lane-mode function of a program (see ``simd_lanes`` for the values and rules).

Programs that qualify: lanes never suspend, no extended registers or presets, only GLOBAL_LANE_ID and
launch dimensions among the special registers, and a segment tree of one of two shapes:

* straight-line code: ``(Code, EndLane)``;
* a lane-id guard around straight-line code: ``(Code, If(test, then, orelse))`` where one arm is
  ``(EndLane,)`` and the other ``(Code, EndLane)``, and the BRA of the test reads a predicate that
  holds for a prefix or suffix of the lanes (``set.ge.u32 p0, r255, n`` then ``bra.p0 @done``). The
  function runs the lanes below the guard's bound; the launch runs the rest (the spare lanes, which
  the guard sends to the end) with the scalar segment.

``simd_lanes()`` checks every access of its lane range in the prologue (SIMD_FALLBACK when one would
trap, and then the scalar stages run every lane), then runs four lanes per step, two steps per
iteration. ``build_simd_function`` returns ``(function index, lanes covered)`` or None; inside
``scalar_lanes_only()`` always None (the scalar lane loop, for comparisons and benchmarks).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from atlas_web.isa.registers import SpecialRegister
from atlas_web.lowering.structure import Code, EndLane, If

from ..encoding.types import ValType
from . import simd_arith, simd_masks, simd_memory  # noqa: F401  (they add their rules to SIMD_RULES on import)
from .module_context import ModuleContext
from .simd_lanes import SIMD_DONE, SIMD_LANES, UNROLL, LaneRange, LocalRecorder, SimdBuilder, SimdUnsupported

__all__ = ["build_simd_function", "scalar_lanes_only", "simd_lane_mode_enabled"]

I32 = ValType.I32
_DISABLED: list[bool] = []


@contextmanager
def scalar_lanes_only() -> Iterator[None]:
    """Within the block, ``build_simd_function`` returns None: programs compiled then run every lane
    with the scalar lane code (for comparisons and benchmarks; a backend caches compiled programs, so
    compile on a backend that has not compiled the program yet)."""
    _DISABLED.append(True)
    try:
        yield
    finally:
        _DISABLED.pop()


def simd_lane_mode_enabled() -> bool:
    """False inside ``scalar_lanes_only``."""
    return not _DISABLED


def _shape(body) -> tuple[range | None, object | None, range | None] | None:
    """(leading code, the If, guarded code) of a qualifying tree, or None."""
    if len(body) in (1, 2) and isinstance(body[-1], EndLane) and all(isinstance(x, Code) for x in body[:-1]):
        return (range(body[0].start, body[0].end) if len(body) == 2 else None), None, None
    if len(body) != 2 or not isinstance(body[0], Code) or not isinstance(body[1], If):
        return None
    guard = body[1]
    arms = (guard.then, guard.orelse)
    ends = [arm == (EndLane(),) for arm in arms]
    code = [len(arm) == 2 and isinstance(arm[0], Code) and isinstance(arm[1], EndLane) for arm in arms]
    if not (ends[0] and code[1] or ends[1] and code[0]):
        return None
    work = guard.orelse[0] if ends[0] else guard.then[0]
    return range(body[0].start, body[0].end), guard, range(work.start, work.end)


def _guarded_lanes(s: SimdBuilder, guard, total: int) -> int:
    """How many leading lanes reach the guarded code (its lanes must be a prefix)."""
    bra = s.program.instructions[guard.test.index]
    if bra.INFO.name != "BRA" or bra.pred is None:
        raise SimdUnsupported("the guard is not a BRA on a predicate")
    found = s.values.get(("p", bra.pred.index))
    if found is None or not isinstance(found[1], LaneRange):
        raise SimdUnsupported("the guard's predicate is not a lane-id range")
    taken = found[1].inverted() if bra.negate else found[1]
    condition = taken.inverted() if guard.test.negated else taken
    reaches_code = condition if guard.then != (EndLane(),) else condition.inverted()
    if not reaches_code.below:
        raise SimdUnsupported("the guarded lanes are not a prefix of the launch")
    return min(reaches_code.bound, total)


def _analyse(m: ModuleContext, info, config, shape, lanes: int) -> tuple[SimdBuilder, LocalRecorder]:
    leading, guard, guarded = shape
    recorder = LocalRecorder()
    s = SimdBuilder(m, recorder, info.program, info, config, lanes)
    if leading is not None:
        s.run(leading)
    if guard is not None:
        s.guarded_lanes = _guarded_lanes(s, guard, config.total_threads)
        s.run(guarded)
    return s, recorder


def build_simd_function(m: ModuleContext, plan, state, config) -> tuple[int, int] | None:
    """The SIMD function of a qualifying program and the lanes it covers, or None (see the docstring)."""
    if _DISABLED or state.sync or state.needs_record or config.total_threads < SIMD_LANES or state.specials - {
            SpecialRegister.GLOBAL_LANE_ID}:
        return None
    info = plan.info
    shape = _shape(plan.segments[0].body)
    if shape is None or info.preset_types:
        return None
    total = config.total_threads - config.total_threads % SIMD_LANES
    try:
        s, recorder = _analyse(m, info, config, shape, total)  # every lane's proofs hold for fewer lanes too
        lanes = total if s.guarded_lanes is None else min(total, s.guarded_lanes)
        lanes -= lanes % SIMD_LANES
        if lanes < SIMD_LANES:
            return None
        if lanes != total:
            s, recorder = _analyse(m, info, config, shape, lanes)
    except SimdUnsupported:
        return None
    fb, e = m.define("simd_lanes", (), (I32,))
    for valtype, name in recorder.types:
        fb.add_local(valtype, name)
    e.op("global.get", m.global_index("table_base")).set(s.table)
    e.op("global.get", m.global_index("table_capacity")).set(s.capacity)
    e.code += s.pro.code
    e.i32(0).set(s.gid)

    def step() -> None:
        e.code += s.body.code  # position independent: no labels inside
        for address, advance in s.addresses:
            e.get(address).i32(advance).op("i32.add").set(address)
        e.get(s.gid).i32(SIMD_LANES).op("i32.add").set(s.gid)

    pairs_end = lanes - lanes % (UNROLL * SIMD_LANES)
    with e.block("pairs_done"):
        with e.loop("pairs"):
            e.get(s.gid).i32(pairs_end).op("i32.ge_u").br_if("pairs_done")
            for _ in range(UNROLL):
                step()
            e.br("pairs")
    with e.block("done"):
        with e.loop("steps"):
            e.get(s.gid).i32(lanes).op("i32.ge_u").br_if("done")
            step()
            e.br("steps")
    e.i32(SIMD_DONE)
    return fb.index, lanes
