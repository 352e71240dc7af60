"""The JupyterLite lab of the site runs the example notebooks offline: every request that does not go
to the site on 127.0.0.1 is blocked, the Pyodide kernel starts on the site's own Pyodide with atlas-web
loaded, and the notebooks' outputs are read back and compared with the reference computed here."""

from __future__ import annotations

import json
import re

import pytest

from atlas_web import AtlasTrap, CpuBackend, LaunchConfig, Program, Type

from .conftest import BOOT_TIMEOUT_MS, ROOT

#: the lab's JavaScript application, exposed by the site's lab config (exposeAppInBrowser)
_APP_READY = "window.jupyterapp !== undefined && document.querySelector('.jp-Notebook') !== null"
#: run all cells once the notebook's file, session and kernel are ready (not awaited: the cells run long)
_RUN_ALL = """async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.context.ready;
  await panel.sessionContext.ready;
  await panel.sessionContext.session.kernel.info;  // the kernel answered: Pyodide and atlas-web are loaded
  window.jupyterapp.commands.execute('notebook:run-all-cells');
}"""
#: every code cell has run: its prompt shows an execution count, none is queued or running
_ALL_RAN = """() => {
  const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent);
  return prompts.length > 0 && prompts.every(text => /\\[\\d+\\]/.test(text));
}"""


@pytest.fixture
def offline(browser):
    """Block every request that is not to 127.0.0.1 (data: and blob: URLs are local); yields the blocked URLs."""
    blocked: list[str] = []

    def route(request_route):
        url = request_route.request.url
        if url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")):
            request_route.continue_()
        else:
            blocked.append(url)
            request_route.abort()

    browser.route("**/*", route)
    yield blocked
    browser.unroute("**/*", route)


def _run_notebook(browser, site_url: str, name: str, artifacts) -> list[dict]:
    """Open ``name`` in the lab, run all its cells and return, per code cell, its outputs' text, the
    markup of the SVG drawings it shows and whether it shows an error."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"{site_url}lab/notebooks/index.html?path={name}")
        page.wait_for_function(_APP_READY, timeout=BOOT_TIMEOUT_MS)
        page.evaluate(_RUN_ALL)
        shot = artifacts / f"lab-{name.removesuffix('.ipynb')}.png"
        try:
            page.wait_for_function(_ALL_RAN, timeout=BOOT_TIMEOUT_MS)
        except Exception:
            page.screenshot(path=str(shot))
            state = page.evaluate("[...document.querySelectorAll('.jp-CodeCell')].map(c => c.innerText.slice(-400))")
            pytest.fail(f"{name} did not finish running (screenshot {shot}); cells end with: {state}; "
                        f"page errors: {errors}")
        page.screenshot(path=str(shot))
        cells = page.evaluate("""() => [...document.querySelectorAll('.jp-CodeCell')].map(cell => ({
            text: [...cell.querySelectorAll('.jp-OutputArea-output')].map(o => o.innerText).join('\\n'),
            svg: [...cell.querySelectorAll('.jp-RenderedSVG img, .jp-RenderedSVG svg')].map(node =>
                 node.tagName === 'IMG' ? decodeURIComponent(node.src.split(',')[1]) : node.outerHTML).join(''),
            error: cell.querySelector('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]') !== null
                   || /Traceback|Error:/.test(cell.innerText)}))""")
    finally:
        page.close()
    assert errors == [], errors
    return cells


def _expected_trap() -> str:
    """The trap of the tour's lane program on the reference backend, as the notebook prints it."""
    notebook = json.loads((ROOT / "notebooks" / "tour.ipynb").read_text(encoding="utf-8"))
    source = next("".join(c["source"]) for c in notebook["cells"]
                  if c["cell_type"] == "code" and "except AtlasTrap" in "".join(c["source"]))
    text = re.search(r'Program\.from_text\("""(.*?)"""\)', source, re.S).group(1)
    backend = CpuBackend()
    backend.allocate_typed(list(range(100, 108)), Type.U32)
    with pytest.raises(AtlasTrap) as trap:
        backend.execute_program(Program.from_text(text), LaunchConfig.linear(8))
    error = trap.value
    return f"{error.code.name} at instruction {error.instruction_index} in lane {error.lane}"


def test_the_tour_runs_offline_with_atlas_web_preinstalled(browser, site_url, offline, artifacts):
    cells = _run_notebook(browser, site_url, "tour.ipynb", artifacts)
    assert not any(cell["error"] for cell in cells), [cell["text"] for cell in cells]
    backends, multiply, traps = cells
    assert re.search(r"^wasm +available", backends["text"], re.M), backends["text"]
    assert re.search(r"^webgpu +available", backends["text"], re.M), backends["text"]
    for name in ("wasm", "webgpu"):
        assert f"{name}: [0.0, 0.5, 1.0, 1.5] ... ok" in multiply["text"], multiply["text"]
        assert f"{name}: {_expected_trap()}" in traps["text"], traps["text"]
    assert offline == []  # nothing even tried to leave 127.0.0.1


def test_the_kernel_timings_notebook_draws_its_chart(browser, site_url, offline, artifacts):
    cells = _run_notebook(browser, site_url, "kernel_timings.ipynb", artifacts)
    assert not any(cell["error"] for cell in cells), [cell["text"] for cell in cells]
    table, chart = cells
    rows = re.findall(r"^(wasm|webgpu) +(add|exp|sum) +n= *(\d+) +[\d.]+ ms +[\d.]+ M elements/s$", table["text"], re.M)
    assert len(rows) == 2 * 3 * 3 and {name for name, _, _ in rows} == {"wasm", "webgpu"}, table["text"]
    assert chart["svg"].count("<polyline") == 6 and chart["svg"].count("</svg>") == 1, chart["svg"][:300]
    assert offline == []
