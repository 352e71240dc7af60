"""One example program on one backend: run through ``execute_async``, check, time, show the generated code.

Backends are kept warm between runs (WarmBackends): a Run of the same
example layout on the same backend reuses the backend, its buffers and its
compiled program, so a run measures its first launch (compilation included
when the program is new there) and a warm launch separately.

The run never raises for what a user can cause: every documented error
becomes a RunResult whose ``check`` says which kind (CHECK_BY_ERROR, a table
keyed by error class) and whose ``detail`` is the error's text.

Generated code: a backend that has a method ``generated_code(program,
config) -> str`` (WebAssembly disassembly, WGSL) gets it shown; for any
other backend the view says that it shows none.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from atlas_web import (
    AllocationFailed, AtlasError, AtlasTrap, BackendUnavailable, ExecutionFailed, InvalidBuffer, Program,
    ProgramError, UnsupportedOperation,
)
from atlas_web.registry import get_backend

import examples

__all__ = ["CHECK_OK", "CHECK_RAN", "CHECK_MISMATCH", "CHECK_UNAVAILABLE", "CHECK_BY_ERROR", "RunResult",
           "WarmBackends", "run_example_on", "generated_code", "classify_error", "preview", "PREVIEW_VALUES"]

CHECK_OK = "ok"
#: a program with its own inputs and outputs ran: nothing to compare, its outputs are shown
CHECK_RAN = "ran"
#: values of each output a run shows
PREVIEW_VALUES = 16
CHECK_MISMATCH = "mismatch"
CHECK_UNAVAILABLE = "unavailable"
#: error class -> the check it shows as; the most specific class in an error's MRO wins
CHECK_BY_ERROR: dict[type[BaseException], str] = {
    BackendUnavailable: CHECK_UNAVAILABLE,
    UnsupportedOperation: "unsupported",
    AtlasTrap: "trap",
    ProgramError: "program error",
    AllocationFailed: "allocation failed",
    InvalidBuffer: "invalid buffer",
    ExecutionFailed: "execution failed",
    AtlasError: "error",
    Exception: "internal error",
}


def classify_error(exc: BaseException) -> str:
    """The check an error shows as: the entry of CHECK_BY_ERROR nearest in the error's class hierarchy."""
    for cls in type(exc).__mro__:
        if cls in CHECK_BY_ERROR:
            return CHECK_BY_ERROR[cls]
    return CHECK_BY_ERROR[Exception]


@dataclass(frozen=True)
class RunResult:
    """``example`` of ``size`` elements on ``backend``: the check, the first mismatch or error, the time of
    the first launch on this backend and of a warm launch after it (None when it did not run), the
    generated code (or why there is none) and a preview of each output (name, text)."""

    example: str
    backend: str
    size: int
    check: str
    detail: str = ""
    seconds: float | None = None
    code: str = ""
    warm_seconds: float | None = None
    outputs: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        return self.check in (CHECK_OK, CHECK_RAN)


def preview(values: list, ty: Any) -> str:
    """The first PREVIEW_VALUES of ``values`` (floats in 7 significant digits), and how many there are."""
    shown = [f"{v:.7g}" if ty.is_float() else str(v) for v in values[:PREVIEW_VALUES]]
    more = f", … ({len(values)} values)" if len(values) > PREVIEW_VALUES else ""
    return "[" + ", ".join(shown) + more + "]"


class WarmBackends:
    """Backends kept between runs: one per (backend name, example layout), each with its buffers allocated
    (handles 2, 3, ... as the example's program names them), the ``limit`` most recently used kept open.

    ``factory`` makes a backend by name (default: the registry's get_backend).
    """

    def __init__(self, limit: int = 4, factory: Callable[[str], Any] = get_backend) -> None:
        self.limit = limit
        self._factory = factory
        self._open: OrderedDict[tuple, tuple[Any, dict[str, int]]] = OrderedDict()

    @staticmethod
    def _key(name: str, example: examples.Example) -> tuple:
        return (name, example.name, tuple((b.name, b.ty.name, b.count) for b in example.buffers))

    def get(self, name: str, example: examples.Example) -> tuple[Any, dict[str, int], bool]:
        """(backend, buffer name -> handle, whether it was made now). Raises what get_backend and
        allocate_buffers raise (BackendUnavailable, AllocationFailed, ...)."""
        key = self._key(name, example)
        if key in self._open:
            self._open.move_to_end(key)
            return (*self._open[key], False)
        backend = self._factory(name)
        try:
            handles = examples.allocate_buffers(example, backend)
        except BaseException:
            backend.close()
            raise
        self._open[key] = (backend, handles)
        while len(self._open) > self.limit:
            self._open.popitem(last=False)[1][0].close()
        return backend, handles, True

    def drop(self, name: str, example: examples.Example) -> None:
        """Close and forget the backend of ``(name, example)`` (after a failed run)."""
        entry = self._open.pop(self._key(name, example), None)
        if entry is not None:
            entry[0].close()

    def close(self) -> None:
        while self._open:
            self._open.popitem(last=False)[1][0].close()

    def __len__(self) -> int:
        return len(self._open)


def generated_code(backend: Any, program: Program, config: Any) -> str:
    """What ``backend`` generated for ``program`` (its ``generated_code`` method), or a line saying it shows none.

    An error while producing the code is shown as text, never raised.
    """
    method = getattr(backend, "generated_code", None)
    name = getattr(backend, "name", "") or type(backend).__name__
    if not callable(method):
        return f"the {name} backend does not show its generated code"
    try:
        return str(method(program, config))
    except Exception as exc:  # the code view is informative; a failure there must not hide the run's result
        return f"the {name} backend could not show its code: {type(exc).__name__}: {exc}"


async def run_example_on(backend_name: str, example: examples.Example, program: Program, size: int,
                         warm: WarmBackends | None = None, progress: Callable[[str], object] | None = None,
                         ) -> RunResult:
    """Run ``program`` with ``example``'s buffers on backend ``backend_name`` and compare the outputs.

    The backend comes from ``warm`` (made there, with the buffers, the first time; a fresh backend closed
    afterwards when ``warm`` is None). The inputs are written before each of two launches through
    ``execute_async``: ``seconds`` times the first, ``warm_seconds`` the second. The check is CHECK_OK,
    CHECK_MISMATCH with the first mismatch as detail, CHECK_RAN for an example with no expected output
    (``expected`` None), or the entry of CHECK_BY_ERROR for an error (the backend is then closed).
    ``progress`` (when given) gets one line as each step starts.
    """
    say = progress or (lambda line: None)
    def failed(exc: BaseException, seconds: float | None = None, code: str = "") -> RunResult:
        detail = str(exc) if isinstance(exc, AtlasError) else f"{type(exc).__name__}: {exc}"
        return RunResult(example.name, backend_name, size, classify_error(exc), detail, seconds, code)

    pool = warm if warm is not None else WarmBackends(limit=1)
    say(f"starting {backend_name}")
    try:
        backend, handles, _made = pool.get(backend_name, example)
    except Exception as exc:
        return failed(exc)
    seconds = warm_seconds = None
    try:
        times = []
        for launch in ("first", "warm"):
            say(f"{launch} launch on {backend_name}")
            for spec in example.buffers:
                backend.copy_to_buffer(handles[spec.name], spec.data)
            start = time.perf_counter()
            await backend.execute_async(program, example.config)
            times.append(time.perf_counter() - start)
            seconds = times[0]
        warm_seconds = times[1]
        actual = {}
        say("reading the outputs")
        for output in example.outputs:
            spec = example.buffer(output.buffer)
            values = await backend.copy_typed_from_async(handles[output.buffer], spec.ty, spec.count)
            actual[output.buffer] = values.tolist()
        code = generated_code(backend, program, example.config)
    except Exception as exc:
        result = failed(exc, seconds, generated_code(backend, program, example.config))
        pool.drop(backend_name, example)
        return result
    finally:
        if warm is None:
            pool.close()
    shown = tuple((name, preview(values, example.buffer(name).ty)) for name, values in actual.items())
    if example.expected is None:
        return RunResult(example.name, backend_name, size, CHECK_RAN, "", seconds, code, warm_seconds, shown)
    problems = examples.compare_outputs(example, actual)
    check = CHECK_MISMATCH if problems else CHECK_OK
    return RunResult(example.name, backend_name, size, check, problems[0] if problems else "", seconds, code,
                     warm_seconds, shown)
