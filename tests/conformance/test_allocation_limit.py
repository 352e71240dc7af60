"""One documented limit on a single buffer or pool for every backend (docs/semantics.md): each reports it as
``device_info()["max_allocation"]`` (at most MAX_ALLOCATION: offsets are 32-bit); one byte more raises
AllocationFailed from the host and traps POOL_EXHAUSTED (lane -1) in a program, on every backend (issue 17:
a 4 GiB - 1 pool in a program worked on cpu and trapped on wasm and webgpu with nothing to say why)."""

from __future__ import annotations

import pytest

from atlas_web import AllocationFailed, AtlasTrap, LaunchConfig, Program, TrapCode
from atlas_web.memory import MAX_ALLOCATION
from atlas_web.reference import CpuBackend

from .backends import compiled_backends

BACKENDS = {"cpu": CpuBackend(), **compiled_backends()}
#: the most bytes PoolAlloc's size operand (u32) can ask
POOL_ALLOC_MAX = (1 << 32) - 1


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
def test_one_byte_past_the_reported_limit_fails_from_the_host_and_in_a_program(backend_name):
    backend = BACKENDS[backend_name]
    limit = backend.device_info()["max_allocation"]
    assert 0 < limit <= MAX_ALLOCATION
    with pytest.raises(AllocationFailed):
        backend.allocate_pool(limit + 1)
    with pytest.raises(AllocationFailed):
        backend.allocate_buffer(limit + 1)
    if limit + 1 > POOL_ALLOC_MAX:
        return      # no PoolAlloc can ask more than this backend holds
    program = Program.from_text(f"pool.alloc r1, {limit + 1}")
    with pytest.raises(AtlasTrap) as trapped:
        backend.execute_program(program, LaunchConfig())
    assert (trapped.value.code, trapped.value.lane) == (TrapCode.POOL_EXHAUSTED, -1)
    small = Program.from_text("pool.alloc r1, 64")
    backend.execute_program(small, LaunchConfig())      # the backend stays usable
