"""The browser page: binds a DemoSession to the DOM of www/index.html through Pyodide.

Imports Pyodide's ``js`` and ``pyodide.ffi`` and therefore runs only under
Emscripten: importing it anywhere else raises ImportError saying so. boot.js
awaits ``start()`` once the wheels are installed; ``start`` returns when the
first result (the round trips of every example) is on the page.

Every message a user can cause (a program that does not parse or verify, a
bad size, a backend that is not available) is shown on the page; an
unexpected error in a handler is shown too, and the page keeps working.
"""

from __future__ import annotations

import asyncio
import sys

if sys.platform != "emscripten":
    raise ImportError("webdemo.page drives the page through Pyodide's js module: it runs only in the browser "
                      f"(sys.platform == 'emscripten'), not on {sys.platform!r}")

import js  # noqa: E402 - Pyodide only, after the platform check
from pyodide.ffi import create_proxy  # noqa: E402

from .checks import ProgramCheck  # noqa: E402
from .runs import RunResult  # noqa: E402
from .session import DEFAULT_SIZE, DemoSession, RunOutcome, parse_size  # noqa: E402

__all__ = ["start", "ELEMENT_IDS"]

#: the ids of index.html this module uses
ELEMENT_IDS: tuple[str, ...] = (
    "app", "example", "size", "backend", "backend-status", "run", "program", "result", "program-error", "timing",
    "code", "chart", "checks-body", "checks-size", "run-all", "all-results", "all-results-body",
)
#: the session of the page, kept alive with the event handlers
_STATE: dict[str, object] = {}


def _element(element_id: str):
    element = js.document.getElementById(element_id)
    if element is None:
        raise RuntimeError(f"index.html has no element #{element_id}: it does not match webdemo.page")
    return element


def _option(value: str, label: str, *, title: str = ""):
    option = js.document.createElement("option")
    option.value = value
    option.textContent = label
    if title:
        option.title = title
    return option


def _cell(row, text: str, class_name: str = ""):
    cell = js.document.createElement("td")
    cell.textContent = text
    if class_name:
        cell.className = class_name
    row.appendChild(cell)
    return cell


def _show_error(message: str) -> None:
    box = _element("program-error")
    box.textContent = message
    box.hidden = not message


def _render_checks(session: DemoSession, size: int) -> None:
    """The table of every example's parse / verify / round trips at ``size``."""
    body = _element("checks-body")
    body.replaceChildren()
    for example, check in session.check_examples(size):
        row = js.document.createElement("tr")
        row.dataset.example = example.name
        row.dataset.digest = check.digest or ""
        row.dataset.ok = "true" if check.ok else "false"
        _cell(row, example.name)
        _cell(row, str(check.instruction_count))
        _cell(row, (check.digest or "-")[:16], "digest")
        for form in check.forms:
            _cell(row, "same" if form.same else "changed", "ok" if form.same else "bad")
        _cell(row, "ok" if check.ok else check.summary, "ok" if check.ok else "bad")
        body.appendChild(row)
    _element("checks-size").textContent = str(size)


def _render_choices(session: DemoSession) -> None:
    """The picker's entries and one line per backend saying what runs it or why it is not available."""
    picker = _element("backend")
    picker.replaceChildren()
    entries = session.choices()
    for entry in entries:
        picker.appendChild(_option(entry.name, entry.label, title=entry.explanation))
    status = _element("backend-status")
    status.replaceChildren()
    for entry in entries:
        line = js.document.createElement("li")
        line.textContent = entry.explanation
        line.className = "available" if entry.available else "unavailable"
        line.dataset.backend = entry.name
        status.appendChild(line)
    status.dataset.state = "probed"


async def _probe_backends(session: DemoSession) -> None:
    """Probe the backends after the first result is up (importing them takes seconds in Pyodide)."""
    await asyncio.sleep(0)
    try:
        _render_choices(session)
    except Exception as exc:  # a bug in a backend's probe: say so, keep the page
        _element("backend-status").dataset.state = "failed"
        _show_error(f"internal error while probing the backends: {type(exc).__name__}: {exc}")


def _load_example_text(session: DemoSession) -> None:
    try:
        size = parse_size(_element("size").value)
    except ValueError as exc:
        _show_error(str(exc))
        return
    _show_error("")
    _element("program").value = session.program_text(_element("example").value, size)


def _timing_line(check: ProgramCheck, outcome: RunOutcome) -> str:
    parts = [f"checks {check.seconds * 1e3:.2f} ms"]
    if outcome.run is not None and outcome.run.seconds is not None:
        parts.append(f"launch {outcome.run.seconds * 1e3:.2f} ms on {outcome.run.backend}")
    return " · ".join(parts)


def _show_outcome(session: DemoSession, outcome: RunOutcome) -> None:
    result = _element("result")
    result.textContent = outcome.message
    result.dataset.check = outcome.status
    _show_error("" if outcome.check.ok else outcome.check.summary)
    _element("timing").textContent = _timing_line(outcome.check, outcome)
    _element("code").textContent = outcome.code
    _element("chart").innerHTML = session.chart_svg()


async def _run(session: DemoSession) -> None:
    result = _element("result")
    button = _element("run")
    button.disabled = True
    result.textContent = "running…"
    result.dataset.check = "running"
    try:
        size = parse_size(_element("size").value)
        await asyncio.sleep(0)  # let the browser paint "running…" before the work starts
        outcome = await session.run(_element("program").value, _element("example").value, size,
                                    _element("backend").value)
        _show_outcome(session, outcome)
    except ValueError as exc:  # a bad size
        result.textContent = "not run"
        result.dataset.check = "input error"
        _show_error(str(exc))
    except Exception as exc:  # a bug: show it on the page and keep the page usable
        result.textContent = "not run"
        result.dataset.check = "internal error"
        _show_error(f"internal error: {type(exc).__name__}: {exc}")
    finally:
        _STATE["runs"] = int(_STATE.get("runs", 0)) + 1  # type: ignore[call-overload]
        result.dataset.runs = str(_STATE["runs"])  # tests wait for this count
        button.disabled = False


def _render_all(results: list[RunResult]) -> None:
    """The table of every example on every backend: the check, the launch time and the first problem."""
    body = _element("all-results-body")
    body.replaceChildren()
    for result in results:
        row = js.document.createElement("tr")
        row.dataset.example = result.example
        row.dataset.backend = result.backend
        row.dataset.check = result.check
        _cell(row, result.example)
        _cell(row, result.backend)
        _cell(row, result.check, "ok" if result.ok else "bad")
        _cell(row, "-" if result.seconds is None else f"{result.seconds * 1e3:.2f} ms")
        _cell(row, result.detail)
        body.appendChild(row)


async def _run_all(session: DemoSession) -> None:
    """Run every example on every available backend at the chosen size and show the table."""
    table = _element("all-results")
    button = _element("run-all")
    button.disabled = True
    table.dataset.state = "running"
    try:
        size = parse_size(_element("size").value)
        await asyncio.sleep(0)  # let the browser paint before the work starts
        _render_all(await session.run_all(size))
        _element("chart").innerHTML = session.chart_svg()
        _show_error("")
        table.dataset.state = "done"
    except ValueError as exc:  # a bad size
        table.dataset.state = "input error"
        _show_error(str(exc))
    except Exception as exc:  # a bug: show it on the page and keep the page usable
        table.dataset.state = "internal error"
        _show_error(f"internal error: {type(exc).__name__}: {exc}")
    finally:
        _STATE["all_runs"] = int(_STATE.get("all_runs", 0)) + 1  # type: ignore[call-overload]
        table.dataset.runs = str(_STATE["all_runs"])  # tests wait for this count
        button.disabled = False


def _listen(element_id: str, event: str, handler) -> None:
    proxy = create_proxy(handler)
    _STATE.setdefault("proxies", []).append(proxy)  # type: ignore[union-attr]
    _element(element_id).addEventListener(event, proxy)


async def start() -> None:
    """Fill the page, show the round trips of every example, and wire the controls.

    Returns once the first result is shown; the backend picker is filled by a
    task that probes the backends next (``#backend-status`` gets
    ``data-state="probed"``). A Run pressed before that probes them itself.
    """
    for element_id in ELEMENT_IDS:
        _element(element_id)
    session = DemoSession()
    _STATE["session"] = session
    picker = _element("example")
    for name in session.example_names:
        picker.appendChild(_option(name, f"{name}: {session.example(name, DEFAULT_SIZE).description}"))
    _element("size").value = str(DEFAULT_SIZE)
    _element("backend").appendChild(_option("auto", "auto (probing the backends…)"))
    _load_example_text(session)
    _render_checks(session, DEFAULT_SIZE)
    _element("chart").innerHTML = session.chart_svg()
    _listen("example", "change", lambda event: _load_example_text(session))
    _listen("size", "change", lambda event: _load_example_text(session))
    _listen("run", "click", lambda event: asyncio.ensure_future(_run(session)))
    _listen("run-all", "click", lambda event: asyncio.ensure_future(_run_all(session)))
    _element("app").hidden = False
    _STATE["probe"] = asyncio.ensure_future(_probe_backends(session))
