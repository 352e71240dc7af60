"""WebAssembly in Chromium against WebAssembly natively: the same programs on WasmBackend, measured in one run.

In the browser WasmBackend runs on JsRunner (V8, through Pyodide); natively on wasmtime. Both sides run the
same code (this module is executed inside Pyodide too), build the same inputs, and keep the best wall time of
``--repeats`` launches after a first launch that also verifies and compiles; the native side runs before and
after the browser and keeps the better run. Workloads:

* ParallelMapBinary Add f32, ParallelReduce Sum f32 and ParallelMap Exp f32 over N values;
* a per-lane program (2 LDG, ADD, STG by GLOBAL_LANE_ID) over N lanes (``LaunchConfig.linear``: where N is not a
  multiple of the block the spare lanes of the last block skip the work);
* the host overhead of a cached launch (a one-lane program that does nothing), per launch;
* every example program of ``examples`` at its ``--example-size``.

The ratio is browser time / native time (above 1: slower in the browser). A digest of every output is
compared between the two sides, so both ran the same computation. The page load to the first result is
measured with a fresh profile (cold) and again with its cache warm, booting Python from the site's memory
snapshot (sitebuild.snapshot) and, in another fresh profile, without it (``?snapshot=off``).

Run ``PYTHONPATH=. python3 benchmarks/browser_vs_native.py [--size N] [--repeats R] [--json FILE]``: it builds
the site into a temporary directory, serves it on 127.0.0.1 and drives Debian's Chromium with the flags of
the browser tests (tests/web/conftest.py). Benchmarks are not tests: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import array
import hashlib
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from atlas_web import LaunchConfig, Program, Type

#: workload name -> (what it is, the program text for buffers 2 (a), 3 (b), 4 (out) and n elements)
PROGRAMS: dict[str, tuple[str, Callable[[int], str]]] = {
    "pmap2.add.f32": ("ParallelMapBinary Add f32", lambda n: f"pmap2.add.f32 [buf4 + 0], [buf2 + 0], [buf3 + 0], {n}\n"
                                                               "exit\n"),
    "preduce.sum.f32": ("ParallelReduce Sum f32", lambda n: f"preduce.sum.f32 r1, [buf2 + 0], {n}\n"
                                                            "stg.f32 [buf4 + 0], r1\nexit\n"),
    "pmap.exp.f32": ("ParallelMap Exp f32", lambda n: f"pmap.exp.f32 [buf4 + 0], [buf2 + 0], {n}\nexit\n"),
    "lane.add.f32": ("per-lane 2 LDG + ADD + STG", lambda n: f"""\
    mov_imm.u32 r13, {n}
    set.ge.u32 p0, r255, r13
    bra.p0 @done                  ; spare lanes (global lane id >= n) do nothing
    cvt.u64.u32 r1, r255
    mov_imm.u64 r2, 4
    mul.u64 r3, r1, r2
    mov_imm.u64 r4, 8589934592
    or.u64 r5, r3, r4
    mov_imm.u64 r6, 12884901888
    or.u64 r7, r3, r6
    mov_imm.u64 r8, 17179869184
    or.u64 r9, r3, r8
    ldg.f32 r10, [r5 + 0]
    ldg.f32 r11, [r7 + 0]
    add.f32 r12, r10, r11
    stg.f32 [r9 + 0], r12
done:
    exit
"""),
}
#: cached launches timed together for the host overhead
OVERHEAD_LAUNCHES = 200


def program_inputs(n: int) -> tuple[array.array, array.array]:
    """Two f32 arrays of ``n`` values in [-10, 10) (a repeated pattern: cheap to build under Pyodide)."""
    pattern_a = array.array("f", [((k * 7919) % 2000) / 100 - 10 for k in range(2000)])
    pattern_b = array.array("f", [((k * 104729) % 2000) / 200 - 5 for k in range(2000)])
    repeats = n // 2000 + 1
    return (pattern_a * repeats)[:n], (pattern_b * repeats)[:n]


def _timed(action: Callable[..., Any], *args: Any, repeats: int) -> tuple[float, float]:
    """(time of the first call of ``action(*args)``, best time of the next ``repeats`` calls) in seconds."""
    start = time.perf_counter()
    action(*args)
    first = time.perf_counter() - start
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        action(*args)
        best = min(best, time.perf_counter() - start)
    return first, best


def measure(new_backend: Callable[[], Any], n: int, example_size: int, repeats: int) -> dict[str, dict]:
    """Every workload on a fresh backend from ``new_backend()``: first and best launch times and an output digest.

    Runs natively and inside Pyodide alike (standard library, atlas_web and examples only).
    """
    results = measure_programs(new_backend, n, repeats)
    results.update(_measure_examples(new_backend, example_size, repeats))
    return results


def measure_programs(new_backend: Callable[[], Any], n: int, repeats: int) -> dict[str, dict]:
    """The PROGRAMS over ``n`` elements (any n >= 1) and the host overhead, each on a fresh backend: first and best
    launch times and a digest of the output (the f32 sums' bytes: pmap2.add.f32's and lane.add.f32's agree)."""
    results: dict[str, dict] = {}
    a, b = program_inputs(n)
    config = LaunchConfig.linear(n)
    for name, (_, text_of) in PROGRAMS.items():
        program = Program.from_text(text_of(n))
        launch = config if name.startswith("lane.") else LaunchConfig()
        with new_backend() as backend:
            handles = [backend.allocate_typed(a, Type.F32), backend.allocate_typed(b, Type.F32),
                       backend.allocate_typed(n, Type.F32)]
            first, best = _timed(backend.execute_program, program, launch, repeats=repeats)
            digest = hashlib.sha256(bytes(backend.copy_from_buffer(handles[2]))).hexdigest()[:16]
        results[name] = {"first": first, "best": best, "digest": digest}
    nothing = Program.from_text("exit\n")
    with new_backend() as backend:
        backend.execute_program(nothing, LaunchConfig())
        start = time.perf_counter()
        for _ in range(OVERHEAD_LAUNCHES):
            backend.execute_program(nothing, LaunchConfig())
        per_launch = (time.perf_counter() - start) / OVERHEAD_LAUNCHES
    results["launch.overhead"] = {"first": per_launch, "best": per_launch, "digest": ""}
    return results


def _measure_examples(new_backend: Callable[[], Any], example_size: int, repeats: int) -> dict[str, dict]:
    """Every example of ``examples`` at ``example_size`` on a fresh backend: times, digest, first problem."""
    import examples

    results: dict[str, dict] = {}
    for example in examples.build_all(example_size):
        program = example.program if isinstance(example.program, Program) else Program.from_text(example.program)
        with new_backend() as backend:
            handles = examples.allocate_buffers(example, backend)
            first, best = _timed(backend.execute_program, program, example.config, repeats=repeats)
            outputs = examples.read_outputs(example, backend, handles)
            problems = examples.compare_outputs(example, outputs)
            digest = hashlib.sha256(repr(sorted(outputs.items())).encode()).hexdigest()[:16]
        results[f"example.{example.name}"] = {"first": first, "best": best, "digest": digest,
                                              "problems": problems[:1]}
    return results


# ---- native side: the site, the browser, the report ------------------------------------------------------

def run_in_pyodide(page, source: Path, module: str, call: str) -> Any:
    """Run the benchmark file ``source`` as module ``module`` in the page's Pyodide, then ``call`` (a Python
    expression over ``bench``, that module, and ``WasmBackend``); returns its value, sent back as JSON."""
    code = (f"import types, json\n"
            f"bench = types.ModuleType({module!r})\n"
            f"exec(compile({source.read_text(encoding='utf-8')!r}, {source.name!r}, 'exec'), bench.__dict__)\n"
            f"from wasm_backend import WasmBackend\n"
            f"json.dumps({call})\n")
    return json.loads(page.evaluate("async (code) => await window.atlasWeb.pyodide.runPythonAsync(code)", code))


def _in_browser(page, n: int, example_size: int, repeats: int) -> dict[str, dict]:
    return run_in_pyodide(page, Path(__file__), "browser_vs_native",
                          f"bench.measure(WasmBackend, {n}, {example_size}, {repeats})")


def open_demo(context, url: str, timeout_ms: int = 600_000) -> tuple[Any, dict]:
    """A new page of ``context`` at ``url`` once ready: (page, its timings with "boot": how Python started)."""
    page = context.new_page()
    page.goto(url)
    page.wait_for_function("document.body.dataset.state !== 'booting'", timeout=timeout_ms)
    if page.evaluate("document.body.dataset.state") != "ready":
        raise RuntimeError(f"the demo page did not start: {page.inner_text('body')[-1000:]}")
    return page, {**page.evaluate("window.atlasWeb.timings"), "boot": page.evaluate("window.atlasWeb.boot.source")}


#: the page loads measured: name -> the page's URL parameters (snapshot=off: Python started without the
#: site's memory snapshot, as before it had one)
PAGE_LOADS: dict[str, str] = {"snapshot": "", "no snapshot": "?snapshot=off"}


@contextmanager
def demo_page() -> Iterator[tuple[Any, dict, str]]:
    """The demo page ready in headless Chromium: (page, {"<load> cold"/"<load> warm": timings} of the page
    loads of PAGE_LOADS, user agent). Each load kind gets a fresh profile (cold: nothing cached) and is loaded
    twice (warm: files revalidated, compiled wasm cached). Builds the site, with its memory snapshot, into a
    temporary directory and serves it on 127.0.0.1 meanwhile."""
    import tempfile

    import sitebuild
    from playwright.sync_api import sync_playwright
    from sitebuild.chromium import launch_persistent

    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as scratch:
        site = Path(scratch) / "site"
        sitebuild.build_site(root, site, cache_dir=root / ".cache" / "npm", snapshot_python=sys.executable,
                             log=lambda message: None)
        with sitebuild.start_server(site) as server, sync_playwright() as playwright:
            loads: dict[str, dict] = {}
            contexts = []
            try:
                for name, query in PAGE_LOADS.items():
                    contexts.append(launch_persistent(playwright, Path(scratch) / f"profile-{len(contexts)}"))
                    for kind in ("cold", "warm"):
                        page, loads[f"{name} {kind}"] = open_demo(contexts[-1], server.url + "index.html" + query)
                        page.close()
                page, _ = open_demo(contexts[0], server.url + "index.html")
                yield page, loads, page.evaluate("navigator.userAgent")
            finally:
                for context in contexts:
                    context.close()


def run_browser(n: int, example_size: int, repeats: int) -> tuple[dict, dict, str]:
    """(browser results, the page loads ({"snapshot cold": timings, ...}: see demo_page), user agent)."""
    with demo_page() as (page, load, agent):
        return _in_browser(page, n, example_size, repeats), load, agent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1 << 22, help="elements of the programs (default 4M)")
    parser.add_argument("--example-size", type=int, default=100_000, help="size of the example programs")
    parser.add_argument("--repeats", type=int, default=5, help="timed launches after the first (best is kept)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    options = parser.parse_args(argv)
    from wasm_backend import WasmBackend

    # the native side runs before and after the browser and keeps the better of the two (the machine may be shared)
    before = measure(WasmBackend, options.size, options.example_size, options.repeats)
    browser, load, agent = run_browser(options.size, options.example_size, options.repeats)
    after = measure(WasmBackend, options.size, options.example_size, options.repeats)
    native = {name: min(before[name], after[name], key=lambda r: r["best"]) for name in before}
    print(f"WasmBackend in Chromium ({agent.split(')')[-1].strip()}, JsRunner) vs natively (wasmtime), "
          f"size {options.size}, examples {options.example_size}, best of {options.repeats}")
    print(f"{'workload':<26}{'browser':>12}{'native':>12}{'ratio':>8}   first launch browser / native   same output")
    for name, there in browser.items():
        here = native[name]
        same = "yes" if there["digest"] == here["digest"] else "NO"
        if there.get("problems") or here.get("problems"):
            same += f" ({(there.get('problems') or here.get('problems'))[0]})"
        unit, scale = ("us", 1e6) if name == "launch.overhead" else ("ms", 1e3)
        print(f"{name:<26}{there['best'] * scale:>9.2f} {unit}{here['best'] * scale:>9.2f} {unit}"
              f"{there['best'] / here['best']:>8.2f}   {there['first'] * 1e3:>9.1f} ms / {here['first'] * 1e3:7.1f} ms"
              f"   {same}")
    for name, timings in load.items():
        print(f"page load ({name}, Python from {timings['boot']}): Pyodide {timings['pyodide']} ms, "
              f"wheels {timings['wheels']} ms, first result {timings['firstResult']} ms")
    if options.json:
        options.json.write_text(json.dumps({"native": native, "browser": browser, "page_load": load,
                                            "user_agent": agent, "size": options.size,
                                            "example_size": options.example_size, "repeats": options.repeats},
                                           indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
