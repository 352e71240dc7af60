"""Fixtures of the browser tests: the site built once, served on 127.0.0.1, and one Chromium per session.

Nothing here skips: a missing Chromium, Playwright or npm fails the tests
with what to run (``python3 build.py test`` installs all three). Chromium is
Debian's (/usr/bin/chromium); Playwright never downloads a browser.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

import sitebuild
from sitebuild.chromium import CHROMIUM, CHROMIUM_ARGS, launch_persistent  # noqa: F401 - tests import them here

ROOT = Path(__file__).resolve().parents[2]
#: screenshots and reports of the browser tests (gitignored)
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
#: how long Pyodide may take to boot: ~20 s on an idle machine, minutes on 2 busy cores (9.6 MB of wasm to compile)
BOOT_TIMEOUT_MS = 420_000
#: how long one evaluation in a page (a Python cell, a notebook, a compute round trip) may take: a few
#: seconds on an idle machine; Playwright's page.evaluate itself waits forever on a promise that never settles
EVALUATE_TIMEOUT_MS = 300_000
#: triples every element of buffer 2 (16 i32), guarded for the spare lanes of the block
TRIPLE = """\
    mov_imm.u32 r10, 16
    set.ge.u32 p0, r255, r10
    bra.p0 @done
    mov_imm.u32 r1, 2
    mov_imm.u32 r2, 4
    mul.u32 r3, r255, r2
    ldg.i32 r4, [r1 + r3]
    mov_imm.i32 r5, 3
    mul.i32 r4, r4, r5
    stg.i32 [r1 + r3], r4
done:
    exit
"""


@pytest.fixture(scope="package")
def site_dir(tmp_path_factory) -> Path:
    """The site with its JupyterLite lab and the page's memory snapshot, built once per session into a
    temporary directory (Pyodide from the npm cache; the lab's kernel wheels fetched once into .cache/lab-wheels;
    the snapshot made once per set of wheels into .cache/snapshots; this Python has the lab and test extras)."""
    target = tmp_path_factory.mktemp("site") / "dist"
    sitebuild.build_site(ROOT, target, cache_dir=ROOT / ".cache" / "npm", lab_python=sys.executable,
                         snapshot_python=sys.executable, log=lambda message: None)
    return target


@pytest.fixture(scope="package")
def site_url(site_dir):
    """The base URL (ending in /) of the site, served on 127.0.0.1 on a free port."""
    with sitebuild.start_server(site_dir) as server:
        yield server.url


@pytest.fixture(scope="package")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="package")
def browser(tmp_path_factory):
    """One headless Chromium for the tests of this package, with a fresh profile (its HTTP cache is shared
    by all pages). Package scope, not session: Playwright's sync API keeps an event loop running on this
    thread while it is open, and ``asyncio.run`` in the tests after this package must find none."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `python3 build.py test` installs Debian's chromium")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        context = launch_persistent(playwright, tmp_path_factory.mktemp("chromium-profile"),
                                    viewport={"width": 1280, "height": 1000})
        try:
            yield context
        finally:
            context.close()


class PageLog:
    """The console errors and warnings and the uncaught page errors of one page (Pyodide reports an
    exception that escapes a Python task as a console warning)."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        page.on("console", lambda message: self.errors.append(f"{message.type}: {message.text}")
                if message.type in ("error", "warning") else None)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))


def open_page(browser, url: str, ready_expression: str):
    """A new page at ``url``, waited until ``ready_expression`` is true; fails with the page's own error."""
    page = browser.new_page()
    log = PageLog(page)
    page.goto(url)
    page.wait_for_function("document.body.dataset.state !== 'booting'", timeout=BOOT_TIMEOUT_MS)
    state = page.evaluate("document.body.dataset.state")
    if state != "ready":
        text = page.inner_text("body")
        page.close()
        pytest.fail(f"{url} did not start (state {state!r}): {text[-2000:]}; console errors: {log.errors}")
    page.wait_for_function(ready_expression)
    return page, log


@pytest.fixture(scope="package")
def demo(browser, site_url):
    """``(page, log)`` of the demo page (index.html), booted once: Pyodide running, the wheels installed,
    the first result shown."""
    page, log = open_page(browser, site_url + "index.html", "window.atlasWeb && window.atlasWeb.ready")
    yield page, log
    page.close()


@pytest.fixture(scope="package")
def demo_page(demo):
    return demo[0]


@pytest.fixture(scope="package")
def backends_demo(browser, site_url):
    """``(page, log)`` of a second demo page, for the tests of the compiled backends (test_browser_*): their
    many runs (and the shader compilation logs WebGPU writes to the console) stay out of the first page."""
    page, log = open_page(browser, site_url + "index.html", "window.atlasWeb && window.atlasWeb.ready")
    yield page, log
    page.close()


@pytest.fixture(scope="package")
def backends_page(backends_demo):
    return backends_demo[0]


_EVALUATIONS = itertools.count()
#: starts ``function(argument)`` in a task of its own and records how it settles in window[key]
_START_EVALUATION = """([key, source, argument]) => {
  window[key] = {settled: false};
  setTimeout(async () => {
    try { window[key] = {settled: true, value: await (0, eval)(source)(argument)}; }
    catch (error) { window[key] = {settled: true, error: String((error && error.stack) || error)}; }
  }, 0);
}"""


def evaluate_within(page, function: str, argument=None, *, timeout_ms: int = EVALUATE_TIMEOUT_MS):
    """``page.evaluate(function, argument)`` with a deadline: the JavaScript ``function`` (source text of a
    function, async or not) runs in a task of its own and the test waits at most ``timeout_ms`` for it to
    settle (Playwright enforces the wait from outside the page, so it ends even while the page's thread is
    busy). Returns the function's value (JSON-like, as page.evaluate); fails the test naming the function
    when it throws or does not settle in time."""
    key = f"__atlasEvaluation{next(_EVALUATIONS)}"
    page.evaluate(_START_EVALUATION, [key, function, argument])
    try:
        page.wait_for_function(f"window[{key!r}].settled", timeout=timeout_ms, polling=100)
    except Exception as exc:  # playwright's TimeoutError (or the page gone)
        pytest.fail(f"the page did not finish {function[:200]!r} within {timeout_ms / 1000:g} s: {exc}")
    outcome = page.evaluate(f"(() => {{ const outcome = window[{key!r}]; delete window[{key!r}]; return outcome; }})()")
    if "error" in outcome:
        pytest.fail(f"{function[:200]!r} raised in the page: {outcome['error'][:4000]}")
    return outcome.get("value")


def run_python(page, code: str, *, pyodide: str = "window.atlasWeb.pyodide"):
    """Run Python ``code`` (top-level await allowed) in the page's Pyodide and return the value it leaves
    in ``result``, passed through JSON; fails the test when the code raises or runs past EVALUATE_TIMEOUT_MS."""
    source = code + "\nimport json as _json\n_json.dumps(result)"
    text = evaluate_within(page, f"async (source) => await {pyodide}.runPythonAsync(source)", source)
    return json.loads(text)
