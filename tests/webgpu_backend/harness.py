"""Run a program on a fresh WebGpuBackend and on the reference, and compare what they did.

Both backends get the same buffers allocated in the same order (handles 2, 3, …), so programs
may name them statically. Buffers are compared even after a trap: both run every lane of the
trapping stage to its end and no later stage. A buffer whose element type is given is compared as the
conformance suite compares (tests/conformance/harness.py, ``compare_with_reference``): integers bit for bit,
floats as values (any NaN matches any NaN: a GPU's NaN payloads differ, harmlessly by the contract) and, on a
device whose ``device_info()["subnormals"]`` is "flushed", what ``agrees_when_flushed`` allows: an F32/BF16
subnormal of the reference's also matches a zero of its sign, the reference run on the inputs as given, with
their subnormals flushed, or in the flush mode (``CpuBackend(subnormals="flushed")``). A buffer without a
type is compared byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from atlas_web import AtlasTrap, Backend, ExecutionParams, LaunchConfig
from atlas_web.isa import Type
from atlas_web.reference import CpuBackend
from tests.conformance.harness import agrees_when_flushed, compare_buffers, flushes_subnormals, subnormals_flushed

__all__ = ["Outcome", "run_on", "assert_matches_reference", "fresh_backend", "value_problems"]


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


def value_problems(flushes: bool, types: Sequence[Type | None], expected: Sequence[bytes], got: Sequence[bytes],
                   ulps: float = 0.0, flushed_expected: Callable[[], Sequence[bytes]] | None = None,
                   flush_mode_expected: Callable[[Backend], Sequence[bytes]] | None = None) -> list[str]:
    """The mismatches of ``got`` against the reference's ``expected`` buffers as compare_with_reference finds
    them (see the module docstring); ``flushes``: the device flushes f32 subnormals; ``flushed_expected``: the
    reference's buffers from the inputs with their subnormals flushed, ``flush_mode_expected(backend)``: the
    buffers of the run on the given flush-mode reference (both asked for only when needed; absent: the exact
    reference's buffers stand in)."""
    problems = compare_buffers(types, expected, got, ulps)
    if problems and flushes and agrees_when_flushed(
            lambda want: not compare_buffers(types, want, got, ulps, flushed=True), expected,
            flushed_expected or (lambda: expected), flush_mode_expected or (lambda flush_mode: expected)):
        return []
    return problems


def assert_matches_reference(driver, program, config: LaunchConfig, buffers: list[bytes], *, presets=None,
                             budget: int | None = None, compare_buffers: bool = True,
                             types: Sequence[Type | None] | None = None) -> Outcome:
    """Run on the reference and on a fresh WebGpuBackend: same trap and (unless told otherwise) same
    buffers, buffer k compared as elements of ``types[k]`` (None, or no ``types``: byte for byte; see the
    module docstring). Returns the WebGPU outcome."""
    expected = run_on(CpuBackend(), program, config, buffers, presets=presets, budget=budget)
    backend = fresh_backend(driver)
    try:
        got = run_on(backend, program, config, buffers, presets=presets, budget=budget)
        flushes = flushes_subnormals(backend)
    finally:
        backend.close()
    assert got.trap == expected.trap, f"trap: webgpu {got.trap}, reference {expected.trap}\n{_listing(program)}"
    if compare_buffers:
        types = list(types) if types is not None else [None] * len(buffers)
        assert len(types) == len(buffers), "assert_matches_reference: one type (or None) per buffer"

        def flushed_expected() -> list[bytes]:
            inputs = [subnormals_flushed(ty, data) for ty, data in zip(types, buffers)]
            return run_on(CpuBackend(), program, config, inputs, presets=presets, budget=budget).buffers

        def flush_mode_expected(flush_mode) -> list[bytes]:
            return run_on(flush_mode, program, config, buffers, presets=presets, budget=budget).buffers

        problems = value_problems(flushes, types, expected.buffers, got.buffers, 0.0, flushed_expected,
                                  flush_mode_expected)
        if problems:
            raise AssertionError(f"{problems[0]} (reference vs webgpu)\n{_listing(program)}")
    return got
