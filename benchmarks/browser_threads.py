"""WasmBackend on Web Workers in Chromium: the same programs on 1 and on N threads in one page, interleaved.

The demo page's Python runs in a worker of the cross-origin isolated site, so ``WasmBackend(threads=N)`` runs
large maps and reductions on a pool of Web Workers over one shared memory (wasm_backend/runners/js_threads.py).
Workloads (issue 13): ParallelMapBinary Add f32 over 16M values, ParallelMap Exp f32 over 4M, ParallelReduce
Sum f32 over 16M. For each, two backends (1 thread and ``--threads``) launch in turn, ``--repeats`` rounds after
a first launch that compiles; the best and the median of each are kept, and the outputs' digests compared
(bit-identical results). The native wasmtime figures of the same workloads come from the same run.

    PYTHONPATH=. python3 benchmarks/browser_threads.py [--threads 2] [--repeats 7] [--timeline]

The same workloads in NumPy on 1 and N Python threads (each thread one contiguous part; NumPy releases the GIL
in its loops) are printed as a reference from the same run: what other code doing that work (that memory
traffic) gains from N threads on this machine. On this VM memory bandwidth varies from run to run (a
one-thread Add over 16M took 12.5-19 ms in consecutive runs): compare within one run.

``--timeline`` also traces three more launches on the threads in the page (JsThreadPool.set_tracing) and
prints, for the fastest, each batch: when each thread started its first call after the batch opened, how
many calls it ran and how long they took, the fastest call, and the median call that ran alone against one
that ran alongside another thread's (on an idle machine: whether the threads compete for memory).

Builds the site into a temporary directory, serves it on 127.0.0.1 and drives Debian's Chromium with the
flags of the browser tests. The speed-up needs idle cores: on a shared machine compare within one run.
Benchmarks are not tests: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

from atlas_web import LaunchConfig, Program, Type

#: workload -> (program text over buffers 2 (a), 3 (b), 4 (out), elements)
WORKLOADS: dict[str, tuple[str, int]] = {
    "pmap2.add.f32 16M": ("pmap2.add.f32 [buf4 + 0], [buf2 + 0], [buf3 + 0], {n}\nexit\n", 1 << 24),
    "pmap.exp.f32 4M": ("pmap.exp.f32 [buf4 + 0], [buf2 + 0], {n}\nexit\n", 1 << 22),
    "preduce.sum.f32 16M": ("preduce.sum.f32 r1, [buf2 + 0], {n}\nstg.f32 [buf4 + 0], r1\nexit\n", 1 << 24),
}


#: workload -> the same work in NumPy over elements lo .. hi of a, b into out (arrays of the workload's size)
NUMPY_EQUIVALENTS = {
    "pmap2.add.f32 16M": lambda np, a, b, out, lo, hi: np.add(a[lo:hi], b[lo:hi], out=out[lo:hi]),
    "pmap.exp.f32 4M": lambda np, a, b, out, lo, hi: np.exp(a[lo:hi], out=out[lo:hi]),
    "preduce.sum.f32 16M": lambda np, a, b, out, lo, hi: np.add.reduce(a[lo:hi]),
}


def numpy_reference(threads: int, repeats: int) -> dict[str, dict[int, float]]:
    """Each workload's NumPy equivalent on a pool of 1 and of ``threads`` Python threads, launched in turn:
    {workload: {thread count: best seconds}}; {} where NumPy is not installed."""
    try:
        import numpy as np
    except ImportError:
        return {}
    from concurrent.futures import ThreadPoolExecutor
    pools = {count: ThreadPoolExecutor(count) for count in (1, threads)}
    results: dict[str, dict[int, float]] = {}
    try:
        for name, (_, n) in WORKLOADS.items():
            work = NUMPY_EQUIVALENTS[name]
            a = (np.arange(n, dtype=np.float32) % 2000) / 100 - 10
            b, out = a.copy(), np.empty_like(a)
            best = {count: float("inf") for count in pools}
            for _ in range(repeats + 1):  # the first round warms the pools and the pages
                for count, pool in pools.items():
                    parts = [(n * k // count, n * (k + 1) // count) for k in range(count)]
                    start = time.perf_counter()
                    list(pool.map(lambda part: work(np, a, b, out, *part), parts))
                    best[count] = min(best[count], time.perf_counter() - start)
            results[name] = best
    finally:
        for pool in pools.values():
            pool.shutdown()
    return results


def timeline(records: list[tuple[int, int, float, float]], wall: float) -> list[str]:
    """Lines describing one traced launch (JsThreadPool.take_trace records; ``wall``: its seconds)."""
    batches = sorted((r for r in records if r[1] == -1), key=lambda r: r[2])
    calls = [r for r in records if r[1] >= 0]
    lines = [f"launch {wall * 1e3:.2f} ms, {len(batches)} batch(es)"]
    for _, _, opened, closed in batches:
        inside = [r for r in calls if opened <= r[2] <= closed]
        line = f"  batch {closed - opened:.2f} ms:"
        for thread in sorted({r[0] for r in inside}):
            mine = [r for r in inside if r[0] == thread]
            line += (f" thread {thread} starts +{min(r[2] for r in mine) - opened:.2f} ms, {len(mine)} calls "
                     f"busy {sum(r[3] - r[2] for r in mine):.2f} ms;")
        fastest = min((r[3] - r[2] for r in inside), default=0.0)
        line += f" fastest call {fastest:.2f} ms"
        # a call that ran while another thread ran one, against one that ran alone: on an idle machine a
        # much slower shared call means the threads compete for memory bandwidth (or a core's SMT sibling)
        shared = [r[3] - r[2] for r in inside if _overlapped(r, inside)]
        alone = [r[3] - r[2] for r in inside if not _overlapped(r, inside)]
        if shared and alone:
            line += f"; median call alone {statistics.median(alone):.2f} ms, alongside another {statistics.median(shared):.2f} ms"
        lines.append(line)
    return lines


def _overlapped(call: tuple, calls: list) -> bool:
    """Whether another thread ran a call during most of ``call``."""
    thread, _, start, end = call
    return any(r[0] != thread and min(end, r[3]) - max(start, r[2]) > (end - start) / 2 for r in calls)


def _traced(backend, program, pool, rounds: int = 3) -> list[str]:
    """Trace ``rounds`` launches on ``pool``'s threads; the timeline of the fastest."""
    pool.set_tracing(True)
    try:
        best = None
        for _ in range(rounds):
            start = time.perf_counter()
            backend.execute_program(program, LaunchConfig())
            wall = time.perf_counter() - start
            records = pool.take_trace()
            if best is None or wall < best[0]:
                best = (wall, records)
    finally:
        pool.set_tracing(False)
    return timeline(best[1], best[0])


def measure(new_backend, threads: int, repeats: int, trace: bool = False) -> dict[str, dict]:
    """Each workload on a 1-thread and a ``threads``-thread backend made by ``new_backend(threads=...)``,
    launched in turn: best and median seconds per thread count, the digests of their outputs, and the chunks
    worker threads ran; with ``trace`` in the browser, the timeline of traced launches on the threads too.
    Runs natively and inside Pyodide alike (standard library and atlas_web only)."""
    import array
    try:
        from wasm_backend.runners.js_threads import shared_pool
    except ImportError:  # natively: no Web Workers to trace
        shared_pool = None
    results: dict[str, dict] = {}
    for name, (text, n) in WORKLOADS.items():
        pattern = array.array("f", [((k * 7919) % 2000) / 100 - 10 for k in range(2000)])
        values = (pattern * (n // 2000 + 1))[:n]
        program = Program.from_text(text.format(n=n))
        runs = {}
        for count in (1, threads):
            backend = new_backend(threads=count)
            handles = [backend.allocate_typed(values, Type.F32), backend.allocate_typed(values, Type.F32),
                       backend.allocate_typed(n, Type.F32)]
            backend.execute_program(program, LaunchConfig())  # verifies and compiles
            runs[count] = (backend, handles, [])
        for _ in range(repeats):
            for count, (backend, _, times) in runs.items():
                start = time.perf_counter()
                backend.execute_program(program, LaunchConfig())
                times.append(time.perf_counter() - start)
        entry = {}
        if trace and shared_pool is not None and threads > 1:
            entry["timeline"] = _traced(runs[threads][0], program, shared_pool(threads))
        for count, (backend, handles, times) in runs.items():
            digest = hashlib.sha256(bytes(backend.copy_from_buffer(handles[2]))).hexdigest()[:16]
            info = backend.device_info()
            entry[str(count)] = {"best": min(times), "median": statistics.median(times), "digest": digest,
                            "threads": info["threads"], "worker_chunks": info["parallel_worker_chunks"],
                            "reason": info.get("threads_reason", "")}
            backend.close()
        results[name] = entry
    return results


def _in_browser(page, threads: int, repeats: int, trace: bool) -> dict:
    source = Path(__file__).read_text(encoding="utf-8")
    code = (f"import types, json\n"
            f"bench = types.ModuleType('browser_threads')\n"
            f"exec(compile({source!r}, 'browser_threads.py', 'exec'), bench.__dict__)\n"
            f"from wasm_backend import WasmBackend\n"
            f"json.dumps(bench.measure(WasmBackend, {threads}, {repeats}, {trace}))\n")
    return json.loads(page.evaluate("async (code) => await window.atlasWeb.pyodide.runPythonAsync(code)", code))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="threads of the second backend (default 2)")
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds after the first launch (default 7)")
    parser.add_argument("--timeline", action="store_true", help="trace launches on the page's threads too")
    options = parser.parse_args(argv)
    import tempfile

    import sitebuild
    from playwright.sync_api import sync_playwright
    from sitebuild.chromium import launch_persistent
    from wasm_backend import WasmBackend

    from benchmarks.browser_vs_native import open_demo

    root = Path(__file__).resolve().parents[1]
    load_before = os.getloadavg()[0]
    native = measure(WasmBackend, options.threads, options.repeats)
    reference = numpy_reference(options.threads, options.repeats)
    with tempfile.TemporaryDirectory() as scratch:
        site = Path(scratch) / "site"
        sitebuild.build_site(root, site, cache_dir=root / ".cache" / "npm", log=lambda message: None)
        with sitebuild.start_server(site) as server, sync_playwright() as playwright:
            context = launch_persistent(playwright, Path(scratch) / "profile")
            try:
                page, _ = open_demo(context, server.url + "index.html")
                agent = page.evaluate("navigator.userAgent")
                browser = _in_browser(page, options.threads, options.repeats, options.timeline)
            finally:
                context.close()
    n = str(options.threads)
    print(f"load average (1 min) {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores")
    print(f"WasmBackend, 1 vs {n} threads, best (median) of {options.repeats} interleaved launches; "
          f"Chromium {agent.split('Chrome/')[-1].split(' ')[0]} (Web Workers) and natively (wasmtime)")
    print(f"{'workload':<22}{'browser 1':>18}{'browser ' + n:>18}{'speed-up':>10}{'native 1':>18}{'native ' + n:>18}"
          f"{'speed-up':>10}  same bits")
    for name in WORKLOADS:
        there, here = browser[name], native[name]
        cells = []
        for side in (there, here):
            one, many = side["1"], side[n]
            cells.append(f"{one['best'] * 1e3:>8.2f} ({one['median'] * 1e3:6.2f}) "
                         f"{many['best'] * 1e3:>8.2f} ({many['median'] * 1e3:6.2f}) "
                         f"{one['best'] / many['best']:>9.2f}x")
        same = len({side[k]["digest"] for side in (there, here) for k in ("1", n)}) == 1
        print(f"{name:<22}{cells[0]}{cells[1]}  {'yes' if same else 'NO'}")
    if reference:
        print(f"reference: the same work in NumPy on 1 and {n} Python threads (best of {options.repeats})")
        for name, best in reference.items():
            one, many = best[1], best[options.threads]
            print(f"{name:<22}{one * 1e3:>8.2f} ms {many * 1e3:>8.2f} ms {one / many:>9.2f}x")
    for name in WORKLOADS:
        for line in browser[name].get("timeline", []):
            print(f"{name}: {line}")
    many = browser[next(iter(WORKLOADS))][n]
    print(f"browser: {many['threads']} threads, {many['worker_chunks']} chunks on workers"
          + (f" ({many['reason']})" if many["reason"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
