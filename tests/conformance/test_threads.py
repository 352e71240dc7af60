"""Threads sharing one backend take turns: each launch's outcome is its own (issue 17). Thread A launches a
program that traps (DIVISION_BY_ZERO at instruction 4, lane 3) and allocates and frees a buffer each time;
thread B launches a good program and reads its results; neither sees the other's trap or misses its own."""

from __future__ import annotations

import threading

import pytest

from atlas_web import AtlasTrap, LaunchConfig, Program, TrapCode
from atlas_web.reference import CpuBackend

from .backends import compiled_backends

BACKENDS = {"cpu": CpuBackend(), **compiled_backends()}
CONFIG = LaunchConfig(grid=(2, 1, 1), block=(4, 1, 1))
LAUNCHES = 40

TRAPPING = Program.from_text("""
    mov_imm.u32 r1, 3
    set.eq.u32 p0, r255, r1
    mov_imm.u32 r4, 1
    sel.u32 r2, p0, r5, r4
    div.u32 r3, r1, r2
""")
#: out[GLOBAL_LANE_ID] = 3 * GLOBAL_LANE_ID + 1
GOOD = """
    mov_imm.u32 r1, 3
    mul.u32 r2, r255, r1
    mov_imm.u32 r7, 1
    add.u32 r2, r2, r7
    mov_imm.u32 r3, 4
    mul.u32 r6, r255, r3
    mov_imm.u32 r4, {h0}
    stg.u32 [r4 + r6], r2
"""


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
def test_two_threads_sharing_a_backend_keep_their_own_outcomes(backend_name):
    backend = BACKENDS[backend_name]
    lanes = CONFIG.total_threads
    out = backend.allocate_buffer(4 * lanes)
    good = Program.from_text(GOOD.format(h0=int(out)))
    want = b"".join((3 * lane + 1).to_bytes(4, "little") for lane in range(lanes))
    problems: list[str] = []
    start = threading.Barrier(2)

    def trapping() -> None:
        start.wait()
        for k in range(LAUNCHES):
            scratch = backend.allocate_buffer(64)
            try:
                backend.execute_program(TRAPPING, CONFIG)
                problems.append(f"trapping launch {k} returned without a trap")
            except AtlasTrap as trap:
                if (trap.code, trap.instruction_index, trap.lane) != (TrapCode.DIVISION_BY_ZERO, 4, 3):
                    problems.append(f"trapping launch {k}: {trap}")
            finally:
                backend.free_buffer(scratch)

    def good_launches() -> None:
        start.wait()
        for k in range(LAUNCHES):
            backend.copy_to_buffer(out, bytes(4 * lanes))
            try:
                backend.execute_program(good, CONFIG)
            except AtlasTrap as trap:
                problems.append(f"good launch {k} raised {trap}")
                continue
            got = bytes(backend.copy_from_buffer(out))[:4 * lanes]
            if got != want:
                problems.append(f"good launch {k} wrote {got.hex()}")

    threads = [threading.Thread(target=trapping), threading.Thread(target=good_launches)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    backend.free_buffer(out)
    assert not any(thread.is_alive() for thread in threads), "a thread did not finish"
    assert not problems, f"{len(problems)} launches had another's outcome: {problems[:5]}"
