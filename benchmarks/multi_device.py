"""Overheads and throughput of atlas_web.distributed on this machine (issue 15), in one run.

Local devices (MultiDeviceExecutor over wasm backends in this process):
  - AllReduce (sum, f32) of ``--n`` elements over 2 devices, against NumPy's ``a + b`` on the same arrays;
  - a data-parallel map (y = x * x, one lane per element, Sharded) on 1 and 2 devices, against NumPy ``x * x``.
Parallel local devices (``--only parallel``): a compute-bound per-lane loop (``--loop`` FMAs per lane, ``--n``
lanes) on 1 wasm device, on 2 wasm devices one after the other (``parallel=False``) and on 2 at once (one thread
per device), each backend single-threaded (``WasmBackend(threads=1)``); with the process's CPU time over the wall
time (the cores it got), since on a loaded machine a thread may wait for a core.
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
from atlas_web.distributed import DataParallel, MultiDeviceExecutor, Replicated, Sharded  # noqa: E402
from atlas_web.isa import GEMM, Address, AllGather, AllReduce, ReduceOperation, Type  # noqa: E402
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


#: y[lane] = x[lane] after ``k`` rounds of y = y * 0.5 + 0.25 (FMA): compute-bound, one load and one store per lane
LOOP_PROGRAM = """
    cvt.u64.u32 r20, r255
    mov_imm.u64 r21, 4
    mul.u64 r20, r20, r21
    add.u64 r10, r0, r20
    add.u64 r11, r1, r20
    ldg.f32 r12, [r10+0]
    mov_imm.f32 r13, 0.5
    mov_imm.f32 r14, 0.25
    mov_imm.u32 r15, {k}
top:
    fma.f32 r12, r12, r13, r14
    loop r15, @top
    stg.f32 [r11+0], r12
    exit
"""


def _cores_for_two_threads() -> float:
    """Process CPU time over wall time while 2 threads hash 64 MB each (hashlib releases the GIL): how many cores
    this machine gives 2 threads now, the ceiling of any speed-up of 2 devices at once."""
    import hashlib
    import threading
    data = bytes(64 << 20)
    threads = [threading.Thread(target=lambda: hashlib.sha256(data).digest()) for _ in range(2)]
    wall, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return (time.process_time() - cpu) / (time.perf_counter() - wall)


def parallel_local(n: int, k: int, repeats: int) -> None:
    from wasm_backend import WasmBackend
    x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    program = Program.from_text(LOOP_PROGRAM.format(k=k))
    executors = {"1 device": MultiDeviceExecutor([WasmBackend(threads=1)]),
                 "2 devices, one after the other": MultiDeviceExecutor([WasmBackend(threads=1) for _ in range(2)],
                                                                       parallel=False),
                 "2 devices at once": MultiDeviceExecutor([WasmBackend(threads=1) for _ in range(2)])}
    actions, outputs, cpu = {}, {}, {}
    for name, ex in executors.items():
        xs, ys = ex.array(x, Type.F32, Sharded()), ex.empty(n, Type.F32, Sharded())
        strategy = DataParallel(LaunchConfig(grid=(n // BLOCK, 1, 1), block=(BLOCK, 1, 1)), pointers={X: xs, Y: ys})
        outputs[name] = ys

        def action(ex=ex, strategy=strategy, name=name):
            start = time.process_time()
            ex.execute_distributed(program, strategy)
            cpu[name] = time.process_time() - start
        actions[name] = action
    best = best_of(actions, repeats)
    first = outputs["1 device"].read()
    assert all(out.read() == first for out in outputs.values()), "the device splits disagree"
    print(f"parallel local devices: {n} lanes x {k} FMAs (f32), wasm threads=1, os.cpu_count() {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}; cores 2 threads get here doing GIL-free work (hashlib): "
          f"{_cores_for_two_threads():.2f}")
    for name, seconds in best.items():
        print(f"  {name:31}: {seconds * 1e3:8.1f} ms  (speed-up over 1 device {best['1 device'] / seconds:.2f}; "
              f"cores used in the last run {cpu[name] / seconds:.2f})")
    for ex in executors.values():
        ex.close()


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
            if workers == 2:
                scheduling(ex, x, a, b, repeats)
            print(f"Dask LocalCluster, {workers} worker(s): one task round trip {task * 1e3:.2f} ms")
            print(f"  data-parallel map of {n} f32 {mapped['map'] * 1e3:.1f} ms (ratio to NumPy {ratio_map:.0f})")
            print(f"  sharded GEMM {gemm}^3 f32 {mapped['gemm'] * 1e3:.1f} ms (NumPy a @ b "
                  f"{mapped['numpy gemm'] * 1e3:.1f} ms, ratio {ratio_gemm:.1f})")


def scheduling(ex, x, a, b, repeats: int) -> None:
    """On the 2-worker cluster, interleaved: a launch with 2 collectives as one task graph (this executor) and as
    one task per Backend call (a plain MultiDeviceExecutor over the same RemoteBackends: how it ran before); the
    sharded GEMM with B resident on the workers and with B sent with every launch (``resident=False``)."""
    from atlas_web.distributed.dask_cluster import DistributedExecutor
    n = 4096
    small = x[:n]
    per_call = MultiDeviceExecutor(ex.devices)
    sent = DistributedExecutor(ex.client, backend=ex.backend_name, resident=False)
    outputs = {}

    def collectives(executor):
        k = len(executor.devices)
        xs, ys = executor.array(small, Type.F32, Sharded()), executor.empty(n, Type.F32, Sharded())
        gathered = executor.empty(n, Type.F32, Replicated())
        program = square_program(Type.F32, AllGather(output=Address.BufferOffset(gathered.handle),
                                                     input=Address.BufferOffset(ys.handle), n=n // k, ty=Type.F32),
                                 AllReduce(buffer=Address.BufferOffset(ys.handle), n=n // k,
                                           reduction=ReduceOperation.Sum, ty=Type.F32))
        strategy = DataParallel(LaunchConfig(grid=(n // BLOCK, 1, 1), block=(BLOCK, 1, 1)), pointers={X: xs, Y: ys})

        def action():
            executor.execute_distributed(program, strategy)
            outputs[id(executor)] = ys.read() + gathered.read()
        return action
    before = ex.tasks_submitted
    best = best_of({"graph": collectives(ex), "per call": collectives(per_call),
                    "gemm resident": sharded_gemm(ex, a, b, ex.execute_cluster),
                    "gemm sent": sharded_gemm(sent, a, b, sent.execute_cluster)}, repeats)
    assert outputs[id(ex)] == outputs[id(per_call)], "the task graph and the per-call launch disagree"
    print(f"Dask LocalCluster, 2 workers, load average {os.getloadavg()[0]:.1f}:")
    print(f"  square + AllGather + AllReduce of {n} f32: one task graph {best['graph'] * 1e3:.1f} ms, one task per "
          f"Backend call {best['per call'] * 1e3:.1f} ms (ratio {best['per call'] / best['graph']:.1f}); "
          f"graph tasks this run {ex.tasks_submitted - before}")
    print(f"  sharded GEMM {a.shape[0]}^3: B resident {best['gemm resident'] * 1e3:.1f} ms, B sent every launch "
          f"{best['gemm sent'] * 1e3:.1f} ms (ratio {best['gemm sent'] / best['gemm resident']:.2f})")
    sent.close()
    per_call.close()


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
    parser.add_argument("--loop", type=int, default=2000, help="FMAs per lane of the parallel-devices program")
    parser.add_argument("--only", choices=("local", "parallel", "cluster"), help="run one section")
    args = parser.parse_args()
    if args.n % BLOCK:
        parser.error(f"--n must be a multiple of {BLOCK}")
    start = time.perf_counter()
    if args.only in (None, "local"):
        local(args.n, args.repeats)
    if args.only in (None, "parallel"):
        parallel_local(args.n, args.loop, args.repeats)
    if args.only in (None, "cluster"):
        cluster(args.n, args.gemm, args.repeats)
    print(f"(whole run {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
