"""Notebook style: a running Pyodide with nothing of ours installs the atlas-web wheel with
pyodide.loadPackage(url) and runs async cells (top-level ``await``) against the API."""

from __future__ import annotations

import pytest

import atlas_web
from atlas_web import Program

from .conftest import TRIPLE as PROGRAM, evaluate_within, open_page, run_python

CELL = f'''
import asyncio, sys
import atlas_web
from atlas_web import LaunchConfig, Program, Type
from atlas_web.registry import discover_backends, get_backend
from pyodide.http import pyfetch

manifest = await (await pyfetch("site.json")).json()
program = Program.from_text("""{PROGRAM}""")
info = program.verify()
await asyncio.sleep(0)
runs = {{}}
for status in discover_backends():
    if status.name == "cpu" or not status.available:
        runs[status.name] = status.reason
        continue
    with get_backend(status.name) as backend:
        handle = backend.allocate_typed(list(range(16)), Type.I32)
        await backend.execute_async(program, LaunchConfig.linear(16))
        runs[status.name] = (await backend.copy_typed_from_async(handle, Type.I32)).tolist()
result = {{"python": list(sys.version_info[:2]), "version": atlas_web.__version__, "digest": program.digest(),
          "text": program.to_text(), "manifest_version": manifest["project_version"], "runs": runs}}
'''


@pytest.fixture(scope="module")
def notebook(browser, site_url):
    page, log = open_page(browser, site_url + "notebook.html", "window.notebook && window.notebook.ready")
    yield page
    page.close()


def test_a_fresh_pyodide_has_no_atlas_web(notebook):
    assert run_python(notebook, "import importlib.util\nresult = importlib.util.find_spec('atlas_web') is None",
                      pyodide="window.notebook.pyodide")


def run_cell(notebook, code: str | None = None, *, key: str | None = None) -> str:
    """Press "Run cell", or ``key`` in the cell (on ``code`` typed into the cell, else on the cell as it is), and
    return its output."""
    if code is not None:
        notebook.fill("#cell", code)
    notebook.evaluate("document.getElementById('cell-output').textContent = ''")
    if key is None:
        notebook.click("#run-cell")
    else:
        notebook.press("#cell", key)
    notebook.wait_for_function("document.getElementById('cell-output').textContent.length > 0", timeout=180_000)
    return notebook.inner_text("#cell-output")


def test_running_the_first_cell_before_installing_says_what_to_press(notebook):
    output = run_cell(notebook)  # the page's own cell imports atlas_web
    assert output.strip() == ('atlas-web is not installed in this Pyodide yet: press "Install atlas-web", '
                              'then run the cell again.'), output


def test_load_the_wheel_by_url_then_await_the_api_in_a_cell(notebook, site_url):
    wheel = notebook.evaluate("window.notebook.wheelURLs[0]")
    assert wheel.startswith(site_url) and wheel.endswith("-py3-none-any.whl")
    evaluate_within(notebook, "async (url) => { await window.notebook.pyodide.loadPackage(url, "
                              "{ messageCallback: () => {} }); }", wheel)
    result = run_python(notebook, CELL, pyodide="window.notebook.pyodide")
    native = Program.from_text(PROGRAM)
    assert result["python"] == [3, 14]
    assert result["version"] == result["manifest_version"] == atlas_web.__version__
    assert result["digest"] == native.digest() and result["text"] == native.to_text()
    assert set(result["runs"]) >= {"wasm", "webgpu"}
    for name, outcome in result["runs"].items():
        if isinstance(outcome, list):  # a backend that runs in the browser: triples every element
            assert outcome == [3 * i for i in range(16)], name
        else:
            assert outcome, f"{name} is unavailable without a reason"
    # the demo's own packages came in a separate wheel that this page never installed
    assert run_python(notebook, "import importlib.util\nresult = importlib.util.find_spec('webdemo') is None",
                      pyodide="window.notebook.pyodide")


def test_the_install_and_cell_buttons_run_a_cell_with_await(notebook):
    notebook.click("#install")
    notebook.wait_for_function("document.getElementById('notebook-status').textContent.includes('installed')",
                               timeout=180_000)
    assert notebook.inner_text("#notebook-status") == "atlas-web installed." and notebook.is_disabled("#install")
    output = run_cell(notebook, "import asyncio, atlas_web\nawait asyncio.sleep(0)\n"
                                "print(atlas_web.Program.from_text('exit').digest())")
    assert output.strip() == Program.from_text("exit").digest()


def test_the_cell_spans_the_page_and_shift_enter_runs_it(notebook):
    ratio = notebook.evaluate("document.getElementById('cell').getBoundingClientRect().width / "
                              "document.querySelector('header').getBoundingClientRect().width")
    assert ratio > 0.95, ratio  # it was a 20-column box that wrapped the page's own first cell
    output = run_cell(notebook, "print(6 * 7)", key="Shift+Enter")
    assert output.strip() == "42" and notebook.input_value("#cell") == "print(6 * 7)"


def test_a_cell_that_raises_shows_its_traceback_without_pyodides_frames(notebook):
    output = run_cell(notebook, "from atlas_web import Program\nProgram.from_text('add.f32 r1, r2')").strip()
    lines = output.splitlines()
    assert lines[:2] == ["Traceback (most recent call last):", '  File "<exec>", line 2, in <module>'], output
    assert lines[-1] == "atlas_web.errors.ProgramError: line 1: add.f32 takes 3 operands, got 2", output
    assert "_pyodide" not in output, output


def test_on_the_pages_thread_a_big_module_cannot_compile_synchronously_and_says_so(notebook):
    """The demo's Python runs in a worker, where the browser compiles any size synchronously; here, on the
    page's thread (atlas-web installed by the tests above), its 8 MB limit is reported with the way out."""
    import json
    source = """
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.errors import WasmInterfaceError
from wasm_backend.runners.js_runner import JsRunner
builder = ModuleBuilder("big")
builder.add_memory(160)
builder.add_data(bytes(9 << 20), offset=0)              # over the 8 MB of synchronous compilation
try:
    JsRunner().compile(builder.to_bytes())
    result = None
except WasmInterfaceError as error:
    result = str(error)
import json as _json
_json.dumps(result)"""
    message = json.loads(evaluate_within(notebook, "(source) => window.notebook.pyodide.runPython(source)", source))
    assert message and "synchronously" in message and "run_sync" in message and "compile_async" in message


def test_on_the_pages_thread_the_wasm_backend_runs_on_one_thread_and_says_why(notebook):
    """Threads wait with Atomics.wait, which the page's thread may not: asked for two, the backend runs on
    one (atlas-web installed by the tests above) and device_info says why."""
    info = run_python(notebook, "from wasm_backend import WasmBackend\nbackend = WasmBackend(threads=2)\n"
                                "result = backend.device_info()\nbackend.close()", pyodide="window.notebook.pyodide")
    assert info["threads"] == 1
    assert "page's thread" in info["threads_reason"] and "worker" in info["threads_reason"]
