"""Hand-written WGSL baselines on the WebGPU driver: vector add and sum of 16M f32 values.

Not a test: it prints times and GB/s (and NumPy's, measured in the same run),
after checking each result against NumPy. Generated code is compared with
these baselines (targets: vector add within 1.2x, reduction within 1.5x).
It also prints the host overhead of a small cached dispatch with readback.

    python3 benchmarks/webgpu_baselines.py [--n COUNT] [--repeat R]

Kernel times are wall times of ``dispatch`` + ``submit_and_wait`` (median of
``--repeat`` runs after a warm-up), so they include one submit's host cost.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from webgpu_backend import BindingKind, BufferUsage, GpuDriver, default_driver, split_workgroups  # noqa: E402

#: the hand-written shaders
WGSL_DIR = Path(__file__).resolve().parent / "wgsl"
WORKGROUP_SIZE = 256
#: vec4s each invocation of the reduction's first pass sums (fewer, fuller workgroups: every
#: workgroup pays eight barriers, which are costly on CPU adapters such as lavapipe)
REDUCE_VECTORS_PER_INVOCATION = 64
#: the most workgroups of the reduction's first pass
REDUCE_MAX_WORKGROUPS = 1024

VECTOR_ADD_LAYOUT = {0: BindingKind.READ_ONLY_STORAGE, 1: BindingKind.READ_ONLY_STORAGE,
                     2: BindingKind.STORAGE, 3: BindingKind.UNIFORM}
PARTIAL_SUMS_LAYOUT = {0: BindingKind.READ_ONLY_STORAGE, 1: BindingKind.STORAGE, 3: BindingKind.UNIFORM}
FINAL_SUM_LAYOUT = {1: BindingKind.STORAGE, 2: BindingKind.STORAGE, 3: BindingKind.UNIFORM}


def load_wgsl(name: str) -> str:
    """The source of ``benchmarks/wgsl/<name>.wgsl``."""
    return (WGSL_DIR / f"{name}.wgsl").read_text()


def padded(nbytes: int) -> int:
    """``nbytes`` rounded up to 16: the shaders view buffers as array<vec4<f32>>."""
    return max(16, -(-nbytes // 16) * 16)


def median_seconds(run: Callable[[], object], repeat: int, warmup: int = 2) -> float:
    """Median wall time of ``run`` over ``repeat`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class VectorAdd:
    """The vector add baseline on ``n`` f32 values: buffers, pipeline and one dispatch."""

    def __init__(self, driver: GpuDriver, a: np.ndarray, b: np.ndarray) -> None:
        self.driver, self.n = driver, a.size
        module = driver.compile(load_wgsl("vector_add_f32"))
        self.pipeline = driver.create_pipeline(module, "add", VECTOR_ADD_LAYOUT)
        self.tail_pipeline = driver.create_pipeline(module, "add_tail", VECTOR_ADD_LAYOUT)
        size = padded(a.nbytes)
        self.a, self.b, self.c = (driver.create_buffer(size) for _ in range(3))
        self.params = driver.create_buffer(16, BufferUsage.UNIFORM | BufferUsage.COPY_DST)
        driver.write_buffer(self.a, 0, a)
        driver.write_buffer(self.b, 0, b)
        driver.write_buffer(self.params, 0, np.array([self.n, 0, 0, 0], np.uint32))
        groups = -(-(self.n // 4) // WORKGROUP_SIZE)
        self.workgroups = split_workgroups(groups, driver.limit("maxComputeWorkgroupsPerDimension"))
        self.bindings = {0: self.a, 1: self.b, 2: self.c, 3: self.params}
        self.commands = [(self.pipeline, self.bindings, self.workgroups)] * (groups > 0)
        self.commands += [(self.tail_pipeline, self.bindings, (1, 1, 1))] * (self.n % 4 != 0)

    def dispatch(self) -> None:
        """Queue the kernel (and its tail) in one submit."""
        self.driver.dispatch_many(self.commands)

    def run(self) -> None:
        self.dispatch()
        self.driver.submit_and_wait()

    def result(self) -> np.ndarray:
        return np.frombuffer(self.driver.read_buffer(self.c, 0, self.n * 4), np.float32)

    def release(self) -> None:
        for buffer in (self.a, self.b, self.c, self.params):
            self.driver.destroy_buffer(buffer)


class ReduceSum:
    """The two-pass sum baseline on ``n`` f32 values, both passes in one submit."""

    def __init__(self, driver: GpuDriver, x: np.ndarray) -> None:
        self.driver, self.n = driver, x.size
        module = driver.compile(load_wgsl("reduce_sum_f32"))
        self.partial_sums = driver.create_pipeline(module, "partial_sums", PARTIAL_SUMS_LAYOUT)
        self.final_sum = driver.create_pipeline(module, "final_sum", FINAL_SUM_LAYOUT)
        per_workgroup = 4 * WORKGROUP_SIZE * REDUCE_VECTORS_PER_INVOCATION
        self.groups = max(1, min(REDUCE_MAX_WORKGROUPS, -(-self.n // per_workgroup)))
        self.input = driver.create_buffer(padded(x.nbytes))
        self.partials = driver.create_buffer(4 * self.groups)
        self.total = driver.create_buffer(4)
        self.params = driver.create_buffer(16, BufferUsage.UNIFORM | BufferUsage.COPY_DST)
        driver.write_buffer(self.input, 0, x)
        driver.write_buffer(self.params, 0, np.array([self.n, self.groups, 0, 0], np.uint32))

    def run(self) -> None:
        self.driver.dispatch_many([
            (self.partial_sums, {0: self.input, 1: self.partials, 3: self.params}, (self.groups, 1, 1)),
            (self.final_sum, {1: self.partials, 2: self.total, 3: self.params}, (1, 1, 1)),
        ])
        self.driver.submit_and_wait()

    def result(self) -> float:
        return float(np.frombuffer(self.driver.read_buffer(self.total), np.float32)[0])

    def release(self) -> None:
        for buffer in (self.input, self.partials, self.total, self.params):
            self.driver.destroy_buffer(buffer)


def small_dispatch_overhead(driver: GpuDriver, repeat: int = 200) -> dict[str, float]:
    """Median host times (seconds) of a cached 256-element vector add: dispatch + wait, and
    dispatch + read_buffer of the result (1 KiB)."""
    a = np.arange(256, dtype=np.float32)
    add = VectorAdd(driver, a, a)

    def dispatch_and_read() -> None:
        add.dispatch()
        driver.read_buffer(add.c, 0, 1024)

    out = {
        "dispatch + submit_and_wait": median_seconds(add.run, repeat, warmup=20),
        "dispatch + read_buffer (1 KiB)": median_seconds(dispatch_and_read, repeat, warmup=20),
        "read_buffer (1 KiB) alone": median_seconds(lambda: driver.read_buffer(add.c, 0, 1024), repeat, warmup=20),
    }
    if not np.array_equal(add.result(), a + a):
        raise RuntimeError("the small vector add gave a wrong result")
    add.release()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16 * 1024 * 1024, help="f32 values (default 16M)")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per kernel (median)")
    args = parser.parse_args(argv)

    driver = default_driver()
    info = driver.adapter_info()
    print(f"adapter: {info['device']} ({info['backend']}, {info['adapter_type']}), {info['engine']}")
    rng = np.random.default_rng(7)
    a = rng.random(args.n, dtype=np.float32)
    b = rng.random(args.n, dtype=np.float32)
    mib = args.n * 4 / 2**20

    add = VectorAdd(driver, a, b)
    add.run()
    if not np.array_equal(add.result(), a + b):
        raise SystemExit("vector add: the GPU result differs from NumPy's")
    gpu = median_seconds(add.run, args.repeat)
    cpu = median_seconds(lambda: np.add(a, b), args.repeat)
    moved = 3 * a.nbytes
    print(f"vector add f32, n={args.n} ({mib:.0f} MiB per operand): "
          f"webgpu {gpu * 1e3:.2f} ms = {moved / gpu / 1e9:.2f} GB/s; "
          f"numpy {cpu * 1e3:.2f} ms = {moved / cpu / 1e9:.2f} GB/s; webgpu/numpy time {gpu / cpu:.2f}x")
    add.release()

    reduce = ReduceSum(driver, a)
    reduce.run()
    exact = float(np.sum(a, dtype=np.float64))
    got = reduce.result()
    if abs(got - exact) > 1e-5 * abs(exact) + 1e-3:
        raise SystemExit(f"reduce sum: the GPU gave {got}, NumPy (f64) {exact}")
    gpu = median_seconds(reduce.run, args.repeat)
    cpu = median_seconds(lambda: np.sum(a), args.repeat)
    print(f"reduce sum f32, n={args.n}: webgpu {gpu * 1e3:.2f} ms = {a.nbytes / gpu / 1e9:.2f} GB/s; "
          f"numpy {cpu * 1e3:.2f} ms = {a.nbytes / cpu / 1e9:.2f} GB/s; webgpu/numpy time {gpu / cpu:.2f}x "
          f"(relative error vs f64 {abs(got - exact) / abs(exact):.1e})")
    reduce.release()

    for what, seconds in small_dispatch_overhead(driver).items():
        print(f"host overhead, cached 256-element vector add: {what}: {seconds * 1e6:.0f} us")
    driver.close()


if __name__ == "__main__":
    main()
