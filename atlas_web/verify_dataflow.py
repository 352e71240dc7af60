"""Reaching definitions of registers and predicates over a ControlFlowGraph.

Every definition has an id; the ids of one location are consecutive, its
*entry definition* first (the value it holds when a lane starts: zero or
false, a preset register, a special register), then the instructions writing
it in program order. Sets of definitions are Python
ints used as bit sets (one bit per id), so a block's transfer is
``gen | (in & ~kill)``.

Calls compose by summaries, so only realizable call/return paths count:

* bottom-up over the call graph, each subroutine is solved with the entry
  definitions standing for "the value at the call"; what reaches its RETs
  gives ``gen`` (definitions made inside) and the locations some path leaves
  untouched, whose definitions pass through the call (``pass_mask``);
* top-down, the main procedure is solved from the real entry definitions and
  each subroutine from the union of the states at all its call sites (one
  code serves every caller, so each use inside it sees every caller's
  definitions).

A use's reaching definitions are the union over every procedure holding it.
Code in no procedure (unreachable) has none.
"""

from __future__ import annotations

from dataclasses import dataclass

from .lowering.cfg import ControlFlowGraph, Terminator
from .verify_operands import NUM_LOCATIONS, OperandAccess

__all__ = ["ReachingDefinitions", "reaching_definitions", "bit_indices"]


def bit_indices(bits: int) -> list[int]:
    """The positions of the set bits of ``bits``, lowest first."""
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


@dataclass(frozen=True)
class ReachingDefinitions:
    """The definitions and what reaches each read.

    ``sites[id] = (instruction index or -1 for entry, operand path, location)``;
    ``entry_ids[location]`` the id of its entry definition; ``def_ids[i]`` the ids instruction
    ``i`` defines, in the order of its writes; ``use_ids[i]`` (in the order of its reads) the
    ids of the definitions reaching each read, lowest first, or None for unreachable code.
    The ids of one location are consecutive.
    """

    sites: list[tuple[int, str, int]]
    entry_ids: list[int]
    def_ids: list[list[int]]
    use_ids: list[list[list[int]] | None]


def reaching_definitions(cfg: ControlFlowGraph, reads: list[list[OperandAccess]],
                         writes: list[list[OperandAccess]]) -> ReachingDefinitions:
    """Solve reaching definitions for every read of the program. ``cfg.call_order()`` must
    succeed (no recursion: check ``cfg.call_cycle()`` first)."""
    counts = [1] * NUM_LOCATIONS
    for instr_writes in writes:
        for acc in instr_writes:
            counts[acc.location] += 1
    base: list[int] = []
    total = 0
    for count in counts:
        base.append(total)
        total += count
    widths = [(1 << count) - 1 for count in counts]
    masks = [w << b for w, b in zip(widths, base)]
    sites: list[tuple[int, str, int]] = [(-1, "", 0)] * total
    for loc, b in enumerate(base):
        sites[b] = (-1, "", loc)
    following = [b + 1 for b in base]
    def_ids: list[list[int]] = []
    for index, instr_writes in enumerate(writes):
        ids = []
        for acc in instr_writes:
            ident = following[acc.location]
            following[acc.location] = ident + 1
            sites[ident] = (index, acc.path, acc.location)
            ids.append(ident)
        def_ids.append(ids)
    entry_bits = 0
    for b in base:
        entry_bits |= 1 << b

    blocks = cfg.blocks
    gen: list[int] = []
    keep: list[int] = []  # ~kill
    for blk in blocks:
        last: dict[int, int] = {}
        for index in range(blk.start, blk.end):
            for acc, ident in zip(writes[index], def_ids[index]):
                last[acc.location] = ident
        g = k = 0
        for loc, ident in last.items():
            g |= 1 << ident
            k |= masks[loc]
        gen.append(g)
        keep.append(~k)
    callee_of = {blk.id: blk.target for blk in blocks if blk.terminator is Terminator.CALL}
    summaries: dict[int, tuple[int, int]] = {}

    def solve(entry: int, entry_state: int) -> tuple[dict[int, int], dict[int, int]]:
        proc = cfg.procedures[entry]
        ins: dict[int, int] = {}
        outs: dict[int, int] = {}
        changed = True
        while changed:
            changed = False
            for b in proc.blocks:
                state = entry_state if b == proc.entry_block else 0
                for pred in blocks[b].predecessors:
                    state |= outs.get(pred, 0)
                ins[b] = state
                out = gen[b] | (state & keep[b])
                callee = callee_of.get(b)
                if callee is not None:
                    s_gen, s_pass = summaries.get(callee, (0, 0))
                    out = s_gen | (out & s_pass)
                if outs.get(b) != out:
                    outs[b] = out
                    changed = True
        return ins, outs

    order = cfg.call_order()
    for entry in reversed(order):
        proc = cfg.procedures[entry]
        if proc.is_main:
            continue
        _, outs = solve(entry, entry_bits)
        at_return = 0
        for b in proc.returns:
            at_return |= outs[b]
        pass_mask = 0
        for loc, b in enumerate(base):
            if (at_return >> b) & 1:
                pass_mask |= masks[loc]
        summaries[entry] = (at_return & ~entry_bits, pass_mask)

    entry_states = dict.fromkeys(order, 0)
    entry_states[0] = entry_bits
    found: list[list[int] | None] = [None] * len(reads)  # per read: bits relative to its location's first id
    for entry in order:
        proc = cfg.procedures[entry]
        ins, _ = solve(entry, entry_states[entry])
        for b in proc.blocks:
            blk = blocks[b]
            state = ins[b]
            local: dict[int, int] = {}
            for index in range(blk.start, blk.end):
                instr_reads = reads[index]
                row = found[index]
                if row is None:
                    row = found[index] = [0] * len(instr_reads)
                for k, acc in enumerate(instr_reads):
                    loc = acc.location
                    ident = local.get(loc)
                    if ident is None:
                        row[k] |= (state >> base[loc]) & widths[loc]
                    else:
                        row[k] |= 1 << (ident - base[loc])
                for acc, ident in zip(writes[index], def_ids[index]):
                    local[acc.location] = ident
            callee = callee_of.get(b)
            if callee is not None and callee in entry_states:
                entry_states[callee] |= gen[b] | (state & keep[b])
    use_ids: list[list[list[int]] | None] = [None] * len(reads)
    for index, row in enumerate(found):
        if row is not None:
            use_ids[index] = [[base[acc.location] + bits.bit_length() - 1] if bits and not bits & (bits - 1)
                              else [base[acc.location] + j for j in bit_indices(bits)]
                              for acc, bits in zip(reads[index], row)]
    return ReachingDefinitions(sites, base, def_ids, use_ids)
