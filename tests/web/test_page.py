"""The demo page in headless Chromium: boot, the core under Python 3.14 in the page's Web Worker, digests equal
to native, errors on the page, the backend picker, the chart per example, generated code, a program's own
inputs and outputs, an edit kept over a size change, no long task on the page's thread during a long run,
screenshots."""

from __future__ import annotations

import json

import atlas_web
from webdemo.checks import example_digests
from webdemo.choices import NOT_AVAILABLE
from webdemo.session import CHECKS_SERIES, DEFAULT_SIZE

from .conftest import run_python

BAD_SYNTAX = "add.f32 r1, r2\nexit\n"
# r3 is read as u32 on one path and f32 on the other: parses, does not verify
BAD_TYPES = """\
    mov_imm.u32 r1, 1
    set.eq.u32 p0, r1, r1
    bra.p0 @float
    mov_imm.u32 r3, 2
    bra @use
float:
    mov_imm.f32 r3, 2.0
use:
    add.u32 r4, r3, r1
    exit
"""


def _loads(page) -> int:
    return int(page.get_attribute("#program", "data-loads") or 0)


def _wait_loaded(page, before: int) -> None:
    """Wait until the worker answered the program load that a change of example or size asked for."""
    page.wait_for_function(f"Number(document.getElementById('program').dataset.loads || 0) > {before}",
                           timeout=60_000)


def _select_example(page, name: str) -> None:
    before = _loads(page)
    page.select_option("#example", name)
    _wait_loaded(page, before)


def _run_and_wait(page, text: str) -> None:
    runs = int(page.get_attribute("#result", "data-runs") or 0)
    page.fill("#program", text)
    page.click("#run")
    page.wait_for_function(f"document.getElementById('result').dataset.runs === '{runs + 1}'", timeout=180_000)


def test_page_boots_with_progress_and_no_console_errors(demo):
    page, log = demo
    timings = page.evaluate("window.atlasWeb.timings")
    assert 0 < timings["pyodide"] <= timings["wheels"] <= timings["firstResult"]
    assert page.is_hidden("#boot") and page.is_visible("#app")
    assert page.get_attribute("#boot-progress", "value") == page.get_attribute("#boot-progress", "max")
    assert "first result" in page.inner_text("#boot-timings")
    assert log.errors == []


def test_atlas_web_imports_under_python_314(demo_page):
    info = run_python(demo_page, """
import sys, atlas_web, examples, webdemo
result = {"version": list(sys.version_info[:2]), "platform": sys.platform, "atlas_web": atlas_web.__version__,
          "numpy": "numpy" in sys.modules}
""")
    assert info == {"version": [3, 14], "platform": "emscripten", "atlas_web": atlas_web.__version__,
                    "numpy": False}


def test_first_result_lists_every_example_with_the_native_digest(demo_page):
    rows = demo_page.eval_on_selector_all(
        "#checks-body tr", "rows => rows.map(r => [r.dataset.example, r.dataset.digest, r.dataset.ok])")
    native = example_digests(DEFAULT_SIZE)
    assert [(name, digest, ok) for name, digest, ok in rows] == \
        [(name, row["program"], "true") for name, row in native.items()]


def test_round_trips_give_the_native_digests_in_the_browser(demo_page):
    for size in (DEFAULT_SIZE, 37):
        in_browser = run_python(demo_page, f"from webdemo.checks import example_digests\n"
                                           f"result = example_digests({size})")
        native = example_digests(size)
        assert in_browser == native
        for row in native.values():
            assert row["ok"] == "yes" and row["text"] == row["bytecode"] == row["json"] == row["program"]


def test_backend_picker_says_which_backends_are_not_available(demo_page):
    demo_page.wait_for_selector("#backend-status[data-state=probed]", timeout=180_000)
    entries = run_python(demo_page, """
from webdemo.page import _STATE
result = [[c.name, c.available, c.reason] for c in _STATE["session"].choices()]
""")
    options = demo_page.eval_on_selector_all("#backend option", "os => os.map(o => [o.value, o.textContent])")
    lines = demo_page.eval_on_selector_all("#backend-status li",
                                           "ls => ls.map(l => [l.dataset.backend, l.textContent])")
    assert [name for name, _, _ in entries] == [value for value, _ in options] == ["auto", "wasm", "webgpu"]
    assert [name for name, _ in lines] == ["auto", "wasm", "webgpu"]
    for (_, available, reason), (_, label), (_, line) in zip(entries, options, lines):
        assert (NOT_AVAILABLE in label) == (not available)
        if not available:
            assert reason and reason in line and NOT_AVAILABLE in line


def test_bad_programs_show_the_error_on_the_page_and_the_page_keeps_working(demo):
    demo_page, log = demo
    _run_and_wait(demo_page, BAD_SYNTAX)
    assert demo_page.get_attribute("#result", "data-check") == "program error"
    error = demo_page.inner_text("#program-error")
    assert demo_page.is_visible("#program-error")
    assert error.startswith("parse failed: line 1") and "add.f32" in error and "operands" in error
    assert demo_page.inner_text("#result") == "not run: parse failed (the error is below)"  # not the error twice

    _run_and_wait(demo_page, BAD_TYPES)
    assert demo_page.get_attribute("#result", "data-check") == "program error"
    assert demo_page.inner_text("#program-error").startswith("verify failed:")
    assert "r3" in demo_page.inner_text("#program-error")

    _select_example(demo_page, "collatz")
    text = demo_page.input_value("#program")
    assert "collatz" in text.lower() or "loop:" in text
    _run_and_wait(demo_page, text)
    assert demo_page.is_hidden("#program-error")
    choice = run_python(demo_page, f"""
from webdemo.page import _STATE
from webdemo.choices import resolve_choice
entry = resolve_choice({demo_page.input_value("#backend")!r}, _STATE["session"].choices())
result = [entry.name, entry.available]
""")
    check = demo_page.get_attribute("#result", "data-check")
    if choice[1]:
        assert check == "ok", demo_page.inner_text("#result")
    else:
        assert check == "unavailable" and NOT_AVAILABLE in demo_page.inner_text("#result")
        assert NOT_AVAILABLE in demo_page.inner_text("#code")
    assert log.errors == []  # the errors went to the page, not to the console


def _set_size(page, size: str) -> None:
    before = _loads(page)
    page.fill("#size", size)
    page.dispatch_event("#size", "change")
    _wait_loaded(page, before)


def test_a_bad_size_is_reported_and_the_next_run_works(demo_page):
    _select_example(demo_page, "vector_add")
    _set_size(demo_page, "0")
    assert "size must be a whole number" in demo_page.inner_text("#program-error")
    _run_and_wait(demo_page, demo_page.input_value("#program"))
    assert demo_page.get_attribute("#result", "data-check") == "input error"
    assert "size must be a whole number from 1 to" in demo_page.inner_text("#program-error")
    _set_size(demo_page, "64")
    assert "[buf3 + 0], 64" in demo_page.input_value("#program")
    _run_and_wait(demo_page, demo_page.input_value("#program"))
    assert demo_page.get_attribute("#result", "data-check") in {"ok", "unavailable"}
    assert demo_page.is_hidden("#program-error")


def test_chart_shows_the_timings_of_the_runs(demo_page):
    _select_example(demo_page, "relu_chain")
    _set_size(demo_page, "48")
    _run_and_wait(demo_page, demo_page.input_value("#program"))
    points = demo_page.eval_on_selector_all(
        "#chart svg circle", "cs => cs.map(c => [c.dataset.series, Number(c.dataset.size)])")
    assert [CHECKS_SERIES, 48] in points
    assert demo_page.inner_text("#timing").startswith("checks ")
    figures = demo_page.eval_on_selector_all("#chart figure", "fs => fs.map(f => f.dataset.example)")
    assert "relu_chain" in figures and len(figures) == len(set(figures))  # one chart per example
    assert "e+" not in demo_page.inner_html("#chart")


def _available(page) -> list[str]:
    page.wait_for_selector("#backend-status[data-state=probed]", timeout=180_000)
    return page.eval_on_selector_all("#backend-status li.available", "ls => ls.map(l => l.dataset.backend)")


def test_generated_code_and_warm_launches_are_shown(demo_page):
    compiled = [name for name in _available(demo_page) if name != "auto"]
    _select_example(demo_page, "collatz")
    _set_size(demo_page, "100")
    for name in compiled:
        demo_page.select_option("#backend", name)
        _run_and_wait(demo_page, demo_page.input_value("#program"))
        assert demo_page.get_attribute("#result", "data-check") == "ok", demo_page.inner_text("#result")
        code = demo_page.inner_text("#code")
        assert ("(module" in code) or ("@compute" in code), code[:300]
        timing = demo_page.inner_text("#timing")
        assert "first launch" in timing and "warm launch" in timing
    assert compiled  # the page offers at least one compiled backend


def test_an_edited_program_survives_a_size_change(demo_page):
    _select_example(demo_page, "vector_add")
    _set_size(demo_page, "40")
    edited = demo_page.input_value("#program").replace("; out[i]", "; my edit: out[i]")
    demo_page.fill("#program", edited)
    _set_size(demo_page, "50")
    assert demo_page.input_value("#program") == edited
    assert demo_page.is_visible("#program-note") and "kept" in demo_page.inner_text("#program-note")
    _select_example(demo_page, "vector_add")  # choosing the example again loads it at the new size
    assert "[buf3 + 0], 50" in demo_page.input_value("#program") and demo_page.is_hidden("#program-note")


DECLARED = """\
; @in a f32 = 1, 2, 3, 4
; @in b f32 = 10, 20, 30, 40
; @out c f32 4
    pmap2.add.f32 [buf4 + 0], [buf2 + 0], [buf3 + 0], 4
    exit
"""


def test_a_program_with_its_own_inputs_shows_its_outputs(demo_page):
    _available(demo_page)
    _run_and_wait(demo_page, DECLARED)
    check = demo_page.get_attribute("#result", "data-check")
    if check == "unavailable":
        return
    assert check == "ran", demo_page.inner_text("#result")
    assert demo_page.inner_text("#outputs") == "c = [11, 22, 33, 44]"


#: installed before a run: every task of the page's thread longer than 50 ms, as the browser reports it
LONG_TASKS = """() => {
  window.longTasks = [];
  new PerformanceObserver((list) => { for (const e of list.getEntries()) window.longTasks.push(e.duration); })
    .observe({ type: "longtask" });
  window.rowsWhileRunning = [];
  new MutationObserver(() => {
    const table = document.getElementById("all-results");
    if (table.dataset.state === "running") window.rowsWhileRunning.push(table.tBodies[0].rows.length);
  }).observe(document.getElementById("all-results-body"), { childList: true });
}"""


def test_a_long_run_never_blocks_the_page_and_fills_the_table_row_by_row(browser, site_url, artifacts):
    from .conftest import open_page
    page, log = open_page(browser, site_url + "index.html", "window.atlasWeb && window.atlasWeb.ready")
    try:
        backends = [name for name in _available(page) if name != "auto"]
        _set_size(page, "200000")
        page.evaluate(LONG_TASKS)
        page.click("#run-all")
        page.wait_for_function("document.getElementById('all-results').dataset.runs === '1'", timeout=400_000)
        page.screenshot(path=str(artifacts / "demo-run-all.png"), full_page=True)
        long_tasks = page.evaluate("window.longTasks")
        rows = page.evaluate("window.rowsWhileRunning")
        (artifacts / "demo-run-all.json").write_text(json.dumps({
            "size": 200000, "long_tasks_ms": long_tasks, "rows_while_running": rows,
            "launches": page.eval_on_selector_all("#all-results-body tr", "rs => rs.map(r => [r.dataset.example, "
                                                  "r.dataset.backend, r.cells[3].textContent])")}, indent=2))
        assert page.get_attribute("#all-results", "data-state") == "done"
        assert page.locator("#all-results-body tr").count() == 5 * len(backends)
        assert 1 in rows and 2 in rows  # the rows appeared one by one while the run went on
        assert max(long_tasks, default=0) <= 200, long_tasks
    finally:
        page.close()


def test_the_page_fits_a_phones_width(demo_page, artifacts):
    """At 390 px nothing makes the page scroll sideways (the example picker and the round-trip table did)."""
    viewport = demo_page.viewport_size
    demo_page.set_viewport_size({"width": 390, "height": 844})
    try:
        widths = demo_page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        demo_page.screenshot(path=str(artifacts / "demo-page-390px.png"))
    finally:
        demo_page.set_viewport_size(viewport)
    assert widths[0] <= widths[1], widths


def test_screenshot_after_a_run(demo_page, artifacts):
    _select_example(demo_page, "softmax")
    _run_and_wait(demo_page, demo_page.input_value("#program"))
    target = artifacts / "demo-page.png"
    demo_page.screenshot(path=str(target), full_page=True)
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (artifacts / "demo-result.json").write_text(json.dumps({
        "result": demo_page.inner_text("#result"), "check": demo_page.get_attribute("#result", "data-check"),
        "timings_ms": demo_page.evaluate("window.atlasWeb.timings")}, indent=2))
