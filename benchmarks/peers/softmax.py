"""f32 row softmax in one headless Chromium page: atlas-web's wasm Softmax kernel against TensorFlow.js and ONNX
Runtime Web (issue 11: TF.js wasm measured 1.1 ms on 1024 x 1024).

The peers and the page are those of ``benchmarks/peers/run.py`` (the npm packages pinned there, the same Chromium
flags, one thread: the page is not cross-origin isolated): TF.js 4.22.0's ``wasm`` backend (``tf.softmax`` over
the last axis; its kernels run synchronously, so the op alone is timed and its output disposed unread) and
``onnxruntime-web``'s wasm execution provider on a one-node Softmax model written here (opset 13, axis -1;
``session.run`` returns the output, so its time includes handing it back).

atlas-web's side is the module its wasm backend generates for ``Softmax(output, input, n, rows)``: the row driver
of ``wasm_backend.lowering.coop_softmax`` (three SIMD passes per row; exp by the math library's vector routine),
exported and instantiated by the page on a WebAssembly.Memory of its own; the launch through Pyodide adds the
host's per-launch overhead (benchmarks/browser_vs_native.py) and is not part of these timings.

Every side gets the same rows x n logits (standard normal times 4); the sides are timed interleaved, best of
``--repeats`` samples of ``--inner`` calls after one warm-up each; the page checks that atlas-web's output agrees with TF.js's. Printed: ms,
M elements/s and each peer's time over atlas-web's (above 1: atlas-web is faster).

With ``--webgpu``, also on the page's WebGPU (Chromium's SwiftShader adapter, a CPU emulation: compare these two
only with each other): TF.js 4.22's ``webgpu`` backend (``tf.softmax``, then ``await data()``) against the WGSL
shader atlas-web's webgpu backend generates for the instruction (``webgpu_backend/wgsl/kernels/softmax.py``, its
``launch`` record packed here), dispatched by the page on a device of its own (peers/conv.py's ``GPU_SIDE_JS``)
and read back: both sides include reading the 4 bytes per element back (atlas-web's also without it).

Run ``PYTHONPATH=. python3 benchmarks/peers/softmax.py [--shapes 1024x1024 256x4096] [--repeats 20] [--webgpu]``.
Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from atlas_web.isa import Address, Softmax  # noqa: E402
from wasm_backend.lowering.coop_softmax import build_softmax_driver, softmax_scratch  # noqa: E402
from webgpu_backend.wgsl.emitter import ShaderFeatures  # noqa: E402
from webgpu_backend.wgsl.kernels.softmax import SoftmaxKernel  # noqa: E402
from webgpu_backend.wgsl.runtime_layout import MAX_STEPS, REACHED, pack_launch  # noqa: E402
from wasm_backend.lowering.module_context import ModuleContext  # noqa: E402

from benchmarks.peers.conv import GPU_SIDE_JS  # noqa: E402
from benchmarks.peers.onnx_bytes import field  # noqa: E402
from benchmarks.peers.run import peers_page, run_page  # noqa: E402


def softmax_model(rows: int, n: int) -> bytes:
    """An ONNX model (IR 8, opset 13) of one Softmax node over the last axis: Y[rows, n] = softmax(X), float32."""
    def value(name: str) -> bytes:
        dims = field(1, field(1, rows)) + field(1, field(1, n))
        return field(1, name) + field(2, field(1, field(1, 1) + field(2, dims)))
    node = field(1, "X") + field(2, "Y") + field(4, "Softmax")
    graph = field(1, node) + field(2, "softmax") + field(11, value("X")) + field(12, value("Y"))
    return field(1, 8) + field(2, "atlas-web benchmarks/peers") + field(7, graph) + field(8, field(2, 13))


def atlas_module(rows: int, n: int) -> tuple[bytes, int]:
    """(module bytes, scratch bytes) of atlas-web's Softmax row driver for rows x n f32, exported as ``softmax``
    with the parameters (input, unused, output, scratch, first row, end row)."""
    instr = Softmax(output=Address.BufferOffset(1), input=Address.BufferOffset(2), n=n, rows=rows)
    m = ModuleContext("atlas_softmax")
    build_softmax_driver(m, "softmax", instr, export=True)
    return m.to_bytes(), softmax_scratch(instr)


def atlas_shader(rows: int, n: int) -> dict:
    """atlas-web's webgpu Softmax shader for rows x n f32 (input in its own binding, unguarded), as
    peers/conv.py's GPU_SIDE_JS takes it: WGSL, launch record, rt size, workgroups, bindings."""
    instr = Softmax(output=Address.BufferOffset(1), input=Address.BufferOffset(2), n=n, rows=rows)
    code = SoftmaxKernel().spec(instr, guarded=False).source(ShaderFeatures())
    return {"code": code, "launch": list(pack_launch(step=0, resume=1)), "rt_bytes": 4 * (REACHED + MAX_STEPS),
            "groups": [min(rows, 65535), 1, 1], "bindings": [0, 1, 3, 4]}


PAGE = peers_page("Softmax peers")

BENCH_JS = GPU_SIDE_JS + r"""
async function atlasSide(tag, rows, n, scratch, x) {
  const bytes = await (await fetch(`atlas_${tag}.wasm`)).arrayBuffer();
  const size = rows * n * 4 + 64, at = [4096, 4096 + size], s = 4096 + 2 * size;
  const memory = new WebAssembly.Memory({initial: Math.ceil((s + scratch) / 65536) + 1});
  const {instance} = await WebAssembly.instantiate(bytes, {env: {memory}});
  new Float32Array(memory.buffer).set(x, at[0] / 4);
  return {run: () => instance.exports.softmax(at[0], 0, at[1], s, 0, rows),
          result: () => new Float32Array(memory.buffer, at[1], rows * n).slice()};
}
async function gpuBench(config, rows, n, x, mine) {
  const tag = `${rows}x${n}`;
  await tf.setBackend('webgpu'); await tf.ready();
  const tx = tf.tensor2d(x, [rows, n]);
  const atlas = await atlasGpuSide([config.shaders[tag]], {4: x}, rows * n * 4);
  const sides = {
    'atlas-web webgpu (softmax shader)': {run: async () => { await atlas.run(); await atlas.result(); }},
    'TF.js webgpu (tf.softmax)': {run: async () => { const y = tf.softmax(tx); await y.data(); y.dispose(); }},
    'atlas-web webgpu, not read back': atlas,
  };
  const gpuOut = await atlas.result();
  let worst = 0;
  for (let i = 0; i < mine.length; i++) worst = Math.max(worst, Math.abs(gpuOut[i] - mine[i]));
  const best = {};
  for (const name in sides) { await sides[name].run(); best[name] = Infinity; }
  for (let r = 0; r < config.gpuRepeats; r++) {
    for (const name in sides) {
      const t0 = performance.now(); await sides[name].run(); best[name] = Math.min(best[name], performance.now() - t0);
    }
  }
  tx.dispose();
  await tf.setBackend('wasm');
  return {ms: best, max_abs_difference_to_wasm: worst};
}
async function runBench(config) {
  tf.wasm.setWasmPaths('/node_modules/@tensorflow/tfjs-backend-wasm/dist/');
  await tf.setBackend('wasm'); await tf.ready();
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
  const out = {shapes: {}, engine: navigator.userAgent};
  for (const [rows, n] of config.shapes) {
    const tag = `${rows}x${n}`;
    const x = new Float32Array(rows * n);
    for (let i = 0; i < x.length; i += 2) {   // Box-Muller: standard normal, times 4
      const r = Math.sqrt(-2 * Math.log(1 - Math.random())), t = 2 * Math.PI * Math.random();
      x[i] = 4 * r * Math.cos(t); if (i + 1 < x.length) x[i + 1] = 4 * r * Math.sin(t);
    }
    const atlas = await atlasSide(tag, rows, n, config.scratch[tag], x);
    const tx = tf.tensor2d(x, [rows, n]);
    const model = new Uint8Array(await (await fetch(`softmax_${tag}.onnx`)).arrayBuffer());
    const session = await ort.InferenceSession.create(model, {executionProviders: ['wasm']});
    const feeds = {X: new ort.Tensor('float32', x, [rows, n])};
    const sides = {
      'atlas-web wasm (coop_softmax)': {run: async () => atlas.run()},
      'TF.js wasm (tf.softmax)': {run: async () => { tf.softmax(tx).dispose(); }},
      'ORT web wasm (Softmax node)': {run: async () => { await session.run(feeds); }},
    };
    atlas.run();
    const mine = atlas.result(), theirsT = tf.softmax(tx), theirs = await theirsT.data();
    theirsT.dispose();
    let worst = 0;
    for (let i = 0; i < mine.length; i++) worst = Math.max(worst, Math.abs(mine[i] - theirs[i]));
    const best = {};
    for (const name in sides) { await sides[name].run(); best[name] = Infinity; }
    for (let r = 0; r < config.repeats; r++) {
      for (const name in sides) {
        const t0 = performance.now();
        for (let k = 0; k < config.inner; k++) await sides[name].run();
        best[name] = Math.min(best[name], (performance.now() - t0) / config.inner);
      }
    }
    tx.dispose();
    out.shapes[tag] = {ms: best, max_abs_difference: worst, elements: rows * n};
    if (config.webgpu) out.shapes[tag].webgpu = await gpuBench(config, rows, n, x, mine);
  }
  return out;
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["1024x1024", "256x4096"])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--inner", type=int, default=5, help="calls per timed sample (the page's clock has 0.1 ms "
                        "steps: it is not cross-origin isolated)")
    parser.add_argument("--webgpu", action="store_true", help="also atlas-web's WGSL shader against TF.js webgpu "
                        "(SwiftShader: slow)")
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in shape.split("x")) for shape in args.shapes]
    files, scratch = {"index.html": PAGE, "bench.js": BENCH_JS}, {}
    for rows, n in shapes:
        tag = f"{rows}x{n}"
        files[f"softmax_{tag}.onnx"] = softmax_model(rows, n)
        files[f"atlas_{tag}.wasm"], scratch[tag] = atlas_module(rows, n)
    config = {"shapes": shapes, "repeats": args.repeats, "inner": args.inner, "scratch": scratch,
              "webgpu": args.webgpu, "gpuRepeats": min(args.repeats, 5),
              "shaders": {f"{rows}x{n}": atlas_shader(rows, n) for rows, n in shapes} if args.webgpu else {}}
    result = run_page(files, config, 600_000)
    print(f"f32 row softmax in one headless Chromium page, one thread, best of {args.repeats} samples of "
          f"{args.inner} calls, interleaved")
    print(f"engine: {result['engine']}")
    for tag, row in result["shapes"].items():
        atlas = row["ms"]["atlas-web wasm (coop_softmax)"]
        print(f"  {tag}: atlas-web vs TF.js, largest difference {row['max_abs_difference']:.2e}")
        for name, ms in row["ms"].items():
            print(f"    {name:<32} {ms:8.3f} ms  {row['elements'] / (ms / 1e3) / 1e6:8.1f} M elements/s  "
                  f"peer time / atlas-web's: {ms / atlas:5.2f}")
        gpu = row.get("webgpu")
        if gpu:
            atlas_gpu = gpu["ms"]["atlas-web webgpu (softmax shader)"]
            print(f"    webgpu (SwiftShader), output read back, best of {min(args.repeats, 5)}; atlas-web's webgpu vs "
                  f"wasm output, largest difference {gpu['max_abs_difference_to_wasm']:.2e}")
            for name, ms in gpu["ms"].items():
                print(f"    {name:<32} {ms:8.1f} ms  peer time / atlas-web's: {ms / atlas_gpu:5.2f}")
    if os.environ.get("PEERS_JSON"):
        Path(os.environ["PEERS_JSON"]).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
