"""The page's state and actions, free of the DOM: examples, backend choices, runs and their timings.

``webdemo.page`` reads the inputs, calls these methods and shows what they
return; tests drive a DemoSession natively the same way.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, replace

import examples

from typing import Callable

from atlas_web import ProgramError

from .chart import PHASE_FIRST, PHASE_WARM, TimingPoint, timing_chart_svg
from .checks import ProgramCheck, check_examples, check_program_text
from .choices import AUTO, BROWSER_CHOICES, NOT_AVAILABLE, BackendChoice, backend_choices, resolve_choice
from .declared import declared_example
from .runs import CHECK_RAN, CHECK_UNAVAILABLE, RunResult, WarmBackends, run_example_on

__all__ = ["DEFAULT_SIZE", "MAX_SIZE", "CHECKS_SERIES", "STATUS_PROGRAM_ERROR", "OWN_PROGRAMS_CHART", "RunOutcome",
           "DemoSession", "parse_size"]

#: elements per example when the page opens
DEFAULT_SIZE = 1000
#: the largest size the page accepts: its expected outputs and comparisons run in pure Python (the site has no
#: NumPy), natively 80 s for the five examples at 1M (collatz's expected outputs 34 s); inputs (examples.inputs)
#: and a WebGPU launch's lane state (state windows, each its own buffer) no longer limit it
MAX_SIZE = 1 << 20
#: the chart series of the parse + verify + round-trip time, recorded for every program that checks out
CHECKS_SERIES = "checks only"
#: the status of a run whose program did not parse or verify
STATUS_PROGRAM_ERROR = "program error"
#: the chart of the runs of programs that are not an example's own (edited, or declaring their buffers): their
#: timings would otherwise be averaged into the example's points at the same size
OWN_PROGRAMS_CHART = "your programs"


def parse_size(text: str | int) -> int:
    """The example size typed into the page; raises ValueError saying the accepted range."""
    try:
        size = int(str(text).strip())
    except ValueError:
        raise ValueError(f"size must be a whole number from 1 to {MAX_SIZE}, got {str(text)!r}") from None
    if not 1 <= size <= MAX_SIZE:
        raise ValueError(f"size must be a whole number from 1 to {MAX_SIZE}, got {size}")
    return size


@dataclass(frozen=True)
class RunOutcome:
    """What pressing Run gave: the program check, the backend it was meant for, and the run (None when it
    did not run: the program is bad or the backend is not available)."""

    check: ProgramCheck
    backend: BackendChoice
    run: RunResult | None

    @property
    def status(self) -> str:
        """STATUS_PROGRAM_ERROR, CHECK_UNAVAILABLE, or the run's check ("ok", "mismatch", "trap", ...)."""
        if not self.check.ok:
            return STATUS_PROGRAM_ERROR
        return self.run.check if self.run is not None else CHECK_UNAVAILABLE

    @property
    def message(self) -> str:
        """The result line for the page (a program error's where and why is the error box's: ``check.summary``)."""
        if not self.check.ok:
            return f"not run: {self.check.stage} failed (the error is below)"
        if self.run is None:
            return f"the program checks out but did not run: {self.backend.name} is {NOT_AVAILABLE} " \
                   f"({self.backend.reason})"
        if self.run.check == CHECK_RAN:
            return f"ran on {self.run.backend}: the outputs you declared are below"
        if self.run.ok:
            return f"ok: {self.run.example} on {self.run.backend} matches the expected output"
        if self.run.detail.startswith(f"{self.run.check} "):  # an AtlasTrap's text starts with "trap ..."
            return self.run.detail
        return f"{self.run.check}: {self.run.detail}"

    @property
    def code(self) -> str:
        """The generated code, or why there is none."""
        if self.run is not None:
            return self.run.code
        if not self.check.ok:
            return "no code: the program does not parse or verify"
        return f"no code: {self.backend.name} is {NOT_AVAILABLE}"


class DemoSession:
    """The browser demo's state: the backend choices offered, the examples built so far, the timings.

    ``choices`` are the picker's entries (default BROWSER_CHOICES; native
    tests pass ``("auto", "cpu")``). Backends stay open between runs
    (``warm``, a WarmBackends), so a repeated run measures warm launches.
    """

    def __init__(self, *, choices: tuple[str, ...] = BROWSER_CHOICES) -> None:
        self.choice_names = choices
        self.timings: list[TimingPoint] = []
        self.warm = WarmBackends()
        self._choices: list[BackendChoice] | None = None
        self._examples: dict[tuple[str, int], examples.Example] = {}
        self._digests: dict[tuple[str, int], str] = {}

    @property
    def example_names(self) -> tuple[str, ...]:
        return examples.EXAMPLE_MODULES

    def example(self, name: str, size: int) -> examples.Example:
        """Example ``name`` built for ``size`` elements (built once). Raises KeyError naming the examples."""
        if name not in examples.EXAMPLE_MODULES:
            raise KeyError(f"unknown example {name!r} (examples: {', '.join(examples.EXAMPLE_MODULES)})")
        key = (name, size)
        if key not in self._examples:
            self._examples[key] = importlib.import_module(f"examples.{name}").build(size)
        return self._examples[key]

    def program_text(self, name: str, size: int) -> str:
        """The text assembly of example ``name`` at ``size``."""
        program = self.example(name, size).program
        return program if isinstance(program, str) else program.to_text()

    def choices(self, *, refresh: bool = False) -> list[BackendChoice]:
        """The picker's entries (probed once; ``refresh`` probes again)."""
        if self._choices is None or refresh:
            from atlas_web.registry import discover_backends
            self._choices = backend_choices(self.choice_names, discover_backends(refresh=refresh))
        return self._choices

    def check_examples(self, size: int) -> list[tuple[examples.Example, ProgramCheck]]:
        """The checks of every example's program at ``size``."""
        return check_examples(size)

    def _is_own_program(self, check: ProgramCheck, name: str, size: int) -> bool:
        """Whether the checked program is example ``name``'s own at ``size`` (comments and layout aside)."""
        key = (name, size)
        if key not in self._digests:
            self._digests[key] = self.example(name, size).program_object().digest()
        return check.digest == self._digests[key]

    def _record(self, result: RunResult, chart: str) -> None:
        if result.seconds is not None:
            self.timings.append(TimingPoint(result.backend, result.size, result.seconds, chart, PHASE_FIRST))
        if result.warm_seconds is not None:
            self.timings.append(TimingPoint(result.backend, result.size, result.warm_seconds, chart, PHASE_WARM))

    async def run(self, text: str, example_name: str, size: int, choice: str,
                  progress: Callable[[str], object] | None = None) -> RunOutcome:
        """Check ``text`` and, when it verifies and the backend is available, run it on backend ``choice``
        with the buffers it declares (webdemo.declared: its outputs are shown) or else those of example
        ``example_name`` at ``size``; records the timings under the example's chart when ``text`` is the
        example's own program (its digest), else under OWN_PROGRAMS_CHART. ``progress`` gets a line as each
        step of the run starts.

        Raises KeyError for an unknown example or choice (the page offers only known ones).
        """
        example = own = self.example(example_name, size)
        backend = resolve_choice(choice, self.choices())
        check = check_program_text(text)
        if check.ok:
            try:
                example = declared_example(text, example.config) or example
            except ProgramError as exc:
                check = replace(check, ok=False, stage="declarations", message=str(exc))
        chart = example_name if check.ok and example is own and self._is_own_program(check, example_name, size) \
            else OWN_PROGRAMS_CHART
        if check.ok:
            self.timings.append(TimingPoint(CHECKS_SERIES, size, check.seconds, chart))
        if not check.ok or not backend.available:
            return RunOutcome(check, backend, None)
        result = await run_example_on(backend.name, example, check.program, size, self.warm, progress)
        self._record(result, chart)
        return RunOutcome(check, backend, result)

    async def run_all(self, size: int, on_result: Callable[[RunResult, int, int], object] | None = None,
                      ) -> list[RunResult]:
        """Every example's own program at ``size`` on every available backend of the picker (AUTO left out:
        it runs one of them), in example order then picker order; records the timings.

        ``on_result(result, done, total)`` is called (and awaited when it returns an awaitable) after each
        run, so the page can show the rows as they come. Returns one RunResult per (example, backend); an
        empty list when no backend is available.
        """
        backends = [entry.name for entry in self.choices() if entry.available and entry.name != AUTO]
        results: list[RunResult] = []
        total = len(self.example_names) * len(backends)

        async def done(result: RunResult) -> None:
            results.append(result)
            if on_result is not None:
                shown = on_result(result, len(results), total)
                if hasattr(shown, "__await__"):
                    await shown

        for name in self.example_names:
            example = self.example(name, size)
            check = check_program_text(self.program_text(name, size))
            for backend in backends:
                if not check.ok:  # the examples are known good: a failure here is a bug, shown as such
                    await done(RunResult(name, backend, size, STATUS_PROGRAM_ERROR, check.summary))
                    continue
                result = await run_example_on(backend, example, check.program, size, self.warm)
                self._record(result, name)
                await done(result)
        return results

    def charts(self) -> list[tuple[str, str]]:
        """(example, chart SVG) for every example with timings, in example order, then OWN_PROGRAMS_CHART's."""
        return [(name, self.chart_svg(name)) for name in (*self.example_names, OWN_PROGRAMS_CHART)
                if any(p.example == name for p in self.timings)]

    def chart_svg(self, example: str | None = None) -> str:
        """The chart of the timings recorded so far for ``example`` (every timing when None)."""
        points = [p for p in self.timings if example is None or p.example == example]
        title = f"{example}: time (ms) by size" if example else "time (ms) by example size"
        return timing_chart_svg(points, title=title)
