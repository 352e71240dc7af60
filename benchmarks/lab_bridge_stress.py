"""Stress the lab kernel's page<->worker bridge and count the pages whose kernel stalls.

    PYTHONPATH=. python3 benchmarks/lab_bridge_stress.py [--pages 3] [--stats 1500] [--executes 150]

The kernel's worker reaches ``/drive`` (its working directory) and the page reaches the kernel through
coincident's ``SharedArrayBuffer`` handoff (sitebuild/lab_coincident.py rewrites its races at build time).
Builds the site like benchmarks/lab_ready.py, then for each page: opens the tour notebook, runs one cell
doing ``--stats`` ``os.stat`` calls on ``/drive`` (a synchronous drive request each) and then ``--executes``
small cells (a page->worker call and answer each), each bounded (240 s for the stats cell, 60 s per small
cell); a page that does not finish is a stall, printed with the console's bridge errors. The races show
on a busy machine: run it with a busy core (``python3 -c 'while True: pass' &``). Here (2 shared cores,
one busy), without the rewrite 7 of 7 pages stalled (a fatal ``SyntaxError ... in JSON`` in the stats,
``A(...).value.then is not a function`` within 35 small cells); with it, 0 of 7. Prints counts, asserts
nothing.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.lab_ready import offline_lab
from sitebuild.lab_coincident import bridge_races

#: runs ``code`` on the open notebook's kernel; 'STALL' when it has not answered within ``ms``
_RUN = """async ([code, ms]) => {
  const run = (async () => {
    const panel = window.jupyterapp.shell.currentWidget;
    await panel.context.ready;
    await panel.sessionContext.ready;
    const kernel = panel.sessionContext.session.kernel;
    await kernel.info;
    let text = '';
    const future = kernel.requestExecute({code});
    future.onIOPub = (msg) => {
      if (msg.header.msg_type === 'stream') { text += msg.content.text; }
      if (msg.header.msg_type === 'error') { text += msg.content.ename + ': ' + msg.content.evalue; }
    };
    const reply = await future.done;
    return reply.content.status + ': ' + text.trim().slice(-200);
  })();
  return await Promise.race([run, new Promise((done) => setTimeout(() => done('STALL'), ms))]);
}"""


def _stress_page(context, url: str, stats: int, executes: int) -> tuple[str, list[str]]:
    """One page's outcome ('ok ...' or 'STALL ...') and the console's bridge errors."""
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    try:
        page.goto(url)
        page.wait_for_function("window.jupyterapp !== undefined && document.querySelector('.jp-Notebook')",
                               timeout=600_000)
        code = f"import os\nn = 0\nfor _ in range({stats}):\n    n += os.stat('/drive/tour.ipynb').st_size > 0\nprint(n)"
        outcome = page.evaluate(_RUN, [code, 240_000])
        if outcome == "STALL":
            outcome = f"STALL in the {stats} drive stats"
        for index in range(executes if not outcome.startswith("STALL") else 0):
            if page.evaluate(_RUN, [f"print({index})", 60_000]) == "STALL":
                outcome = f"STALL at small cell {index}"
                break
        else:
            outcome = f"ok: {stats} stats, {executes} small cells" if not outcome.startswith("STALL") else outcome
        page.wait_for_timeout(500)
        return outcome, [e[:160] for e in bridge_races(errors)]
    finally:
        page.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3, help="fresh pages, one kernel each (default 3)")
    parser.add_argument("--stats", type=int, default=1500, help="os.stat calls on /drive per page (default 1500)")
    parser.add_argument("--executes", type=int, default=150, help="small cells per page (default 150)")
    options = parser.parse_args(argv)
    stalls = 0
    with tempfile.TemporaryDirectory() as scratch, offline_lab(Path(scratch)) as (context, url):
        for number in range(1, options.pages + 1):
            started = time.perf_counter()
            outcome, races = _stress_page(context, url, options.stats, options.executes)
            stalls += outcome.startswith("STALL")
            print(f"page {number}: {outcome} in {time.perf_counter() - started:.0f} s; bridge errors: {races}")
    print(f"{stalls} of {options.pages} pages stalled")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
