"""The issue-14 transformer generating in Chromium (the demo page's worker: Pyodide, WasmBackend on V8 and
WebGpuBackend on SwiftShader) against the same generation natively (wasmtime; NumPy's own model), in one run.

Both sides run ``webdemo.transformer.TransformerDemo`` (the page's "Generate": weights drawn on the device from
seed 7, greedy decoding of ``--new`` tokens after the prompt 1, 2, 3; a first run that compiles, then warm runs):
tokens/s is the new tokens over the best warm generation's wall time (the prompt's steps included). The tokens
must be the same in the browser and natively, and NumPy's (the run says so, it does not stop). NumPy's figure is
benchmarks/transformer.py's incremental decode over its own KV cache, one BLAS thread.

Run ``PYTHONPATH=. python benchmarks/transformer_browser.py [--new 16] [--repeats 3] [--backends wasm,webgpu]
[--json FILE]``: it builds the site into a temporary directory, serves it on 127.0.0.1 and drives Debian's
Chromium with the browser tests' flags (benchmarks/browser_vs_native.demo_page). The machine may be shared: say
so with the figures. Not a test: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

#: what the page's worker runs (and this process, natively): {backend: {tokens, first, best}}
MEASURE = """
import time
from webdemo.transformer import TransformerDemo

async def _measure(backends, new, repeats):
    demo, out = TransformerDemo(), {}
    try:
        for name in backends:
            try:
                first = await demo.run(name, new)
                best = first.warm_seconds
                for _ in range(repeats - 1):
                    best = min(best, (await demo.run(name, new)).warm_seconds)
                out[name] = {"tokens": first.tokens, "first": first.first_seconds, "best": best}
            except Exception as exc:   # a backend the browser cannot start: reported, the others still run
                out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        demo.close()
    return out
"""


def _native(backends: list[str], new: int, repeats: int) -> dict:
    space: dict = {}
    exec(MEASURE, space)
    return asyncio.run(space["_measure"](backends, new, repeats))


def _numpy(new: int, repeats: int) -> tuple[list[int], float]:
    """NumPy's tokens and best seconds for the same generation (benchmarks/transformer.numpy_decode)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from atlas_web.registry import get_backend
    from benchmarks.transformer import numpy_decode
    from tests.kernels.numpy_transformer import NumpyTransformer
    from webdemo.transformer import DEMO_CONFIG, DEMO_PROMPT, DEMO_SEED

    from atlas_web.kernels.transformer import init_weights
    with get_backend("cpu") as cpu:
        weights = {k: v.to_host() for k, v in init_weights(DEMO_CONFIG, DEMO_SEED, cpu).items()}
    model = NumpyTransformer(DEMO_CONFIG, weights)
    best, tokens = float("inf"), []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        tokens = numpy_decode(model, list(DEMO_PROMPT), new)
        best = min(best, time.perf_counter() - start)
    return tokens, best


def _browser(backends: list[str], new: int, repeats: int, timeout_s: float) -> tuple[dict, str]:
    from benchmarks.browser_vs_native import demo_page
    code = MEASURE + f"\nimport json\njson.dumps(await _measure({backends!r}, {new}, {repeats}))\n"
    with demo_page() as (page, _load, agent):
        text = page.evaluate(
            """async ([code, ms]) => await Promise.race([window.atlasWeb.pyodide.runPythonAsync(code),
                 new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms))])""",
            [code, int(timeout_s * 1000)])
        return json.loads(text), agent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--new", type=int, default=16, help="new tokens per generation")
    parser.add_argument("--repeats", type=int, default=3, help="warm generations (the best is kept)")
    parser.add_argument("--backends", default="wasm,webgpu", help="backends to run in the browser")
    parser.add_argument("--native-backends", default="wasm", help="backends to run natively")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds the browser side may take")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    options = parser.parse_args(argv)
    backends = [b for b in options.backends.split(",") if b]
    native_backends = [b for b in options.native_backends.split(",") if b]
    numpy_tokens, numpy_best = _numpy(options.new, options.repeats)
    native = _native(native_backends, options.new, options.repeats)
    browser, agent = _browser(backends, options.new, options.repeats, options.timeout)
    print(f"transformer (webdemo.transformer.DEMO_CONFIG), {options.new} new tokens after [1, 2, 3], best of "
          f"{options.repeats} warm runs; Chromium {agent.split(')')[-1].strip()}")
    print(f"{'where':<24}{'tokens/s':>10}{'first run':>12}   tokens equal NumPy's")
    print(f"{'numpy (native)':<24}{options.new / numpy_best:>10.1f}{'':>12}   -")
    for where, results in (("native", native), ("chromium", browser)):
        for name, r in results.items():
            if "error" in r:
                print(f"{name + ' (' + where + ')':<24}{'-':>10}{'-':>12}   {r['error']}")
                continue
            same = "yes" if r["tokens"] == numpy_tokens else f"NO: {r['tokens']}"
            print(f"{name + ' (' + where + ')':<24}{options.new / r['best']:>10.1f}{r['first']:>10.2f} s   {same}")
    for name in set(native) & set(browser):
        if "tokens" in native[name] and "tokens" in browser[name]:
            print(f"{name}: browser / native time {browser[name]['best'] / native[name]['best']:.2f}, tokens "
                  f"{'equal' if browser[name]['tokens'] == native[name]['tokens'] else 'DIFFER'}")
    if options.json:
        options.json.write_text(json.dumps({"numpy": {"tokens": numpy_tokens, "best": numpy_best}, "native": native,
                                            "browser": browser, "user_agent": agent, "new": options.new,
                                            "repeats": options.repeats}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
