"""Overheads and throughput of atlas_web.distributed on this machine (issue 15), in one run.

Local devices (MultiDeviceExecutor over wasm backends in this process):
  - AllReduce (sum, f32) of ``--n`` elements over 2 devices, against NumPy's ``a + b`` on the same arrays;
  - a data-parallel map (y = x * x, one lane per element, Sharded) on 1 and 2 devices, against NumPy ``x * x``.
A Dask LocalCluster of 1 and then 2 worker processes on 127.0.0.1 (one wasm backend per worker):
  - the overhead of one task (a Backend call that does nothing: ``buffer_size``) round trip;
  - the same data-parallel map through ``execute_cluster`` (includes the copies to and from the workers);
  - a sharded GEMM (``--gemm`` M = N = K, f32): A and C split by rows across the workers, B replicated, one GEMM
    instruction per worker on its rows, against NumPy's ``a @ b``.
Timings are wall time, best of ``--repeats``, the sides of a comparison interleaved; the ratio printed is the
other side's time over NumPy's (above 1: slower than NumPy). The machine is shared: say so with the figures.
Run ``PYTHONPATH=. python benchmarks/multi_device.py [--n 1048576] [--repeats 5]`` from the repository root (not
named distributed.py: run as a script, such a file would stand in for Dask's ``distributed`` package). Not a test.
"""

from __future__ import annotations

import argparse
import os
import time

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")   # NumPy on one thread, as each worker's backend

import numpy as np  # noqa: E402  (after the thread settings)

from atlas_web import LaunchConfig  # noqa: E402
from atlas_web.distributed import DataParallel, MultiDeviceExecutor, Sharded  # noqa: E402
from atlas_web.isa import GEMM, Address, ReduceOperation, Type  # noqa: E402
from atlas_web.program import Program  # noqa: E402
from atlas_web.registry import get_backend  # noqa: E402

from benchmarks.gemm import best_of  # noqa: E402
from tests.distributed.helpers import X, Y, square_program  # noqa: E402

BLOCK = 256


def _map(ex, x, run) -> tuple:
    xs, ys = ex.array(x, Type.F32, Sharded()), ex.empty(x.size, Type.F32, Sharded())
    strategy = DataParallel(LaunchConfig(grid=(x.size // BLOCK, 1, 1), block=(BLOCK, 1, 1)), pointers={X: xs, Y: ys})
    program = square_program(Type.F32)

    def action():
        run(program, strategy)
    action()
    assert ys.read() == (x * x).tobytes()
    return action


def local(n: int, repeats: int) -> None:
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    y = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    two = MultiDeviceExecutor([get_backend("wasm"), get_backend("wasm")])
    handles = [int(b.allocate_typed(v, Type.F32)) for b, v in zip(two.devices, (x, y))]
    one = MultiDeviceExecutor([get_backend("wasm")])
    best = best_of({"numpy add": lambda: x + y,
                    "allreduce 2": lambda: two.all_reduce(handles, n, Type.F32, ReduceOperation.Sum),
                    "numpy map": lambda: x * x,
                    "map 1 device": _map(one, x, one.execute_distributed),
                    "map 2 devices": _map(two, x, two.execute_distributed)}, repeats)
    print(f"local, n = {n} f32")
    print(f"  AllReduce sum over 2 wasm devices: {best['allreduce 2'] * 1e3:8.2f} ms  "
          f"(NumPy a + b {best['numpy add'] * 1e3:.2f} ms, ratio {best['allreduce 2'] / best['numpy add']:.1f})")
    for name in ("map 1 device", "map 2 devices"):
        print(f"  data-parallel map, {name:9}: {best[name] * 1e3:8.2f} ms  "
              f"(ratio to NumPy x * x {best[name] / best['numpy map']:.1f})")


def cluster(n: int, gemm: int, repeats: int) -> None:
    from atlas_web.distributed.dask_cluster import DistributedExecutor
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    a = np.random.default_rng(2).standard_normal((gemm, gemm)).astype(np.float32)
    b = np.random.default_rng(3).standard_normal((gemm, gemm)).astype(np.float32)
    for workers in (1, 2):
        with DistributedExecutor(backend="wasm", n_workers=workers) as ex:
            device = ex.devices[0]
            handle = device.allocate_buffer(4)
            task = best_of({"task": lambda: device.buffer_size(handle)}, repeats * 4)["task"]
            mapped = best_of({"map": _map(ex, x, ex.execute_cluster), "numpy": lambda: x * x,
                              "gemm": sharded_gemm(ex, a, b, ex.execute_cluster), "numpy gemm": lambda: a @ b},
                             repeats)
            ratio_map, ratio_gemm = mapped["map"] / mapped["numpy"], mapped["gemm"] / mapped["numpy gemm"]
            print(f"Dask LocalCluster, {workers} worker(s): one task round trip {task * 1e3:.2f} ms")
            print(f"  data-parallel map of {n} f32 {mapped['map'] * 1e3:.1f} ms (ratio to NumPy {ratio_map:.0f})")
            print(f"  sharded GEMM {gemm}^3 f32 {mapped['gemm'] * 1e3:.1f} ms (NumPy a @ b "
                  f"{mapped['numpy gemm'] * 1e3:.1f} ms, ratio {ratio_gemm:.1f})")


def sharded_gemm(ex, a, b, run):
    """An action running C = A @ B with A's and C's rows split evenly across ``ex``'s devices (checked once)."""
    k = len(ex.devices)
    m, inner = a.shape
    n = b.shape[1]
    rows = m // k
    sa = ex.array(a.reshape(-1), Type.F32, Sharded(chunk=rows * inner))
    sb = ex.array(b.reshape(-1), Type.F32)
    sc = ex.empty(m * n, Type.F32, Sharded(chunk=rows * n))
    program = Program([GEMM(c=Address.BufferOffset(sc.handle), a=Address.BufferOffset(sa.handle),
                            b=Address.BufferOffset(sb.handle), m=rows, n=n, k=inner, ty=Type.F32)], {})
    strategy = DataParallel(LaunchConfig(grid=(k, 1, 1), block=(1, 1, 1)))

    def action():
        run(program, strategy)
    action()
    got = np.frombuffer(sc.read(), dtype=np.float32).reshape(m, n)
    assert np.allclose(got, a @ b, rtol=1e-4, atol=1e-3 * inner ** 0.5)
    return action


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--gemm", type=int, default=512, help="M = N = K of the sharded GEMM (even)")
    args = parser.parse_args()
    if args.n % BLOCK:
        parser.error(f"--n must be a multiple of {BLOCK}")
    start = time.perf_counter()
    local(args.n, args.repeats)
    cluster(args.n, args.gemm, args.repeats)
    print(f"(whole run {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
