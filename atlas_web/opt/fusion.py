"""Fusion of adjacent cooperative maps (issue 12): which ParallelMap / ParallelMapBinary run as one pass.

``map_chains(program)`` gives the runs of two or more *consecutive* instructions (no lane code, no other
instruction between them) that are each a ParallelMap or ParallelMapBinary of one type over one count.
Lanes go from one to the next without running anything (a cooperative instruction is in grid-uniform code
and is no branch), so a backend may run such a run as one pass over the elements, each element through
every map in order, when that gives the same bits as the maps one after another: when every array one of
them writes is, to every other array of the run, the same array (same start) or disjoint from it (a map's
element i then only meets the element i of the others, after the earlier maps wrote it and before the
later ones did). Where that does not hold at run time, or an operand check of a later map fails, the
backend runs the maps one by one, so traps are the maps' own (code, index, lane -1) and everything a map
before the trapping one wrote is written. The program is not changed: the source map is the identity
for these instructions. Backends fuse at optimization level 1 and above.

``map_reductions(program)`` gives the pairs (map, reduction) of a ParallelMap / ParallelMapBinary in no
chain directly followed by a ParallelReduce of the same type and count: when the reduction's source is the
map's destination (checked at run time), a backend may absorb the map into the reduction, writing each
block of the map's elements just before the reduction reads it, in the reduction's own order (its bits).

What is not fused: maps of different counts or types, maps with any instruction between them (lane
code, a kernel), a single map; a ParallelReduce joins no chain. Standard library only.
"""

from __future__ import annotations

__all__ = ["MAPS", "map_chains", "map_reductions"]

#: the cooperative instructions a chain is made of
MAPS = frozenset({"ParallelMap", "ParallelMapBinary"})


def map_chains(program) -> tuple[tuple[int, ...], ...]:
    """The maximal runs (instruction indices, in order) of two or more consecutive ParallelMap /
    ParallelMapBinary instructions of one type and one count (see the module docstring)."""
    chains: list[tuple[int, ...]] = []
    run: list[int] = []
    for index, instr in enumerate(program.instructions):
        if instr.INFO.name in MAPS and instr.count > 0:
            first = program.instructions[run[0]] if run else None
            if first is not None and (first.ty, first.count) == (instr.ty, instr.count):
                run.append(index)
                continue
            if len(run) > 1:
                chains.append(tuple(run))
            run = [index]
            continue
        if len(run) > 1:
            chains.append(tuple(run))
        run = []
    if len(run) > 1:
        chains.append(tuple(run))
    return tuple(chains)


def map_reductions(program) -> tuple[tuple[int, int], ...]:
    """The (map, ParallelReduce) pairs of consecutive instructions of one type and count whose map is in no
    chain of ``map_chains`` (see the module docstring)."""
    chained = {index for chain in map_chains(program) for index in chain}
    instructions = program.instructions
    return tuple((index, index + 1) for index, (instr, after) in enumerate(zip(instructions, instructions[1:]))
                 if instr.INFO.name in MAPS and after.INFO.name == "ParallelReduce" and index not in chained
                 and instr.count > 0 and (instr.ty, instr.count) == (after.ty, after.count))
