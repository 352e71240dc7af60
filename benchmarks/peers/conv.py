"""f32 Conv2D in one headless Chromium page: atlas-web's wasm Conv2D kernel against TensorFlow.js and ONNX Runtime
Web (issue 11: 1x64x56x56, 64 filters 3x3, padding 1; atlas-web at least TF.js wasm's speed).

The peers and the page are those of ``benchmarks/peers/run.py`` (the npm packages pinned there, the same Chromium
flags, one thread: the page is not cross-origin isolated): TF.js 4.22.0's ``wasm`` backend (XNNPACK;
``tf.conv2d`` of an NHWC input and an HWIO filter, its layout: the page transposes the same values for it; its
kernels run synchronously, so the op alone is timed and its output disposed unread) and ``onnxruntime-web``'s
wasm execution provider on a one-node Conv model written here (NCHW, opset 13, the weights a graph input;
``session.run`` returns the output, so its time includes handing it back).

atlas-web's side is the module its wasm backend generates for ``Conv2D`` (NCHW): the driver of
``wasm_backend.lowering.coop_conv`` (im2col chunks into the GEMM kernel), exported and instantiated by the page on
a WebAssembly.Memory of its own; the launch through Pyodide adds the host's per-launch overhead
(benchmarks/browser_vs_native.py) and is not part of these timings.

The sides are timed interleaved, best of ``--repeats`` samples of ``--inner`` calls after one warm-up each; the
page checks that atlas-web's output agrees with TF.js's. Printed: ms, GFLOP/s and each peer's time over atlas-web's
(above 1: atlas-web is faster).

With ``--webgpu``, also TF.js's ``webgpu`` backend (``tf.conv2d``, NHWC) and atlas-web's WGSL Conv2D kernel
(``webgpu_backend.wgsl.kernels.conv2d``: the implicit GEMM; its shader run by the page with the backend's bindings,
no step guard) on Chromium's SwiftShader adapter, each launch awaited (``onSubmittedWorkDone`` / ``data()``), best
of 3; its first launch (pipeline creation included) is printed apart. Compare webgpu with webgpu only.

Run ``PYTHONPATH=. python3 benchmarks/peers/conv.py [--shape 1 64 56 56 64 3] [--repeats 10] [--webgpu]``. Not a
test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from atlas_web.isa import Address, Conv2D  # noqa: E402
from wasm_backend.lowering.coop_conv import build_conv_driver, conv_scratch_bytes  # noqa: E402
from wasm_backend.lowering.module_context import ModuleContext  # noqa: E402
from webgpu_backend.wgsl.emitter import ShaderFeatures  # noqa: E402
from webgpu_backend.wgsl.kernels.conv2d import conv_source, conv_spec  # noqa: E402
from webgpu_backend.wgsl.runtime_layout import MAX_STEPS, REACHED, pack_launch  # noqa: E402

from benchmarks.peers.onnx_bytes import field  # noqa: E402
from benchmarks.peers.run import peers_page, run_page  # noqa: E402


def conv_model(b: int, c: int, h: int, w: int, f: int, k: int) -> bytes:
    """An ONNX model (IR 8, opset 13) of one Conv node: Y = conv(X[b, c, h, w], W[f, c, k, k]), pads k // 2,
    float32."""
    def value(name: str, dims: tuple) -> bytes:
        shape = b"".join(field(1, field(1, d)) for d in dims)
        return field(1, name) + field(2, field(1, field(1, 1) + field(2, shape)))

    def ints(name: str, values: tuple) -> bytes:   # AttributeProto: name, ints, type INTS (7)
        return field(5, field(1, name) + b"".join(field(8, v) for v in values) + field(20, 7))

    pad, out = k // 2, (h, w)
    node = (field(1, "X") + field(1, "W") + field(2, "Y") + field(4, "Conv") + ints("kernel_shape", (k, k))
            + ints("pads", (pad,) * 4) + ints("strides", (1, 1)))
    graph = (field(1, node) + field(2, "conv") + field(11, value("X", (b, c, h, w)))
             + field(11, value("W", (f, c, k, k))) + field(12, value("Y", (b, f, *out))))
    return field(1, 8) + field(2, "atlas-web benchmarks/peers") + field(7, graph) + field(8, field(2, 13))


def _instr(b: int, c: int, h: int, w: int, f: int, k: int):
    a = Address.BufferOffset(2)
    return Conv2D(output=a, input=a, kernel=a, batch=b, in_channels=c, out_channels=f, height=h, width=w,
                  kernel_h=k, kernel_w=k, stride_h=1, stride_w=1, padding_h=k // 2, padding_w=k // 2)


def atlas_webgpu(*shape: int) -> dict:
    """atlas-web's WGSL Conv2D shader (output, input, kernel in buffers of their own at offset 0, no step guard),
    its launch record and workgroup counts, for the page."""
    spec = conv_spec(_instr(*shape), guarded=False)
    b, c, h, w, f, k = shape
    return {"code": conv_source(spec, ShaderFeatures()), "launch": list(pack_launch(resume=1)),
            "rt_bytes": 4 * (REACHED + MAX_STEPS), "groups": [-(-(h * w) // 64), -(-f // 64), b],
            "bindings": sorted(spec.layout())}


def atlas_module(*shape: int) -> tuple[bytes, int]:
    """(module bytes, scratch bytes) of atlas-web's Conv2D driver, exported as ``conv`` with the parameters
    (output, input, kernel, bias, scratch, first item, end item, first channel, end channel)."""
    instr = _instr(*shape)
    m = ModuleContext("atlas_conv")
    build_conv_driver(m, "conv", instr, export=True)
    return m.to_bytes(), conv_scratch_bytes(instr)


#: atlas-web's side on WebGPU in the page: its shaders run in order over buffers of their own (also peers/fft.py)
GPU_SIDE_JS = r"""
async function atlasGpuSide(shaders, arrays, outBytes) {
  // shaders: [{code, groups, bindings}] run in order in one pass; arrays: binding -> Float32Array; 3: the output
  const adapter = await navigator.gpu.requestAdapter();
  const device = await adapter.requestDevice();
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
  const buffer = (bytes) => device.createBuffer({size: Math.max(16, Math.ceil(bytes / 16) * 16), usage});
  const buffers = {0: buffer(256), 1: buffer(shaders[0].rt_bytes), 3: buffer(outBytes)};
  device.queue.writeBuffer(buffers[0], 0, new Uint8Array(shaders[0].launch));
  for (const [binding, data] of Object.entries(arrays)) {
    buffers[binding] = buffer(data.byteLength); device.queue.writeBuffer(buffers[binding], 0, data);
  }
  const t0 = performance.now();
  const steps = [];
  for (const shader of shaders) {
    const module = device.createShaderModule({code: shader.code});
    const pipeline = await device.createComputePipelineAsync({layout: 'auto', compute: {module, entryPoint: 'main'}});
    const entries = shader.bindings.map((b) => ({binding: b, resource: {buffer: buffers[b]}}));
    steps.push({pipeline, group: device.createBindGroup({layout: pipeline.getBindGroupLayout(0), entries}),
                groups: shader.groups});
  }
  const run = async () => {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    for (const step of steps) {
      pass.setPipeline(step.pipeline); pass.setBindGroup(0, step.group); pass.dispatchWorkgroups(...step.groups);
    }
    pass.end();
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  await run();
  const firstMs = performance.now() - t0;
  const result = async () => {
    const read = device.createBuffer({size: outBytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(buffers[3], 0, read, 0, outBytes);
    device.queue.submit([encoder.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    return new Float32Array(read.getMappedRange().slice(0));
  };
  return {run, result, firstMs};
}
"""

PAGE = peers_page("Conv2D peers")

BENCH_JS = GPU_SIDE_JS + r"""
async function runBench(config) {
  tf.wasm.setWasmPaths('/node_modules/@tensorflow/tfjs-backend-wasm/dist/');
  await tf.setBackend('wasm'); await tf.ready();
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
  const [b, c, h, w, f, k] = config.shape;
  const x = new Float32Array(b * c * h * w).map(() => Math.random() - 0.5);       // NCHW
  const wt = new Float32Array(f * c * k * k).map(() => Math.random() - 0.5);      // OIHW
  const xNHWC = new Float32Array(x.length), wHWIO = new Float32Array(wt.length);
  for (let n = 0; n < b; n++) for (let ch = 0; ch < c; ch++) for (let i = 0; i < h * w; i++)
    xNHWC[(n * h * w + i) * c + ch] = x[(n * c + ch) * h * w + i];
  for (let o = 0; o < f; o++) for (let ch = 0; ch < c; ch++) for (let t = 0; t < k * k; t++)
    wHWIO[(t * c + ch) * f + o] = wt[(o * c + ch) * k * k + t];
  // atlas-web: output, input, kernel, scratch in a memory of its own
  const bytes = await (await fetch('atlas_conv.wasm')).arrayBuffer();
  const outN = b * f * h * w, at = [4096, 4096 + outN * 4 + 64], kAt = at[1] + x.length * 4 + 64;
  const s = Math.ceil((kAt + wt.length * 4 + 64) / 16) * 16;
  const memory = new WebAssembly.Memory({initial: Math.ceil((s + config.scratch) / 65536) + 1});
  const {instance} = await WebAssembly.instantiate(bytes, {env: {memory}});
  new Float32Array(memory.buffer).set(x, at[1] / 4);
  new Float32Array(memory.buffer).set(wt, kAt / 4);
  const atlas = () => instance.exports.conv(at[0], at[1], kAt, 0, s, 0, b, 0, f);
  const tx = tf.tensor4d(xNHWC, [b, h, w, c]), tw = tf.tensor4d(wHWIO, [k, k, c, f]);
  const session = await ort.InferenceSession.create(new Uint8Array(await (await fetch('conv.onnx')).arrayBuffer()),
                                                    {executionProviders: ['wasm']});
  const feeds = {X: new ort.Tensor('float32', x, [b, c, h, w]), W: new ort.Tensor('float32', wt, [f, c, k, k])};
  const sides = {
    'atlas-web wasm (coop_conv)': async () => atlas(),
    'TF.js wasm (tf.conv2d, NHWC)': async () => { tf.conv2d(tx, tw, 1, 'same').dispose(); },
    'ORT web wasm (Conv node)': async () => { await session.run(feeds); },
  };
  atlas();
  const mine = new Float32Array(memory.buffer, at[0], outN).slice();
  const theirsT = tf.conv2d(tx, tw, 1, 'same'), theirs = await theirsT.data();
  theirsT.dispose();
  let worst = 0;
  for (let n = 0; n < b; n++) for (let o = 0; o < f; o++) for (let i = 0; i < h * w; i++)
    worst = Math.max(worst, Math.abs(mine[(n * f + o) * h * w + i] - theirs[(n * h * w + i) * f + o]));
  const best = {};
  for (const name in sides) { await sides[name](); best[name] = Infinity; }
  for (let r = 0; r < config.repeats; r++) {
    for (const name in sides) {
      const t0 = performance.now();
      for (let q = 0; q < config.inner; q++) await sides[name]();
      best[name] = Math.min(best[name], (performance.now() - t0) / config.inner);
    }
  }
  const gpu = {};
  if (config.webgpu) {
    try {
      await tf.setBackend('webgpu'); await tf.ready();
      const gx = tf.tensor4d(xNHWC, [b, h, w, c]), gw = tf.tensor4d(wHWIO, [k, k, c, f]);
      const tfRun = async () => { const y = tf.conv2d(gx, gw, 1, 'same'); await y.data(); y.dispose(); };
      await tfRun(); gpu['TF.js webgpu (tf.conv2d, NHWC)'] = Infinity;
      for (let r = 0; r < 3; r++) {
        const t0 = performance.now(); await tfRun();
        gpu['TF.js webgpu (tf.conv2d, NHWC)'] = Math.min(gpu['TF.js webgpu (tf.conv2d, NHWC)'], performance.now() - t0);
      }
      gx.dispose(); gw.dispose();
    } catch (e) { gpu['TF.js webgpu: ' + e.message] = NaN; }
    await tf.setBackend('wasm');
    try {
      const side = await atlasGpuSide([config.shader], {4: x, 5: wt}, outN * 4);
      const label = 'atlas-web webgpu (conv2d.py)';
      gpu[label] = Infinity;
      for (let r = 0; r < 3; r++) {
        const t0 = performance.now(); await side.run(); gpu[label] = Math.min(gpu[label], performance.now() - t0);
      }
      const got = await side.result();
      let gworst = 0;
      for (let i = 0; i < outN; i++) gworst = Math.max(gworst, Math.abs(got[i] - mine[i]));
      gpu['atlas-web webgpu first launch'] = side.firstMs;
      gpu['atlas-web webgpu vs wasm largest difference'] = gworst;
    } catch (e) { gpu['atlas-web webgpu: ' + e.message] = NaN; }
  }
  tx.dispose(); tw.dispose();
  return {ms: best, webgpu: gpu, max_abs_difference: worst, engine: navigator.userAgent};
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", type=int, nargs=6, default=[1, 64, 56, 56, 64, 3], metavar=("B", "C", "H", "W", "F", "K"))
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--inner", type=int, default=2)
    parser.add_argument("--webgpu", action="store_true", help="also TF.js webgpu and atlas-web's WGSL kernel "
                        "(SwiftShader: slow)")
    args = parser.parse_args()
    module, scratch = atlas_module(*args.shape)
    files = {"index.html": PAGE, "bench.js": BENCH_JS, "conv.onnx": conv_model(*args.shape), "atlas_conv.wasm": module}
    config = {"shape": args.shape, "repeats": args.repeats, "inner": args.inner, "scratch": scratch,
              "webgpu": args.webgpu, "shader": atlas_webgpu(*args.shape)}
    result = run_page(files, config, 1_800_000)
    b, c, h, w, f, k = args.shape
    flop = 2.0 * b * f * h * w * c * k * k
    print(f"f32 Conv2D {b}x{c}x{h}x{w}, {f} filters {k}x{k}, padding {k // 2}, in one headless Chromium page, one "
          f"thread, best of {args.repeats} samples of {args.inner} calls, interleaved")
    print(f"engine: {result['engine']}; atlas-web vs TF.js largest difference {result['max_abs_difference']:.2e}")
    atlas = result["ms"]["atlas-web wasm (coop_conv)"]
    for name, ms in result["ms"].items():
        print(f"  {name:<32} {ms:8.2f} ms  {flop / (ms / 1e3) / 1e9:6.2f} GFLOP/s  peer time / atlas-web's: "
              f"{ms / atlas:5.2f}")
    if result["webgpu"]:
        print("webgpu on SwiftShader, each launch awaited, best of 3:")
        for name, value in result["webgpu"].items():
            print(f"  {name:<44} {value:10.3g}")
    if os.environ.get("PEERS_JSON"):
        Path(os.environ["PEERS_JSON"]).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
