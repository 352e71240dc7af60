"""Example Atlas programs, each with its inputs and an independent computation of its expected output.

Every module in ``EXAMPLE_MODULES`` exposes ``build(size) -> Example``. The
programs are written in text assembly and name their buffers by handle: the
buffers of ``Example.buffers`` are allocated in order on a fresh backend, so
they get handles 2, 3, 4, ... (the first allocation of every backend gets 2).
Running an example twice on the same buffers gives the same output.

Standard library only (plus atlas_web), so the examples also run under Pyodide; their random inputs
(examples.inputs) use NumPy where it imports and JavaScript under Pyodide, with the same bits.
"""

from __future__ import annotations

import array
import importlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from atlas_web import Backend, ExecutionFailed, LaunchConfig, Program, Type
from atlas_web.backend import typed_format

__all__ = [
    "Example", "BufferSpec", "OutputSpec", "EXAMPLE_MODULES", "FIRST_HANDLE", "build_all",
    "allocate_buffers", "read_outputs", "run_example", "compare_outputs", "typed_array",
]

#: the handle of the first buffer allocated on a fresh backend
FIRST_HANDLE = 2
#: the example modules, in the order the demo shows them
EXAMPLE_MODULES: tuple[str, ...] = ("vector_add", "relu_chain", "softmax", "collatz", "atlas_bytes")


def typed_array(ty: Type, values: Sequence[int | float] | int) -> array.array:
    """An ``array.array`` of ``ty`` holding ``values`` (or that many zeros); floats round to ``ty``."""
    code, _ = typed_format(ty)
    return array.array(code, bytes(values * ty.size_bytes())) if isinstance(values, int) else array.array(code, values)


@dataclass(frozen=True)
class BufferSpec:
    """A buffer of an example: its name, element type and initial values (an array.array)."""

    name: str
    ty: Type
    data: array.array

    @property
    def count(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class OutputSpec:
    """How to read one output: the buffer's name, and the tolerances of a float comparison
    (``math.isclose`` with ``rel_tol`` and ``abs_tol``; integers always compare exactly)."""

    buffer: str
    rel_tol: float = 0.0
    abs_tol: float = 0.0


@dataclass(frozen=True)
class Example:
    """One example program with everything needed to run and check it.

    ``program`` is text assembly (or a Program); ``buffers`` are allocated in
    order (handles FIRST_HANDLE, FIRST_HANDLE + 1, ...); ``expected`` maps the
    initial buffer values (name -> list) to the expected values of every
    output buffer (name -> list).
    """

    name: str
    description: str
    program: str | Program
    config: LaunchConfig
    buffers: tuple[BufferSpec, ...]
    outputs: tuple[OutputSpec, ...]
    expected: Callable[[Mapping[str, list]], dict[str, list]]

    def program_object(self) -> Program:
        """The Program (parsed from the text when needed). Raises ProgramError for malformed text."""
        return self.program if isinstance(self.program, Program) else Program.from_text(self.program)

    def buffer(self, name: str) -> BufferSpec:
        """The buffer called ``name``; raises KeyError naming the buffers there are."""
        for spec in self.buffers:
            if spec.name == name:
                return spec
        raise KeyError(f"example {self.name!r} has no buffer {name!r} (buffers: {[b.name for b in self.buffers]})")

    def handle_of(self, name: str) -> int:
        """The handle buffer ``name`` gets on a fresh backend."""
        return FIRST_HANDLE + self.buffers.index(self.buffer(name))

    def expected_outputs(self) -> dict[str, list]:
        """The expected values of every output buffer, computed from the initial values."""
        return self.expected({spec.name: spec.data.tolist() for spec in self.buffers})

    def needs(self) -> set[tuple[str, Type | None]]:
        """The (instruction name, type) pairs a backend must support to run the example."""
        return {(instr.INFO.name, instr.type) for instr in self.program_object()}


def build_all(size: int) -> list[Example]:
    """Every example, built for ``size`` elements, in EXAMPLE_MODULES order."""
    return [importlib.import_module(f"{__name__}.{name}").build(size) for name in EXAMPLE_MODULES]


def allocate_buffers(example: Example, backend: Backend) -> dict[str, int]:
    """Allocate and fill the example's buffers in order; returns name -> handle.

    Raises ExecutionFailed when the backend is not fresh (a handle differs from
    the one the program names), after freeing what it allocated.
    """
    handles: dict[str, int] = {}
    for spec in example.buffers:
        handle = int(backend.allocate_typed(spec.data))
        handles[spec.name] = handle
        if handle != example.handle_of(spec.name):
            for allocated in handles.values():
                backend.free_buffer(allocated)
            raise ExecutionFailed(
                f"example {example.name!r}: buffer {spec.name!r} got handle {handle}, the program expects "
                f"{example.handle_of(spec.name)}; run examples on a fresh backend")
    return handles


def read_outputs(example: Example, backend: Backend, handles: Mapping[str, int]) -> dict[str, list]:
    """The current values of every output buffer (name -> list). One copy per buffer."""
    out = {}
    for output in example.outputs:
        spec = example.buffer(output.buffer)
        out[output.buffer] = backend.copy_typed_from(handles[output.buffer], spec.ty, spec.count).tolist()
    return out


def run_example(example: Example, backend: Backend, program: Program | None = None) -> dict[str, list]:
    """Allocate the buffers on a fresh ``backend``, run the program once and return the outputs.

    The buffers are freed afterwards. Raises what ``execute_program`` raises
    (ProgramError, UnsupportedOperation, AtlasTrap, ...) and ExecutionFailed for
    a backend that is not fresh.
    """
    program = program if program is not None else example.program_object()
    handles = allocate_buffers(example, backend)
    try:
        backend.execute_program(program, example.config)
        return read_outputs(example, backend, handles)
    finally:
        for handle in handles.values():
            backend.free_buffer(handle)


def _same(ty: Type, got: Any, want: Any, output: OutputSpec) -> bool:
    if not ty.is_float():
        return got == want
    if math.isnan(want):
        return math.isnan(got)
    return math.isclose(got, want, rel_tol=output.rel_tol, abs_tol=output.abs_tol)


def compare_outputs(example: Example, actual: Mapping[str, list], expected: Mapping[str, list] | None = None,
                    ) -> list[str]:
    """Mismatches between ``actual`` and the expected outputs, one line per output buffer (empty: all agree)."""
    expected = example.expected_outputs() if expected is None else expected
    problems = []
    for output in example.outputs:
        ty = example.buffer(output.buffer).ty
        got, want = actual[output.buffer], expected[output.buffer]
        if len(got) != len(want):
            problems.append(f"{output.buffer}: {len(got)} values, expected {len(want)}")
            continue
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if not _same(ty, g, w, output)]
        if bad:
            i = bad[0]
            problems.append(f"{output.buffer}: {len(bad)} of {len(want)} values differ; "
                            f"first at {i}: got {got[i]!r}, expected {want[i]!r}")
    return problems
