"""DistributedExecutor: programs on a Dask distributed cluster, one atlas backend per worker.

Dask is imported only here (``pip install atlas-web[test]`` brings ``dask[distributed]``). Each worker process
holds one atlas backend of the executor's kind, built on first use and kept (``worker_backend``); a backend
caches the programs it compiled, so a worker compiles a program once. A DataParallel launch is one task graph
submitted whole (``dask_launch``): one task per worker per segment between collectives, one combine task per
collective on rank 0's worker (the collectives' bytes move worker to worker, folded there in rank order);
Replicated buffers stay resident on the workers between launches (sent again only when their bytes changed). A
stage's launch (ModelParallel, PipelineParallel, Hybrid) is one task (``RemoteBackend.start_placed``); the
executor's collective methods make one task per Backend call (``RemoteBackend``). Data moves through Dask's own
comms (no sockets of ours) as ``Payload``s, which Dask sends out of band (a registered serializer, and pickle-5
buffers when nested in a task's arguments or result): never copied into a pickle stream.

Faults: a worker that leaves the cluster while a call waits on it makes that call raise WorkerLost naming
the worker; ``execute_cluster(..., retries=r)`` then runs the whole launch again, up to r times, on the workers
the cluster has by then (a LocalCluster's nanny restarts a killed worker). DistributedBuffers change only when
every worker finished, so no partial result is ever returned as complete.
"""

from __future__ import annotations

import pickle
import threading
import time
import uuid
from typing import Any

from ..errors import AtlasTrap, ExecutionFailed, ProgramError
from . import dask_launch
from .collectives import group_size
from .executor import MultiDeviceExecutor, shard_bytes
from .layouts import Replicated
from .program_split import run_placed

__all__ = ["DistributedExecutor", "RemoteBackend", "WorkerLost", "Payload", "worker_backend"]

#: in each worker process: backend name -> the worker's backend (built once)
_WORKER_BACKENDS: dict[str, Any] = {}
_WORKER_LOCK = threading.Lock()
_POLL_S = 0.2


class WorkerLost(ExecutionFailed):
    """A Dask worker holding one of the launch's devices left the cluster or died; the message names it."""


class Payload:
    """Buffer bytes on their way between the client and a worker. Dask moves them as frames of their own: the
    registered ``dask_serialize`` form when a Payload is sent by itself, a pickle-5 out-of-band buffer
    (``pickle.PickleBuffer``) when it sits inside a task's arguments or result; neither copies it into a pickle
    stream. ``data`` is any bytes-like object."""

    __slots__ = ("data",)

    def __init__(self, data) -> None:
        self.data = data

    def __reduce_ex__(self, protocol):
        if protocol >= 5:
            return Payload, (pickle.PickleBuffer(self.data),)
        return Payload, (bytes(self.data),)


def _register_payload() -> None:
    from distributed.protocol import dask_deserialize, dask_serialize

    @dask_serialize.register(Payload)
    def _serialize(payload: Payload):
        return {}, [payload.data]

    @dask_deserialize.register(Payload)
    def _deserialize(header, frames) -> Payload:
        return Payload(frames[0])


_register_payload()


def _unwrapped(value):
    return value.data if isinstance(value, Payload) else value


def worker_backend(name: str):
    """On a worker: this process's backend ``name`` (the registry's), built on first use and kept for the
    process's life; raises what ``registry.get_backend`` raises."""
    with _WORKER_LOCK:
        backend = _WORKER_BACKENDS.get(name)
        if backend is None:
            from atlas_web.registry import get_backend
            backend = _WORKER_BACKENDS[name] = get_backend(name)
        return backend


def _worker_call(name: str, method: str, args: tuple):
    """Run on a worker: ``method(*args)`` of its backend; buffers come back as bytes, handles as ints."""
    result = getattr(worker_backend(name), method)(*(_unwrapped(arg) for arg in args))
    if method == "copy_from_buffer":
        return Payload(bytes(result))
    if method == "allocate_buffer":
        return int(result)
    return result


def _worker_run_placed(name: str, args: tuple):
    """Run on a worker: ``program_split.run_placed`` on its backend (a whole stage launch, one task)."""
    program, launch, registers, pointers, buffers = args
    trap, datas = run_placed(worker_backend(name), program, launch, registers, pointers,
                             [(handle, _unwrapped(data)) for handle, data in buffers])
    return trap, [Payload(data) for data in datas]


class RemoteBackend:
    """The Backend calls a MultiDeviceExecutor makes, run on Dask worker ``address``'s backend ``name``. Each call
    is one task; a worker that leaves the cluster meanwhile raises WorkerLost (an ExecutionFailed) naming it."""

    def __init__(self, client, address: str, name: str) -> None:
        self.client, self.address, self.name = client, address, name
        self.tasks = 0     # tasks this proxy submitted (for tests and benchmarks)

    def _submit(self, function, *args):
        """Submit ``function(self.name, *args)`` as one task pinned to this worker (counted in ``tasks``)."""
        self.tasks += 1
        return self.client.submit(function, self.name, *args, workers=[self.address], allow_other_workers=False,
                                  pure=False)

    def _start(self, method: str, *args):
        future = self._submit(_worker_call, method, args)
        return lambda: self._result(future, method)

    def start_placed(self, program, launch, registers: dict, pointers: dict, buffers: list):
        """Start ``program_split.run_placed`` on the worker as one task (place, run, read back, free); the
        returned wait() gives (AtlasTrap or None, bytes per buffer) or raises WorkerLost."""
        wrapped = (program, launch, registers, pointers, [(handle, Payload(data)) for handle, data in buffers])
        future = self._submit(_worker_run_placed, wrapped)

        def wait():
            trap, datas = self._result(future, "a stage's launch")
            return trap, [bytes(_unwrapped(data)) for data in datas]
        return wait

    def _result(self, future, method: str):
        from distributed import wait
        from distributed.scheduler import KilledWorker
        while not future.done():
            try:
                wait([future], timeout=_POLL_S)
            except TimeoutError:
                pass
            if not future.done() and self.address not in self.client.scheduler_info()["workers"]:
                future.cancel()
                raise WorkerLost(f"worker {self.address} left the cluster during {method}; nothing of the launch "
                                 "was written back")
        try:
            return future.result()
        except KilledWorker as error:
            raise WorkerLost(f"worker {self.address} died during {method}: {error}") from None

    def _call(self, method: str, *args):
        return self._start(method, *args)()

    def allocate_buffer(self, size: int) -> int:
        return self._call("allocate_buffer", size)

    def free_buffer(self, handle: int) -> None:
        try:
            self._call("free_buffer", handle)
        except WorkerLost:
            return   # the worker is gone, and its memory with it; any other failure is the caller's to see

    def buffer_size(self, handle: int) -> int:
        return self._call("buffer_size", handle)

    def copy_to_buffer(self, handle: int, data, offset: int = 0) -> None:
        self._call("copy_to_buffer", handle, Payload(bytes(data)), offset)

    def copy_from_buffer(self, handle: int, out=None, offset: int = 0):
        data = bytes(_unwrapped(self._call("copy_from_buffer", handle, None if out is None else bytearray(len(out)),
                                           offset)))
        if out is None:
            return data
        out[:len(data)] = data
        return out

    def execute_program(self, program, config) -> None:
        self._call("execute_program", program, config)

    def execute_program_with_params(self, program, params) -> None:
        self._call("execute_program_with_params", program, params)

    def start_program(self, program, params):
        """Start a launch; the returned wait() raises its AtlasTrap or ExecutionFailed."""
        return self._start("execute_program_with_params", program, params)

    def __repr__(self) -> str:
        return f"RemoteBackend({self.address!r}, {self.name!r})"


def _first_failure(finals):
    """The failure of the earliest step among the workers' Finals, every worker's entries for it together."""
    failures = [final.failure for final in finals if final.failure is not None]
    if not failures:
        return None
    number = min(f[0] for f in failures)
    entries = {(rank, kind): (rank, kind, value) for f in failures if f[0] == number for rank, kind, value in f[1]}
    return number, list(entries.values())


class DistributedExecutor(MultiDeviceExecutor):
    """A MultiDeviceExecutor whose devices are the workers of a Dask cluster, one ``backend`` each.

    ``client``: a ``dask.distributed.Client``, or an address to connect to, or None for a new LocalCluster of
    ``n_workers`` single-threaded worker processes on 127.0.0.1 (closed by ``close()``). ``resident``: Replicated
    buffers stay on the workers between launches (``dask_launch``; False: sent with every launch, no hashing).
    Raises ProgramError when the cluster has no worker within ``timeout`` seconds."""

    def __init__(self, client=None, *, backend: str = "wasm", n_workers: int = 2, timeout: float = 60.0,
                 resident: bool = True) -> None:
        from distributed import Client, LocalCluster
        self._owned = []
        if client is None:
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address="127.0.0.1:0", worker_dashboard_address=None,
                                   scheduler_kwargs={"dashboard": False})   # no dashboard, HTTP on a free port
            client = Client(cluster)
            self._owned = [client, cluster]
        elif isinstance(client, str):
            client = Client(client)
            self._owned = [client]
        self.client, self.backend_name, self.timeout, self.resident = client, backend, timeout, resident
        self.token = uuid.uuid4().hex     # names this executor's resident buffers on the workers
        self._seen: dict[tuple[str, int], bytes] = {}   # (worker, logical handle) -> digest the worker holds
        #: tasks submitted for DataParallel launches (steps and combines), for tests and benchmarks
        self.tasks_submitted = 0
        super().__init__(self._workers())

    def _workers(self) -> list[RemoteBackend]:
        deadline = time.monotonic() + self.timeout
        while True:
            addresses = sorted(self.client.scheduler_info()["workers"])
            if addresses:
                return [RemoteBackend(self.client, address, self.backend_name) for address in addresses]
            if time.monotonic() > deadline:
                raise ProgramError(f"the Dask cluster has no worker after {self.timeout} s")
            time.sleep(_POLL_S)

    def execute_cluster(self, program, strategy, *, retries: int = 1) -> None:
        """``execute_distributed`` on the workers; a launch that lost a worker (WorkerLost naming it) runs
        again on the workers the cluster then has, up to ``retries`` times, then raises that WorkerLost."""
        for attempt in range(retries + 1):
            try:
                return self.execute_distributed(program, strategy)
            except WorkerLost:
                if attempt == retries:
                    raise
                self.client.wait_for_workers(len(self.devices), timeout=self.timeout)
                self.devices = tuple(self._workers())

    # ---- a DataParallel launch as one task graph (dask_launch) ----------------------------------------------
    def _launch(self, program, strategy, parts, runs, used, segments) -> None:
        digests = {b.handle: dask_launch.digest(b.data) for b in used if isinstance(b.layout, Replicated)} \
            if self.resident else {}
        resend: set[tuple[int, int]] = set()
        while True:
            finals = self._run_graph(strategy, parts, runs, used, segments, digests, resend)
            for part, final in zip(parts, finals):
                for handle, (digest, _) in final.buffers.items():
                    if digest is not None:
                        self._seen[(self.devices[part.rank].address, handle)] = digest
            failure = _first_failure(finals)
            missing = {(rank, h) for rank, kind, value in failure[1] if kind == "missing" for h in value} \
                if failure else set()
            if not missing or missing <= resend:
                break
            resend |= missing      # a worker lacks a resident copy (restarted, or evicted): send the bytes
        if failure:
            self._raise(failure, strategy, parts, segments)
        results = {}
        for buffer in used:
            if buffer.handle in digests:
                results[buffer.handle] = self._replicated(buffer, digests[buffer.handle], finals)
            else:
                size = buffer.ty.size_bytes()
                datas = [bytes(final.buffers[buffer.handle][1].data)[:sum(c for _, c in rank_runs[buffer.handle]) *
                                                                     size] for final, rank_runs in zip(finals, runs)]
                results[buffer.handle] = self._combined(buffer, datas, [rank_runs[buffer.handle] for rank_runs in runs])
        for buffer in used:
            if results[buffer.handle] is not None:
                buffer.data[:] = results[buffer.handle]

    def _run_graph(self, strategy, parts, runs, used, segments, digests, resend) -> list:
        """Submit the launch's steps and combines (nothing waited for in between); the last steps' Finals."""
        from distributed import wait
        launch_id, k, config = uuid.uuid4().hex, len(self.devices), strategy.config
        pointers = {register: buffer.handle for register, buffer in strategy.pointers.items()}
        submitted, combined, steps = [], None, []
        for number, segment in enumerate(segments):
            steps = []
            for part, device in zip(parts, self.devices):
                launch = part.launch(config)
                reads = writes = None
                if segment.collective is not None:
                    reads = dask_launch.collective_io(segment.collective, k)[0]
                    instr = segment.collective
                    if instr.INFO.name == "Broadcast" and part.rank % group_size(instr, k) != instr.root:
                        reads = None    # only the root's bytes are needed
                if number:
                    writes = dask_launch.collective_io(segments[number - 1].collective, k)[1]
                place = tuple(self._placement(buffer, part.rank, runs, digests, resend) for buffer in used) \
                    if number == 0 else ()
                step = dask_launch.Step(launch_id, part.rank, number, place,
                                        segment.program if launch is not None else None, launch,
                                        strategy.presets(part), pointers, reads, writes, number == len(segments) - 1)
                steps.append(self.client.submit(dask_launch.run_step, self.backend_name, step, combined,
                                                workers=[device.address], allow_other_workers=False, pure=False))
            submitted += steps
            if segment.collective is not None:
                combined = self.client.submit(dask_launch.combine, self.backend_name, segment.collective, number,
                                              steps, workers=[self.devices[0].address], allow_other_workers=False,
                                              pure=False)
                submitted.append(combined)
        self.tasks_submitted += len(submitted)
        while not all(future.done() for future in steps):
            try:
                wait(steps, timeout=_POLL_S)
            except TimeoutError:
                pass
            present = self.client.scheduler_info()["workers"]
            lost = [device.address for device in self.devices if device.address not in present]
            if lost and not all(future.done() for future in steps):
                self.client.cancel(submitted)
                for device in self.devices:
                    if device.address not in lost:
                        self.client.submit(dask_launch.release, launch_id, self.backend_name,
                                           workers=[device.address], allow_other_workers=False, pure=False)
                raise WorkerLost(f"worker {lost[0]} left the cluster during a launch; nothing of the launch was "
                                 "written back")
        return [device._result(future, "a launch") for device, future in zip(self.devices, steps)]

    def _placement(self, buffer, rank: int, runs, digests, resend):
        data = shard_bytes(buffer, runs[rank][buffer.handle])
        if buffer.handle not in digests:
            return buffer.handle, Payload(data)
        digest, address = digests[buffer.handle], self.devices[rank].address
        send = (rank, buffer.handle) in resend or self._seen.get((address, buffer.handle)) != digest
        return buffer.handle, dask_launch.Resident(self.token, digest, Payload(data) if send else None)

    def _replicated(self, buffer, before: bytes, finals):
        """A Replicated buffer's new bytes (None: unchanged) from the workers' digests; ExecutionFailed when
        the copies differ."""
        digests = [final.buffers[buffer.handle][0] for final in finals]
        for rank, digest in enumerate(digests[1:], 1):
            if digest != digests[0]:
                raise ExecutionFailed(f"{buffer!r} is Replicated but device {rank} wrote it differently from device "
                                      "0: declare it Sharded, or make the copies agree with AllReduce or Broadcast")
        if digests[0] == before:
            return None
        return bytes(finals[0].buffers[buffer.handle][1].data)

    def _raise(self, failure, strategy, parts, segments) -> None:
        """Raise a failed launch's error: the trap of the lowest global lane, else the lowest rank's error."""
        number, entries = failure
        traps = [(parts[rank].global_lane(strategy.config, value.lane), rank, value)
                 for rank, kind, value in entries if kind == "trap"]
        if traps:
            lane, _, trap = min(traps, key=lambda t: (t[0], t[1]))
            raise AtlasTrap(trap.code, trap.instruction_index + segments[number].start, lane, trap.detail,
                            trap.record)
        errors = sorted((rank, value) for rank, kind, value in entries if kind == "error")
        if errors:
            raise errors[0][1]
        raise ExecutionFailed(f"workers {sorted({rank for rank, _, _ in entries})} lack resident buffers after they "
                              "were sent")

    def close(self) -> None:
        """Free this executor's resident buffers on the workers and close the client and cluster this executor
        made (a client passed in is the caller's)."""
        if not self._owned and self.client.status == "running":
            self.client.run(dask_launch.drop_resident, self.token)
        for item in self._owned:
            item.close()
        self._owned = []
        super().close()
