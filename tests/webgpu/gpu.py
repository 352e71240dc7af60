"""What the WebGPU tests share: the module-level skip when no adapter exists, and WGSL snippets."""

from __future__ import annotations

import pytest


def require_adapter() -> None:
    """Skip the calling test module (call it at import) when wgpu-py finds no adapter at all.

    Any other failure (a device that cannot be created, a broken driver) is left
    to fail the tests.
    """
    try:
        from webgpu_backend.drivers.wgpu_native import available_adapters
    except ImportError as exc:
        pytest.skip(f"wgpu-py is not installed, so no WebGPU adapter exists: {exc}", allow_module_level=True)
    if not available_adapters():
        pytest.skip("wgpu-py finds no GPU adapter here (install mesa-vulkan-drivers for lavapipe)",
                    allow_module_level=True)


#: out = a + b over f32 arrays, one value per invocation, guarded by the output length
VECTOR_ADD_WGSL = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&out)) {
        out[i] = a[i] + b[i];
    }
}
"""

VECTOR_ADD_LAYOUT = {0: "read-only-storage", 1: "read-only-storage", 2: "storage"}
