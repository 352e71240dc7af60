"""The demo page in headless Chromium: boot, the core under Python 3.14, digests equal to native, errors
on the page, the backend picker, the chart, a screenshot."""

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

    _run_and_wait(demo_page, BAD_TYPES)
    assert demo_page.get_attribute("#result", "data-check") == "program error"
    assert demo_page.inner_text("#program-error").startswith("verify failed:")
    assert "r3" in demo_page.inner_text("#program-error")

    demo_page.select_option("#example", "collatz")
    text = demo_page.input_value("#program")
    assert "collatz" in text.lower() or "loop:" in text
    _run_and_wait(demo_page, text)
    assert demo_page.is_hidden("#program-error")
    choice = run_python(demo_page, """
from webdemo.page import _STATE
from webdemo.choices import resolve_choice
import js
entry = resolve_choice(js.document.getElementById("backend").value, _STATE["session"].choices())
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
    page.fill("#size", size)
    page.dispatch_event("#size", "change")


def test_a_bad_size_is_reported_and_the_next_run_works(demo_page):
    demo_page.select_option("#example", "vector_add")
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
    demo_page.select_option("#example", "relu_chain")
    _set_size(demo_page, "48")
    _run_and_wait(demo_page, demo_page.input_value("#program"))
    points = demo_page.eval_on_selector_all(
        "#chart svg circle", "cs => cs.map(c => [c.dataset.series, Number(c.dataset.size)])")
    assert [CHECKS_SERIES, 48] in points
    assert demo_page.inner_text("#timing").startswith("checks ")


def test_screenshot_after_a_run(demo_page, artifacts):
    demo_page.select_option("#example", "softmax")
    _run_and_wait(demo_page, demo_page.input_value("#program"))
    target = artifacts / "demo-page.png"
    demo_page.screenshot(path=str(target), full_page=True)
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (artifacts / "demo-result.json").write_text(json.dumps({
        "result": demo_page.inner_text("#result"), "check": demo_page.get_attribute("#result", "data-check"),
        "timings_ms": demo_page.evaluate("window.atlasWeb.timings")}, indent=2))
