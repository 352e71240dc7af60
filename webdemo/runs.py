"""One example program on one backend: run through ``execute_async``, check, time, show the generated code.

The run never raises for what a user can cause: every documented error
becomes a RunResult whose ``check`` says which kind (CHECK_BY_ERROR, a table
keyed by error class) and whose ``detail`` is the error's text.

Generated code: a backend that has a method ``generated_code(program,
config) -> str`` (WebAssembly disassembly, WGSL) gets it shown; for any
other backend the view says that it shows none.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from atlas_web import (
    AllocationFailed, AtlasError, AtlasTrap, BackendUnavailable, ExecutionFailed, InvalidBuffer, Program,
    ProgramError, UnsupportedOperation,
)
from atlas_web.registry import get_backend

import examples

__all__ = ["CHECK_OK", "CHECK_MISMATCH", "CHECK_UNAVAILABLE", "CHECK_BY_ERROR", "RunResult", "run_example_on",
           "generated_code", "classify_error"]

CHECK_OK = "ok"
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
    """``example`` of ``size`` elements on ``backend``: the check, the first mismatch or error, the launch
    time (None when it did not run) and the generated code (or why there is none)."""

    example: str
    backend: str
    size: int
    check: str
    detail: str = ""
    seconds: float | None = None
    code: str = ""

    @property
    def ok(self) -> bool:
        return self.check == CHECK_OK


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


async def run_example_on(backend_name: str, example: examples.Example, program: Program, size: int) -> RunResult:
    """Run ``program`` with ``example``'s buffers on a fresh backend ``backend_name`` and compare the outputs.

    The launch goes through ``execute_async`` (the browser backends wait for
    the device there); ``seconds`` times that call alone. The check is
    CHECK_OK, CHECK_MISMATCH with the first mismatch as detail, or the entry
    of CHECK_BY_ERROR for an error. The backend is closed afterwards.
    """
    def failed(exc: BaseException, seconds: float | None = None, code: str = "") -> RunResult:
        detail = str(exc) if isinstance(exc, AtlasError) else f"{type(exc).__name__}: {exc}"
        return RunResult(example.name, backend_name, size, classify_error(exc), detail, seconds, code)

    try:
        backend = get_backend(backend_name)
    except Exception as exc:
        return failed(exc)
    seconds = None
    try:
        handles = examples.allocate_buffers(example, backend)
        start = time.perf_counter()
        await backend.execute_async(program, example.config)
        seconds = time.perf_counter() - start
        actual = examples.read_outputs(example, backend, handles)
        code = generated_code(backend, program, example.config)
    except Exception as exc:
        return failed(exc, seconds, generated_code(backend, program, example.config))
    finally:
        backend.close()
    problems = examples.compare_outputs(example, actual)
    if problems:
        return RunResult(example.name, backend_name, size, CHECK_MISMATCH, problems[0], seconds, code)
    return RunResult(example.name, backend_name, size, CHECK_OK, "", seconds, code)
