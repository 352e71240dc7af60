"""Run one conformance case on a backend and compare it with the reference.

A Case allocates its buffers in a fixed order (so handles are the same on
every backend: 2, 3, ...), runs one program, and reads back its output
buffers. Integers compare bit for bit, floats within the backend's documented
ulp tolerance for the case's op, traps by (code, instruction index, lane).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from atlas_web import AtlasTrap, Backend, LaunchConfig, Program
from atlas_web.isa import Type

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


def compare(case: Case, expected: Result, actual: Result, ulps: float) -> list[str]:
    """Human-readable mismatches between the reference result and a backend's (empty when they agree)."""
    if expected.trap != actual.trap:
        return [f"trap: reference {expected.trap}, backend {actual.trap}"]
    if expected.trap is not None:
        return []  # buffer contents after a trap are unspecified
    problems: list[str] = []
    outs = [b for b in case.buffers if b.output]
    for k, (buf, want, got) in enumerate(zip(outs, expected.outputs, actual.outputs)):
        ty = buf.ty
        if not ty.is_float():
            if want != got:
                w, g = decode(ty, want), decode(ty, got)
                first = next(i for i in range(len(w)) if w[i] != g[i])
                problems.append(f"output {k} element {first}: reference {w[first]}, backend {g[first]}")
            continue
        for i, (w, g) in enumerate(zip(decode(ty, want), decode(ty, got))):
            d = ulp_distance(w, g, ty)
            if d > ulps:
                problems.append(f"output {k} element {i}: reference {w!r}, backend {g!r} ({d} ulp > {ulps})")
                break
    return problems


__all__ = ["Buffer", "Case", "Result", "run_case", "compare"]
