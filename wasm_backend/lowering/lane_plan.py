"""LanePlan: what the per-lane function of a program needs before any code is written.

* **dispatch blocks**: a block starts at instruction 0, at every branch/call/loop target, after every
  control instruction and after every synchronization point (BarSync and cooperative instructions,
  where a lane stops and later resumes). Blocks are laid out in instruction order inside a dispatch
  loop (a ``br_table`` over a block-number local), so any control-flow graph, reducible or not,
  lowers without restructuring; falling through to the next block costs nothing. This is the
  design notes' documented fallback, used for every program that branches.
* **registers**: the (register, bank) pairs each instruction reads and writes, from the verifier's
  ``use_types``/``def_types``; the extended-integer registers, which live in the lane record;
  the special registers the program reads.
* **liveness** (backward data flow over instructions; a RET flows to the return site of every
  CALL, a conservative supergraph) gives the registers and predicates live across a
  synchronization point: they are spilled to the lane record when a lane stops and reloaded when
  it resumes.
* **record layout**: the per-lane record in linear memory (status, call stack pointer, budget
  counter, phase, call stack, spill slots, extended registers, extended temporaries).

Nothing here emits code or raises for valid (verified) programs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atlas_web.isa.opcodes import ExecKind, OperandKind
from atlas_web.isa.registers import FIRST_SPECIAL_REGISTER, SpecialRegister
from atlas_web.isa.types import Type

from .typemap import bank_of

__all__ = ["LanePlan", "plan_lanes", "RECORD_STATUS", "RECORD_SP", "RECORD_JUMPS", "RECORD_PHASE",
           "RECORD_CALLS", "EXT_TEMPORARIES", "STATUS_FRESH", "STATUS_ENDED", "STATUS_RESUME"]

RECORD_STATUS = 0
RECORD_SP = 4
RECORD_JUMPS = 8
RECORD_PHASE = 16
RECORD_CALLS = 24
#: record status: not started, ended (or trapped), resume at block ``status - STATUS_RESUME``
STATUS_FRESH = 0
STATUS_ENDED = 1
STATUS_RESUME = 2
#: extended-integer temporaries per lane record (operand magnitudes, quotient, remainder, product)
EXT_TEMPORARIES = 5

def _align(value: int, to: int) -> int:
    return (value + to - 1) // to * to


def _register_at(instr, path: str):
    field_name, _, sub = path.partition(".")
    value = getattr(instr, field_name)
    return getattr(value, sub) if sub else value


@dataclass
class LanePlan:
    """The dispatch blocks, register use, liveness and record layout of one program (see module doc)."""

    length: int
    leaders: list[int]
    block_of: dict[int, int]
    targets: dict[int, int]
    barriers: tuple[int, ...]
    cooperative: tuple[int, ...]
    #: per instruction: [(path, register index, Type)] read / written (registers r0..r242 and specials)
    reads: list[list[tuple[str, int, Type]]]
    writes: list[list[tuple[str, int, Type]]]
    specials: set[SpecialRegister]
    #: (register, bank) -> the type of the first native definition or use seen (its local's type)
    native: dict[tuple[int, object], Type]
    #: (register, bits) -> byte offset of an extended register in the record
    ext_slots: dict[tuple[int, int], int]
    ext_temp: int
    ext_temp_bytes: int
    #: spilled across synchronization points: (register, bank) -> record offset; predicate -> offset
    spill_slots: dict[tuple[int, object], int]
    spill_preds: dict[int, int]
    call_depth: int
    record_size: int
    #: registers/predicates that a lane may read before writing (need their entry value)
    entry_live: set = field(default_factory=set)
    #: whether the program frees pools (static pool handles must then be checked at run time)
    frees_pools: bool = False

    @property
    def sync(self) -> bool:
        """Whether lanes stop and resume (barriers or cooperative instructions)."""
        return bool(self.barriers or self.cooperative)

    @property
    def needs_record(self) -> bool:
        return self.sync or bool(self.ext_slots) or self.call_depth > 0

    @property
    def straight(self) -> bool:
        """One block and no resume points: the lane code needs no dispatch loop."""
        return len(self.leaders) == 1 and not self.sync

    def resume_block(self, index: int) -> int:
        """The dispatch block where a lane stopped at synchronization point ``index`` resumes."""
        return self.block_of[index + 1] if index + 1 < self.length else len(self.leaders)


def _successors(program, info, index: int, returns: list[int]) -> list[int]:
    instr = program.instructions[index]
    name = instr.INFO.name
    end = len(program)
    nxt = [index + 1] if index + 1 < end else []
    target = info.targets.get(index)
    tgt = [target] if target is not None and target < end else []
    if name == "BRA":
        return tgt + nxt if instr.pred is not None else tgt
    if name == "LOOP":
        return tgt + nxt
    if name == "CALL":
        return tgt
    if name == "RET":
        return [r for r in returns if r < end]
    if name == "EXIT":
        return []
    return nxt


def plan_lanes(program, info) -> LanePlan:
    """The LanePlan of a verified ``program`` with its ProgramInfo ``info``."""
    instructions = program.instructions
    n = len(instructions)
    reads: list[list[tuple[str, int, Type]]] = [[] for _ in range(n)]
    writes: list[list[tuple[str, int, Type]]] = [[] for _ in range(n)]
    for (index, path), ty in info.use_types.items():
        reads[index].append((path, _register_at(instructions[index], path).index, ty))
    for (index, path), ty in info.def_types.items():
        writes[index].append((path, _register_at(instructions[index], path).index, ty))
    for lst in reads + writes:
        lst.sort()

    leaders = {0}
    for index, instr in enumerate(instructions):
        kind = instr.INFO.kind
        if index in info.targets and info.targets[index] < n:
            leaders.add(info.targets[index])
        if kind in (ExecKind.CONTROL, ExecKind.COOPERATIVE) or instr.INFO.name == "BarSync":
            if index + 1 < n:
                leaders.add(index + 1)
    ordered = sorted(leaders)
    block_of = {start: k for k, start in enumerate(ordered)}

    specials: set[SpecialRegister] = set()
    native: dict[tuple[int, object], Type] = {}
    ext_keys: list[tuple[int, int]] = []
    for lst in reads + writes:
        for _path, reg, ty in lst:
            if reg >= FIRST_SPECIAL_REGISTER:
                specials.add(SpecialRegister(reg))
            elif ty.is_extended():
                if (reg, ty.bits) not in ext_keys:
                    ext_keys.append((reg, ty.bits))
            else:
                native.setdefault((reg, bank_of(ty)), ty)
    for reg, ty in info.preset_types.items():
        if ty.is_extended():
            if (reg.index, ty.bits) not in ext_keys:
                ext_keys.append((reg.index, ty.bits))
        else:
            native.setdefault((reg.index, bank_of(ty)), ty)

    returns = [i + 1 for i, ins in enumerate(instructions) if ins.INFO.name == "CALL"]
    live_in = _liveness(program, info, reads, writes, returns)
    cooperative = tuple(info.cooperative)
    barriers = tuple(info.barriers)
    spill_keys: list = []
    for stop in sorted(cooperative + barriers):
        for key in sorted(live_in[stop] | (live_in[stop + 1] if stop + 1 < n else set()), key=repr):
            if key not in spill_keys:
                spill_keys.append(key)

    depth = int(info.max_call_depth or 0)
    offset = RECORD_CALLS + 4 * depth
    offset = _align(offset, 8)
    spill_slots: dict[tuple[int, object], int] = {}
    spill_preds: dict[int, int] = {}
    for key in spill_keys:
        if key[0] == "p":
            spill_preds[key[1]] = offset
            offset += 8
        elif key[0] < FIRST_SPECIAL_REGISTER and key in native:
            spill_slots[key] = offset
            offset += 8
    ext_slots: dict[tuple[int, int], int] = {}
    widest = 0
    for key in ext_keys:
        ext_slots[key] = offset
        offset += key[1] // 8
        widest = max(widest, key[1] // 8)
    ext_temp = offset
    ext_temp_bytes = EXT_TEMPORARIES * widest
    offset = _align(offset + ext_temp_bytes, 16)
    entry_live = live_in[0] if n else set()
    return LanePlan(n, ordered, block_of, dict(info.targets), barriers, cooperative, reads, writes, specials,
                    native, ext_slots, ext_temp, ext_temp_bytes, spill_slots, spill_preds, depth, offset,
                    set(entry_live), any(ins.INFO.name == "PoolFree" for ins in instructions))


def _keys(lst: list[tuple[str, int, Type]]) -> set:
    return {(reg, bank_of(ty)) for _path, reg, ty in lst if not ty.is_extended()}


def _pred_keys(instr, access_write: bool) -> set:
    out = set()
    for op in instr.INFO.operands:
        if op.kind in (OperandKind.PRED, OperandKind.OPT_PRED):
            pred = getattr(instr, op.name)
            if pred is None:
                continue
            writes = op.access.value != "r"
            if writes == access_write:
                out.add(("p", pred.index))
    return out


def _liveness(program, info, reads, writes, returns) -> list[set]:
    n = len(program)
    uses = [_keys(reads[i]) | _pred_keys(program.instructions[i], False) for i in range(n)]
    defs = [_keys(writes[i]) | _pred_keys(program.instructions[i], True) for i in range(n)]
    succs = [_successors(program, info, i, returns) for i in range(n)]
    live_in: list[set] = [set() for _ in range(n)]
    changed = True
    while changed:
        changed = False
        for i in range(n - 1, -1, -1):
            out: set = set()
            for s in succs[i]:
                out |= live_in[s]
            new = uses[i] | (out - defs[i])
            if new != live_in[i]:
                live_in[i] = new
                changed = True
    return live_in
