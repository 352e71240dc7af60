"""Dask arrays whose blocks run on atlas backends: ``map_blocks(fn, *arrays)``.

Dask is imported only here. Each block of the Dask arrays (NumPy chunks; atlas chunks: dask_chunks) becomes an
``atlas_web.numpy`` Array on the atlas backend of the process that runs the task (on a Dask worker: the worker's one backend, built once, as
DistributedExecutor's; with Dask's local schedulers: this process's), ``fn`` (typically an ``anp.jit``
function, compiled once per worker and signature) runs on it, and the result comes back as a NumPy block, so
every Dask operation (reductions, rechunking, ``compute``) works on the result. Copies: each block once to the
device and once back. ``fn`` travels as its plain Python function (a ``JitFunction`` holds locks and compiled
programs, which do not pickle): with ``jit=True`` (the default, and always for a JitFunction) each process wraps
it in ``anp.jit`` once (cached by the function's module, name and code), so a worker traces and compiles it once
per signature.
"""

from __future__ import annotations

from typing import Any, Callable

from .dask_cluster import worker_backend

__all__ = ["map_blocks", "AtlasBlockFunction"]


#: in each process: (module, qualified name, code) of a block function -> its JitFunction
_JITTED: dict = {}


class AtlasBlockFunction:
    """``fn`` applied to NumPy blocks as atlas Arrays on the running process's ``backend``; returns NumPy."""

    def __init__(self, fn: Callable, backend: str, jit: bool = True, atlas_chunks: bool = False) -> None:
        from atlas_web.numpy.jit import JitFunction
        if isinstance(fn, JitFunction):
            fn, jit = fn.fn, True
        self.fn, self.backend, self.jit, self.atlas_chunks = fn, backend, jit, atlas_chunks

    def _function(self) -> Callable:
        if not self.jit:
            return self.fn
        import atlas_web.numpy as anp
        key = (self.fn.__module__, self.fn.__qualname__, self.fn.__code__)
        if key not in _JITTED:
            _JITTED[key] = anp.jit(self.fn)
        return _JITTED[key]

    def __call__(self, *blocks: Any):
        import numpy as np

        import atlas_web.numpy as anp
        device = worker_backend(self.backend)
        args = [anp.asarray(block, device=device) if isinstance(block, np.ndarray) else block for block in blocks]
        result = self._function()(*args)
        if self.atlas_chunks:
            return anp.asarray(result, device=device)
        return np.asarray(result.to_host() if isinstance(result, anp.Array) else result)


def map_blocks(fn: Callable, *arrays: Any, backend: str = "wasm", jit: bool = True, atlas_chunks: bool = False,
               **kwargs: Any):
    """``dask.array.map_blocks`` with ``fn`` run on atlas backends (see the module docstring); ``kwargs`` go to
    Dask (``dtype``, ``chunks``, ``drop_axis``...; ``dtype`` defaults to the first array's). The blocks may be
    NumPy or atlas Arrays (``dask_chunks.to_atlas``); ``atlas_chunks=True`` keeps the result blocks as atlas
    Arrays on the device (no copy to the host; ``dask_chunks``), else they come back as NumPy."""
    import dask.array as da
    import numpy as np
    kwargs.setdefault("dtype", arrays[0].dtype)
    if atlas_chunks:
        from .dask_chunks import register
        register()
        ndim = kwargs.get("ndim", arrays[0].ndim) - len(np.atleast_1d(kwargs.get("drop_axis", ())))
        kwargs.setdefault("meta", np.empty((0,) * ndim, dtype=kwargs["dtype"]))
    return da.map_blocks(AtlasBlockFunction(fn, backend, jit, atlas_chunks), *arrays, **kwargs)
