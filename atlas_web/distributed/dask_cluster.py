"""DistributedExecutor: programs on a Dask distributed cluster, one atlas backend per worker.

Dask is imported only here (``pip install atlas-web[test]`` brings ``dask[distributed]``). Each worker process
holds one atlas backend of the executor's kind, built on first use and kept (``worker_backend``); a backend
caches the programs it compiled, so a worker compiles a program once. The executor drives the workers through
``RemoteBackend``, a proxy with the Backend calls the MultiDeviceExecutor makes: a launch without collectives is
one Dask task per worker (``executor.run_placed``), otherwise each call is one task pinned to its worker;
launches are started on every worker before any is waited for. Data moves through Dask's own comms (no sockets
of ours) as ``Payload``s, which Dask sends out of band (a registered serializer, and pickle-5 buffers when nested
in a task's arguments or result): never copied into a pickle stream. Collectives fold on the client as on local
devices (atlas_web.distributed.collectives; rank = the worker's place in the sorted address list).

Faults: a worker that leaves the cluster while a call waits on it makes that call raise WorkerLost naming
the worker; ``execute_cluster(..., retries=r)`` then runs the whole launch again, up to r times, on the workers
the cluster has by then (a LocalCluster's nanny restarts a killed worker). DistributedBuffers change only when
every worker finished, so no partial result is ever returned as complete.
"""

from __future__ import annotations

import pickle
import threading
import time
from typing import Any

from ..errors import ExecutionFailed, ProgramError
from .executor import MultiDeviceExecutor

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
    """Run on a worker: ``executor.run_placed`` on its backend (a whole launch without collectives, one task)."""
    from .executor import run_placed
    program, launch, registers, pointers, buffers = args
    trap, datas = run_placed(worker_backend(name), program, launch, registers, pointers,
                             [(handle, _unwrapped(data)) for handle, data in buffers])
    return trap, [Payload(data) for data in datas]


class RemoteBackend:
    """The Backend calls a MultiDeviceExecutor makes, run on Dask worker ``address``'s backend ``name``. Each call
    is one task; a worker that leaves the cluster meanwhile raises WorkerLost (an ExecutionFailed) naming it."""

    def __init__(self, client, address: str, name: str) -> None:
        self.client, self.address, self.name = client, address, name

    def _start(self, method: str, *args):
        future = self.client.submit(_worker_call, self.name, method, args, workers=[self.address],
                                    allow_other_workers=False, pure=False)
        return lambda: self._result(future, method)

    def start_placed(self, *args):
        """Start ``executor.run_placed(backend, *args)`` on the worker as one task; the returned wait() gives its
        result or raises WorkerLost."""
        program, launch, registers, pointers, buffers = args
        wrapped = (program, launch, registers, pointers, [(handle, Payload(data)) for handle, data in buffers])
        future = self.client.submit(_worker_run_placed, self.name, wrapped, workers=[self.address],
                                    allow_other_workers=False, pure=False)

        def wait():
            trap, datas = self._result(future, "a launch")
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


class DistributedExecutor(MultiDeviceExecutor):
    """A MultiDeviceExecutor whose devices are the workers of a Dask cluster, one ``backend`` each.

    ``client``: a ``dask.distributed.Client``, or an address to connect to, or None for a new LocalCluster of
    ``n_workers`` single-threaded worker processes on 127.0.0.1 (closed by ``close()``). Raises ProgramError when
    the cluster has no worker within ``timeout`` seconds."""

    def __init__(self, client=None, *, backend: str = "wasm", n_workers: int = 2, timeout: float = 60.0) -> None:
        from distributed import Client, LocalCluster
        self._owned = []
        if client is None:
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address=None, worker_dashboard_address=None)
            client = Client(cluster)
            self._owned = [client, cluster]
        elif isinstance(client, str):
            client = Client(client)
            self._owned = [client]
        self.client, self.backend_name, self.timeout = client, backend, timeout
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

    def close(self) -> None:
        """Close the client and cluster this executor made (a client passed in is the caller's)."""
        for item in self._owned:
            item.close()
        self._owned = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
