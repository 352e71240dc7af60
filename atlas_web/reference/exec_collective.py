"""Executor rules of the collectives (rows of category "collective"): AllReduce, AllGather, Broadcast,
ReduceScatter.

The executable form of docs/semantics.md, "Collectives", for one backend alone: a group of one device (the
verifier refuses ``devices`` > 1 there; atlas_web.distributed runs larger groups). Each array is checked
(handle, bounds, alignment) over its whole extent, in operand order, before anything is written
(``exec_cooperative.checked_arrays``); then

    AllReduce, Broadcast:  nothing changes (the reduction over one device is its own value, the root is this one)
    AllGather, ReduceScatter:  output[0:n] = input[0:n], copied as bytes (NaN payloads and -0 kept, bit for bit)

so a trap names the first bad operand, lane -1, and a launch that passed leaves every other byte unchanged.
"""

from __future__ import annotations

from .exec_cooperative import CooperativeStep, checked_arrays

__all__ = ["COLLECTIVE_RULES"]


def _identity(step: CooperativeStep) -> None:
    checked_arrays(step)


def _copy(step: CooperativeStep) -> None:
    arrays = checked_arrays(step)
    source, output = arrays["input"], arrays["output"]
    nbytes = step.instr.n * step.instr.ty.size_bytes()
    data = source.data[source.offset:source.offset + nbytes].copy()   # input and output may overlap
    output.data[output.offset:output.offset + nbytes] = data


COLLECTIVE_RULES = {"AllReduce": _identity, "AllGather": _copy, "Broadcast": _identity,
                    "ReduceScatter": _copy}
