"""Random programs on the reference backend: whatever a structurally valid program does, a launch with a
small budget ends, raises only documented errors (ProgramError, AtlasTrap, ExecutionFailed for a launch that
cannot complete), and leaves the backend usable."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atlas_web import AtlasError, AtlasTrap, LaunchConfig, Program
from atlas_web.isa import EXIT
from atlas_web.reference import CpuBackend

from ..strategies import programs

COVERS: list = []  # robustness over every row at once; the per-instruction cases are elsewhere


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(programs(max_instructions=10, vocabulary="runnable"), st.integers(1, 6), st.integers(0, 64))
def test_random_programs_end_with_a_result_or_a_documented_error(program, lanes, shared_memory):
    backend = CpuBackend(budget=50)
    for _ in range(3):
        backend.allocate_buffer(64)  # handles 2, 3, 4
    backend.allocate_pool(64)        # handle 5
    config = LaunchConfig(grid=(2, 1, 1), block=(lanes, 1, 1), shared_memory=shared_memory)
    try:
        backend.execute_program(program, config)
    except AtlasTrap as trap:
        assert 0 <= trap.instruction_index < len(program) and -1 <= trap.lane < config.total_threads
    except AtlasError as error:
        assert str(error)
    backend.execute_program(Program([EXIT()]), config)  # still usable
    assert len(backend.resonance_accumulator()) == 96
