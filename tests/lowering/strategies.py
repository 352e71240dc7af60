"""Hypothesis strategy: random (reducible and irreducible) control flow over straight-line integer code.

A program is a prologue (lane pointers), a main part of *slots* (one to three
random integer instructions, then maybe a control instruction: BRA with or
without a predicate to any slot, LOOP back to any earlier slot, CALL, EXIT,
RET, BarSync, a cooperative ParallelMapBinary), an epilogue storing four
registers in the lane's output slot (half the programs get a loop with a
second entry: a branch into its middle), and up to two subroutines of slots (a
subroutine may call only later ones: no recursion). Jumps go anywhere, so
loops with several entries (irreducible graphs) are common.

Registers r1–r3 are computed from immediates, each other and BLOCK_IDX_X
(block-uniform unless control flow makes them varying), r4–r6 from anything
(lane ids, loads); p0, p1 compare r1–r3, p2, p3 anything. A BarSync or
ParallelMapBinary the verifier rejects (it stands in divergent control flow) is
replaced by a MemFence and the program verified again, so barriers and
cooperative steps survive wherever they are legal. Runaway loops end at the
small budget (BUDGET_EXCEEDED).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from atlas_web.errors import ProgramError
from atlas_web.isa import (
    ADD, BRA, CALL, CVT, EXIT, LDG, LOOP, MOV_IMM, MUL, RET, SEL, SUB, Address, BarSync, BinaryMapOperation, Condition,
    MemFence, MemoryScope, ParallelMapBinary, SETcc, Type,
)
from atlas_web.launch import LaunchConfig
from atlas_web.program import Program
from atlas_web.verify import verify

from .programs import BLOCK_X, GID, LANE_X, P, R, U32, U64, I32, add, lane_slot_pointer, out_presets, store

__all__ = ["RandomLaunch", "control_flow_launches", "BUDGET"]

#: backward jumps per lane in the random launches
BUDGET = 16
UNIFORM = (1, 2, 3)
VARYING = (4, 5, 6)
#: input pointer register (per lane: the input buffer + 4 * GLOBAL_LANE_ID)
INPUT = 24
SHAPES = (LaunchConfig(grid=(1, 1, 1), block=(4, 1, 1)), LaunchConfig(grid=(2, 1, 1), block=(3, 1, 1)),
          LaunchConfig(grid=(3, 1, 1), block=(2, 1, 1)))
COUNTS_HANDLE, ONES_HANDLE = 3, 5


@dataclass
class RandomLaunch:
    """A verified random program with what it runs on."""

    program: Program
    config: LaunchConfig
    buffers: list[bytes]
    presets: dict
    budget: int


#: operation kind -> (dst, a, b, type, extra) -> instruction
_BUILDERS = {
    "imm": lambda dst, a, b, ty, extra: MOV_IMM(dst=R(dst), value=extra % 10, ty=ty),
    "add": lambda dst, a, b, ty, extra: ADD(dst=R(dst), lhs=R(a), rhs=R(b), ty=ty),
    "sub": lambda dst, a, b, ty, extra: SUB(dst=R(dst), lhs=R(a), rhs=R(b), ty=ty),
    "mul": lambda dst, a, b, ty, extra: MUL(dst=R(dst), lhs=R(a), rhs=R(b), ty=ty),
    "set": lambda dst, a, b, ty, extra: SETcc(pred=P(extra % 2 + (dst > 3) * 2), lhs=R(a), rhs=R(b),
                                              cond=list(Condition)[extra], ty=ty),
    "sel": lambda dst, a, b, ty, extra: SEL(dst=R(dst), pred=P(extra % 4), true_val=R(a), false_val=R(b), ty=ty),
    "ldg": lambda dst, a, b, ty, extra: LDG(dst=R(dst), src=Address.RegisterIndirect(R(INPUT), 0), ty=ty),
}
_KINDS = {True: st.sampled_from(("imm", "add", "sub", "mul", "set")),
          False: st.sampled_from(("imm", "add", "sub", "mul", "set", "sel", "ldg"))}
_DSTS = {True: st.sampled_from(UNIFORM), False: st.sampled_from(VARYING)}
#: (uniform, block_index) -> the registers an operation may read
_SOURCES = {(True, False): st.sampled_from(UNIFORM), (True, True): st.sampled_from(UNIFORM + (BLOCK_X,)),
            (False, False): st.sampled_from(UNIFORM + VARYING + (GID, LANE_X)),
            (False, True): st.sampled_from(UNIFORM + VARYING + (GID, LANE_X))}
_TYPES = st.sampled_from((U32, I32))
_EXTRA = st.integers(0, len(Condition) - 1)
_LENGTHS = st.integers(1, 3)
_BOOLS = st.booleans()


def _pick(draw, options: tuple):
    """One of ``options`` (drawn by index: cached integer strategies keep generation fast)."""
    return options[draw(st.integers(0, len(options) - 1))]


def _operation(draw, uniform: bool, block_index: bool):
    """One straight-line instruction: ``uniform`` ones write r1–r3 (p0, p1) from uniform sources only
    (BLOCK_IDX_X among them when ``block_index``), the others r4–r6 (p2, p3) from anything."""
    sources = _SOURCES[(uniform, block_index)]
    kind = draw(_KINDS[uniform])
    return _BUILDERS[kind](draw(_DSTS[uniform]), draw(sources), draw(sources), draw(_TYPES), draw(_EXTRA))


def _cooperative_step():
    counts = Address.BufferOffset(handle=COUNTS_HANDLE, offset=0)
    return ParallelMapBinary(dst_array=counts, src_a=counts, src_b=Address.BufferOffset(handle=ONES_HANDLE, offset=0),
                             count=4, operation=BinaryMapOperation.Add, ty=Type.I32)


def _slots(draw, prefix: str, count: int, exits: tuple, callees: tuple, in_main: bool, block_index: bool):
    """``count`` labelled slots; jumps go to any slot label or one of ``exits``."""
    labels = tuple(f"{prefix}{k}" for k in range(count))
    items: list = []
    controls = ("none", "none", "bra", "bra", "bra", "jump", "loop", "loop", "exit", "barrier", "barrier")
    controls += ("call", "call") * bool(callees) + (("ret", "coop", "coop") if in_main else ())
    for k, label in enumerate(labels):
        items.append(label)
        for _ in range(draw(_LENGTHS)):
            items.append(_operation(draw, draw(_BOOLS), block_index))
        control = _pick(draw, controls)
        if control == "bra":
            items.append(BRA(target=_pick(draw, labels + exits), pred=P(draw(st.integers(0, 3))),
                             negate=draw(_BOOLS)))
        elif control == "jump":
            items.append(BRA(target=_pick(draw, labels[k + 1:] + exits)))
        elif control == "loop":
            items.append(LOOP(count=R(_pick(draw, UNIFORM + VARYING)),
                              body=_pick(draw, labels[:k + 1])))
        elif control == "exit":
            items.append(EXIT())
        elif control == "ret":
            items.append(RET())
        elif control == "barrier":
            items.append(BarSync(id=0))
        elif control == "coop":
            items.append(_cooperative_step())
        elif control == "call":
            items.append(CALL(target=_pick(draw, callees)))
    return items


def _second_entry(draw, main: list, count: int) -> list:
    """A cycle over slots i … m entered both at i and, by a branch just before i, at j in (i, m]:
    an irreducible loop (unless other jumps make the branch dead)."""
    i = draw(st.integers(0, count - 2))
    j = draw(st.integers(i + 1, count - 1))
    m = draw(st.integers(j, count - 1))
    after_m = main.index(f"m{m + 1}") if m + 1 < count else len(main)
    pred = P(draw(st.integers(2, 3)))
    main = main[:after_m] + [BRA(target=f"m{i}", pred=pred, negate=draw(_BOOLS))] + main[after_m:]
    at_i = main.index(f"m{i}")
    return main[:at_i] + [BRA(target=f"m{j}", pred=pred, negate=draw(_BOOLS))] + main[at_i:]


def _assemble(items: list) -> Program:
    instrs, labels = [], {}
    for item in items:
        if isinstance(item, str):
            labels[item] = len(instrs)
        else:
            instrs.append(item)
    return Program(instrs, labels)


def _verified(items: list, presets: dict) -> Program:
    """Verify, replacing each BarSync / cooperative step the verifier rejects by a MemFence."""
    types = {reg: ty for reg, (ty, _v) in presets.items()}
    while True:
        prog = _assemble(items)
        try:
            verify(prog, preset_types=types)
            return prog
        except ProgramError as error:
            culprit = prog.instructions[error.index] if error.index is not None else None
            if culprit is None or culprit.INFO.name not in ("BarSync", "ParallelMapBinary"):
                raise
            position = [k for k, item in enumerate(items) if not isinstance(item, str)][error.index]
            items[position] = MemFence(scope=MemoryScope.Block)


@st.composite
def control_flow_launches(draw) -> RandomLaunch:
    """A random verified program, its launch shape, buffers and presets."""
    config = draw(st.sampled_from(SHAPES))
    lanes = config.total_threads
    n_subs = draw(st.integers(0, 2))
    subs = tuple(f"sub{k}" for k in range(n_subs))
    items: list = [*lane_slot_pointer(), CVT(dst=R(INPUT), src=R(GID), src_ty=U32, dst_ty=U64),
                   MOV_IMM(dst=R(22), value=4, ty=U64), MUL(dst=R(INPUT), lhs=R(INPUT), rhs=R(22), ty=U64),
                   add(INPUT, 26, INPUT, U64)]
    block_index = draw(st.booleans())
    n_main = draw(st.integers(2, 9))
    main = _slots(draw, "m", n_main, ("epilogue",), subs, True, block_index)
    if draw(st.booleans()):
        main = _second_entry(draw, main, n_main)
    items += main
    items += ["epilogue", store(1, 0), store(2, 1), store(4, 2), store(5, 3), EXIT()]
    for k, sub in enumerate(subs):
        items.append(sub)
        items += _slots(draw, f"s{k}_", draw(_LENGTHS), (f"{sub}_ret",), subs[k + 1:], False, block_index)
        items += [f"{sub}_ret", RET()]
    presets = out_presets(3)
    inputs = draw(st.lists(st.integers(0, 12), min_size=lanes, max_size=lanes))
    buffers = [bytes(16 * lanes), bytes(16), b"".join(v.to_bytes(4, "little") for v in inputs),
               (1).to_bytes(4, "little") * 4]
    return RandomLaunch(_verified(items, presets), config, buffers, presets, BUDGET)
