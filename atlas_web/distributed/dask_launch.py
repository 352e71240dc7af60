"""A DataParallel launch on Dask workers as one task graph: one task per worker per segment, one combine task per
collective, and Replicated buffers kept resident on the workers between launches.

Dask is imported only by the caller (dask_cluster). For a program with c collectives the client submits, before
waiting for anything, (c + 1) ``run_step`` tasks per worker and c ``combine`` tasks on rank 0's worker: step s of
every worker places (step 0), writes the previous collective's result, runs segment s and returns its part of
collective s; ``combine`` takes every worker's part (Dask moves them worker to worker), folds them in rank order
on rank 0's backend (``collectives.collective_results``) and returns what each worker writes; step s + 1 of every
worker depends on it. The last step reads every buffer back and frees the device copies. A trap or an error stops
the chain: later steps only free. The worker's device buffers live in ``_LAUNCHES`` between its steps.

**Resident buffers.** A Replicated buffer is placed as ``Resident(token, handle, digest)``: a worker that holds
a copy with that digest (BLAKE2b of the bytes) from an earlier launch uses it in place, so the bytes are not
sent again; a worker without it answers ``missing`` and the client runs the launch again with the bytes. After
a launch the worker re-hashes its copy (a launch may write it) and returns only the digest, plus the bytes when
they changed. ``drop_resident(token)`` frees a token's copies on a worker.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

from ..errors import AtlasTrap
from .collectives import collective_arrays, collective_results
from .program_split import device_launch

__all__ = ["Resident", "Step", "StepResult", "Final", "run_step", "combine", "drop_resident", "release", "digest"]

#: in each worker process: (backend name, token, logical handle) -> (digest, device handle)
_RESIDENT: dict[tuple, tuple[bytes, int]] = {}
#: in each worker process: launch id -> logical handle -> device handle (the launch's non-resident copies)
_LAUNCHES: dict[str, dict[int, int]] = {}
#: in each worker process: launch id -> logical handle -> (token, device handle) of the resident copies it uses
_PLACED_RESIDENT: dict[str, dict[int, tuple[str, int]]] = {}
_LOCK = threading.Lock()


def digest(data) -> bytes:
    """The 16-byte BLAKE2b digest that names a resident buffer's contents."""
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass(frozen=True)
class Resident:
    """A Replicated buffer the worker may already hold: ``data`` (a Payload) is None when the client expects it
    there with ``digest``."""

    token: str
    digest: bytes
    data: Any = None


@dataclass(frozen=True)
class Step:
    """One worker's step ``number`` of launch ``launch_id``: ``place`` (step 0: (logical handle, Payload or
    Resident) pairs), the segment's launch (``program`` None: no launch here), the collective input to return
    (``reads``: (logical handle, byte offset, bytes)) and whether it is the last step (``sizes``: logical handle
    -> bytes to read back)."""

    launch_id: str
    rank: int
    number: int
    place: tuple = ()
    program: Any = None
    launch: Any = None
    registers: dict = field(default_factory=dict)
    pointers: dict = field(default_factory=dict)
    reads: tuple | None = None
    writes: tuple | None = None
    last: bool = False


@dataclass
class StepResult:
    """A step's outcome: ``failure`` (None, or (step number, [(rank, kind, value)]) with kind "trap", "error" or
    "missing") and the collective input bytes it read."""

    failure: Any = None
    part: Any = None


@dataclass
class Final:
    """The last step's outcome: ``failure`` as StepResult's; ``buffers``: logical handle -> (digest or None,
    Payload or None) (a resident buffer's bytes only when they changed)."""

    failure: Any = None
    buffers: dict = field(default_factory=dict)


def _raw(value):
    from .dask_cluster import Payload
    if value is None:
        return b""
    return value.data if isinstance(value, Payload) else value


def _place(backend, name: str, launch_id: str, place) -> list[int]:
    """Place the step-0 buffers; the logical handles of resident buffers the worker lacks."""
    owned, resident, missing = _LAUNCHES.setdefault(launch_id, {}), _PLACED_RESIDENT.setdefault(launch_id, {}), []
    for handle, data in place:
        if isinstance(data, Resident):
            key = (name, data.token, handle)
            with _LOCK:
                held = _RESIDENT.get(key)
                if data.data is not None:
                    raw = _raw(data.data)
                    if held is None or int(backend.buffer_size(held[1])) != max(1, len(raw)):
                        if held is not None:
                            backend.free_buffer(held[1])
                        held = (b"", int(backend.allocate_buffer(max(1, len(raw)))))
                    if raw:
                        backend.copy_to_buffer(held[1], raw)
                    held = _RESIDENT[key] = (data.digest, held[1])
            if held is None or held[0] != data.digest:
                missing.append(handle)
            else:
                resident[handle] = (data.token, held[1])
            continue
        raw = _raw(data)
        owned[handle] = int(backend.allocate_buffer(max(1, len(raw))))
        if raw:
            backend.copy_to_buffer(owned[handle], raw)
    return missing


def _handles(launch_id: str) -> dict[int, int]:
    resident = {handle: device for handle, (_, device) in _PLACED_RESIDENT.get(launch_id, {}).items()}
    return {**_LAUNCHES.get(launch_id, {}), **resident}


def run_step(name: str, step: Step, combined: Any = None):
    """Run on a worker: ``step`` on its backend ``name`` after the previous collective's ``combined`` result
    (None before the first). Never raises for a trap or an atlas error: they travel as the step's failure."""
    from .dask_cluster import Payload, worker_backend
    backend = worker_backend(name)
    failure = getattr(combined, "failure", None)
    part = None
    if failure is None:
        try:
            if step.place:
                missing = _place(backend, name, step.launch_id, step.place)
                if missing:
                    failure = (step.number, [(step.rank, "missing", missing)])
            handles = _handles(step.launch_id)
            if failure is None and combined is not None:
                handle, offset = step.writes
                if combined.part[step.rank]:
                    backend.copy_to_buffer(handles[handle], combined.part[step.rank], offset)
            if failure is None and step.program is not None:
                backend.execute_program_with_params(*device_launch(step.program, handles, step.launch,
                                                                   step.registers, step.pointers))
            if failure is None and step.reads is not None:
                handle, offset, nbytes = step.reads
                part = Payload(bytes(backend.copy_from_buffer(handles[handle], bytearray(nbytes), offset))
                               if nbytes else b"")
        except AtlasTrap as trap:
            failure = (step.number, [(step.rank, "trap", trap)])
        except Exception as error:   # an atlas error, or the backend's: the client raises it
            failure = (step.number, [(step.rank, "error", error)])
    if not step.last:
        return StepResult(failure, part)
    return _finish(backend, name, step, failure)


def _finish(backend, name: str, step: Step, failure) -> Final:
    """Read every buffer back (unless the launch failed), re-hash the resident ones, free the launch's own."""
    from .dask_cluster import Payload
    owned, resident = _LAUNCHES.pop(step.launch_id, {}), _PLACED_RESIDENT.pop(step.launch_id, {})
    out: dict[int, tuple] = {}
    try:
        for handle, (token, device) in resident.items():
            size = int(backend.buffer_size(device))
            data = bytes(backend.copy_from_buffer(device, bytearray(size)))
            with _LOCK:
                before = _RESIDENT[(name, token, handle)][0]
                now = _RESIDENT[(name, token, handle)] = (digest(data), device)
            out[handle] = (now[0], None if now[0] == before else Payload(data))
        if failure is None:
            for handle, device in owned.items():
                size = int(backend.buffer_size(device))
                out[handle] = (None, Payload(bytes(backend.copy_from_buffer(device, bytearray(size)))))
    finally:
        for device in owned.values():
            backend.free_buffer(device)
    return Final(failure, out)


def combine(name: str, instr, number: int, results: list) -> StepResult:
    """Run on rank 0's worker: every worker's step ``number`` result for collective ``instr`` -> the bytes each
    writes (``part``: one per rank), or the failures of the step, all ranks' together."""
    from .dask_cluster import worker_backend
    failures = [result.failure for result in results if result.failure is not None]
    if failures:
        number = min(f[0] for f in failures)
        return StepResult((number, [entry for f in failures if f[0] == number for entry in f[1]]), None)
    try:
        parts = [bytes(_raw(result.part)) for result in results]
        return StepResult(None, collective_results(instr, parts, worker_backend(name)))
    except Exception as error:   # the fold's launch on rank 0 (UnsupportedOperation, AtlasTrap)
        return StepResult((number, [(0, "error", error)]), None)


def release(launch_id: str, name: str) -> None:
    """Run on a worker: free what an abandoned launch left (a worker of it was lost)."""
    from .dask_cluster import worker_backend
    backend = worker_backend(name)
    _PLACED_RESIDENT.pop(launch_id, None)
    for device in _LAUNCHES.pop(launch_id, {}).values():
        backend.free_buffer(device)


def drop_resident(token: str) -> int:
    """Run on a worker: free every resident copy of ``token``; how many."""
    from .dask_cluster import worker_backend
    with _LOCK:
        keys = [key for key in _RESIDENT if key[1] == token]
        for key in keys:
            worker_backend(key[0]).free_buffer(_RESIDENT.pop(key)[1])
    return len(keys)


def collective_io(instr, devices: int) -> tuple[tuple, tuple]:
    """(reads, writes) of collective ``instr`` on one worker: ((handle, offset, bytes), (handle, offset))."""
    (source, nin), (target, _) = collective_arrays(instr, devices)
    src, dst = getattr(instr, source), getattr(instr, target)
    return (src.handle, src.offset, nin), (dst.handle, dst.offset)
