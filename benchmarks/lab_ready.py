"""Time to a ready JupyterLite kernel with atlas-web imported, cold and warm, in headless Chromium.

    PYTHONPATH=. python3 benchmarks/lab_ready.py [--runs N]

Builds the site with its lab into a temporary directory, serves it on 127.0.0.1 and opens the tour
notebook in a fresh browser profile (cold: nothing cached) and then again in the same profile (warm:
the HTTP cache holds Pyodide and the wheels). Each run measures, from navigation: the lab's page
ready (``window.jupyterapp``), the kernel's first reply (Pyodide, micropip, IPython and atlas-web
loaded), and a first cell ``import atlas_web`` answered. Every request that does not go to
127.0.0.1 is refused, as in tests/web/test_lab.py. Prints seconds; the machine may be shared, so
compare runs of one invocation.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

#: how long a kernel may take to be ready and import atlas-web before the run is reported as stalled
_STALL_MS = 600_000
_CELL_DONE = """async (stallMs) => {
  const run = (async () => {
    const panel = window.jupyterapp.shell.currentWidget;
    await panel.context.ready;
    await panel.sessionContext.ready;
    await panel.sessionContext.session.kernel.info;
    const kernelReady = performance.now();
    const future = panel.sessionContext.session.kernel.requestExecute({code: 'import atlas_web; atlas_web.__version__'});
    await future.done;
    return [kernelReady, performance.now()];
  })();
  return await Promise.race([run, new Promise((done) => setTimeout(() => done(null), stallMs))]);
}"""


def _measure(context, url: str) -> dict[str, float]:
    page = context.new_page()
    try:
        page.goto(url)
        page.wait_for_function("window.jupyterapp !== undefined && document.querySelector('.jp-Notebook')",
                               timeout=600_000)
        app = page.evaluate("performance.now()")
        times = page.evaluate(_CELL_DONE, _STALL_MS)
        if times is None:
            raise SystemExit(f"the kernel was not ready with atlas-web imported within {_STALL_MS / 1e3:.0f} s")
        kernel, cell = times
        return {"page": app / 1e3, "kernel": kernel / 1e3, "import": cell / 1e3}
    finally:
        page.close()


@contextlib.contextmanager
def offline_lab(scratch: Path) -> Iterator[tuple[object, str]]:
    """Build the site with its lab into ``scratch``, serve it on 127.0.0.1 and open Debian's Chromium (the
    browser tests' flags, a profile in ``scratch``) refusing every request elsewhere; yields the browser
    context and the URL of the tour notebook in the lab."""
    import sitebuild
    from playwright.sync_api import sync_playwright
    from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS

    root = Path(__file__).resolve().parents[1]
    site = scratch / "site"
    started = time.perf_counter()
    sitebuild.build_site(root, site, cache_dir=root / ".cache" / "npm", lab_python=sys.executable,
                         log=lambda message: None)
    print(f"site with lab built in {time.perf_counter() - started:.1f} s")
    with sitebuild.start_server(site) as server, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(scratch / "profile"), executable_path=str(CHROMIUM), headless=True, args=list(CHROMIUM_ARGS))
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
            ("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")) else route.abort())
        try:
            yield context, f"{server.url}lab/notebooks/index.html?path=tour.ipynb"
        finally:
            context.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="warm runs after the cold one (default 2)")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch, offline_lab(Path(scratch)) as (context, url):
        for label in ["cold"] + ["warm"] * options.runs:
            figures = _measure(context, url)
            print(f"{label}: lab page {figures['page']:.1f} s, kernel ready {figures['kernel']:.1f} s, "
                  f"import atlas_web answered {figures['import']:.1f} s (from navigation)")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
