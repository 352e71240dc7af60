"""MultiDeviceExecutor: one program over several local backends (any mix: wasm instances, cpu, webgpu).

Standard library only. ``execute_distributed(program, DataParallel(config))`` splits the launch's blocks across
the devices arranged as its mesh (``mesh.split_grid``), places each DistributedBuffer the program names
(Replicated: whole on every device; Sharded, Tiled: each device the elements of its lanes), runs the program's
segments between collectives on every device and each collective across them (``collectives``), and copies the
buffers back only when every device finished: a trap or a refusal changes no DistributedBuffer. Device memory
is allocated per launch and freed after it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from ..errors import AtlasTrap, ExecutionFailed, ProgramError
from ..isa.addresses import Address
from ..isa.enums import ReduceOperation
from ..isa.types import Type
from ..launch import LaunchConfig
from ..program import Program
from . import collectives
from .buffers import FIRST_LOGICAL_HANDLE, DistributedBuffer
from .collectives import Placement, collective_arrays, collective_results, group_size
from .device_threads import DeviceThreads
from .layouts import DataParallel, Replicated, Sharded, Tiled, element_runs
from .mesh import check_mesh, split_grid
from .program_split import device_launch, run_placed, split_at_collectives
from .stages import Hybrid, ModelParallel, PipelineParallel, run_stages

__all__ = ["MultiDeviceExecutor", "run_placed", "shard_bytes"]


class MultiDeviceExecutor:
    """Runs programs over ``backends`` (rank 0, 1, ... in the order given; at least one). The executor does not
    own them: closing them is the caller's. ``parallel``: the devices' launches run at once, one thread per
    device (``device_threads``; False: one after another on the calling thread). ``close()`` stops those
    threads. Raises ProgramError for an empty list."""

    def __init__(self, backends: Sequence[Any], *, parallel: bool = True) -> None:
        self.devices = tuple(backends)
        if not self.devices:
            raise ProgramError("a MultiDeviceExecutor needs at least one backend")
        self.parallel = parallel
        self._buffers: dict[int, DistributedBuffer] = {}
        self._threads = DeviceThreads()

    def run_jobs(self, jobs) -> list:
        """(device, job) pairs run at once, one thread per local device (``DeviceThreads.run``)."""
        return self._threads.run(jobs, self.parallel)

    def close(self) -> None:
        """Stop the device threads (the backends stay the caller's)."""
        self._threads.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- buffers -------------------------------------------------------------------------------------------
    def array(self, data: Any, ty: Type, layout: Replicated | Sharded | Tiled = Replicated()) -> DistributedBuffer:
        """A new DistributedBuffer holding ``data`` (bytes, or values as ``Backend.copy_typed_to`` takes them;
        copied once). Raises ProgramError, InvalidBuffer."""
        from ..backend import typed_bytes
        raw = bytes(data) if isinstance(data, (bytes, bytearray, memoryview)) else bytes(typed_bytes(data, ty))
        buffer = DistributedBuffer(FIRST_LOGICAL_HANDLE + len(self._buffers), ty, raw, layout)
        self._buffers[buffer.handle] = buffer
        return buffer

    def empty(self, count: int, ty: Type, layout: Replicated | Sharded | Tiled = Replicated()) -> DistributedBuffer:
        """A new DistributedBuffer of ``count`` zero elements."""
        return self.array(bytes(count * ty.size_bytes()), ty, layout)

    # ---- collectives on device buffers ---------------------------------------------------------------------
    def all_reduce(self, handles: Sequence[int], n: int, ty: Type, op: ReduceOperation = ReduceOperation.Sum) -> None:
        """Device d's buffer ``handles[d]`` (its first ``n`` elements of ``ty``) := the reduction over the devices,
        folded in rank order on rank 0 (collectives.all_reduce)."""
        collectives.all_reduce(self._places(handles), n, ty, op)

    def all_gather(self, local: Sequence[int], gathered: Sequence[int], n: int, ty: Type) -> None:
        """Device d's ``gathered[d]`` := every device's ``local`` n elements, in rank order."""
        collectives.all_gather(self._places(gathered), self._places(local), n, ty)

    def reduce_scatter(self, local: Sequence[int], scattered: Sequence[int], n: int, ty: Type,
                       op: ReduceOperation = ReduceOperation.Sum) -> None:
        """Device d's ``scattered[d]`` (n elements) := piece d of the reduction of every device's ``local``
        (n * devices elements), folded in rank order on rank 0."""
        collectives.reduce_scatter(self._places(scattered), self._places(local), n, ty, op)

    def broadcast(self, handles: Sequence[int], n: int, ty: Type, root: int = 0) -> None:
        """Device d's ``handles[d]`` := device ``root``'s first n elements."""
        collectives.broadcast(self._places(handles), n, ty, root)

    def _places(self, handles: Sequence[int]) -> list[Placement]:
        if len(handles) != len(self.devices):
            raise ProgramError(f"{len(handles)} handles for {len(self.devices)} devices: one per device")
        return [Placement(backend, int(h)) for backend, h in zip(self.devices, handles)]

    # ---- launches ------------------------------------------------------------------------------------------
    def execute_distributed(self, program: Program | None, strategy) -> None:
        """Run ``program`` under ``strategy``: DataParallel; or ModelParallel / PipelineParallel / Hybrid, whose
        stages hold their own programs (``program`` is then None; atlas_web.distributed.stages). Raises
        ProgramError (an unknown buffer, a sharded or tiled buffer whose size does not match the launch, a mesh
        that is not the devices, a collective that is not top-level, names no BufferOffset of a DistributedBuffer,
        or a group other than the executor's), AtlasTrap (the trap of the lowest global lane, lane -1 first, at its
        index in ``program``), ExecutionFailed (a Replicated buffer the devices wrote differently)."""
        if isinstance(strategy, (ModelParallel, PipelineParallel, Hybrid)):
            if program is not None:
                raise ProgramError("ModelParallel, PipelineParallel and Hybrid stages hold the programs: pass "
                                   "program=None")
            run_stages(self, strategy)
            return
        if not isinstance(strategy, DataParallel):
            raise ProgramError("execute_distributed takes DataParallel, ModelParallel, PipelineParallel or Hybrid, "
                               f"got {strategy!r}")
        config = strategy.config
        parts = split_grid(config, check_mesh(strategy.mesh, len(self.devices)))
        used = self.buffers_named(program, strategy.pointers)
        runs = [{buffer.handle: element_runs(buffer, part, config) for buffer in used} for part in parts]
        segments = split_at_collectives(program)
        self._check_collectives(segments, runs, used)
        self._launch(program, strategy, parts, runs, used, segments)

    def _launch(self, program: Program, strategy: DataParallel, parts, runs, used, segments) -> None:
        """Run a checked DataParallel launch: each device's blocks ``parts``, its elements ``runs`` of the
        ``used`` buffers, the program's ``segments``; write the buffers back when every device finished."""
        if len(segments) == 1:      # no collective: each device places, runs and reads back in one call
            self._run_whole(program, strategy, parts, runs, used)
            return
        placed = [dict() for _ in self.devices]   # rank -> logical handle -> device handle
        try:
            for rank, backend in enumerate(self.devices):
                for buffer in used:
                    placed[rank][buffer.handle] = self._place(backend, shard_bytes(buffer, runs[rank][buffer.handle]))
            for segment in segments:
                if segment.program is not None:
                    self._run_segment(segment, strategy, parts, placed)
                if segment.collective is not None:
                    self._collective(segment.collective, placed)
            results = {buffer.handle: self._gathered(buffer, runs, placed) for buffer in used}
            for buffer in used:
                buffer.data[:] = results[buffer.handle]
        finally:
            for rank, backend in enumerate(self.devices):
                for handle in placed[rank].values():
                    backend.free_buffer(handle)

    def _run_whole(self, program: Program, strategy: DataParallel, parts, runs, used) -> None:
        """A launch without collectives: one job per device, ``run_placed`` (place its pieces, run, read back,
        free), run by ``run_jobs`` when every job is made (the local devices at once, one thread each; a device
        with ``start_program`` on the calling thread, one after another: DistributedExecutor's own ``_launch``
        starts a cluster's); then the trap of the lowest global lane is raised, else the pieces are written
        into the buffers."""
        config = strategy.config
        pointers = {register: buffer.handle for register, buffer in strategy.pointers.items()}
        jobs = []
        for part, backend in zip(parts, self.devices):
            buffers = [(buffer.handle, shard_bytes(buffer, runs[part.rank][buffer.handle])) for buffer in used]
            args = (program, part.launch(config), strategy.presets(part), pointers, buffers)
            jobs.append((backend, lambda b=backend, a=args: run_placed(b, *a)))
        outcomes = []
        for ok, value in self.run_jobs(jobs):
            if not ok:
                raise value
            outcomes.append(value)
        traps = [(part.global_lane(config, trap.lane), part.rank, trap)
                 for part, (trap, _) in zip(parts, outcomes) if trap is not None]
        if traps:
            lane, _, trap = min(traps, key=lambda t: (t[0], t[1]))
            raise AtlasTrap(trap.code, trap.instruction_index, lane, trap.detail, trap.record)
        results = {}
        for k, buffer in enumerate(used):
            results[buffer.handle] = self._combined(buffer, [datas[k] for _, datas in outcomes],
                                                    [rank_runs[buffer.handle] for rank_runs in runs])
        for buffer in used:
            buffer.data[:] = results[buffer.handle]

    def buffers_named(self, program: Program, pointers: dict) -> list[DistributedBuffer]:
        """The DistributedBuffers ``program`` names by BufferOffset handle or ``pointers`` (Register -> buffer)
        presets, in handle order. Raises ProgramError for a handle or buffer not of this executor."""
        handles = set()
        for register, buffer in pointers.items():
            if not isinstance(buffer, DistributedBuffer) or self._buffers.get(buffer.handle) is not buffer:
                raise ProgramError(f"pointers[{register}] is {buffer!r}, no DistributedBuffer of this executor")
            handles.add(buffer.handle)
        for index, instr in enumerate(program.instructions):
            for f in dataclasses.fields(instr):
                value = getattr(instr, f.name)
                if isinstance(value, Address.BufferOffset) and value.handle >= FIRST_LOGICAL_HANDLE:
                    if value.handle not in self._buffers:
                        raise ProgramError(f"operand {f.name!r} names handle {value.handle}, no DistributedBuffer of "
                                           "this executor", index=index, text=str(instr))
                    handles.add(value.handle)
        return [self._buffers[h] for h in sorted(handles)]

    @staticmethod
    def _place(backend, data: bytes) -> int:
        handle = int(backend.allocate_buffer(max(1, len(data))))
        if data:
            backend.copy_to_buffer(handle, data)
        return handle

    def _run_segment(self, segment, strategy: DataParallel, parts, placed) -> None:
        config = strategy.config
        traps, pending, jobs = [], [], []
        pointers = {register: buffer.handle for register, buffer in strategy.pointers.items()}
        for part, backend in zip(parts, self.devices):
            launch = part.launch(config)
            if launch is None:
                continue
            args = device_launch(segment.program, placed[part.rank], launch, strategy.presets(part), pointers)
            start = getattr(backend, "start_program", None)   # a remote device: every launch starts, then all wait
            pending.append(part)
            jobs.append((backend, start(*args) if start else (lambda b=backend, a=args:
                                                               b.execute_program_with_params(*a))))
        for part, (ok, error) in zip(pending, self.run_jobs(jobs)):
            if ok:
                continue
            if not isinstance(error, AtlasTrap):
                raise error
            lane = part.global_lane(config, error.lane)
            traps.append((lane, part.rank, AtlasTrap(error.code, error.instruction_index + segment.start, lane,
                                                     error.detail, error.record)))
        if traps:
            raise min(traps, key=lambda t: (t[0], t[1]))[2]

    def _check_collectives(self, segments, runs, used) -> None:
        """Refuse, before anything runs, a collective for another group, naming no DistributedBuffer of the
        launch, or reaching outside a device's copy (ProgramError naming the device, operand and sizes)."""
        sizes = {buffer.handle: buffer.ty.size_bytes() for buffer in used}
        for segment in segments:
            instr, index = segment.collective, segment.collective_index
            if instr is None:
                continue
            k = len(self.devices)
            if instr.devices > k or k % group_size(instr, k):
                raise ProgramError(f"the collective is for a group of {instr.devices} devices; this executor's {k} "
                                   "do not split into groups of that size (consecutive ranks)", index=index,
                                   text=str(instr))
            if instr.INFO.name == "Broadcast" and not 0 <= instr.root < group_size(instr, k):
                raise ProgramError(f"Broadcast root {instr.root} is not a device of the group of "
                                   f"{group_size(instr, k)}", index=index, text=str(instr))
            for operand, nbytes in collective_arrays(instr, k):
                address = getattr(instr, operand)
                if not isinstance(address, Address.BufferOffset) or address.handle not in sizes:
                    raise ProgramError(f"operand {operand!r} must be an Address.BufferOffset of a DistributedBuffer "
                                       "under a MultiDeviceExecutor", index=index, text=str(instr))
                for rank, rank_runs in enumerate(runs):
                    size = sum(count for _, count in rank_runs[address.handle]) * sizes[address.handle]
                    if address.offset + nbytes > size:
                        raise ProgramError(f"{instr.INFO.name} {operand} on device {rank}: bytes {address.offset}.."
                                           f"{address.offset + nbytes} lie outside its buffer of {size} bytes",
                                           index=index, text=str(instr))

    def _collective(self, instr, placed) -> None:
        """Run a checked collective across the devices: read every input, combine, write every output."""
        (source, nin), (target, _) = collective_arrays(instr, len(self.devices))
        address = getattr(instr, source)
        parts = [bytes(backend.copy_from_buffer(placed[rank][address.handle], bytearray(nin), address.offset))
                 if nin else b"" for rank, backend in enumerate(self.devices)]
        results = collective_results(instr, parts, self.devices[0])
        address = getattr(instr, target)
        for rank, backend in enumerate(self.devices):
            if results[rank]:
                backend.copy_to_buffer(placed[rank][address.handle], results[rank], address.offset)

    def _gathered(self, buffer: DistributedBuffer, runs, placed) -> bytes:
        """The buffer's new contents from the devices. Raises ExecutionFailed for a Replicated buffer whose copies
        differ."""
        parts = []
        for rank, backend in enumerate(self.devices):
            size = sum(count for _, count in runs[rank][buffer.handle]) * buffer.ty.size_bytes()
            handle = placed[rank][buffer.handle]
            parts.append(bytes(backend.copy_from_buffer(handle, bytearray(size))) if size else b"")
        return self._combined(buffer, parts, [rank_runs[buffer.handle] for rank_runs in runs])

    @staticmethod
    def _combined(buffer: DistributedBuffer, parts: list[bytes], runs: list) -> bytes:
        """The buffer's new contents from each device's bytes: each shard's runs written back in place, or the one
        value of a Replicated buffer's copies (ExecutionFailed when they differ)."""
        if not isinstance(buffer.layout, Replicated):
            out, size = bytearray(buffer.data), buffer.ty.size_bytes()
            for part, device_runs in zip(parts, runs):
                at = 0
                for first, count in device_runs:
                    out[first * size:(first + count) * size] = part[at:at + count * size]
                    at += count * size
            return bytes(out)
        for rank, part in enumerate(parts[1:], 1):
            if part != parts[0]:
                raise ExecutionFailed(f"{buffer!r} is Replicated but device {rank} wrote it differently from device "
                                      "0: declare it Sharded, or make the copies agree with AllReduce or Broadcast")
        return parts[0]


def shard_bytes(buffer: DistributedBuffer, runs) -> bytes:
    """The bytes of ``buffer``'s elements ``runs`` (first, count), joined in order (a copy)."""
    size = buffer.ty.size_bytes()
    if len(runs) == 1:
        first, count = runs[0]
        return bytes(buffer.data[first * size:(first + count) * size])
    return b"".join(buffer.data[first * size:(first + count) * size] for first, count in runs)
