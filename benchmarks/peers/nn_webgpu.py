"""f32 LayerNorm, RMSNorm, RoPE, Attention and FlashAttention on WebGPU in one headless Chromium page: the WGSL
shaders atlas-web's webgpu backend generates for the instructions against TensorFlow.js 4.22's ``webgpu`` backend
running the same computation composed of its ops (issue 11: each kernel at least TF.js webgpu's speed).

Both sides run on the page's WebGPU adapter, Chromium's SwiftShader (a CPU emulation: compare the two only with
each other). atlas-web's side is the instruction's kernel plan (``webgpu_backend.wgsl.kernels``: the spec, the
bindings and the workgroups the launcher would dispatch, each array in a buffer of its own, the ``launch`` record
packed here), dispatched by the page on a device of its own with an explicit bind group layout; TF.js's side is
the op composition below, its result awaited with ``data()`` and disposed. Both sides read their whole output back
each run. TF.js compositions (the usual way to write each in TF.js; it has no fused op for them):

- LayerNorm: ``tf.moments`` over the last axis, ``(x - mean) * rsqrt(variance + eps) * gamma + beta``;
- RMSNorm: ``x * rsqrt(mean(x^2) + eps) * weight``;
- RoPE (half-split): the angles ``s * freqs`` as an outer product, their ``cos`` and ``sin``, the two halves
  rotated and concatenated (atlas-web's kernel also computes its cos/sin per run);
- Attention: ``matMul(q, k^T) * (1/sqrt(d))``, ``softmax``, ``matMul(p, v)`` over batch x heads; FlashAttention
  is timed against the same composition (it has Attention's result).

Every side gets the same inputs (standard normal; RoPE's freqs ``10000^(-2p/d)``); the sides are timed
interleaved, best of ``--repeats`` after one warm-up; each atlas-web output is compared with TF.js's (largest
absolute difference printed). Printed: ms per run and TF.js's time over atlas-web's (above 1: atlas-web is faster).

Run ``PYTHONPATH=. python3 benchmarks/peers/nn_webgpu.py [--rows 256] [--n 1024] [--seq 256] [--repeats 5]``;
``npm ci`` as ``benchmarks/peers/run.py`` says. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from atlas_web.isa import Address, Attention, FlashAttention, LayerNorm, RMSNorm, RoPE  # noqa: E402
from atlas_web.isa.extents import array_operands  # noqa: E402
from webgpu_backend.host_steps import binding_roles  # noqa: E402
from webgpu_backend.wgsl.emitter import ShaderFeatures  # noqa: E402
from webgpu_backend.wgsl.kernels import DeviceLimits, kernel_for  # noqa: E402
from webgpu_backend.wgsl.runtime_layout import MAX_STEPS, REACHED, pack_launch  # noqa: E402

from benchmarks.peers.run import peers_page, run_page  # noqa: E402



def kernel_shader(instr) -> dict:
    """What the page needs to dispatch ``instr``'s webgpu kernel with each array in a buffer of its own: the WGSL,
    the packed ``launch`` record, the runtime buffer's bytes, the workgroups, the bind group layout (binding ->
    buffer binding type) and which array each array binding takes (binding -> operand name)."""
    arrays = array_operands(instr)
    roles = binding_roles(arrays)
    kernel = kernel_for(instr.INFO.name)
    if kernel.scratch(instr):
        raise ValueError(f"{instr.INFO.name}'s kernel needs scratch buffers: not handled here")
    plan = kernel.plan(instr, {role: (object(), 0) for role in roles}, DeviceLimits(65535, 256))
    (dispatch,) = plan.dispatches
    names = {role: array.name for array, role in zip(arrays, roles)}
    return {"code": dispatch.shader.source(ShaderFeatures()),
            "launch": list(pack_launch(step=0, resume=1, **plan.fields)),
            "rt_bytes": 4 * (REACHED + MAX_STEPS), "groups": list(dispatch.workgroups),
            "layout": {str(b): kind for b, kind in dispatch.shader.layout().items()},
            "arrays": {str(b): names[role] for b, role in dispatch.bindings.items()}}


def cases(rows: int, n: int, seq: int, heads: int, head_dim: int) -> dict:
    """name -> (instruction, operand sizes in elements, output name, TF.js composition name, its parameters)."""
    out = Address.BufferOffset(1)
    def buf(k: int) -> Address:
        return Address.BufferOffset(k)
    x = rows * n
    qkv = heads * seq * head_dim
    attention = dict(batch=1, heads=heads, seq_len=seq, head_dim=head_dim)
    return {
        f"LayerNorm {rows}x{n}": (LayerNorm(out, buf(2), buf(3), buf(4), n=n, eps=1e-5, rows=rows),
                                  {"output": x, "input": x, "gamma": n, "beta": n}, "layerNorm", [rows, n]),
        f"RMSNorm {rows}x{n}": (RMSNorm(out, buf(2), buf(3), n=n, eps=1e-5, rows=rows),
                                {"output": x, "input": x, "weight": n}, "rmsNorm", [rows, n]),
        f"RoPE 1x{seq}x{heads}x{head_dim}": (RoPE(out, buf(2), buf(3), batch=1, seq_len=seq, heads=heads,
                                                  head_dim=head_dim),
                                             {"output": qkv, "input": qkv, "freqs": head_dim // 2}, "rope",
                                             [seq, heads, head_dim]),
        f"Attention 1x{heads}x{seq}x{head_dim}": (Attention(out, buf(2), buf(3), buf(4), **attention),
                                                  {"output": qkv, "query": qkv, "key": qkv, "value": qkv},
                                                  "attention", [heads, seq, head_dim]),
        f"FlashAttention 1x{heads}x{seq}x{head_dim} block 64": (
            FlashAttention(out, buf(2), buf(3), buf(4), block_size=64, **attention),
            {"output": qkv, "query": qkv, "key": qkv, "value": qkv}, "attention", [heads, seq, head_dim]),
    }


BENCH_JS = r"""
async function kernelSide(device, shader, data, outName) {
  // data: operand name -> Float32Array (the output's initial contents included)
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
  const buffer = (bytes) => device.createBuffer({size: Math.max(16, Math.ceil(bytes / 16) * 16), usage});
  const buffers = {0: buffer(256), 1: buffer(shader.rt_bytes)};
  device.queue.writeBuffer(buffers[0], 0, new Uint8Array(shader.launch));
  for (const [binding, name] of Object.entries(shader.arrays)) {
    buffers[binding] = buffer(data[name].byteLength); device.queue.writeBuffer(buffers[binding], 0, data[name]);
  }
  const entries = Object.entries(shader.layout).map(([b, type]) =>
    ({binding: Number(b), visibility: GPUShaderStage.COMPUTE, buffer: {type}}));
  const layout = device.createBindGroupLayout({entries});
  const module = device.createShaderModule({code: shader.code});
  const pipeline = await device.createComputePipelineAsync({
    layout: device.createPipelineLayout({bindGroupLayouts: [layout]}), compute: {module, entryPoint: 'main'}});
  const group = device.createBindGroup({layout, entries: Object.keys(shader.layout).map(
    (b) => ({binding: Number(b), resource: {buffer: buffers[b]}}))});
  const outBinding = Object.keys(shader.arrays).find((b) => shader.arrays[b] === outName);
  const outBytes = data[outName].byteLength;
  const result = async () => {
    const read = device.createBuffer({size: outBytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(buffers[outBinding], 0, read, 0, outBytes);
    device.queue.submit([encoder.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(read.getMappedRange().slice(0));
    read.destroy();
    return out;
  };
  const run = async () => {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline); pass.setBindGroup(0, group); pass.dispatchWorkgroups(...shader.groups);
    pass.end();
    device.queue.submit([encoder.finish()]);
    return result();
  };
  return {run};
}
function normal(count) {
  const x = new Float32Array(count);
  for (let i = 0; i < count; i += 2) {
    const r = Math.sqrt(-2 * Math.log(1 - Math.random())), t = 2 * Math.PI * Math.random();
    x[i] = r * Math.cos(t); if (i + 1 < count) x[i + 1] = r * Math.sin(t);
  }
  return x;
}
// the TF.js compositions: (tensors of the operands, shape parameters) -> a function returning the output tensor
const TFJS = {   // tf-core's bundle has no chained ops: the functional forms
  layerNorm: (t, [rows, n]) => {
    const x = tf.reshape(t.input, [rows, n]);
    return () => tf.tidy(() => {
      const {mean, variance} = tf.moments(x, -1, true);
      return tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, 1e-5))), t.gamma), t.beta);
    });
  },
  rmsNorm: (t, [rows, n]) => {
    const x = tf.reshape(t.input, [rows, n]);
    return () => tf.tidy(() => tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), 1e-5))), t.weight));
  },
  rope: (t, [seq, heads, d]) => {
    const x = tf.reshape(t.input, [seq, heads, d]), half = d / 2;
    const s = tf.reshape(tf.range(0, seq), [seq, 1, 1]), f = tf.reshape(t.freqs, [1, 1, half]);
    return () => tf.tidy(() => {
      const angle = tf.mul(s, f), c = tf.cos(angle), sn = tf.sin(angle);
      const x1 = tf.slice(x, [0, 0, 0], [seq, heads, half]), x2 = tf.slice(x, [0, 0, half], [seq, heads, half]);
      return tf.concat([tf.sub(tf.mul(x1, c), tf.mul(x2, sn)), tf.add(tf.mul(x1, sn), tf.mul(x2, c))], -1);
    });
  },
  attention: (t, [heads, seq, d]) => {
    const q = tf.reshape(t.query, [heads, seq, d]), k = tf.reshape(t.key, [heads, seq, d]);
    const v = tf.reshape(t.value, [heads, seq, d]);
    return () => tf.tidy(() => tf.matMul(tf.softmax(tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(d))), v));
  },
};
async function runBench(config) {
  await tf.setBackend('webgpu'); await tf.ready();
  const adapter = await navigator.gpu.requestAdapter();
  const device = await adapter.requestDevice();
  const out = {cases: {}, engine: navigator.userAgent};
  for (const [name, c] of Object.entries(config.cases)) {
    const data = {}, tensors = {};
    for (const [operand, count] of Object.entries(c.sizes)) {
      data[operand] = operand === 'output' ? new Float32Array(count) : normal(count);
    }
    if (data.freqs) data.freqs = data.freqs.map((_, p) => Math.pow(10000, -2 * p / (2 * data.freqs.length)));
    for (const operand in data) if (operand !== 'output') tensors[operand] = tf.tensor1d(data[operand]);
    const atlas = await kernelSide(device, c.shader, data, 'output');
    const composed = TFJS[c.tfjs](tensors, c.params);
    const sides = {
      atlas: atlas.run,
      tfjs: async () => { const y = composed(); const values = await y.data(); y.dispose(); return values; },
    };
    const mine = await sides.atlas(), theirs = await sides.tfjs();
    let worst = 0;
    for (let i = 0; i < mine.length; i++) worst = Math.max(worst, Math.abs(mine[i] - theirs[i]));
    const best = {atlas: Infinity, tfjs: Infinity};
    for (let r = 0; r < config.repeats; r++) {
      for (const side in sides) {
        const t0 = performance.now(); await sides[side](); best[side] = Math.min(best[side], performance.now() - t0);
      }
    }
    for (const operand in tensors) tensors[operand].dispose();
    out.cases[name] = {ms: best, max_abs_difference: worst};
  }
  return out;
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=256, help="LayerNorm/RMSNorm rows")
    parser.add_argument("--n", type=int, default=1024, help="LayerNorm/RMSNorm row length")
    parser.add_argument("--seq", type=int, default=256, help="RoPE/Attention sequence length (8 heads of 64)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=None, help="case name prefixes to run (default: all)")
    args = parser.parse_args()
    config = {"repeats": args.repeats, "cases": {}}
    for name, (instr, sizes, tfjs, params) in cases(args.rows, args.n, args.seq, 8, 64).items():
        if args.only and not any(name.startswith(prefix) for prefix in args.only):
            continue
        config["cases"][name] = {"shader": kernel_shader(instr), "sizes": sizes, "tfjs": tfjs, "params": params}
    result = run_page({"index.html": peers_page("NN kernels on WebGPU"), "bench.js": BENCH_JS}, config, 1_200_000)
    print(f"f32 NN kernels on WebGPU (SwiftShader) in one headless Chromium page, output read back, best of "
          f"{args.repeats}, interleaved")
    print(f"engine: {result['engine']}")
    for name, row in result["cases"].items():
        mine, theirs = row["ms"]["atlas"], row["ms"]["tfjs"]
        print(f"  {name:<40} atlas-web {mine:8.1f} ms  TF.js {theirs:8.1f} ms  TF.js time / atlas-web's "
              f"{theirs / mine:5.2f}  largest difference {row['max_abs_difference']:.2e}")
    if os.environ.get("PEERS_JSON"):
        Path(os.environ["PEERS_JSON"]).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
