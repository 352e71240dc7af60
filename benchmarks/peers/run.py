"""f32 matmul in one headless Chromium page: atlas-web's wasm GEMM kernel against TensorFlow.js and ONNX Runtime Web.

The peers are installed from npm at the versions pinned in ``package-lock.json`` (``npm ci`` into
``benchmarks/peers/node_modules``, git-ignored): TensorFlow.js 4.22.0 (``tfjs-core`` with the ``wasm`` backend,
XNNPACK, and with ``--webgpu`` the ``webgpu`` backend on Chromium's SwiftShader adapter) and ``onnxruntime-web``
(its wasm execution provider on a one-node MatMul model written here). All run on ONE thread: the page is not
cross-origin isolated, so neither TF.js nor ORT gets SharedArrayBuffer threads (ORT is also told
``numThreads = 1``).

atlas-web's side is the module its wasm backend generates for ``GEMM(c, a, b, m=n, n=n, k=n)``: the blocked
kernel of ``wasm_backend.lowering.coop_gemm_kernel`` (the exported driver, in both micro-kernel forms:
``relaxed_madd`` and ``mul`` + ``add``), written by the Python generator natively and instantiated by the page
on a WebAssembly.Memory of its own. The launch through Pyodide adds the host's per-launch overhead (tens of
microseconds, benchmarks/browser_vs_native.py measures it) and is not part of these timings.

With ``--webgpu`` (sizes up to 512), atlas-web's WebGPU side is the WGSL its webgpu backend generates for the
same GEMM (``webgpu_backend.wgsl.kernels.gemm``: 64 x 64 tiles, 4 x 4 per invocation), run by the page on the
same SwiftShader adapter as TF.js's webgpu backend: the pipeline's creation is timed once (its first launch),
then each run is one dispatch awaited with ``onSubmittedWorkDone``; its C is checked against TF.js's.

Every side gets the same n x n inputs (uniform in [-0.5, 0.5)), the sides are timed interleaved, best of
``--repeats`` after one warm-up each, and the page checks that atlas-web's C agrees with TF.js's. Printed:
ms, GFLOP/s and the ratio of each peer's time to atlas-web's (above 1: atlas-web is faster).

Run ``PYTHONPATH=. python3 benchmarks/peers/run.py [--sizes 256 512 1024] [--repeats 10] [--webgpu]``; it runs
``npm ci`` once when node_modules is missing (needs the npm registry), serves a temporary directory on
127.0.0.1 and drives Debian's Chromium through Playwright with the flags of the browser tests. Not a test.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from atlas_web.isa.types import Type  # noqa: E402
from wasm_backend.lowering.coop_gemm_kernel import (  # noqa: E402
    DEFAULT_TILING, GemmShape, Tiling, build_gemm_driver, scratch_bytes,
)
from wasm_backend.lowering.module_context import ModuleContext  # noqa: E402
from webgpu_backend.wgsl.emitter import ShaderFeatures  # noqa: E402
from webgpu_backend.wgsl.kernels.gemm import GemmSpec, gemm_source, gemm_workgroups  # noqa: E402
from webgpu_backend.wgsl.runtime_layout import MAX_STEPS, REACHED, pack_launch  # noqa: E402

from benchmarks.peers.onnx_bytes import field  # noqa: E402
from sitebuild.chromium import launch  # noqa: E402 - the browser tests' Chromium and flags

FORMS = {"relaxed_madd": True, "mul+add": False}
#: one 2.6 GHz core's SIMD128 peak with fused multiply-add: 4 lanes x 2 FMA ports x 2 flops x 2.6 GHz (issue 10)
SIMD_PEAK_GFLOPS = 41.6


def matmul_model(n: int) -> bytes:
    """An ONNX model (IR 8, opset 13) of one MatMul node: C[n, n] = A[n, n] @ B[n, n], float32."""
    def value(name: str) -> bytes:
        dims = b"".join(field(1, field(1, n)) for _ in range(2))
        tensor = field(1, 1) + field(2, dims)  # elem_type FLOAT, shape
        return field(1, name) + field(2, field(1, tensor))
    node = field(1, "A") + field(1, "B") + field(2, "C") + field(4, "MatMul")
    graph = (field(1, node) + field(2, "matmul") + field(11, value("A")) + field(11, value("B"))
             + field(12, value("C")))
    opset = field(1, "") + field(2, 13)
    return field(1, 8) + field(2, "atlas-web benchmarks/peers") + field(7, graph) + field(8, opset)


def atlas_module(n: int, relaxed: bool) -> tuple[bytes, int]:
    """(module bytes, scratch bytes) of atlas-web's GEMM kernel driver for n x n x n f32, exported as ``gemm``."""
    shape = GemmShape(Type.F32, n, n, n, False, False, n, n, n, 1.0, 0.0)
    tiling = Tiling(**{**DEFAULT_TILING.__dict__, "relaxed": relaxed})
    m = ModuleContext("atlas_gemm")
    build_gemm_driver(m, "gemm", shape, tiling, export=True)
    return m.to_bytes(), scratch_bytes(shape, tiling)


def atlas_webgpu(n: int) -> dict:
    """atlas-web's WGSL GEMM shader for n x n x n f32 (alpha 1, beta 0; C, A, B in buffers of their own at
    offset 0, no step guard), its launch record and workgroup counts, for the page."""
    spec = GemmSpec(1, n, n, n, False, False, n, n, n, n * n, n * n, n * n, 0x3F800000, 0, ("ro", "ro"), False)
    return {"code": gemm_source(spec, ShaderFeatures()), "launch": list(pack_launch(resume=1)),
            "rt_bytes": 4 * (REACHED + MAX_STEPS), "groups": list(gemm_workgroups(spec, 65535))}


def peers_page(title: str) -> str:
    """The page's index.html: TensorFlow.js (core, wasm, webgpu), ONNX Runtime Web's wasm build, bench.js."""
    return f"""<!doctype html><meta charset="utf-8"><title>{title}</title>
<script src="node_modules/@tensorflow/tfjs-core/dist/tf-core.min.js"></script>
<script src="node_modules/@tensorflow/tfjs-backend-wasm/dist/tf-backend-wasm.min.js"></script>
<script src="node_modules/@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js"></script>
<script src="node_modules/onnxruntime-web/dist/ort.wasm.min.js"></script>
<script src="bench.js"></script>
"""


PAGE = peers_page("GEMM peers")

BENCH_JS = r"""
async function atlasSide(n, form, scratch, a, b) {
  const bytes = await (await fetch(`atlas_${n}_${form}.wasm`)).arrayBuffer();
  const size = n * n * 4 + 64, at = [4096, 4096 + size, 4096 + 2 * size], s = 4096 + 3 * size;
  const memory = new WebAssembly.Memory({initial: Math.ceil((s + scratch) / 65536) + 1});
  const {instance} = await WebAssembly.instantiate(bytes, {env: {memory}});
  const f = new Float32Array(memory.buffer);
  f.set(a, at[0] / 4); f.set(b, at[1] / 4);
  return {run: () => instance.exports.gemm(at[0], at[1], at[2], s, 0, n),
          result: () => new Float32Array(memory.buffer, at[2], n * n).slice()};
}
async function tfSide(backend, n, a, b) {
  await tf.setBackend(backend); await tf.ready();
  const ta = tf.tensor2d(a, [n, n]), tb = tf.tensor2d(b, [n, n]);
  return {run: async () => { const c = tf.matMul(ta, tb); await c.data(); c.dispose(); },
          result: async () => { const c = tf.matMul(ta, tb); const d = await c.data(); c.dispose(); return d; },
          backend};
}
async function atlasGpuSide(n, shader, a, b) {
  const adapter = await navigator.gpu.requestAdapter();
  const device = await adapter.requestDevice();
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
  const buffer = (bytes) => device.createBuffer({size: Math.max(16, bytes), usage});
  const launch = buffer(256), rt = buffer(shader.rt_bytes), c = buffer(n * n * 4), ab = buffer(n * n * 4),
        bb = buffer(n * n * 4);
  device.queue.writeBuffer(launch, 0, new Uint8Array(shader.launch));
  device.queue.writeBuffer(ab, 0, a); device.queue.writeBuffer(bb, 0, b);
  const t0 = performance.now();
  const module = device.createShaderModule({code: shader.code});
  const pipeline = await device.createComputePipelineAsync({layout: 'auto', compute: {module, entryPoint: 'main'}});
  const group = device.createBindGroup({layout: pipeline.getBindGroupLayout(0), entries: [
    {binding: 0, resource: {buffer: launch}}, {binding: 1, resource: {buffer: rt}},
    {binding: 3, resource: {buffer: c}}, {binding: 4, resource: {buffer: ab}}, {binding: 5, resource: {buffer: bb}}]});
  const run = async () => {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline); pass.setBindGroup(0, group); pass.dispatchWorkgroups(...shader.groups); pass.end();
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  await run();
  const firstMs = performance.now() - t0;
  const result = async () => {
    const read = device.createBuffer({size: n * n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(c, 0, read, 0, n * n * 4);
    device.queue.submit([encoder.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    return new Float32Array(read.getMappedRange().slice(0));
  };
  return {run, result, firstMs};
}
async function ortSide(n, a, b) {
  const model = new Uint8Array(await (await fetch(`matmul_${n}.onnx`)).arrayBuffer());
  const session = await ort.InferenceSession.create(model, {executionProviders: ['wasm']});
  const feeds = {A: new ort.Tensor('float32', a, [n, n]), B: new ort.Tensor('float32', b, [n, n])};
  return {run: async () => { await session.run(feeds); }};
}
async function runBench(config) {
  tf.wasm.setWasmPaths('/node_modules/@tensorflow/tfjs-backend-wasm/dist/');
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
  const out = {sizes: {}, engine: navigator.userAgent};
  for (const n of config.sizes) {
    const a = new Float32Array(n * n).map(() => Math.random() - 0.5);
    const b = new Float32Array(n * n).map(() => Math.random() - 0.5);
    const sides = {};
    for (const form of config.forms) {
      sides[`atlas-web wasm (${form})`] = await atlasSide(n, form, config.scratch[n], a, b);
    }
    const tfwasm = await tfSide('wasm', n, a, b);
    sides['TF.js wasm'] = tfwasm;
    sides['ORT web wasm'] = await ortSide(n, a, b);
    // agreement: atlas-web's C against TF.js's
    const first = Object.values(sides)[0];
    await first.run();
    const mine = first.result(), theirs = await tfwasm.result();
    let worst = 0;
    for (let i = 0; i < mine.length; i++) worst = Math.max(worst, Math.abs(mine[i] - theirs[i]));
    const best = {};
    for (const name in sides) { await sides[name].run(); best[name] = Infinity; }
    for (let r = 0; r < config.repeats; r++) {
      for (const name in sides) {
        if (name.startsWith('TF.js')) await tf.setBackend('wasm');
        const t0 = performance.now(); await sides[name].run(); const dt = performance.now() - t0;
        best[name] = Math.min(best[name], dt);
      }
    }
    if (config.webgpu && n <= config.webgpuMax) {
      try {
        const gpu = await tfSide('webgpu', n, a, b);
        const label = 'TF.js webgpu (SwiftShader)';
        await gpu.run(); best[label] = Infinity;
        for (let r = 0; r < Math.min(3, config.repeats); r++) {
          const t0 = performance.now(); await gpu.run(); best[label] = Math.min(best[label], performance.now() - t0);
        }
      } catch (e) { best['TF.js webgpu (SwiftShader): ' + e.message] = NaN; }
      await tf.setBackend('wasm');
      try {
        const mine = await atlasGpuSide(n, config.shaders[n], a, b);
        const label = 'atlas-web webgpu (SwiftShader)';
        best[label] = Infinity;
        for (let r = 0; r < Math.min(3, config.repeats); r++) {
          const t0 = performance.now(); await mine.run(); best[label] = Math.min(best[label], performance.now() - t0);
        }
        const got = await mine.result(), want = await tfwasm.result();
        let gpuWorst = 0, magnitude = 0;
        for (let i = 0; i < got.length; i++) {
          gpuWorst = Math.max(gpuWorst, Math.abs(got[i] - want[i])); magnitude += Math.abs(got[i]);
        }
        out.sizes[n + '_webgpu'] = {first_ms: mine.firstMs, max_abs_difference: gpuWorst,
                                    mean_abs: magnitude / got.length};
      } catch (e) { best['atlas-web webgpu (SwiftShader): ' + e.message] = NaN; }
    }
    out.sizes[n] = {ms: best, max_abs_difference: worst};
  }
  return out;
}
"""


def _ensure_peers() -> None:
    if not (HERE / "node_modules" / "@tensorflow" / "tfjs-core").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True)


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".mjs": "text/javascript", ".js": "text/javascript"}

    def log_message(self, *args) -> None:  # quiet
        pass


def run_page(files: dict, config: dict, timeout_ms: int) -> dict:
    """Serve ``files`` (name -> text or bytes; ``index.html`` the page, which defines ``runBench``) with the peers'
    node_modules from a temporary directory on 127.0.0.1, open the page in headless Chromium and return what
    ``runBench(config)`` resolves to. Runs ``npm ci`` first when the peers are missing."""
    _ensure_peers()
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp)
        (site / "node_modules").symlink_to(HERE / "node_modules")
        for name, content in files.items():
            (site / name).write_bytes(content.encode() if isinstance(content, str) else content)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(site)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with sync_playwright() as playwright:
                browser = launch(playwright)
                page = browser.new_page()
                page.set_default_timeout(timeout_ms)
                page.goto(f"http://127.0.0.1:{server.server_address[1]}/index.html")
                result = page.evaluate("config => runBench(config)", config)
                browser.close()
        finally:
            server.shutdown()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--webgpu", action="store_true", help="also TF.js's webgpu backend (SwiftShader: slow)")
    args = parser.parse_args()
    files, scratch = {"index.html": PAGE, "bench.js": BENCH_JS}, {}
    for n in args.sizes:
        files[f"matmul_{n}.onnx"] = matmul_model(n)
        for form, relaxed in FORMS.items():
            files[f"atlas_{n}_{form}.wasm"], scratch[n] = atlas_module(n, relaxed)
    webgpu_max = 512
    config = {"sizes": args.sizes, "repeats": args.repeats, "forms": list(FORMS), "scratch": scratch,
              "webgpu": args.webgpu, "webgpuMax": webgpu_max,
              "shaders": {n: atlas_webgpu(n) for n in args.sizes if args.webgpu and n <= webgpu_max}}
    result = run_page(files, config, 1_800_000)
    print(f"f32 matmul n x n x n in one headless Chromium page, one thread, best of {args.repeats}, interleaved")
    print(f"engine: {result['engine']}")
    for key, row in result["sizes"].items():
        if key.endswith("_webgpu"):
            continue
        n = int(key)
        ms_of = row["ms"]
        atlas = min(ms for name, ms in ms_of.items() if name.startswith("atlas-web wasm"))
        print(f"  n = {n}: atlas-web C vs TF.js C, largest difference {row['max_abs_difference']:.2e}")
        for name, ms in ms_of.items():
            gflops = 2 * n ** 3 / (ms / 1e3) / 1e9 if ms == ms else float("nan")
            print(f"    {name:<34} {ms:9.2f} ms  {gflops:6.1f} GFLOP/s  {gflops / SIMD_PEAK_GFLOPS:5.1%} of peak  "
                  f"peer time / atlas-web wasm's best: {ms / atlas:5.2f}")
        gpu = result["sizes"].get(f"{key}_webgpu")
        mine, theirs = ms_of.get("atlas-web webgpu (SwiftShader)"), ms_of.get("TF.js webgpu (SwiftShader)")
        if gpu and mine and theirs:
            print(f"    webgpu: TF.js time / atlas-web's {theirs / mine:5.2f}; atlas-web's first launch (pipeline "
                  f"creation + one run) {gpu['first_ms']:.0f} ms; C (mean |c| {gpu['mean_abs']:.2f}) vs TF.js "
                  f"wasm's, largest difference {gpu['max_abs_difference']:.2e}")
    if os.environ.get("PEERS_JSON"):
        Path(os.environ["PEERS_JSON"]).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
