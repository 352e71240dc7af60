"""WebGpuBackend against the hand-written WGSL baselines of benchmarks/wgsl, in one run.

Not a test: it prints times and ratios (generated / hand-written), after checking every result:

* ParallelMapBinary Add f32 over ``--n`` values (16M) vs the vec4 vector add baseline
  (target: within 1.2x);
* ParallelReduce Sum f32 over ``--n`` values vs the two-pass tree reduction baseline
  (target: within 1.5x);
* the host overhead of a cached launch: ``execute_program`` of a small cached program, timed
  alone with the device idle (target: under 200 us), back to back without waiting, and with
  the wait, next to the driver's own small-dispatch overhead.

Kernel times are wall times of the launch plus ``submit_and_wait`` (median of ``--repeat`` runs
after a warm-up, timed alternately with the baseline's runs), as benchmarks/webgpu_baselines.py
measures the baselines.

    python3 benchmarks/webgpu_vs_baseline.py [--n COUNT] [--repeat R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from atlas_web import LaunchConfig, ProgramBuilder  # noqa: E402
from atlas_web.isa import (  # noqa: E402
    STG, Address, BinaryMapOperation, ParallelMapBinary, ParallelReduce, ReduceOperation, Register, Type,
)
from benchmarks.webgpu_baselines import ReduceSum, VectorAdd, median_seconds, small_dispatch_overhead  # noqa: E402
from webgpu_backend import WebGpuBackend, default_driver  # noqa: E402


def interleaved(first, second, repeat: int) -> tuple[float, float]:
    """Median seconds of two runs timed alternately (a shared, noisy CPU device drifts less between them)."""
    first()
    second()
    times: tuple[list, list] = ([], [])
    for _ in range(repeat):
        for run, out in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            run()
            out.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def vector_add(backend: WebGpuBackend, a: np.ndarray, b: np.ndarray, repeat: int) -> tuple[float, float]:
    """Median seconds of ParallelMapBinary Add over a and b (checked against NumPy) and of the baseline."""
    handles = [backend.allocate_typed(a), backend.allocate_typed(b), backend.allocate_typed(a.size, Type.F32)]
    program = ProgramBuilder().add(ParallelMapBinary(
        dst_array=Address.BufferOffset(handles[2]), src_a=Address.BufferOffset(handles[0]),
        src_b=Address.BufferOffset(handles[1]), count=a.size, operation=BinaryMapOperation.Add)).build()
    config = LaunchConfig.linear(1)

    def run() -> None:
        backend.execute_program(program, config)
        backend._driver.submit_and_wait()

    run()
    if not np.array_equal(backend.copy_typed_from(handles[2], Type.F32), a + b):
        raise SystemExit("ParallelMapBinary Add: the result differs from NumPy's")
    baseline = VectorAdd(backend._driver, a, b)
    ours, base = interleaved(run, baseline.run, repeat)
    baseline.release()
    for handle in handles:
        backend.free_buffer(handle)
    return ours, base


def reduce_sum(backend: WebGpuBackend, x: np.ndarray, repeat: int) -> tuple[float, float]:
    """Median seconds of ParallelReduce Sum over x (checked against the f64 sum) and of the baseline."""
    source = backend.allocate_typed(x)
    out = backend.allocate_typed(1, Type.F32)
    program = ProgramBuilder().add(ParallelReduce(
        dst=Register(1), src_array=Address.BufferOffset(source), count=x.size, operation=ReduceOperation.Sum)).add(
        STG(dst=Address.BufferOffset(out), src=Register(1), ty=Type.F32)).build()
    config = LaunchConfig.linear(1)

    def run() -> None:
        backend.execute_program(program, config)
        backend._driver.submit_and_wait()

    run()
    exact = float(np.sum(x, dtype=np.float64))
    got = float(backend.copy_typed_from(out, Type.F32)[0])
    if abs(got - exact) > 1e-5 * abs(exact) + 1e-3:
        raise SystemExit(f"ParallelReduce Sum: {got}, the f64 sum is {exact}")
    baseline = ReduceSum(backend._driver, x)
    ours, base = interleaved(run, baseline.run, repeat)
    baseline.release()
    backend.free_buffer(source)
    backend.free_buffer(out)
    return ours, base


def launch_overhead(backend: WebGpuBackend, repeat: int = 300) -> dict[str, float]:
    """Median seconds of a cached small launch: without and with waiting for the GPU."""
    a = np.arange(256, dtype=np.float32)
    handles = [backend.allocate_typed(a), backend.allocate_typed(a), backend.allocate_typed(256, Type.F32)]
    program = ProgramBuilder().add(ParallelMapBinary(
        dst_array=Address.BufferOffset(handles[2]), src_a=Address.BufferOffset(handles[0]),
        src_b=Address.BufferOffset(handles[1]), count=256, operation=BinaryMapOperation.Add)).build()
    config = LaunchConfig.linear(256)

    def waited() -> None:
        backend.execute_program(program, config)
        backend._driver.submit_and_wait()

    def host_side() -> float:
        """Median of execute_program alone, each call timed with the device idle (a CPU device such
        as lavapipe runs queued work on the same cores, so back-to-back calls time both)."""
        times = []
        for k in range(repeat + 30):
            backend._driver.submit_and_wait()
            start = time.perf_counter()
            backend.execute_program(program, config)
            if k >= 30:
                times.append(time.perf_counter() - start)
        return statistics.median(times)

    out = {
        "execute_program (host side, device idle)": host_side(),
        "execute_program back to back (no wait)": median_seconds(lambda: backend.execute_program(program, config),
                                                                 repeat, warmup=30),
        "execute_program + submit_and_wait": median_seconds(waited, repeat, warmup=30),
    }
    if not np.array_equal(backend.copy_typed_from(handles[2], Type.F32), a + a):
        raise SystemExit("the small launch gave a wrong result")
    for handle in handles:
        backend.free_buffer(handle)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16 * 1024 * 1024, help="f32 values (default 16M)")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per kernel (median)")
    args = parser.parse_args(argv)
    driver = default_driver()
    info = driver.adapter_info()
    print(f"adapter: {info['device']} ({info['backend']}, {info['adapter_type']}), {info['engine']}")
    backend = WebGpuBackend(driver=driver)
    rng = np.random.default_rng(7)
    a = rng.random(args.n, dtype=np.float32)
    b = rng.random(args.n, dtype=np.float32)

    ours, base = vector_add(backend, a, b, args.repeat)
    print(f"ParallelMapBinary Add f32, n={args.n}: webgpu {ours * 1e3:.2f} ms, hand-written {base * 1e3:.2f} ms, "
          f"ratio {ours / base:.2f}x (target <= 1.2x)")

    ours, base = reduce_sum(backend, a, args.repeat)
    print(f"ParallelReduce Sum f32, n={args.n}: webgpu {ours * 1e3:.2f} ms, hand-written {base * 1e3:.2f} ms, "
          f"ratio {ours / base:.2f}x (target <= 1.5x)")

    for what, seconds in launch_overhead(backend).items():
        print(f"cached launch, 256-element ParallelMapBinary: {what}: {seconds * 1e6:.0f} us")
    for what, seconds in small_dispatch_overhead(driver, repeat=100).items():
        print(f"driver baseline, cached 256-element vector add: {what}: {seconds * 1e6:.0f} us")
    backend.close()
    driver.close()


if __name__ == "__main__":
    main()
