"""Optional features on a real adapter: shader-f16 detection and arithmetic, compare-exchange atomics."""

from __future__ import annotations

import numpy as np
import pytest

from tests.webgpu.gpu import require_adapter

require_adapter()

from webgpu_backend import ShaderCompilationError, default_driver  # noqa: E402

# out = a * b + a in f16, each operation rounded to f16 (as NumPy's float16 does)
F16_WGSL = """
enable f16;
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f16>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&out)) {
        let product = a[i] * b[i];
        out[i] = product + a[i];
    }
}
"""

F16_LAYOUT = {0: "read-only-storage", 1: "read-only-storage", 2: "storage"}

# every invocation adds 1 to counter[0] and 0.5 to the f32 whose bits are in total[0], both by
# compare-exchange loops (the way float atomics are built where WGSL has none)
CAS_WGSL = """
@group(0) @binding(0) var<storage, read_write> counter: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> total: array<atomic<u32>>;

@compute @workgroup_size(64)
fn main() {
    var seen = atomicLoad(&counter[0]);
    loop {
        let swap = atomicCompareExchangeWeak(&counter[0], seen, seen + 1u);
        if (swap.exchanged) { break; }
        seen = swap.old_value;
    }
    var bits = atomicLoad(&total[0]);
    loop {
        let swap = atomicCompareExchangeWeak(&total[0], bits, bitcast<u32>(bitcast<f32>(bits) + 0.5));
        if (swap.exchanged) { break; }
        bits = swap.old_value;
    }
}
"""


def _f16_values():
    rng = np.random.default_rng(11)
    a = rng.standard_normal(256).astype(np.float16)
    b = rng.standard_normal(256).astype(np.float16)
    specials = np.array([2**-10, 2**-14, 60000, np.nan, np.inf, -0.0, 2**-24, 3.0], np.float16)
    a[:8], b[:8] = specials, np.array([2**-10, 0.5, 2, 1, 0, 1, 1, 2**-24], np.float16)
    return a, b


def test_f16_is_offered_exactly_when_the_adapter_has_it(driver):
    assert ("shader-f16" in driver.features) == ("shader-f16" in driver._adapter.features)


def test_f16_arithmetic_when_the_device_has_the_feature(driver):
    if "shader-f16" not in driver.features:
        with pytest.raises(ShaderCompilationError, match="f16"):
            driver.compile(F16_WGSL)
        return
    pipeline = driver.create_pipeline(driver.compile(F16_WGSL), "main", F16_LAYOUT)
    a, b = _f16_values()
    bufs = [driver.create_buffer(a.nbytes) for _ in range(3)]
    driver.write_buffer(bufs[0], 0, a)
    driver.write_buffer(bufs[1], 0, b)
    driver.dispatch(pipeline, dict(enumerate(bufs)), a.size // 64)
    got = np.frombuffer(driver.read_buffer(bufs[2]), np.float16)
    with np.errstate(all="ignore"):
        expected = a * b + a
    np.testing.assert_array_equal(got, expected)  # NaN == NaN here; subnormals kept, not flushed


def test_a_device_without_f16_refuses_f16_shaders():
    bare = default_driver(optional_features=())
    try:
        assert "shader-f16" not in bare.features
        with pytest.raises(ShaderCompilationError) as caught:
            bare.compile(F16_WGSL)
        assert "f16" in caught.value.compiler_message.lower()
    finally:
        bare.close()


def test_compare_exchange_weak_on_storage_buffers(driver):
    pipeline = driver.create_pipeline(driver.compile(CAS_WGSL), "main", {0: "storage", 1: "storage"})
    counter, total = driver.create_buffer(4), driver.create_buffer(4)
    driver.dispatch(pipeline, {0: counter, 1: total}, 64)
    assert int(np.frombuffer(driver.read_buffer(counter), np.uint32)[0]) == 64 * 64
    assert float(np.frombuffer(driver.read_buffer(total), np.float32)[0]) == 64 * 64 * 0.5
