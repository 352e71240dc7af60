"""Run a program on a fresh WebGpuBackend and on the reference, and compare what they did.

Both backends get the same buffers allocated in the same order (handles 2, 3, …), so programs
may name them statically. Buffers are compared even after a trap: both run every lane of the
trapping stage to its end and no later stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web import AtlasTrap, ExecutionParams, LaunchConfig
from atlas_web.reference import CpuBackend

__all__ = ["Outcome", "run_on", "assert_matches_reference", "fresh_backend"]


@dataclass
class Outcome:
    """The buffers after a launch, its trap as (code, instruction index, lane) or None, the ResAccum sums."""

    buffers: list[bytes]
    trap: tuple[int, int, int] | None
    resonance: list[float]


def fresh_backend(driver):
    """A new WebGpuBackend on ``driver`` (its first buffer gets handle 2)."""
    from webgpu_backend import WebGpuBackend
    return WebGpuBackend(driver=driver)


def run_on(backend, program, config: LaunchConfig, buffers: list[bytes], *, presets=None,
           budget: int | None = None) -> Outcome:
    """Allocate ``buffers`` on ``backend`` (in order), run ``program`` and read every buffer back."""
    handles = []
    for data in buffers:
        handle = backend.allocate_buffer(max(len(data), 1))
        if data:
            backend.copy_to_buffer(handle, data)
        handles.append(handle)
    trap = None
    try:
        backend.execute_program_with_params(program, ExecutionParams(config, presets or {}, budget))
    except AtlasTrap as error:
        trap = (int(error.code), error.instruction_index, error.lane)
    out = [bytes(backend.copy_from_buffer(h))[:len(data)] for h, data in zip(handles, buffers)]
    resonance = backend.resonance_accumulator()
    for handle in handles:
        backend.free_buffer(handle)
    return Outcome(out, trap, resonance)


def _listing(program) -> str:
    labels = {index: name for name, index in program.labels.items()}
    return "\n".join(f"{labels[i] + ': ' if i in labels else ''}{i}: {instr}"
                     for i, instr in enumerate(program.instructions))


def assert_matches_reference(driver, program, config: LaunchConfig, buffers: list[bytes], *, presets=None,
                             budget: int | None = None, compare_buffers: bool = True) -> Outcome:
    """Run on the reference and on a fresh WebGpuBackend: same trap and (unless told otherwise) same
    buffers. Returns the WebGPU outcome."""
    expected = run_on(CpuBackend(), program, config, buffers, presets=presets, budget=budget)
    backend = fresh_backend(driver)
    try:
        got = run_on(backend, program, config, buffers, presets=presets, budget=budget)
    finally:
        backend.close()
    assert got.trap == expected.trap, f"trap: webgpu {got.trap}, reference {expected.trap}\n{_listing(program)}"
    if compare_buffers:
        for k, (want, have) in enumerate(zip(expected.buffers, got.buffers)):
            if want != have:
                first = next(i for i in range(len(want)) if want[i] != have[i])
                raise AssertionError(f"buffer {k} differs first at byte {first}: reference "
                                     f"{want[first:first + 8].hex()}, webgpu {have[first:first + 8].hex()}\n"
                                     f"{_listing(program)}")
    return got
