"""Run one conformance case on a backend and compare it with the reference.

A Case allocates its buffers in a fixed order (so handles are the same on
every backend: 2, 3, ...), runs one program, and reads back its output
buffers. Integers compare bit for bit, floats within the backend's documented
ulp tolerance for the case's op, traps by (code, instruction index, lane).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence, TypeVar

import numpy as np

from atlas_web import AtlasTrap, Backend, LaunchConfig, Program
from atlas_web.isa import Type
from atlas_web.isa.opcodes import SUBNORMAL_FLUSHED_TYPES
from atlas_web.reference import CpuBackend
from atlas_web.reference.numeric_flush import flush, subnormal
from atlas_web.reference.numeric_formats import load, store

from .values import decode, ulp_distance


@dataclass(frozen=True)
class Buffer:
    """A buffer of the case: its element type and initial bytes; ``output`` buffers are read back."""

    ty: Type
    data: bytes
    output: bool = False


@dataclass(frozen=True)
class Case:
    """One program with its buffers. ``program`` receives the buffer handles in order."""

    name: str
    op: object                       # what the tolerance is asked for: an instruction name or enum member
    ty: Type | None
    buffers: tuple[Buffer, ...]
    program: Callable[[list[int]], Program]
    config: LaunchConfig
    #: the instruction names and types the case needs (all must be supported to run it)
    needs: tuple[tuple[str, Type | None], ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        return self.name


@dataclass
class Result:
    """Output bytes per output buffer, or the trap."""

    outputs: list[bytes]
    trap: tuple[int, int, int] | None
    resonance: list[float] | None = None
    #: the trap's message (atlas_web.trap_report words it the same on every backend)
    trap_message: str | None = None


def case_handles(message: str, handles: list[int], program: Program) -> str:
    """``message`` with the case's buffer handles named by their place in the case, and a handle the
    program does not spell (a pool it allocated) as such: the numbers a backend gives differ with what
    it allocated before (tests/test_trap_report.py compares them on fresh backends)."""
    for k, handle in enumerate(handles):
        message = re.sub(rf"\bhandle {handle}\b", f"handle <buffer {k}>", message)
        message = re.sub(rf"\bbuf{handle}\b", f"<buffer {k}>", message)
    text = program.to_text()
    return re.sub(r"\bhandle (\d+)\b",
                  lambda m: m.group(0) if re.search(rf"\b{m.group(1)}\b", text) else "handle <allocated>", message)


def run_case(backend: Backend, case: Case) -> Result:
    """Allocate, fill, run and read back ``case`` on ``backend``; traps are captured, not raised."""
    handles = []
    for buf in case.buffers:
        h = backend.allocate_buffer(max(len(buf.data), 1))
        backend.copy_to_buffer(h, buf.data)
        handles.append(int(h))
    program = case.program(handles)
    trap = message = None
    try:
        backend.execute_program(program, case.config)
    except AtlasTrap as t:
        trap, message = (int(t.code), t.instruction_index, t.lane), case_handles(str(t), handles, program)
    outputs = []
    for h, buf in zip(handles, case.buffers):
        if buf.output:
            outputs.append(bytes(backend.copy_from_buffer(h)[:len(buf.data)]))
    resonance = list(backend.resonance_accumulator())
    for h in handles:
        backend.free_buffer(h)
    return Result(outputs, trap, resonance, message)


#: types whose subnormals are f32 subnormals: what a device that flushes f32 subnormals reads and writes as 0
FLUSHED_TYPES = SUBNORMAL_FLUSHED_TYPES


def flushes_subnormals(backend: Backend) -> bool:
    """Whether ``backend`` says its device flushes f32 subnormals (device_info()["subnormals"])."""
    return backend.device_info().get("subnormals") == "flushed"


def with_subnormals_flushed(case: Case) -> Case:
    """``case`` with every F32/BF16 subnormal of its input buffers replaced by a zero of its sign."""
    return replace(case, buffers=tuple(buf if buf.output else replace(buf, data=subnormals_flushed(buf.ty, buf.data))
                                       for buf in case.buffers))


def subnormals_flushed(ty: Type | None, data: bytes) -> bytes:
    """``data`` (elements of ``ty``) with every F32/BF16 subnormal replaced by a zero of its sign (a copy;
    other types and None: ``data`` as it is)."""
    if ty not in FLUSHED_TYPES:
        return data
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, ty.size_bytes())
    return store(ty, flush(load(ty, raw))).tobytes()   # the flush mode's own rule, bit for bit


R = TypeVar("R")


def agrees_when_flushed(agrees: Callable[[R], bool], exact: R, on_flushed_inputs: Callable[[], R],
                        on_flush_mode: Callable[[Backend], R]) -> bool:
    """Whether a result of a device that flushes f32 subnormals is one the contract allows (docs/semantics.md,
    Numbers): ``agrees(want)`` (the comparison in which an F32/BF16 subnormal of ``want`` also matches a zero
    of its sign) holds for the exact reference's result ``exact``, for the reference's over the inputs with
    their subnormals flushed (``on_flushed_inputs()``) or for the flush-mode reference's (``on_flush_mode``
    run on a fresh ``CpuBackend(subnormals="flushed")``, closed after). The runs are made only when needed."""
    if agrees(exact) or agrees(on_flushed_inputs()):
        return True
    flush_mode = CpuBackend(subnormals="flushed")
    try:
        return agrees(on_flush_mode(flush_mode))
    finally:
        flush_mode.close()


def compare_with_reference(reference: Backend, backend: Backend, case: Case, ulps: float,
                           runner: Callable[[Backend, Case], Result] | None = None) -> list[str]:
    """Run ``case`` on both and compare (empty when they agree). From a backend whose device flushes f32
    subnormals (``flushes_subnormals``) a result also agrees when ``agrees_when_flushed`` allows it."""
    runner = runner or run_case
    expected = runner(reference, case)
    actual = runner(backend, case)
    problems = compare(case, expected, actual, ulps)
    if problems and flushes_subnormals(backend) and agrees_when_flushed(
            lambda want: not compare(case, want, actual, ulps, flushed=True), expected,
            lambda: runner(reference, with_subnormals_flushed(case)), lambda flush_mode: runner(flush_mode, case)):
        return []
    return problems


def compare(case: Case, expected: Result, actual: Result, ulps: float, flushed: bool = False) -> list[str]:
    """Human-readable mismatches between the reference result and a backend's (empty when they agree).
    ``flushed``: an F32/BF16 subnormal of the reference's also matches a zero of its sign."""
    if expected.trap != actual.trap:
        return [f"trap: reference {expected.trap}, backend {actual.trap}"]
    if expected.trap is not None:
        return []  # buffer contents after a trap are unspecified
    return compare_buffers([b.ty for b in case.buffers if b.output], expected.outputs, actual.outputs, ulps, flushed)


def compare_buffers(types: Sequence[Type | None], expected: Sequence[bytes], actual: Sequence[bytes], ulps: float,
                    flushed: bool = False) -> list[str]:
    """Human-readable mismatches between buffers of the reference and a backend's, buffer k holding elements of
    ``types[k]``: integers bit for bit, floats within ``ulps`` (any NaN matches any NaN: payloads are not
    compared), a None type byte for byte. ``flushed``: an F32/BF16 subnormal of the reference's also matches a
    zero of its sign."""
    problems: list[str] = []
    for k, (ty, want, got) in enumerate(zip(types, expected, actual)):
        if len(want) != len(got):
            problems.append(f"output {k}: reference {len(want)} bytes, backend {len(got)}")
            continue
        if ty is None:
            if want != got:
                first = next(i for i in range(len(want)) if want[i] != got[i])
                problems.append(f"output {k} byte {first}: reference {want[first:first + 8].hex()}, "
                                f"backend {got[first:first + 8].hex()}")
            continue
        if not ty.is_float():
            if want != got:
                w, g = decode(ty, want), decode(ty, got)
                first = next(i for i in range(len(w)) if w[i] != g[i])
                problems.append(f"output {k} element {first}: reference {w[first]}, backend {g[first]}")
            continue
        for i, (w, g) in enumerate(zip(decode(ty, want), decode(ty, got))):
            if flushed and ty in FLUSHED_TYPES and subnormal(np.float32(w)) and g == 0.0 \
                    and math.copysign(1, g) == math.copysign(1, w):
                continue
            d = ulp_distance(w, g, ty)
            if d > ulps:
                problems.append(f"output {k} element {i}: reference {w!r}, backend {g!r} ({d} ulp > {ulps})")
                break
    return problems


__all__ = ["Buffer", "Case", "Result", "run_case", "compare", "compare_buffers", "compare_with_reference",
           "flushes_subnormals", "with_subnormals_flushed", "subnormals_flushed", "FLUSHED_TYPES",
           "agrees_when_flushed"]
