"""WebGPU in headless Chromium: navigator.gpu yields a (SwiftShader) adapter and runs a compute shader.

The adapter's description is written to artifacts/webgpu.json (the report of what this machine offers).
"""

from __future__ import annotations

import json

from .conftest import CHROMIUM_ARGS, evaluate_within

# doubles 64 f32 values in a storage buffer and reads them back through a mappable copy
COMPUTE_ROUND_TRIP = """async () => {
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return { adapter: null };
  const device = await adapter.requestDevice();
  const module = device.createShaderModule({ code: `
    @group(0) @binding(0) var<storage, read_write> data: array<f32>;
    @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
      data[id.x] = data[id.x] * 2.0;
    }` });
  const info = await module.getCompilationInfo();
  const pipeline = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
  const input = new Float32Array(64).map((_, i) => i + 0.5);
  const storage = device.createBuffer({ size: input.byteLength,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(storage, 0, input);
  const readback = device.createBuffer({ size: input.byteLength,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const bindGroup = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: storage } }] });
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline); pass.setBindGroup(0, bindGroup); pass.dispatchWorkgroups(1); pass.end();
  encoder.copyBufferToBuffer(storage, 0, readback, 0, input.byteLength);
  device.queue.submit([encoder.finish()]);
  await readback.mapAsync(GPUMapMode.READ);
  const output = Array.from(new Float32Array(readback.getMappedRange()));
  const a = adapter.info || {};
  return {
    adapter: { vendor: a.vendor, architecture: a.architecture, device: a.device, description: a.description },
    features: [...adapter.features].sort(),
    limits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
              maxBufferSize: adapter.limits.maxBufferSize,
              maxComputeWorkgroupSizeX: adapter.limits.maxComputeWorkgroupSizeX },
    messages: info.messages.map(m => m.message),
    input: Array.from(input), output,
  };
}"""


def test_navigator_gpu_has_an_adapter_that_runs_a_compute_shader(demo_page, artifacts):
    assert demo_page.evaluate("window.isSecureContext && 'gpu' in navigator")
    report = evaluate_within(demo_page, COMPUTE_ROUND_TRIP)
    report["chromium_args"] = list(CHROMIUM_ARGS)
    (artifacts / "webgpu.json").write_text(json.dumps({k: v for k, v in report.items()
                                                       if k not in ("input", "output")}, indent=2))
    assert report["adapter"] is not None, "headless Chromium offers no WebGPU adapter with these flags"
    assert report["messages"] == []
    assert report["output"] == [value * 2 for value in report["input"]]
