"""The native demo: every example on every available backend, checked against its expected output.

Each example runs on a fresh backend (its program names buffer handles 2, 3,
...): once cold (verify + compile + run) and once more from the backend's
caches (unless the first took over SLOW_LAUNCH_SECONDS); both times are
shown. A backend that cannot compile an instruction is shown as
``unsupported`` (the error names it); a wrong result or any other error
fails the demo. Expected outputs and comparisons are NumPy's
(demo.expected), computed once per example; from PROGRESS_SIZE elements on,
each step is reported on stderr as it starts, and a backend's run of one
example is stopped after ``--time-limit`` seconds (default LARGE_TIME_LIMIT
there: the reference backend, the executable spec, takes minutes for collatz
at 10M lanes), shown as ``stopped``, which does not fail the demo.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from atlas_web import UnsupportedOperation
from atlas_web.registry import discover_backends, get_backend

import examples

from .expected import compare_arrays, expected_arrays

__all__ = ["DemoRow", "run_demo", "format_table", "main", "CHECK_OK", "CHECK_MISMATCH", "CHECK_UNSUPPORTED",
           "CHECK_ERROR", "CHECK_STOPPED", "FAILING_CHECKS", "PROGRESS_SIZE", "SLOW_LAUNCH_SECONDS", "LARGE_TIME_LIMIT"]

CHECK_OK = "ok"
CHECK_MISMATCH = "mismatch"
CHECK_UNSUPPORTED = "unsupported"
CHECK_ERROR = "error"
#: the run took longer than the time limit and was stopped (not a failure: nothing was found wrong)
CHECK_STOPPED = "stopped"
#: the checks that make the demo exit with status 1
FAILING_CHECKS = frozenset({CHECK_MISMATCH, CHECK_ERROR})
#: from this many elements per example on, main() reports each step on stderr as it starts
PROGRESS_SIZE = 100_000
#: a first launch slower than this (s) is not followed by the cached one (its time shows as "-")
SLOW_LAUNCH_SECONDS = 10.0
#: the default --time-limit (s) of one backend's run of one example from PROGRESS_SIZE elements on
LARGE_TIME_LIMIT = 120.0


#: seconds until the timer tries again when it expired inside a finalizer (where a raise would be lost)
RETRY_SECONDS = 0.02


class _TimeLimit(BaseException):
    """Raised into a run that passed its time limit (by ``_Deadline.check`` between launches, or by the
    SIGALRM handler of ``_deadline`` inside one); a BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` on the way turns it into an error row."""


class _Deadline:
    """The time limit of one backend's run of one example: ``check()`` raises _TimeLimit once it has passed
    (called between launches: before each launch and before reading the outputs)."""

    def __init__(self, seconds: float | None) -> None:
        self.ends = None if seconds is None else time.monotonic() + seconds
        self.expired = False

    def check(self) -> None:
        """Raise _TimeLimit when the limit has passed."""
        if self.expired or (self.ends is not None and time.monotonic() >= self.ends):
            self.expired = True
            raise _TimeLimit()


def _in_finalizer(frame) -> bool:
    """Whether ``frame`` runs inside a ``__del__`` (a garbage collection, wgpu's GPUObjectBase among them):
    an exception raised there is reported as ignored and lost."""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def _deadline(seconds: float | None):
    """The block's _Deadline of ``seconds`` (None: no limit). The limit is checked between launches
    (``check``); a single launch longer than the limit (the reference's collatz at 10M lanes: minutes) is
    stopped by a timer signal whose handler raises _TimeLimit in Python code, in the webgpu backend's waits
    and (its epoch callback delivers it) in a wasm call, but never inside a finalizer: there it tries again
    RETRY_SECONDS later. The timer only on the main thread of a platform with setitimer; elsewhere only the
    checks between launches stop the block."""
    deadline = _Deadline(seconds)
    if seconds is None or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield deadline
        return

    def expired(_signum, frame):
        deadline.expired = True
        if _in_finalizer(frame):
            signal.setitimer(signal.ITIMER_REAL, RETRY_SECONDS)
            return
        raise _TimeLimit()

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield deadline
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class DemoRow:
    """One example on one backend: the check, a detail line, and the cold and cached run times (s)."""

    example: str
    backend: str
    check: str
    detail: str = ""
    cold_seconds: float | None = None
    cached_seconds: float | None = None


def _read_outputs(example: examples.Example, backend, handles) -> dict[str, object]:
    """Every output buffer as the array.array the backend copies out (no per-element lists)."""
    return {output.buffer: backend.copy_typed_from(handles[output.buffer], example.buffer(output.buffer).ty,
                                                   example.buffer(output.buffer).count)
            for output in example.outputs}


def _timed_launch(example: examples.Example, backend, program, handles, deadline: _Deadline | None = None) -> float:
    """Seconds from the launch to its finished outputs: one element of the first output is read back
    (webgpu returns from a launch that cannot trap once it is submitted; without the read its time went
    to the next launch: relu_chain at 10M lanes showed 0.19 s cold and 28.7 s cached on lavapipe).
    Raises _TimeLimit instead of launching once ``deadline`` has passed."""
    if deadline is not None:
        deadline.check()
    first = example.outputs[0].buffer
    start = time.perf_counter()
    backend.execute_program(program, example.config)
    backend.copy_typed_from(handles[first], example.buffer(first).ty, 1)
    return time.perf_counter() - start


def _run_one(example: examples.Example, backend_name: str, expected: dict, time_limit: float | None = None) -> DemoRow:
    try:
        with _deadline(time_limit) as deadline:
            return _run_checked(example, backend_name, expected, deadline)
    except _TimeLimit:
        return DemoRow(example.name, backend_name, CHECK_STOPPED,
                       f"stopped after {time_limit:g} s (--time-limit; the run was not finished, nothing was found wrong)")


def _run_checked(example: examples.Example, backend_name: str, expected: dict,
                 deadline: _Deadline | None = None) -> DemoRow:
    try:
        program = example.program_object()
        with get_backend(backend_name) as backend:
            handles = examples.allocate_buffers(example, backend)
            cold = _timed_launch(example, backend, program, handles, deadline)
            cached = None
            if cold <= SLOW_LAUNCH_SECONDS:  # a slow launch is not run twice (the reference at 10M lanes)
                cached = _timed_launch(example, backend, program, handles, deadline)
            if deadline is not None:
                deadline.check()
            actual = _read_outputs(example, backend, handles)
    except UnsupportedOperation as exc:
        return DemoRow(example.name, backend_name, CHECK_UNSUPPORTED, str(exc))
    except Exception as exc:  # a documented error or a backend bug: either way a failed row, not a crash
        return DemoRow(example.name, backend_name, CHECK_ERROR, f"{type(exc).__name__}: {exc}")
    problems = compare_arrays(example, actual, expected)
    check = CHECK_MISMATCH if problems else CHECK_OK
    return DemoRow(example.name, backend_name, check, "; ".join(problems), cold, cached)


def run_demo(size: int, backend_names: Sequence[str] | None = None,
             progress: Callable[[str], None] | None = None, time_limit: float | None = None) -> list[DemoRow]:
    """Run every example of ``size`` elements on each backend named (default: every available one).

    ``progress`` (when given) is called with one line as each step starts (building an example's inputs,
    its expected outputs, each backend's runs) and with each row's outcome. ``time_limit``: seconds one
    backend's run of one example may take before it is stopped (its row: CHECK_STOPPED); None: no limit.
    """
    say = progress or (lambda line: None)
    if backend_names is None:
        backend_names = [status.name for status in discover_backends() if status.available]
    rows = []
    for name in examples.EXAMPLE_MODULES:
        started = time.perf_counter()
        say(f"{name}: building {size} elements of input")
        example = importlib.import_module(f"examples.{name}").build(size)
        say(f"{name}: expected outputs (NumPy)")
        expected = expected_arrays(example)
        for backend_name in backend_names:
            say(f"{name}: running on {backend_name}")
            row = _run_one(example, backend_name, expected, time_limit)
            say(f"{name} on {backend_name}: {row.check} (first {_ms(row.cold_seconds)} ms, "
                f"cached {_ms(row.cached_seconds)} ms)")
            rows.append(row)
        say(f"{name}: done in {time.perf_counter() - started:.1f} s")
    return rows


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f}"


def format_table(rows: Sequence[DemoRow]) -> str:
    """The rows as an aligned text table, details (mismatches, errors) listed under it."""
    header = ("example", "backend", "check", "cold ms", "cached ms")
    cells = [header] + [(r.example, r.backend, r.check, _ms(r.cold_seconds), _ms(r.cached_seconds)) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i < 3 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"{r.example} on {r.backend}: {r.detail}" for r in rows if r.detail]
    return "\n".join(lines + ([""] + notes if notes else []))


def main(argv: Sequence[str] | None = None) -> int:
    """Print the backends and the demo table; exit status 1 on a mismatch or error, 2 when no backend starts."""
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000, help="elements per example (default 1000)")
    parser.add_argument("--backend", action="append", dest="backends", metavar="NAME",
                        help="run only on this backend (repeatable; default: every available one)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help=f"stop one backend's run of one example after this long (default: none below "
                             f"{PROGRESS_SIZE} elements, {LARGE_TIME_LIMIT:g} s from there on; 0: no limit)")
    args = parser.parse_args(argv)
    if args.size < 1:
        parser.error("--size must be at least 1")
    time_limit = args.time_limit if args.time_limit is not None else (
        LARGE_TIME_LIMIT if args.size >= PROGRESS_SIZE else None)
    if time_limit is not None and time_limit <= 0:
        time_limit = None
    from atlas_web.registry import print_backend_summary
    statuses = print_backend_summary()
    if args.backends is None and not any(s.available for s in statuses):
        print("no backend can start here")
        return 2
    print()
    progress = None
    if args.size >= PROGRESS_SIZE:
        start = time.perf_counter()
        progress = lambda line: print(f"[{time.perf_counter() - start:7.1f} s] {line}", file=sys.stderr, flush=True)
    rows = run_demo(args.size, args.backends, progress, time_limit)
    print(format_table(rows))
    return 1 if any(r.check in FAILING_CHECKS for r in rows) else 0
