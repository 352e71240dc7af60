"""``atlas_web.numpy`` Arrays as the chunks of Dask arrays.

Dask is imported only here (and in dask_cluster). Importing this module registers, once per process (a worker
imports it when it unpickles a task naming these functions):

- ``register_chunk_type(Array)``: a Dask array of atlas chunks takes part in Dask's binary operations;
- ``concatenate_lookup`` for Array -> ``anp.concatenate``: ``compute()``, rechunking and the combine step of
  reductions join atlas chunks on the device, without a host copy;
- a Dask serializer for Array: an atlas chunk that moves between processes (worker to worker, or to the client
  at ``compute()``) travels as its bytes, one frame with its shape and dtype in the header, and arrives as an
  Array on the receiving process's backend of the same name (``dask_cluster.worker_backend``: a worker's one
  backend, shared with DistributedExecutor). Copies: one out of the sending device, one into the receiving one.

``to_atlas(x, backend)`` makes a Dask array whose chunks are atlas Arrays (each block uploaded once, on the
process that computes it); elementwise operators, ``map_blocks`` with atlas functions (``dask_arrays.map_blocks``
with ``atlas_chunks=True``, or any function of Arrays) and reductions (``sum``, ``max``, ``min``, ``prod``,
``mean``: NumPy's functions call the chunk's methods) keep the chunks on the devices; ``compute()`` gives an
atlas Array, ``to_numpy(x)`` a Dask array of NumPy chunks. The Dask array's ``meta`` (and so its ``dtype``) is
a NumPy array of the chunks' NumPy dtype: Dask needs a NumPy dtype, and an atlas Array's dtype is an atlas Type.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from .dask_cluster import worker_backend

__all__ = ["to_atlas", "to_numpy", "AtlasChunk", "register", "Registration"]

_REGISTERED: list[bool] = []


class AtlasChunk:
    """A block function: the NumPy block as an atlas Array on the running process's backend ``backend``."""

    def __init__(self, backend: str) -> None:
        self.backend = backend

    def __call__(self, block: Any):
        import atlas_web.numpy as anp
        return anp.asarray(block, device=worker_backend(self.backend))


def _host(block: Any):
    import numpy as np
    return np.asarray(block.to_host()) if hasattr(block, "to_host") else np.asarray(block)


class Registration(WorkerPlugin):
    """Runs ``register()`` on every worker of a cluster, those that join later (or restart) included, so any
    worker can receive an atlas chunk before it ran a task of this module."""

    name = "atlas-web-dask-chunks"

    def setup(self, worker) -> None:
        register()


def _register_on_workers() -> None:
    from distributed import default_client
    try:
        client = default_client()
    except ValueError:    # no distributed client: Dask's local schedulers run in this process, registered
        return
    client.register_plugin(Registration(), name=Registration.name)   # same name: replaces, idempotent


def to_atlas(x, backend: str = "wasm"):
    """The Dask array ``x`` (NumPy chunks) with each chunk an atlas Array on ``backend`` of the process computing
    it (meta: NumPy, of ``x``'s dtype). With a distributed client, registers the chunk type on its workers
    (``Registration``)."""
    import numpy as np
    register()
    _register_on_workers()
    return x.map_blocks(AtlasChunk(backend), dtype=x.dtype, meta=np.empty((0,) * x.ndim, dtype=x.dtype))


def to_numpy(x):
    """The Dask array ``x`` of atlas chunks with NumPy chunks (each block copied to the host once)."""
    import numpy as np
    return x.map_blocks(_host, dtype=x.dtype, meta=np.empty((0,) * x.ndim, dtype=x.dtype))


def register() -> None:
    """Register the atlas Array with Dask (see the module docstring); once per process."""
    if _REGISTERED:
        return
    import numpy as np
    from dask.array.chunk_types import register_chunk_type
    from dask.array.dispatch import concatenate_lookup
    from distributed.protocol import dask_deserialize, dask_serialize

    import atlas_web.numpy as anp
    from atlas_web.numpy.array import Array

    register_chunk_type(Array)

    @concatenate_lookup.register(Array)
    def _concatenate(arrays, axis=0):
        return anp.concatenate(list(arrays), axis=axis)

    @dask_serialize.register(Array)
    def _serialize(array: Array):
        host = np.array(array.to_host(), copy=None, order="C")    # keeps 0-d (ascontiguousarray makes it 1-d)
        return ({"shape": list(host.shape), "dtype": host.dtype.str, "backend": array.device.name},
                [host.reshape(-1).data])

    @dask_deserialize.register(Array)
    def _deserialize(header, frames) -> Array:
        host = np.frombuffer(frames[0], dtype=np.dtype(header["dtype"])).reshape(header["shape"])
        return anp.asarray(host, device=worker_backend(header["backend"]))

    _REGISTERED.append(True)


register()
