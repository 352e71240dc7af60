"""ModelParallel and PipelineParallel: a program's stages placed on devices (standard library only).

A ``Stage`` is one launch (program, config) on one device (rank), naming DistributedBuffers by BufferOffset
handle or through pointer registers. ``ModelParallel(stages)`` runs the stages in order, each on its device, the
buffers it names copied there whole and back after it (so stage s + 1 sees what stage s wrote, wherever each
ran). ``PipelineParallel(stages, micro_batches)`` splits every Sharded buffer into ``micro_batches`` equal
contiguous pieces and runs stage s on piece m at tick m + s (a wavefront: the launches of one tick are started
on their devices before any is waited for, so remote devices overlap, and local devices run them at once, one
thread each: ``device_threads``); Replicated buffers are the weights, read
only (a stage that writes one raises ExecutionFailed). Both work on copies: the DistributedBuffers change only
when every stage finished; a trap (the first in stage order; in a pipeline, in (tick, micro-batch) order) is
raised with the stage's instruction index and lane and changes nothing. Collectives belong to DataParallel: a
stage holding one is refused (ProgramError).

``Hybrid(stages, micro_batches, replicas)`` is data and pipeline parallelism in one call: the devices form
``replicas`` groups of ``len(devices) // replicas`` consecutive ranks, each group runs the whole pipeline
(``Stage.device`` is then a rank within the group) on its own contiguous share of every Sharded buffer, split
into ``micro_batches`` micro-batches: the buffer is cut into replicas * micro_batches equal pieces, group r
takes pieces r * micro_batches ... (r + 1) * micro_batches - 1. The launches of one tick, of every group, are
started before any is waited for; a trap is the first in (tick, piece) order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ExecutionFailed, ProgramError
from ..launch import LaunchConfig
from ..program import Program
from .layouts import Replicated
from .program_split import COLLECTIVES, run_placed

__all__ = ["Stage", "ModelParallel", "PipelineParallel", "Hybrid", "run_stages"]


@dataclass(frozen=True)
class Stage:
    """``program`` launched with ``config`` on device ``device`` (a rank); ``pointers``: Register ->
    DistributedBuffer preset to the device copy's pointer (u64); ``registers``: further presets."""

    program: Program
    config: LaunchConfig
    device: int = 0
    pointers: dict = field(default_factory=dict)
    registers: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ModelParallel:
    """The stages in order, each on its own device."""

    stages: tuple


@dataclass(frozen=True)
class PipelineParallel:
    """The stages over ``micro_batches`` pieces of every Sharded buffer, in a wavefront."""

    stages: tuple
    micro_batches: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.micro_batches, int) or self.micro_batches < 1:
            raise ProgramError(f"PipelineParallel.micro_batches must be a positive int, got {self.micro_batches!r}")


@dataclass(frozen=True)
class Hybrid:
    """The stages as a pipeline over ``micro_batches`` micro-batches, in each of ``replicas`` groups of devices
    (data parallel across the groups). Raises ProgramError for a count below 1."""

    stages: tuple
    micro_batches: int = 1
    replicas: int = 1

    def __post_init__(self) -> None:
        for name in ("micro_batches", "replicas"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ProgramError(f"Hybrid.{name} must be a positive int, got {value!r}")


def _checked(executor, stages, group: int) -> list:
    """Per stage, the DistributedBuffers it names (handle order). Raises ProgramError."""
    out = []
    for number, stage in enumerate(stages):
        if not isinstance(stage, Stage):
            raise ProgramError(f"stage {number} is {stage!r}, not a Stage")
        if not 0 <= stage.device < group:
            where = "the executor has" if group == len(executor.devices) else "each replica's group has"
            raise ProgramError(f"stage {number} names device {stage.device}; {where} {group}")
        for index, instr in enumerate(stage.program.instructions):
            if instr.INFO.name in COLLECTIVES:
                raise ProgramError(f"stage {number} holds a collective: collectives run under DataParallel",
                                   index=index, text=str(instr))
        out.append(executor.buffers_named(stage.program, stage.pointers))
    return out


def _piece(buffer, micro: int, micro_batches: int) -> slice:
    if isinstance(buffer.layout, Replicated):
        return slice(0, len(buffer.data))
    if buffer.count % micro_batches:
        raise ProgramError(f"{buffer!r} does not split into {micro_batches} equal micro-batches")
    size = len(buffer.data) // micro_batches
    return slice(micro * size, (micro + 1) * size)


def run_stages(executor, strategy: ModelParallel | PipelineParallel | Hybrid) -> None:
    """Run ``strategy``'s stages on ``executor``'s devices (see the module docstring). Raises ProgramError
    (Hybrid: devices not a multiple of ``replicas``), AtlasTrap, ExecutionFailed."""
    stages = tuple(strategy.stages)
    pipeline = not isinstance(strategy, ModelParallel)
    micro_batches = strategy.micro_batches if pipeline else 1
    replicas = strategy.replicas if isinstance(strategy, Hybrid) else 1
    if len(executor.devices) % replicas:
        raise ProgramError(f"Hybrid: {len(executor.devices)} devices do not form {replicas} equal replica groups")
    group = len(executor.devices) // replicas
    named = _checked(executor, stages, group)
    work = {buffer.handle: bytearray(buffer.data) for buffers in named for buffer in buffers}
    pieces = replicas * micro_batches
    for tick in range(micro_batches + len(stages) - 1):
        jobs = [(r * micro_batches + m, r * group + stages[tick - m].device, tick - m)
                for r in range(replicas) for m in range(micro_batches) if 0 <= tick - m < len(stages)]
        started = [_start(executor.devices[device], stages[s], named[s], work, piece, pieces)
                   for piece, device, s in jobs]
        results = []
        for ok, value in executor.run_jobs(started):    # every job of the tick ran: raise the first failure
            if not ok:
                raise value
            trap, datas = value
            if trap is not None:
                raise trap
            results.append(datas)
        for (piece, device, s), datas in zip(jobs, results):
            _keep(named[s], datas, work, piece, pieces, pipeline, device)
    for buffers in named:
        for buffer in buffers:
            buffer.data[:] = work[buffer.handle]


def _start(backend, stage: Stage, buffers, work, micro: int, micro_batches: int):
    """(``backend``, the job running ``stage`` on it over ``buffers``' micro-batch pieces), for ``run_jobs``: place,
    run, read back, free (``run_placed``; on a Dask worker one task, started now); the job gives (AtlasTrap or
    None, bytes per buffer)."""
    placed = [(buffer.handle, bytes(work[buffer.handle][_piece(buffer, micro, micro_batches)])) for buffer in buffers]
    pointers = {register: buffer.handle for register, buffer in stage.pointers.items()}
    args = (stage.program, stage.config, stage.registers, pointers, placed)
    start = getattr(backend, "start_placed", None)
    return backend, (start(*args) if start is not None else (lambda: run_placed(backend, *args)))


def _keep(buffers, datas, work, micro: int, micro_batches: int, pipeline: bool, device: int) -> None:
    """Write a finished stage's pieces back into ``work``. Raises ExecutionFailed for a pipeline's Replicated
    buffer (its weights) that the stage changed."""
    for buffer, data in zip(buffers, datas):
        piece = _piece(buffer, micro, micro_batches)
        if pipeline and isinstance(buffer.layout, Replicated) and data != bytes(work[buffer.handle]):
            raise ExecutionFailed(f"{buffer!r} is Replicated (a pipeline's weights, read only) but stage on device "
                                  f"{device} wrote it: declare it Sharded")
        work[buffer.handle][piece] = data
