"""jit traces are per thread: two threads tracing at the same time (Dask's threaded scheduler running
``distributed.dask_arrays.map_blocks`` blocks, docs/distributed.md) each record only their own operations.
With one trace stack for the process a thread's operations went into the other's trace and both compiled
programs computed nothing (all zeros)."""

from __future__ import annotations

import threading

import numpy as np

import atlas_web.numpy as anp
from atlas_web.registry import get_backend


def test_two_threads_tracing_at_once_each_get_their_own_program():
    device = get_backend("cpu")
    both_tracing = threading.Barrier(2, timeout=30)

    def shifted_relu(x):
        both_tracing.wait()               # runs while tracing: both traces are open now
        return anp.relu(x * 2.0 - 0.5)

    values = np.linspace(-1, 1, 64, dtype=np.float32)
    want = np.maximum(values * np.float32(2.0) - np.float32(0.5), np.float32(0))
    results: dict = {}

    def run(k: int) -> None:
        f = anp.jit(shifted_relu)
        results[k] = f(anp.asarray(values, device=device)).to_host()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads) and set(results) == {0, 1}
    for k in (0, 1):
        np.testing.assert_array_equal(np.asarray(results[k]), want)
    device.close()
