"""The collectives across devices: each device's array is a ``Placement`` (its backend, handle, byte offset).

Standard library only. Every function checks every device's range first (ProgramError naming the device, the
operand and the sizes) and only then writes, so a refused collective changes nothing. Data moves between devices
as bytes through the host (one copy out of each device, one copy into each).

**Combination order (AllReduce, ReduceScatter).** The reduction is computed on rank 0's backend as a chain of
``ParallelMapBinary`` launches, ``acc = b0; acc = acc op b1; acc = acc op b2; ...`` in rank order, each element
rounded to ``ty`` as that instruction rounds (IEEE per element: the same bits on every backend). The order
depends on nothing but the ranks, so the bits never depend on timing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import ProgramError
from ..isa import Address, BinaryMapOperation, ParallelMapBinary, ReduceOperation
from ..isa.types import Type
from ..launch import LaunchConfig
from ..program import Program

__all__ = ["Placement", "all_reduce", "all_gather", "broadcast", "reduce_scatter", "fold_parts", "COMBINE",
           "collective_arrays", "collective_results", "group_size"]

#: reduction -> the element-wise operation that folds two devices' values
COMBINE = {ReduceOperation.Sum: BinaryMapOperation.Add, ReduceOperation.Product: BinaryMapOperation.Mul,
           ReduceOperation.Min: BinaryMapOperation.Min, ReduceOperation.Max: BinaryMapOperation.Max}


@dataclass(frozen=True)
class Placement:
    """One device's array: ``backend``'s buffer ``handle`` from byte ``offset``."""

    backend: Any
    handle: int
    offset: int = 0


def _check(places: Sequence[Placement], nbytes: int, what: str) -> None:
    for rank, place in enumerate(places):
        size = place.backend.buffer_size(place.handle)
        if place.offset + nbytes > size:
            raise ProgramError(f"{what} on device {rank}: bytes {place.offset}..{place.offset + nbytes} lie "
                               f"outside its buffer of {size} bytes")


def _read(place: Placement, nbytes: int) -> bytes:
    return bytes(place.backend.copy_from_buffer(place.handle, bytearray(nbytes), place.offset)) if nbytes else b""


def _write_all(places: Sequence[Placement], data: bytes) -> None:
    if data:
        for place in places:
            place.backend.copy_to_buffer(place.handle, data, place.offset)


def _folded(places: Sequence[Placement], n: int, ty: Type, reduction: ReduceOperation) -> bytes:
    """The bytes of the reduction of every device's ``n`` elements, folded left to right in rank order on rank
    0's backend (ranges already checked)."""
    nbytes = n * ty.size_bytes()
    return fold_parts(places[0].backend, [_read(place, nbytes) for place in places], n, ty, reduction)


def fold_parts(backend, parts: Sequence[bytes], n: int, ty: Type, reduction: ReduceOperation) -> bytes:
    """``parts[0] op parts[1] op ...`` (each ``n`` elements of ``ty``), folded left to right on ``backend`` as a
    chain of ParallelMapBinary launches. Raises UnsupportedOperation, AtlasTrap from those launches."""
    nbytes = n * ty.size_bytes()
    if not nbytes or len(parts) == 1:
        return bytes(parts[0])
    acc, other = int(backend.allocate_buffer(nbytes)), int(backend.allocate_buffer(nbytes))
    try:
        backend.copy_to_buffer(acc, parts[0])
        fold = Program([ParallelMapBinary(dst_array=Address.BufferOffset(acc), src_a=Address.BufferOffset(acc),
                                          src_b=Address.BufferOffset(other), count=n, operation=COMBINE[reduction],
                                          ty=ty)], {})
        for part in parts[1:]:
            backend.copy_to_buffer(other, part)
            backend.execute_program(fold, LaunchConfig())
        return _read(Placement(backend, acc), nbytes)
    finally:
        backend.free_buffer(acc)
        backend.free_buffer(other)


def all_reduce(places: Sequence[Placement], n: int, ty: Type, reduction: ReduceOperation) -> None:
    """Every device's ``n`` elements := their reduction over the devices, folded left to right in rank order on
    rank 0's backend. Raises ProgramError (a range outside a buffer), UnsupportedOperation (rank 0's backend has
    no ParallelMapBinary for ``ty``), AtlasTrap from that launch (nothing written then)."""
    _check(places, n * ty.size_bytes(), "AllReduce buffer")
    if len(places) > 1:
        _write_all(places, _folded(places, n, ty, reduction))


def reduce_scatter(outputs: Sequence[Placement], inputs: Sequence[Placement], n: int, ty: Type,
                   reduction: ReduceOperation) -> None:
    """Device d's output[0:n] := elements [d*n, (d+1)*n) of the reduction of every device's input (n * devices
    elements), folded as ``all_reduce`` folds. Raises as ``all_reduce``."""
    nbytes = n * ty.size_bytes()
    _check(inputs, nbytes * len(inputs), "ReduceScatter input")
    _check(outputs, nbytes, "ReduceScatter output")
    folded = _folded(inputs, n * len(inputs), ty, reduction)
    for rank, place in enumerate(outputs):
        if nbytes:
            place.backend.copy_to_buffer(place.handle, folded[rank * nbytes:(rank + 1) * nbytes], place.offset)


def all_gather(outputs: Sequence[Placement], inputs: Sequence[Placement], n: int, ty: Type) -> None:
    """Every device's output[d*n : (d+1)*n] := device d's input[0:n] (output holds n * devices elements), bytes
    as they are. Raises ProgramError (a range outside a buffer)."""
    nbytes = n * ty.size_bytes()
    _check(inputs, nbytes, "AllGather input")
    _check(outputs, nbytes * len(inputs), "AllGather output")
    _write_all(outputs, b"".join(_read(place, nbytes) for place in inputs))


def broadcast(places: Sequence[Placement], n: int, ty: Type, root: int) -> None:
    """Every device's ``n`` elements := device ``root``'s, bytes as they are. Raises ProgramError (a root outside
    the group, a range outside a buffer)."""
    if not 0 <= root < len(places):
        raise ProgramError(f"Broadcast root {root} is not a device of the group of {len(places)}")
    nbytes = n * ty.size_bytes()
    _check(places, nbytes, "Broadcast buffer")
    _write_all(places, _read(places[root], nbytes))


def group_size(instr, devices: int) -> int:
    """The size of collective ``instr``'s groups under an executor of ``devices`` devices (its ``devices``
    operand; 0: all of them). The groups are consecutive ranks: on a mesh (mx, my, mz), a group of mx devices is
    a row (one y, z)."""
    return instr.devices or devices


def collective_arrays(instr, devices: int) -> tuple[tuple[str, int], tuple[str, int]]:
    """A collective instruction's (input operand, bytes each device contributes) and (output operand, bytes
    written on each device) under an executor of ``devices`` devices (its groups: ``group_size``)."""
    devices = group_size(instr, devices)
    nbytes, name = instr.n * instr.ty.size_bytes(), instr.INFO.name
    if name == "AllGather":
        return ("input", nbytes), ("output", nbytes * devices)
    if name == "ReduceScatter":
        return ("input", nbytes * devices), ("output", nbytes)
    return ("buffer", nbytes), ("buffer", nbytes)


def collective_results(instr, parts: Sequence[bytes], backend) -> list[bytes]:
    """What each device's output array of collective ``instr`` holds after it, from every device's input bytes
    ``parts`` (rank order), group by group (``group_size``: consecutive ranks); reductions folded on ``backend``
    (``fold_parts``), left to right in rank order within the group. Raises as ``fold_parts``."""
    size = group_size(instr, len(parts))
    return [result for first in range(0, len(parts), size)
            for result in _group_results(instr, parts[first:first + size], backend)]


def _group_results(instr, parts: Sequence[bytes], backend) -> list[bytes]:
    name, devices = instr.INFO.name, len(parts)
    if name == "AllGather":
        return [b"".join(parts)] * devices
    if name == "Broadcast":
        return [bytes(parts[instr.root])] * devices
    count = instr.n * (devices if name == "ReduceScatter" else 1)
    folded = fold_parts(backend, parts, count, instr.ty, instr.reduction)
    if name == "AllReduce":
        return [folded] * devices
    nbytes = instr.n * instr.ty.size_bytes()
    return [folded[rank * nbytes:(rank + 1) * nbytes] for rank in range(devices)]
