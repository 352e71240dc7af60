"""A program as the executor runs it: segments between its collectives, and each device's own handles.

Standard library only. The executor runs each segment as a launch on every device, then the collective that ends
it across the devices (atlas_web.distributed.collectives). A collective must stand at the program's top level:
no jump may cross it (ProgramError naming the jump), and registers do not survive it (each segment is a launch of
its own; keep values that cross a collective in memory).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import AtlasTrap, ProgramError
from ..isa.addresses import Address
from ..isa.registers import Label
from ..program import Program

__all__ = ["Segment", "split_at_collectives", "with_handles", "program_with_handles", "device_launch", "run_placed",
           "COLLECTIVES"]

COLLECTIVES = frozenset({"AllReduce", "AllGather", "Broadcast", "ReduceScatter"})


@dataclass(frozen=True)
class Segment:
    """``program`` (None when empty) then ``collective`` (None after the last segment); ``start``: the index in
    the source program of the segment's first instruction."""

    program: Program | None
    collective: object
    start: int
    collective_index: int | None


def _labels_used(instr) -> set[str]:
    return {value.name for value in _values(instr) if isinstance(value, Label)}


def _values(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, (type, Label)):
        for f in dataclasses.fields(value):
            yield from _values(getattr(value, f.name))
    else:
        yield value


def split_at_collectives(program: Program) -> list[Segment]:
    """The segments of ``program`` at its collectives. Raises ProgramError for a jump that crosses one."""
    cuts = [i for i, instr in enumerate(program.instructions) if instr.INFO.name in COLLECTIVES]
    bounds = list(zip([0] + [c + 1 for c in cuts], cuts + [len(program.instructions)]))
    segments = []
    for (start, end), cut in zip(bounds, cuts + [None]):
        labels = {name: at - start for name, at in program.labels.items() if start <= at <= end}
        for index in range(start, end):
            outside = _labels_used(program.instructions[index]) - labels.keys()
            if outside:
                raise ProgramError(f"{program.instructions[index]} jumps to "
                                   f"{', '.join(sorted(outside))} across a collective: under a MultiDeviceExecutor "
                                   "collectives stand at the program's top level", index=index)
        body = Program(program.instructions[start:end], labels) if end > start else None
        segments.append(Segment(body, None if cut is None else program.instructions[cut], start, cut))
    return segments


def with_handles(instr, handles: dict[int, int]):
    """``instr`` with every Address.BufferOffset whose handle ``handles`` maps replaced by the mapped handle."""
    changes = {}
    for f in dataclasses.fields(instr):
        value = getattr(instr, f.name)
        if isinstance(value, Address.BufferOffset) and value.handle in handles:
            changes[f.name] = Address.BufferOffset(handles[value.handle], value.offset)
    return dataclasses.replace(instr, **changes) if changes else instr


def device_launch(program: Program, placed: dict[int, int], launch, registers: dict, pointers: dict) -> tuple:
    """(program, ExecutionParams) of one device's launch: ``program`` naming the device buffers ``placed`` maps
    logical handles to, ``registers`` presets plus each ``pointers`` register (Register -> logical handle) holding
    the pointer (u64) to its device buffer."""
    from ..isa.addresses import make_pointer
    from ..isa.types import Type
    from ..launch import ExecutionParams
    presets = dict(registers)
    for register, handle in pointers.items():
        presets[register] = (Type.U64, make_pointer(placed[handle], 0))
    return program_with_handles(program, placed), ExecutionParams(launch, presets)


def program_with_handles(program: Program, handles: dict[int, int]) -> Program:
    """``program`` naming each device buffer ``handles`` maps its logical handle to."""
    return Program([with_handles(instr, handles) for instr in program.instructions], dict(program.labels))


def run_placed(backend, program: Program, launch, registers: dict, pointers: dict,
               buffers: list) -> tuple[AtlasTrap | None, list[bytes]]:
    """On ``backend``: allocate and fill one buffer per (logical handle, bytes) of ``buffers``, run ``program``
    (its BufferOffsets and the ``pointers`` registers, Register -> logical handle, naming them) with ``launch``
    (None: no blocks here), read every buffer back and free them: (the launch's AtlasTrap or None, the buffers'
    bytes, empty after a trap). One call where a device is remote (a Dask worker runs it whole)."""
    placed: dict[int, int] = {}
    try:
        for handle, data in buffers:
            placed[handle] = int(backend.allocate_buffer(max(1, len(data))))
            if data:
                backend.copy_to_buffer(placed[handle], data)
        if launch is not None:
            try:
                backend.execute_program_with_params(*device_launch(program, placed, launch, registers, pointers))
            except AtlasTrap as trap:
                return trap, []
        return None, [bytes(backend.copy_from_buffer(placed[handle], bytearray(len(data)))) if data else b""
                      for handle, data in buffers]
    finally:
        for handle in placed.values():
            backend.free_buffer(handle)
