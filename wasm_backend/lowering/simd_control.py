"""SIMD lane mode across loops and branches that are uniform in the lanes of a step.

The step body follows the segment's structured tree (``atlas_web.lowering.structure``): Code runs the
SIMD rules, Block/Loop/If become wasm ``block``/``loop``/``if`` around the four lanes of the step, Br and
BrIf branches, EndLane leaves the step. That is exact when every lane of the step takes the same branch:
a test qualifies when its condition is the same in the step's lanes:

* ``LOOP`` whose count is Const, Uniform or Scalar (``simd_step``): the count is decremented once per
  step, as every lane decrements its own;
* ``BRA`` on a predicate that is Const, Uniform or Scalar (a comparison of such values);
* ``BRA`` on a lane-id guard (``LaneRange``): the SIMD function covers only the lanes below its bound,
  which all take the same arm, and the other arm is not written (the scalar lane code runs the rest).

A test on a lane mask (a branch that may diverge) runs *masked* when what it branches around is short
(at most MAX_MASKED instructions) straight-line code that only reads and writes registers and cannot
trap, and both sides meet again at one Block's end: ``BrIf`` over a region, or an ``If`` whose two arms
are such regions. Every arm runs in every lane; a definition of a home is blended in (``bitselect``) only
in the lanes of the arm's mask (homes written so are vectors or masks), and other definitions are read
only inside their arm. Any other divergent branch has no rule: the scalar lane code runs the program.

Values across control flow. A register (or predicate) one of whose reads may see two definitions
(``ProgramInfo.reaching``) is kept in a *home*: fixed locals every definition writes, in one form for
the whole function: Scalar, Strided with one stride, Vector (registers) or Scalar, lane mask
(predicates). The form is the first definition's; a definition that does not fit widens it (Scalar or
Strided to Vector, Scalar predicate to mask) and the function is analysed again (``Widen``). Every other
register has one reaching definition at each read, which dominates it: its value is the one the walk
left (scoped per arm, taken from the first branch out of a Block).

Budget. ``CountJump`` adds one to the step's count of backward jumps (the same in its four lanes) and
stops at the step's first lane past the budget. A stop (this, or an access checked in the step,
``simd_memory``) returns that lane: the lanes before it are done, the step's lanes have stored nothing
(no check may follow a store in a step), and the scalar lane code runs from there, trapping exactly as
the contract says. Raises SimdUnsupported where a statement or test has no rule.
"""

from __future__ import annotations

from atlas_web.isa.addresses import Address
from atlas_web.isa.registers import Predicate
from atlas_web.isa.types import Type
from atlas_web.lowering.structure import Block, Br, BrIf, Code, CountJump, EndLane, If, Loop, walk

from .. import layout
from ..encoding.types import ValType
from .simd_lanes import (
    Affine, Const, LaneRange, Scalar, SimdBuilder, SimdUnsupported, Strided, Uniform, Vector, halves,
)
from .simd_masks import Mask, mask_locals, predicate_value
from .simd_memory import hoist_check
from .simd_step import lane0, push_scalar
from .typemap import bank_of, type_info

__all__ = ["Homes", "Widen", "home_keys", "run_tree", "straight_line", "tree_indices"]

I32, I64, V128 = ValType.I32, ValType.I64, ValType.V128
_UNIFORM = (Const, Uniform, Scalar)


class Widen(Exception):
    """A definition does not fit its home's form: analyse again with ``forms``."""

    def __init__(self, forms: dict) -> None:
        super().__init__("widen a home")
        self.forms = forms


def _operand(instr, path: str):
    name, _, sub = path.partition(".")
    value = getattr(instr, name)
    return getattr(value, sub) if sub else value


def home_keys(info, indices) -> dict:
    """The keys ((register, bank) or ("p", index)) of registers and predicates that one of the reads of
    instructions ``indices`` may see with two definitions, each with whether the value at entry (zero or
    a preset) is one of them."""
    keys: dict = {}
    wanted = set(indices)
    for (index, path), defs in info.reaching.items():
        if index not in wanted or len(defs) < 2:
            continue
        operand = _operand(info.program.instructions[index], path)
        if isinstance(operand, Predicate):
            key = ("p", operand.index)
        else:
            key = (operand.index, bank_of(info.use_types[(index, path)]))
        keys[key] = keys.get(key, False) or -1 in defs
    return keys


def _entry_values(s: SimdBuilder, entries) -> None:
    """Store the value at entry (a preset's, else zero) into the homes whose reads may see it."""
    for key in entries:
        found = s.values.get(key)
        if found is not None:
            ty, value = found
        elif key[0] == "p":
            ty, value = None, Const(0)
        elif isinstance(key[1], tuple):  # ("int", bits)
            ty, value = (Type.U64 if key[1][1] == 64 else Type.U32), Const(0)
        else:
            ty = key[1]
            local = s.uniform_local(ty)
            (s.pro.f64 if ty is Type.F64 else s.pro.f32)(0.0)
            s.pro.set(local)
            value = Uniform(local)
        s.values[key] = (ty, s.homes.store(s, key, ty, value))


def _natural(key, value):
    if key[0] == "p":
        return "scalar" if isinstance(value, _UNIFORM) else "mask"
    if isinstance(value, _UNIFORM):
        return "scalar"
    if isinstance(value, (Affine, Strided)):
        return ("strided", value.stride)
    return "vector"


class Homes:
    """The homes of one analysis: ``forms`` (key -> form, None until the first definition) and their locals."""

    def __init__(self, forms: dict) -> None:
        self.forms = dict(forms)
        self.values: dict = {}

    def store(self, s: SimdBuilder, key, ty, value):
        """Write ``value`` into the home of ``key`` (in the step body); returns the home's value."""
        natural = _natural(key, value)
        if s.active is not None:  # under a lane mask: only a vector (or mask) can keep the other lanes' values
            natural = "mask" if key[0] == "p" else "vector"
        form = self.forms[key]
        if form is None:
            form = self.forms[key] = natural
        elif form != natural and form not in ("vector", "mask"):
            raise Widen({**self.forms, key: "mask" if key[0] == "p" else "vector"})
        home = self.values.get(key)
        if home is None:
            home = self.values[key] = self._allocate(s, key, ty, form)
        e = s.body
        if s.active is not None:
            _blend(s, home, value, ty)
        elif form == "scalar":
            push_scalar(s, value, ty if ty is not None else _PREDICATE)
            e.set(home.local)
        elif form == "mask":
            local = mask_locals(s, value, 32)[0]
            e.get(local).set(home.narrow)
        elif form == "vector":
            for src, dst in zip(s.vector(value, ty), home.locals):
                e.get(src).set(dst)
        else:
            e.get(lane0(s, value, ty).local).set(home.local)
        s.derived = {k: v for k, v in s.derived.items() if k[0] != home}
        return home

    @staticmethod
    def _allocate(s: SimdBuilder, key, ty, form):
        if form == "mask":
            return Mask(narrow=s.fb.add_local(V128))
        if form == "vector":
            return Vector(tuple(s.fb.add_local(V128) for _ in range(halves(ty))))
        local = s.fb.add_local(I32 if ty is None else type_info(ty).valtype)
        return Scalar(local) if form == "scalar" else Strided(local, form[1])


def _blend(s: SimdBuilder, home, value, ty) -> None:
    """home := value in the lanes of the active mask, home elsewhere (``v128.bitselect``)."""
    e = s.body
    if isinstance(home, Mask):
        new, old, mask = mask_locals(s, value, 32)[0], home.narrow, mask_locals(s, s.active, 32)[0]
        e.get(new).get(old).get(mask).op("v128.bitselect").set(old)
        return
    masks = mask_locals(s, s.active, 64 if ty.bits == 64 else 32)
    for new, old, mask in zip(s.vector(value, ty), home.locals, masks):
        e.get(new).get(old).get(mask).op("v128.bitselect").set(old)


class _PredicateType:
    """Predicates are i32 0/1 locals: pushed as 32-bit constants."""

    bits = 32


_PREDICATE = _PredicateType()


def tree_indices(body) -> list[int]:
    """The instructions a tree runs: its Code and the instructions of its tests."""
    indices = []
    for stmt in walk(body):
        if isinstance(stmt, Code):
            indices.extend(range(stmt.start, stmt.end))
        elif isinstance(stmt, (If, BrIf)):
            indices.append(stmt.test.index)
    return indices


def straight_line(body) -> bool:
    """Whether ``body`` is one piece of straight-line code (no statement but Code and EndLane)."""
    return all(isinstance(stmt, (Code, EndLane)) for stmt in body)


def run_tree(s: SimdBuilder, body, entries=()) -> None:
    """Write the step body for the segment tree ``body`` (see the module docstring); ``entries``: the
    home keys whose reads may see the value at entry."""
    s.jumps = None
    s.counted = set()
    s.active = None  # the lane mask of a divergent region being run (_run_masked)
    if any(isinstance(stmt, CountJump) for stmt in walk(body)):
        s.jumps = s.fb.add_local(I64, "simd_jumps")
        s.budget = s.fb.add_local(I64, "simd_budget")
        s.pro.i32(0).op("i64.load", layout.HEADER_BUDGET).set(s.budget)
        s.body.i64(0).set(s.jumps)
    s.exits = {}
    with s.body.block("step"):
        _entry_values(s, entries)
        _statements(s, body)


def _statements(s: SimdBuilder, body) -> None:
    for k, stmt in enumerate(body):
        if isinstance(stmt, BrIf) and _mask_of(s, stmt.test) is not None:
            _masked_skip(s, stmt, body[k + 1:])
            return
        _STATEMENTS.get(type(stmt), _unsupported)(s, stmt)


# ---- masked execution of short divergent regions ------------------------------------------------------------

#: the most instructions a divergent region may hold (both arms of an If run in every step)
MAX_MASKED = 32


def _bra_predicate(s: SimdBuilder, test, kind) -> tuple[object, bool] | None:
    """(its predicate's value, whether the test holds where the predicate does not) of a test that is a BRA
    on a predicate whose value is a ``kind``, else None."""
    bra = s.program.instructions[test.index]
    if bra.INFO.name != "BRA" or bra.pred is None:
        return None
    found = predicate_value(s, bra.pred.index)
    return (found, bra.negate != test.negated) if isinstance(found, kind) else None


def _mask_of(s: SimdBuilder, test) -> Mask | None:
    """The lane mask of where ``test`` holds, when it is a BRA on a lane mask (a branch that may diverge)."""
    found = _bra_predicate(s, test, Mask)
    if found is None:
        return None
    return _not(s, found[0]) if found[1] else found[0]


def _not(s: SimdBuilder, mask: Mask) -> Mask:
    out = s.fb.add_local(V128)
    s.body.get(mask_locals(s, mask, 32)[0]).op("v128.not").set(out)
    return Mask(narrow=out)


def _and(s: SimdBuilder, a: Mask | None, b: Mask) -> Mask:
    if a is None:
        return b
    out = s.fb.add_local(V128)
    s.body.get(mask_locals(s, a, 32)[0]).get(mask_locals(s, b, 32)[0]).op("v128.and").set(out)
    return Mask(narrow=out)


def _region(s: SimdBuilder, arm, label: int) -> list[Code] | None:
    """The Code of ``arm`` when it is at most MAX_MASKED instructions of straight-line code that only reads and
    writes registers and cannot trap (the table's effects), ending in ``Br(label)`` to a Block, else None."""
    if not arm or not isinstance(arm[-1], Br) or arm[-1].label != label or label not in s.exits:
        return None
    codes = list(arm[:-1])
    if not all(isinstance(c, Code) for c in codes):
        return None
    indices = [i for c in codes for i in range(c.start, c.end)]
    if len(indices) > MAX_MASKED or not all(_maskable(s.program.instructions[i]) for i in indices):
        return None
    return codes


def _maskable(instr) -> bool:
    effects = instr.INFO.effects
    return effects.order_free and effects.reads <= {"registers"} and not effects.traps


def _run_masked(s: SimdBuilder, codes, mask: Mask) -> None:
    outer = s.active
    s.active = _and(s, outer, mask)
    values, derived = dict(s.values), dict(s.derived)
    for code in codes:
        _code(s, code)
    s.values, s.derived = values, derived
    s.active = outer


def _masked_skip(s: SimdBuilder, stmt: BrIf, rest) -> None:
    """``BrIf`` to a Block's end on a lane mask, then straight-line code and ``Br`` to the same end: the code
    runs in every lane, its definitions kept only where the branch was not taken."""
    mask = _mask_of(s, stmt.test)
    codes = _region(s, tuple(rest), stmt.label)
    if codes is None:
        raise SimdUnsupported("a divergent branch around more than a short region of pure code")
    s.index = stmt.test.index
    _run_masked(s, codes, _not(s, mask))
    _br(s, rest[-1])


def _masked_if(s: SimdBuilder, stmt: If, mask: Mask) -> None:
    """An If on a lane mask whose arms are short regions of pure code that both end at one Block's end:
    both arms run, each keeping its definitions where its side of the test holds."""
    label = stmt.then[-1].label if stmt.then and isinstance(stmt.then[-1], Br) else None
    arms = [_region(s, arm, label) for arm in (stmt.then, stmt.orelse)]
    if label is None or any(codes is None for codes in arms):
        raise SimdUnsupported("a divergent branch around more than a short region of pure code")
    _run_masked(s, arms[0], mask)
    _run_masked(s, arms[1], _not(s, mask))
    _br(s, stmt.then[-1])


def _unsupported(s: SimdBuilder, stmt) -> None:
    raise SimdUnsupported(f"{type(stmt).__name__} in SIMD lane mode")


def _label(label: int) -> str:
    return f"L{label}"


def _scoped(s: SimdBuilder, body) -> None:
    """Walk ``body`` and restore the values and derived forms of before (an arm does not reach its sibling)."""
    values, derived = dict(s.values), dict(s.derived)
    _statements(s, body)
    s.values, s.derived = values, derived


def _code(s: SimdBuilder, stmt: Code) -> None:
    s.run(range(stmt.start, stmt.end))


def _block(s: SimdBuilder, stmt: Block) -> None:
    derived = dict(s.derived)
    s.exits[stmt.label] = None
    with s.body.block(_label(stmt.label)):
        _statements(s, stmt.body)
    exit_values = s.exits.pop(stmt.label)
    if exit_values is not None:
        s.values = exit_values
    s.derived = derived


def _stores(s: SimdBuilder, body) -> bool:
    return any(isinstance(stmt, Code) and any(s.program.instructions[i].INFO.name == "STG"
                                              for i in range(stmt.start, stmt.end)) for stmt in walk(body))


def _jumps(body, label: int | None = None) -> bool:
    """Whether ``body`` branches to ``label`` (None: to any label)."""
    return any(isinstance(stmt, (Br, BrIf)) and label in (None, stmt.label) for stmt in walk(body))


def _stores_before_back(s: SimdBuilder, body, label: int, then_back: bool) -> bool:
    """Whether a store of ``body`` may run before a jump back to loop ``label`` (``then_back``: what runs
    after ``body`` may jump back). An arm that only ends the lane (the code after a loop) does not count."""
    for k, stmt in enumerate(body):
        if not (then_back or _jumps(body[k:], label)):
            return False
        if isinstance(stmt, Code) and _stores(s, (stmt,)):
            return True
        if isinstance(stmt, If) and any(_stores_before_back(s, arm, label, _jumps(arm)) for arm in (stmt.then,
                                                                                                     stmt.orelse)):
            return True
        if isinstance(stmt, (Block, Loop)) and _stores(s, stmt.body):
            return True
    return False


def _loop(s: SimdBuilder, stmt: Loop) -> None:
    if _stores_before_back(s, stmt.body, stmt.label, False):
        s.stored = True  # a later iteration's loads and checks come after this iteration's stores
    s.derived = {}  # forms made before the loop may be of homes the loop writes
    _hoist_checks(s, stmt)
    with s.body.loop(_label(stmt.label)):
        _scoped(s, stmt.body)


def _counted_loop(s: SimdBuilder, stmt: Loop):
    """(the instructions of every iteration, the LOOP instruction) of a loop ``Code…; LOOP`` whose count
    only the LOOP writes and is the same in the step's lanes at entry, else None."""
    *codes, last = stmt.body
    if not (codes and all(isinstance(c, Code) for c in codes) and isinstance(last, If)
            and not last.test.negated and len(last.then) == 2 and isinstance(last.then[0], CountJump)
            and isinstance(last.then[1], Br) and last.then[1].label == stmt.label):
        return None
    loop = s.program.instructions[last.test.index]
    if loop.INFO.name != "LOOP":
        return None
    cycle = [i for c in codes for i in range(c.start, c.end)]
    count = s.values.get((loop.count.index, ("int", 32)))
    if count is None or not isinstance(count[1], _UNIFORM) or _written(s, cycle, (loop.count.index, ("int", 32))):
        return None
    return cycle, loop


def _written(s: SimdBuilder, indices, key) -> list[int]:
    """The instructions of ``indices`` that write register ``key``."""
    return [i for i in indices for (at, path), ty in _defs_of(s, i) if (getattr(s.program.instructions[i], path).index,
                                                                          bank_of(ty)) == key]


def _defs_of(s: SimdBuilder, index: int):
    return [((index, path), ty) for path in ("dst", "count") if (ty := s.info.def_types.get((index, path))) is not None]


def _hoist_checks(s: SimdBuilder, stmt: Loop) -> None:
    """Check before a counted loop its backward jumps against the budget, and the accesses its LDGs make
    through a pointer that advances by a constant once per iteration (``simd_memory.hoist_check``), so the
    iterations do not check them."""
    found = _counted_loop(s, stmt)
    if found is None or s.stored:
        return
    cycle, loop = found
    _, count = s.values[(loop.count.index, ("int", 32))]
    iterations_less_one = s.fb.add_local(I64)
    left = s.fb.add_local(I32)
    push_scalar(s, count, Type.U32)
    s.body.tee(left).get(left).op("i32.eqz").op("i32.eqz").op("i32.sub").op("i64.extend_i32_u")
    s.body.set(iterations_less_one)
    if s.jumps is not None:  # every backward jump of the loop, counted once before it
        s.body_checks = True
        s.body.get(s.jumps).get(iterations_less_one).op("i64.add").tee(s.jumps).get(s.budget).op("i64.gt_u")
        s.stop_if(s.body)
        s.counted.add(stmt.body[-1].test.index)
    for index in cycle:
        instr = s.program.instructions[index]
        if instr.INFO.name != "LDG" or not isinstance(instr.src, Address.RegisterIndirect):
            continue
        key = (instr.src.base.index, ("int", 64))
        pointer = s.values.get(key)
        size = instr.ty.size_bytes()
        if pointer is None or not (isinstance(pointer[1], Scalar) or (isinstance(pointer[1], Strided)
                                                                      and pointer[1].stride == size)):
            continue
        writes = _written(s, cycle, key)
        if len(writes) != 1:
            continue
        add = s.program.instructions[writes[0]]
        if add.INFO.name != "ADD" or add.ty.bits != 64 or add.lhs.index != add.dst.index:
            continue
        step = s.values.get((add.rhs.index, ("int", 64)))
        if (step is None or not isinstance(step[1], Const) or _written(s, cycle, (add.rhs.index, ("int", 64)))
                or not 0 <= step[1].value < 1 << 31 or step[1].value % instr.ty.alignment()):
            continue
        start = pointer[1]
        if writes[0] < index:  # the pointer advanced before the load, in every iteration
            local = s.fb.add_local(I64)
            s.body.get(start.local).i64(step[1].value).op("i64.add").set(local)
            start = Scalar(local) if isinstance(start, Scalar) else Strided(local, start.stride)
        s.hoisted[index] = hoist_check(s, instr, start, step[1].value, iterations_less_one)


def _lane_range(s: SimdBuilder, test) -> LaneRange | None:
    """The lanes for which ``test`` holds, when it is a BRA on a lane-id guard."""
    found = _bra_predicate(s, test, LaneRange)
    if found is None:
        return None
    return found[0].inverted() if found[1] else found[0]


def _guard(s: SimdBuilder, holds: LaneRange) -> bool:
    """Restrict the function to the lanes below the guard's bound; whether the test holds for them."""
    s.guarded_lanes = holds.bound if s.guarded_lanes is None else min(s.guarded_lanes, holds.bound)
    return holds.below


def _push_test(s: SimdBuilder, test) -> None:
    """Push the i32 truth of ``test`` (the same in the step's lanes), running its instruction's effects."""
    s.index = test.index
    s.instr = instr = s.program.instructions[test.index]
    e = s.body
    if instr.INFO.name == "LOOP":
        ty, count = s.read("count")
        if not isinstance(count, _UNIFORM):
            raise SimdUnsupported("a LOOP count that varies in a step")
        left = s.fb.add_local(I32)
        push_scalar(s, count, ty)
        e.tee(left).get(left).op("i32.eqz").op("i32.eqz").op("i32.sub").set(left)
        s.write(Scalar(left), "count")
        e.get(left)
    elif instr.INFO.name == "BRA" and instr.pred is not None:
        pred = predicate_value(s, instr.pred.index)
        if not isinstance(pred, _UNIFORM):
            raise SimdUnsupported("a branch that may diverge in a step")
        push_scalar(s, pred, _PREDICATE)
        if instr.negate:
            e.op("i32.eqz")
    else:
        raise SimdUnsupported(f"a test of {instr.INFO.name}")
    if test.negated:
        e.op("i32.eqz")


def _if(s: SimdBuilder, stmt: If) -> None:
    mask = _mask_of(s, stmt.test)
    if mask is not None:
        _masked_if(s, stmt, mask)
        return
    holds = _lane_range(s, stmt.test)
    if holds is not None:
        arm = stmt.then if _guard(s, holds) else stmt.orelse
        if arm == (EndLane(),):
            raise SimdUnsupported("the guarded lanes are not a prefix of the launch")
        _statements(s, arm)
        return
    _push_test(s, stmt.test)
    with s.body.if_():
        _scoped(s, stmt.then)
        s.body.else_()
        _scoped(s, stmt.orelse)


def _leave(s: SimdBuilder, label: int) -> None:
    if label in s.exits and s.exits[label] is None:
        s.exits[label] = dict(s.values)


def _br(s: SimdBuilder, stmt: Br) -> None:
    _leave(s, stmt.label)
    s.body.br(_label(stmt.label))


def _br_if(s: SimdBuilder, stmt: BrIf) -> None:
    holds = _lane_range(s, stmt.test)
    if holds is not None:
        if _guard(s, holds):
            _br(s, Br(stmt.label, stmt.depth, stmt.crossed))
        return
    _push_test(s, stmt.test)
    _leave(s, stmt.label)
    s.body.br_if(_label(stmt.label))


def _count_jump(s: SimdBuilder, stmt: CountJump) -> None:
    if stmt.index in s.counted:  # counted before its loop (_hoist_checks)
        return
    if s.stored:
        raise SimdUnsupported("a backward jump counted in the step after a store of the step")
    s.body_checks = True
    e = s.body
    e.get(s.jumps).i64(1).op("i64.add").tee(s.jumps).get(s.budget).op("i64.gt_u")
    s.stop_if(e)


def _end_lane(s: SimdBuilder, stmt: EndLane) -> None:
    s.body.br("step")


_STATEMENTS = {Code: _code, Block: _block, Loop: _loop, If: _if, Br: _br, BrIf: _br_if, CountJump: _count_jump,
               EndLane: _end_lane}
