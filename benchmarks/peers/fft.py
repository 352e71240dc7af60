"""Complex f32 FFT on WebGPU in one headless Chromium page: atlas-web's WGSL FFT kernel against TensorFlow.js's
``webgpu`` backend (issue 11: each webgpu kernel at least TF.js webgpu's speed in the same page), on Chromium's
SwiftShader adapter.

TF.js 4.22.0's webgpu backend (the package pinned by ``benchmarks/peers/run.py``): ``tf.spectral.fft`` of a
complex64 tensor (``tf.complex`` of the real and imaginary parts), awaited with ``data()``. Its wasm backend has no
FFT kernel, so there is no wasm peer here (benchmarks/conv_fft.py compares the wasm kernel with NumPy natively).
atlas-web's side is the WGSL of ``webgpu_backend.wgsl.kernels.fft`` for ``FFT(output, input, n)``: the bit
reversal and one shader per stage, run by the page in one compute pass over buffers of their own (no step
guard), each launch awaited (``onSubmittedWorkDone``); the first launch (pipeline creation included) is printed
apart. Best of ``--repeats``; the page checks atlas-web's output against TF.js's. Compare webgpu with webgpu only.

Run ``PYTHONPATH=. python3 benchmarks/peers/fft.py [--log2n 10 12] [--repeats 3]``. Not a test.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from atlas_web.isa import FFT, Address  # noqa: E402
from webgpu_backend.wgsl.emitter import ShaderFeatures  # noqa: E402
from webgpu_backend.wgsl.kernels.fft import WORKGROUP, FftKernel, fft_source  # noqa: E402
from webgpu_backend.wgsl.runtime_layout import MAX_STEPS, REACHED, pack_launch  # noqa: E402

from benchmarks.peers.conv import GPU_SIDE_JS  # noqa: E402
from benchmarks.peers.run import run_page  # noqa: E402


def atlas_shaders(n: int) -> list[dict]:
    """atlas-web's FFT shaders for one forward transform of n complex values (output and input in buffers of
    their own, no step guard), in order, with their workgroup counts and bindings."""
    a = Address.BufferOffset(2)
    out = []
    for spec in FftKernel().specs(FFT(output=a, input=a, n=n, inverse=False)):
        spec = dataclasses.replace(spec, guarded=False)
        total = n if spec.h == 0 else n // 2
        out.append({"code": fft_source(spec, ShaderFeatures()), "launch": list(pack_launch(resume=1)),
                    "rt_bytes": 4 * (REACHED + MAX_STEPS), "groups": [-(-total // WORKGROUP), 1, 1],
                    # 'auto' layouts hold only what the shader uses: rt only in the last (it marks the step reached)
                    "bindings": [b for b in sorted(spec.layout()) if b != 1 or spec.last]})
    return out


PAGE = """<!doctype html><meta charset="utf-8"><title>FFT peers</title>
<script src="node_modules/@tensorflow/tfjs-core/dist/tf-core.min.js"></script>
<script src="node_modules/@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js"></script>
<script src="bench.js"></script>
"""

BENCH_JS = GPU_SIDE_JS + r"""
async function runBench(config) {
  const out = {sizes: {}, engine: navigator.userAgent};
  await tf.setBackend('webgpu'); await tf.ready();
  for (const log2n of config.log2n) {
    const n = 1 << log2n;
    const z = new Float32Array(2 * n).map(() => Math.random() - 0.5);   // interleaved (re, im)
    const re = new Float32Array(n), im = new Float32Array(n);
    for (let j = 0; j < n; j++) { re[j] = z[2 * j]; im[j] = z[2 * j + 1]; }
    const best = {};
    const tz = tf.complex(tf.tensor1d(re), tf.tensor1d(im));
    const tfRun = async () => { const y = tf.spectral.fft(tz); const d = await y.data(); y.dispose(); return d; };
    const theirs = await tfRun();
    best['TF.js webgpu (tf.spectral.fft)'] = Infinity;
    for (let r = 0; r < config.repeats; r++) {
      const t0 = performance.now(); await tfRun();
      best['TF.js webgpu (tf.spectral.fft)'] = Math.min(best['TF.js webgpu (tf.spectral.fft)'], performance.now() - t0);
    }
    const side = await atlasGpuSide(config.shaders[log2n], {4: z}, 8 * n);
    best['atlas-web webgpu (fft.py)'] = Infinity;
    for (let r = 0; r < config.repeats; r++) {
      const t0 = performance.now(); await side.run();
      best['atlas-web webgpu (fft.py)'] = Math.min(best['atlas-web webgpu (fft.py)'], performance.now() - t0);
    }
    const mine = await side.result();
    let worst = 0, norm = 0;
    for (let i = 0; i < 2 * n; i++) { worst = Math.max(worst, Math.abs(mine[i] - theirs[i])); norm += theirs[i] ** 2; }
    out.sizes[log2n] = {ms: best, first_ms: side.firstMs, max_abs_difference: worst, rms: Math.sqrt(norm / (2 * n))};
  }
  return out;
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log2n", type=int, nargs="+", default=[10, 12])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = {"log2n": args.log2n, "repeats": args.repeats,
              "shaders": {log2n: atlas_shaders(1 << log2n) for log2n in args.log2n}}
    result = run_page({"index.html": PAGE, "bench.js": BENCH_JS}, config, 1_800_000)
    print(f"complex f32 FFT, forward, webgpu on SwiftShader in one headless Chromium page, each launch awaited, "
          f"best of {args.repeats}")
    print(f"engine: {result['engine']}")
    for log2n, row in result["sizes"].items():
        atlas = row["ms"]["atlas-web webgpu (fft.py)"]
        print(f"  n = 2^{log2n}: atlas-web vs TF.js largest difference {row['max_abs_difference']:.2e} (values' rms "
              f"{row['rms']:.2f}); atlas-web's first launch {row['first_ms']:.0f} ms")
        for name, ms in row["ms"].items():
            print(f"    {name:<34} {ms:9.2f} ms  peer time / atlas-web's: {ms / atlas:6.2f}")
    if os.environ.get("PEERS_JSON"):
        Path(os.environ["PEERS_JSON"]).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
