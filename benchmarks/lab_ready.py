"""Time to a ready JupyterLite kernel with atlas-web imported, cold and warm, in headless Chromium.

    PYTHONPATH=. python3 benchmarks/lab_ready.py [--runs N] [--site DIR ...]

Builds the site with its lab into a temporary directory (or takes the built sites given with
``--site``: two builds are compared run by run), serves it on 127.0.0.1 and opens the tour notebook in
a fresh browser profile (cold: nothing cached) and then again in the same profile (warm: the HTTP cache
holds Pyodide and the wheels). Each run measures, from navigation: the lab's page ready
(``window.jupyterapp``), the kernel's worker created, the kernel's first reply (Pyodide booted with
the kernel's packages and atlas-web, IPython imported), and a first cell ``import atlas_web`` answered. Every request that does not go to
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
from typing import Iterator, Sequence

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
    started, worker = time.perf_counter(), []
    page.on("worker", lambda _: worker.append(time.perf_counter() - started))  # the kernel's worker
    try:
        page.goto(url)
        page.wait_for_function("window.jupyterapp !== undefined && document.querySelector('.jp-Notebook')",
                               timeout=600_000)
        app = page.evaluate("performance.now()")
        times = page.evaluate(_CELL_DONE, _STALL_MS)
        if times is None:
            raise SystemExit(f"the kernel was not ready with atlas-web imported within {_STALL_MS / 1e3:.0f} s")
        kernel, cell = times
        return {"page": app / 1e3, "worker": worker[0] if worker else float("nan"), "kernel": kernel / 1e3,
                "import": cell / 1e3}
    finally:
        page.close()


@contextlib.contextmanager
def offline_labs(scratch: Path, sites: Sequence[Path]) -> Iterator[tuple[object, list[str]]]:
    """Serve each built site of ``sites`` on its own 127.0.0.1 port and open Debian's Chromium (the browser
    tests' flags, a profile in ``scratch``) refusing every request elsewhere; yields the browser context and
    the URL of the tour notebook in each site's lab (the sites share the profile, not their URLs' caches)."""
    import sitebuild
    from playwright.sync_api import sync_playwright
    from sitebuild.chromium import launch_persistent

    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(sitebuild.start_server(site)) for site in sites]
        playwright = stack.enter_context(sync_playwright())
        context = launch_persistent(playwright, scratch / "profile")
        stack.callback(context.close)
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
            ("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")) else route.abort())
        yield context, [f"{server.url}lab/notebooks/index.html?path=tour.ipynb" for server in servers]


def _build(scratch: Path) -> Path:
    """This checkout's site with its lab, built into ``scratch/site``."""
    import sitebuild

    root = Path(__file__).resolve().parents[1]
    site = scratch / "site"
    started = time.perf_counter()
    sitebuild.build_site(root, site, cache_dir=root / ".cache" / "npm", lab_python=sys.executable,
                         log=lambda message: None)
    print(f"site with lab built in {time.perf_counter() - started:.1f} s")
    return site


@contextlib.contextmanager
def offline_lab(scratch: Path) -> Iterator[tuple[object, str]]:
    """Build the site with its lab into ``scratch`` and open it as ``offline_labs`` does; yields the browser
    context and the URL of the tour notebook in the lab."""
    with offline_labs(scratch, [_build(scratch)]) as (context, urls):
        yield context, urls[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="warm runs after the cold one (default 2)")
    parser.add_argument("--site", type=Path, action="append", default=[],
                        help="time this built site (www/dist or another build) instead of building this "
                             "checkout's; repeated: the sites are timed in turn, run by run")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        sites = options.site or [_build(Path(scratch))]
        with offline_labs(Path(scratch), sites) as (context, urls):
            for label in ["cold"] + ["warm"] * options.runs:
                for site, url in zip(sites, urls):
                    figures = _measure(context, url)
                    name = f" {site}" if options.site else ""
                    print(f"{label}{name}: lab page {figures['page']:.1f} s, kernel worker started "
                          f"{figures['worker']:.1f} s, kernel ready {figures['kernel']:.1f} s, import atlas_web "
                          f"answered {figures['import']:.1f} s (from navigation)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
