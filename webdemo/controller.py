"""The page's actions as messages: what the Web Worker running the page's Python answers and announces.

The page's Python runs in a dedicated Web Worker (www/worker.js), so no run
blocks the page's thread; the page (www/boot.js) draws what it is told. This
module is that protocol, free of Pyodide so it is tested natively:

- ``Controller.handle(action, args)`` answers one request of the page (a
  dict in, a dict out, both JSON-ready; ACTIONS lists them);
- ``post(event)`` (given to the Controller) announces what happens while it
  works: the first result, the backend probe, each step of a run, each row
  of "Run every example" as it is done.

Nothing a user can cause raises: a bad size, a program that does not parse or
verify, a backend that is not available become answers the page shows.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from atlas_web.errors import ArrayError

from .choices import resolve_choice
from .runs import RunResult
from .session import DEFAULT_SIZE, DemoSession, RunOutcome, parse_size

__all__ = ["Controller", "ACTIONS", "EVENTS", "run_row", "outcome_answer"]

#: the requests the page sends (Controller.handle's ``action``)
ACTIONS: tuple[str, ...] = ("program_text", "run", "run_all", "transformer")
#: the events the worker posts (``event`` of each message)
EVENTS: tuple[str, ...] = ("examples", "checks", "choices", "progress", "row", "charts")


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f} ms"


def run_row(result: RunResult) -> dict[str, Any]:
    """One row of the "every example" table."""
    return {"example": result.example, "backend": result.backend, "check": result.check, "ok": result.ok,
            "launch": f"{_ms(result.seconds)} / {_ms(result.warm_seconds)}", "detail": result.detail}


def _timing_line(outcome: RunOutcome) -> str:
    parts = [f"checks {outcome.check.seconds * 1e3:.2f} ms"]
    run = outcome.run
    if run is not None and run.seconds is not None:
        parts.append(f"first launch {run.seconds * 1e3:.2f} ms on {run.backend}")
    if run is not None and run.warm_seconds is not None:
        parts.append(f"warm launch {run.warm_seconds * 1e3:.2f} ms")
    return " · ".join(parts)


def outcome_answer(outcome: RunOutcome) -> dict[str, Any]:
    """What the page shows after Run: result line and status, error box, timings, code, outputs."""
    return {"status": outcome.status, "message": outcome.message,
            "error": "" if outcome.check.ok else outcome.check.summary, "timing": _timing_line(outcome),
            "code": outcome.code, "outputs": [list(pair) for pair in (outcome.run.outputs if outcome.run else ())]}


class Controller:
    """The page's Python side: a DemoSession, answering the page's requests and posting events."""

    def __init__(self, post: Callable[[dict], None], session: DemoSession | None = None,
                 transformer: Any = None) -> None:
        """``transformer``: the webdemo.transformer.TransformerDemo to use (None: one made on the first request,
        so the page's start does not import the array library)."""
        self.post = post
        self.session = session if session is not None else DemoSession()
        self.transformer = transformer
        self._handlers: dict[str, Callable[[dict], Awaitable[dict]]] = {
            "program_text": self._program_text, "run": self._run, "run_all": self._run_all,
            "transformer": self._transformer}

    # ---- start ---------------------------------------------------------------------------------------------
    def first_result(self) -> None:
        """Post the examples (picker, size, first program) and the round trips of every example."""
        session = self.session
        self.post({"event": "examples", "size": DEFAULT_SIZE,
                   "examples": [[name, session.example(name, DEFAULT_SIZE).description]
                                for name in session.example_names],
                   "text": session.program_text(session.example_names[0], DEFAULT_SIZE)})
        rows = []
        for example, check in session.check_examples(DEFAULT_SIZE):
            rows.append({"example": example.name, "instructions": check.instruction_count,
                         "digest": check.digest or "", "ok": check.ok, "summary": check.summary,
                         "forms": [[form.form, form.same] for form in check.forms]})
        self.post({"event": "checks", "size": DEFAULT_SIZE, "rows": rows})
        self.post({"event": "charts", "charts": self._charts()})

    def probe(self) -> None:
        """Post the backend picker's entries (probing the backends the first time)."""
        try:
            entries = [{"name": c.name, "label": c.label, "explanation": c.explanation, "available": c.available}
                       for c in self.session.choices()]
            self.post({"event": "choices", "entries": entries})
        except Exception as exc:  # a bug in a backend's probe: say so, keep the page
            self.post({"event": "choices", "entries": [], "error": f"internal error while probing the backends: "
                                                                   f"{type(exc).__name__}: {exc}"})

    # ---- requests ------------------------------------------------------------------------------------------
    async def handle(self, action: str, args: dict) -> dict:
        """The answer to request ``action`` with ``args``; an unexpected error becomes {"internal_error": text}."""
        handler = self._handlers.get(action)
        if handler is None:
            return {"internal_error": f"unknown action {action!r} (actions: {', '.join(ACTIONS)})"}
        try:
            return await handler(args)
        except Exception as exc:  # a bug: the page shows it and keeps working
            return {"internal_error": f"internal error: {type(exc).__name__}: {exc}"}

    async def _program_text(self, args: dict) -> dict:
        try:
            size = parse_size(args["size"])
        except ValueError as exc:
            return {"input_error": str(exc)}
        return {"text": self.session.program_text(args["example"], size), "size": size}

    def _charts(self) -> list[list[str]]:
        return [[name, svg] for name, svg in self.session.charts()] or [["", self.session.chart_svg()]]

    async def _run(self, args: dict) -> dict:
        try:
            size = parse_size(args["size"])
        except ValueError as exc:
            return {"input_error": str(exc)}

        def progress(line: str) -> None:
            self.post({"event": "progress", "target": "run", "text": line})

        outcome = await self.session.run(args["text"], args["example"], size, args["backend"], progress)
        answer = outcome_answer(outcome)
        answer["charts"] = self._charts()
        return answer

    async def _run_all(self, args: dict) -> dict:
        try:
            size = parse_size(args["size"])
        except ValueError as exc:
            return {"input_error": str(exc)}

        async def shown(result: RunResult, done: int, total: int) -> None:
            self.post({"event": "row", "row": run_row(result), "done": done, "total": total})
            if done % len(self.session.example_names) == 0 or done == total:
                self.post({"event": "charts", "charts": self._charts()})
            await asyncio.sleep(0)  # let the worker send the row before the next run starts

        self.post({"event": "progress", "target": "run-all", "text": f"running every example at size {size}…"})
        results = await self.session.run_all(size, shown)
        return {"rows": len(results), "charts": self._charts()}

    async def _transformer(self, args: dict) -> dict:
        """The transformer example on the chosen backend: its new tokens and timings (webdemo.transformer)."""
        from .transformer import TransformerDemo, max_new_tokens
        if self.transformer is None:
            self.transformer = TransformerDemo()
        limit = max_new_tokens(self.transformer.config)
        try:
            count = int(str(args["tokens"]).strip())
        except ValueError:
            return {"input_error": f"new tokens: {args['tokens']!r} is not a whole number between 1 and {limit}"}
        try:
            self.transformer.check_count(count)
        except ArrayError as exc:
            return {"input_error": str(exc)}
        choice = resolve_choice(args["backend"], self.session.choices())
        if not choice.available:
            return {"input_error": f"the {choice.name} backend is not available: {choice.explanation}"}
        self.post({"event": "progress", "target": "transformer",
                   "text": f"generating {count} tokens on {choice.name}…"})
        # what the run raises (ArrayError included: a launch's refusal, tokens that differ between two runs) is
        # not the input's fault: handle() answers it as an internal error
        run = await self.transformer.run(choice.name, count)
        return {"backend": run.backend, "tokens": run.tokens, "tokens_per_second": run.tokens_per_second,
                "first_seconds": run.first_seconds, "warm_seconds": run.warm_seconds,
                "message": f"{len(run.tokens)} tokens on {run.backend}: {run.tokens_per_second:.1f} tokens/s "
                           f"(warm; first run {run.first_seconds:.2f} s with the weights and compiles)"}
