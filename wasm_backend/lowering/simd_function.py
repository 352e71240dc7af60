"""The SIMD lane-mode function of a program (see ``simd_lanes`` for the values and rules).

Programs that qualify: lanes never suspend, no extended registers, presets only of the types with vector
lanes (``VECTOR_TYPES``: read once in the prologue from the launch area, Uniform values), only
GLOBAL_LANE_ID and launch dimensions among the special registers, and one segment whose tree
``simd_control`` can write: straight-line code, loops and branches whose tests are the same in the
lanes of a step, and lane-id guards (``set.ge.u32 p0, r255, n`` then ``bra.p0 @done``): the function
covers the lanes below the guard's bound; the launch runs the rest with the scalar segment.

``simd_lanes()`` checks every access it can in the prologue (SIMD_FALLBACK when one would trap: nothing
ran), then runs four lanes per step, two steps per iteration; accesses whose addresses are computed in
the step, and the budget of backward jumps, are checked in the step, which returns its first lane when
one fails. The prologue and the loop are ``simd_range(lo, hi) -> i32`` (lanes ``lo .. hi``, the first
lane not run returned; no globals: the table's base and capacity come from the header), which
``simd_lanes`` calls over all its lanes and which returns the first lane the scalar lane code must run
(0: every lane).

Threads. A module compiled for several threads whose SIMD function covers at least
``thread_policy.PARALLEL_LANES_THRESHOLD`` lanes imports ``env.parallel_lanes(lanes)`` and exports
``simd_chunk(lo, hi)`` (``simd_range`` without its result): when the checks pass and the lanes have no
effect another lane's order could change, the host runs the kernel over ranges of lanes on its threads
(every ``lo`` a multiple of ``SIMD_LANES * UNROLL``, so each lane runs the code it runs in one call:
results are bit-identical). Effects that allow it: only order-free instructions (the opcode table's
``effects.order_free``: no effect but on the lane's own registers, LDG included) and STG; decided at run time in ``simd_lanes``, every store's byte range over all the
lanes must be disjoint from every other access's (loads read once in the prologue included), or be the
same range with the same element size (then a lane only meets its own element). Anything else (a
store that overlaps another lane's access, an instruction outside the table, a check in the step) keeps
the single call.

``build_simd_function`` returns ``(function index, lanes covered)`` or None; inside
``scalar_lanes_only()`` always None (the scalar lane loop, for comparisons and benchmarks).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from atlas_web.isa.registers import SpecialRegister

from .. import layout
from ..encoding.types import ValType
from ..thread_policy import PARALLEL_LANES_THRESHOLD
from . import simd_arith, simd_masks, simd_memory, simd_step  # noqa: F401  (they add their rules to SIMD_RULES)
from .launch_layout import plan_launch_area
from .module_context import HOST_IMPORTS, ModuleContext
from .simd_lanes import (
    SIMD_FALLBACK, SIMD_LANES, UNROLL, VECTOR_TYPES, LocalRecorder, SimdBuilder, SimdUnsupported, Uniform,
)
from .simd_control import Homes, Widen, home_keys, run_tree, straight_line, tree_indices
from .typemap import bank_of, type_info

__all__ = ["build_simd_function", "scalar_lanes_only", "simd_lane_mode_enabled", "SIMD_CHUNK",
           "LANES_PER_RANGE_STEP"]

I32, I64 = ValType.I32, ValType.I64
_DISABLED: list[bool] = []

#: the export the host runs over ranges of lanes
SIMD_CHUNK = "simd_chunk"  # a chunk function, not a kernel (docs/glossary.md)
#: range starts are multiples of this (a whole unrolled iteration of the loop)
LANES_PER_RANGE_STEP = SIMD_LANES * UNROLL
#: ``simd_lanes`` result when the checks passed and the lanes may run in ranges on threads (internal)
_CHUNKABLE = 2
#: stores whose byte ranges simd_lanes compares at run time
_RANGE_CHECKED = frozenset({"STG"})
#: the tests of the branches the SIMD function takes: they change nothing but the lanes' registers
_BRANCHES = frozenset({"BRA", "LOOP"})

# env.parallel_lanes(lanes): run simd_chunk over ranges of 0 .. lanes on the host's threads
HOST_IMPORTS.setdefault("parallel_lanes", ((I32,), ()))


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


#: analyses of one program at most (each Widen of a home's form starts one more)
_MAX_ANALYSES = 16


def _analyse(m: ModuleContext, info, state, config, body, lanes: int) -> tuple[SimdBuilder, LocalRecorder]:
    indices = tree_indices(body)
    entries = home_keys(info, indices)
    forms = {key: None for key in entries}
    for _ in range(_MAX_ANALYSES):
        recorder = LocalRecorder()
        recorder.add_local(I32, "lo")  # the parameters of simd_range: locals 0 and 1
        recorder.add_local(I32, "hi")
        s = SimdBuilder(m, recorder, info.program, info, config, lanes)
        _preset_values(s, plan_launch_area(info, state, config))
        if not straight_line(body):
            s.homes = Homes(forms)
        try:
            run_tree(s, body, [key for key, entry in entries.items() if entry])
        except Widen as widen:
            forms = widen.forms
            continue
        s.indices = indices
        return s, recorder
    raise SimdUnsupported("the forms of the values across control flow do not settle")


def _preset_values(s: SimdBuilder, launch) -> None:
    """Every preset register a Uniform value, loaded once in the prologue from the launch area (whose
    base is in the header: no globals, worker instances run this too)."""
    for reg, ty in sorted(s.info.preset_types.items(), key=lambda item: item[0].index):
        local = s.uniform_local(ty)
        valtype = type_info(ty).valtype
        s.pro.i32(0).op("i32.load", layout.HEADER_LAUNCH_BASE)
        s.pro.op(f"{valtype.name.lower()}.load", launch.presets[reg.index]).set(local)
        s.values[(reg.index, bank_of(ty))] = (ty, Uniform(local))


def _order_free(s: SimdBuilder) -> bool:
    """Whether every instruction the SIMD function runs is order-free (the table's effects), _RANGE_CHECKED or
    a branch."""
    return all(info.effects.order_free or info.name in _RANGE_CHECKED or info.name in _BRANCHES
               for info in (s.program.instructions[i].INFO for i in s.indices))


def build_simd_function(m: ModuleContext, plan, state, config) -> tuple[int, int] | None:
    """The SIMD function of a qualifying program and the lanes it covers, or None (see the docstring)."""
    if _DISABLED or state.sync or state.needs_record or config.total_threads < SIMD_LANES or state.specials - {
            SpecialRegister.GLOBAL_LANE_ID}:
        return None
    info = plan.info
    body = plan.segments[0].body
    if any(ty not in VECTOR_TYPES for ty in info.preset_types.values()):
        return None
    total = config.total_threads - config.total_threads % SIMD_LANES
    try:
        s, recorder = _analyse(m, info, state, config, body, total)  # every lane's proofs hold for fewer lanes too
        lanes = total if s.guarded_lanes is None else min(total, s.guarded_lanes)
        lanes -= lanes % SIMD_LANES
        if lanes < SIMD_LANES:
            return None
        if lanes != total:
            s, recorder = _analyse(m, info, state, config, body, lanes)
    except SimdUnsupported:
        return None
    simd_range = _build_range(m, s, recorder)
    threaded = ("parallel_lanes" in m.imports and lanes >= PARALLEL_LANES_THRESHOLD and not s.body_checks
                and _order_free(s))
    fb, e = m.define("simd_lanes", (), (I32,))
    if threaded:
        check = _build_check(m, s, recorder)
        m.define(SIMD_CHUNK, (I32, I32), (), export=True)[1].get(0).get(1).call(simd_range).op("drop")
        status = fb.add_local(I32)
        e.i32(0).i32(lanes).call(check).tee(status).i32(_CHUNKABLE).op("i32.eq")
        with e.if_():
            e.i32(lanes).call(m.host("parallel_lanes"))
            e.i32(lanes).op("return")
        e.get(status).i32(SIMD_FALLBACK).op("i32.eq")
        with e.if_():
            e.i32(0).op("return")
    # the first lane the scalar lane code runs: all SIMD lanes done, where a step stopped, or 0
    result = fb.add_local(I32)
    e.i32(0).i32(lanes).call(simd_range).tee(result).i32(SIMD_FALLBACK).op("i32.eq")
    with e.if_():
        e.i32(0).op("return")
    e.get(result)
    return fb.index, lanes


def _define_with_locals(m: ModuleContext, name: str, recorder: LocalRecorder):
    """A function ``name(lo, hi) -> i32`` with the recorder's locals (after its two parameters)."""
    fb, e = m.define(name, (I32, I32), (I32,))
    for valtype, local_name in recorder.types[2:]:
        fb.add_local(valtype, local_name)
    return fb, e


def _prologue(e, s: SimdBuilder) -> None:
    """The table's base and capacity from the header (no globals: worker instances run this), then the
    prologue: uniform values, address set-up and every lane's checks (SIMD_FALLBACK returned on failure)."""
    e.i32(0).op("i32.load", layout.HEADER_TABLE_BASE).set(s.table)
    e.i32(0).op("i32.load", layout.HEADER_TABLE_CAPACITY).set(s.capacity)
    e.code += s.pro.code


def _build_range(m: ModuleContext, s: SimdBuilder, recorder: LocalRecorder) -> int:
    """``simd_range(lo, hi) -> i32``: the prologue, then lanes ``lo .. hi`` (``lo`` a multiple of
    LANES_PER_RANGE_STEP, ``hi`` of SIMD_LANES), four per step; ``hi``, the first lane of a step that
    stopped, or SIMD_FALLBACK before anything ran."""
    fb, e = _define_with_locals(m, "simd_range", recorder)
    lo, hi = 0, 1
    _prologue(e, s)
    e.get(lo).set(s.gid)
    for address, advance in s.addresses:
        e.get(address).get(lo).i32(advance // SIMD_LANES).op("i32.mul").op("i32.add").set(address)

    def step() -> None:
        e.code += s.body.code  # position independent: no labels inside
        for address, advance in s.addresses:
            e.get(address).i32(advance).op("i32.add").set(address)
        e.get(s.gid).i32(SIMD_LANES).op("i32.add").set(s.gid)

    pairs_end = fb.add_local(I32, "pairs_end")
    e.get(hi).get(hi).i32(LANES_PER_RANGE_STEP).op("i32.rem_u").op("i32.sub").set(pairs_end)
    with e.block("pairs_done"):
        with e.loop("pairs"):
            e.get(s.gid).get(pairs_end).op("i32.ge_u").br_if("pairs_done")
            for _ in range(UNROLL):
                step()
            e.br("pairs")
    with e.block("done"):
        with e.loop("steps"):
            e.get(s.gid).get(hi).op("i32.ge_u").br_if("done")
            step()
            e.br("steps")
    e.get(hi)
    return fb.index


def _build_check(m: ModuleContext, s: SimdBuilder, recorder: LocalRecorder) -> int:
    """``simd_check(lo, hi) -> i32`` (parameters unused): the prologue (SIMD_FALLBACK when a check fails),
    then _CHUNKABLE when every store's byte range over the lanes is disjoint from every other access's or
    the same range with the same element size (a load read once in the prologue must be disjoint), else
    SIMD_DONE (run in one call)."""
    fb, e = _define_with_locals(m, "simd_check", recorder)
    _prologue(e, s)
    ranges = []
    for address, size, lanes, stores in s.accesses:
        start, end = fb.add_local(I64), fb.add_local(I64)
        e.get(address).op("i64.extend_i32_u").tee(start).i64(size * lanes).op("i64.add").set(end)
        ranges.append((address, size, lanes, start, end, stores))
    e.i32(1)
    for k, (address, size, lanes, start, end, stores) in enumerate(ranges):
        if not stores:
            continue
        for j, (other, other_size, other_lanes, other_start, other_end, _) in enumerate(ranges):
            if j == k:
                continue
            if (other_size, other_lanes) == (size, lanes):  # lane k meets only its own element
                e.get(address).get(other).op("i32.eq")
            else:
                e.i32(0)
            e.get(end).get(other_start).op("i64.le_u").op("i32.or")
            e.get(other_end).get(start).op("i64.le_u").op("i32.or")
            e.op("i32.and")
    e.i32(_CHUNKABLE).op("i32.mul")
    return fb.index
