"""Reaching definitions of registers and predicates over a ControlFlowGraph.

Every definition has an id. Ids ``0 … NUM_LOCATIONS - 1`` are the *entry
definitions*, the value each location holds when a lane starts (zero or
false, a preset register, a special register); the others are instructions
writing a location, numbered in program order. Sets of definitions are Python
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

__all__ = ["ReachingDefinitions", "reaching_definitions", "bit_indices", "ENTRY_DEFINITIONS"]

#: the bit set of every entry definition
ENTRY_DEFINITIONS = (1 << NUM_LOCATIONS) - 1


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
    """``sites[id] = (instruction index or -1 for entry, operand path, location)``;
    ``def_ids[i]`` the ``(location, id)`` pairs instruction ``i`` writes; ``use_ids[(i, path)]``
    the ids of the definitions reaching that read, lowest first (absent: none, unreachable code)."""

    sites: list[tuple[int, str, int]]
    def_ids: list[list[tuple[int, int]]]
    use_ids: dict[tuple[int, str], list[int]]


def reaching_definitions(cfg: ControlFlowGraph, reads: list[list[OperandAccess]],
                         writes: list[list[OperandAccess]]) -> ReachingDefinitions:
    """Solve reaching definitions for every read of the program. ``cfg.call_order()`` must
    succeed (no recursion: check ``cfg.call_cycle()`` first)."""
    sites: list[tuple[int, str, int]] = [(-1, "", loc) for loc in range(NUM_LOCATIONS)]
    masks = [1 << loc for loc in range(NUM_LOCATIONS)]
    def_ids: list[list[tuple[int, int]]] = []
    for index, instr_writes in enumerate(writes):
        ids = []
        for acc in instr_writes:
            ident = len(sites)
            sites.append((index, acc.path, acc.location))
            masks[acc.location] |= 1 << ident
            ids.append((acc.location, ident))
        def_ids.append(ids)

    blocks = cfg.blocks
    gen: list[int] = []
    keep: list[int] = []  # ~kill
    for blk in blocks:
        last: dict[int, int] = {}
        for index in range(blk.start, blk.end):
            for loc, ident in def_ids[index]:
                last[loc] = ident
        g = k = 0
        for loc, ident in last.items():
            g |= 1 << ident
            k |= masks[loc]
        gen.append(g)
        keep.append(~k)
    callee_of = {blk.id: blk.target for blk in blocks if blk.terminator is Terminator.CALL}
    summaries: dict[int, tuple[int, int]] = {}

    def solve(entry: int, entry_bits: int) -> tuple[dict[int, int], dict[int, int]]:
        proc = cfg.procedures[entry]
        ins: dict[int, int] = {}
        outs: dict[int, int] = {}
        changed = True
        while changed:
            changed = False
            for b in proc.blocks:
                state = entry_bits if b == proc.entry_block else 0
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
        _, outs = solve(entry, ENTRY_DEFINITIONS)
        at_return = 0
        for b in proc.returns:
            at_return |= outs[b]
        pass_mask = 0
        for loc in bit_indices(at_return & ENTRY_DEFINITIONS):
            pass_mask |= masks[loc]
        summaries[entry] = (at_return & ~ENTRY_DEFINITIONS, pass_mask)

    entry_state = dict.fromkeys(order, 0)
    entry_state[0] = ENTRY_DEFINITIONS
    use_bits: dict[tuple[int, str], int] = {}
    for entry in order:
        proc = cfg.procedures[entry]
        ins, _ = solve(entry, entry_state[entry])
        for b in proc.blocks:
            blk = blocks[b]
            state = ins[b]
            local: dict[int, int] = {}
            for index in range(blk.start, blk.end):
                for acc in reads[index]:
                    ident = local.get(acc.location)
                    bits = (1 << ident) if ident is not None else (state & masks[acc.location])
                    key = (index, acc.path)
                    use_bits[key] = use_bits.get(key, 0) | bits
                for loc, ident in def_ids[index]:
                    local[loc] = ident
            callee = callee_of.get(b)
            if callee is not None and callee in entry_state:
                entry_state[callee] |= gen[b] | (state & keep[b])
    return ReachingDefinitions(sites, def_ids, {key: bit_indices(bits) for key, bits in use_bits.items()})
