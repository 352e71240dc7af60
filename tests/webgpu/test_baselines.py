"""The hand-written baseline kernels of benchmarks/ give NumPy's answers (small sizes, with tails)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.webgpu.gpu import require_adapter

require_adapter()

from benchmarks.webgpu_baselines import ReduceSum, VectorAdd, small_dispatch_overhead  # noqa: E402


@pytest.mark.parametrize("n", [1, 3, 4, 1027, 300_000])
def test_vector_add_baseline(driver, n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    add = VectorAdd(driver, a, b)
    driver.write_buffer(add.c, 0, np.full(add.c.size // 4, 7.0, np.float32))
    add.run()
    assert np.array_equal(add.result(), a + b)
    after = np.frombuffer(driver.read_buffer(add.c, 4 * n), np.float32)
    assert np.all(after == 7.0), "the kernel wrote past n"
    add.release()


@pytest.mark.parametrize("n", [1, 5, 1024, 262_147, 2_000_001])
def test_reduce_sum_baseline(driver, n):
    x = np.random.default_rng(n).random(n, dtype=np.float32)
    reduce = ReduceSum(driver, x)
    reduce.run()
    exact = float(np.sum(x, dtype=np.float64))
    assert reduce.result() == pytest.approx(exact, rel=1e-5)
    reduce.release()


def test_small_dispatch_overhead_measures_a_correct_run(driver):
    times = small_dispatch_overhead(driver, repeat=3)
    assert len(times) == 3 and all(t > 0 for t in times.values())
