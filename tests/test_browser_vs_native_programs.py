"""benchmarks/browser_vs_native.py's programs at sizes that are not a multiple of the launch block (the per-lane
program once trapped out of bounds at --size 100000: LaunchConfig.linear runs spare lanes in the last block):
natively on the reference and wasm backends, each output equal to NumPy's a + b in f32."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from atlas_web.registry import get_backend
from benchmarks.browser_vs_native import PROGRAMS, measure_programs, program_inputs


@pytest.mark.parametrize("backend", ["cpu", "wasm"])
@pytest.mark.parametrize("n", [1, 1000, 1027])
def test_every_program_runs_at_any_size(backend, n):
    results = measure_programs(lambda: get_backend(backend), n, repeats=1)
    assert set(results) == {*PROGRAMS, "launch.overhead"}
    a, b = (np.frombuffer(bytes(x), dtype=np.float32) for x in program_inputs(n))
    sum_digest = hashlib.sha256((a + b).astype(np.float32).tobytes()).hexdigest()[:16]
    assert results["lane.add.f32"]["digest"] == results["pmap2.add.f32"]["digest"] == sum_digest
