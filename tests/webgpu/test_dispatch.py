"""Compute dispatches on a real adapter: results, order within one submit, async readback, big bindings."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.webgpu.gpu import VECTOR_ADD_LAYOUT, VECTOR_ADD_WGSL, require_adapter

require_adapter()

from atlas_web.errors import ExecutionFailed, InvalidBuffer  # noqa: E402
from webgpu_backend import BufferBinding, BufferUsage, DispatchCommand, split_workgroups  # noqa: E402

# x = x * 2 (entry "double") and x = x + 1 (entry "increment") on u32s: the order of the two shows
AFFINE_WGSL = """
@group(0) @binding(0) var<storage, read_write> x: array<u32>;

@compute @workgroup_size(64)
fn double(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&x)) { x[gid.x] = x[gid.x] * 2u; }
}

@compute @workgroup_size(64)
fn increment(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&x)) { x[gid.x] = x[gid.x] + 1u; }
}
"""

# out[i] = i + params.bias over a 3-D grid of workgroups of 256 (so that more than 65535 can run)
INDEX_FILL_WGSL = """
struct Params { count: u32, bias: u32, }
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + (gid.y + gid.z * groups.y) * groups.x * 256u;
    if (i < params.count) { out[i] = i + params.bias; }
}
"""


def _vector_add(driver):
    return driver.create_pipeline(driver.compile(VECTOR_ADD_WGSL), "main", VECTOR_ADD_LAYOUT)


def test_vector_add_matches_numpy(driver):
    n = 1000
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    bufs = [driver.create_buffer(4 * n) for _ in range(3)]
    driver.write_buffer(bufs[0], 0, a)
    driver.write_buffer(bufs[1], 0, b)
    driver.dispatch(_vector_add(driver), dict(enumerate(bufs)), (-(-n // 64),))
    assert np.array_equal(np.frombuffer(driver.read_buffer(bufs[2]), np.float32), a + b)
    for buf in bufs:
        driver.destroy_buffer(buf)


def test_dispatches_in_one_submit_run_in_order(driver):
    module = driver.compile(AFFINE_WGSL)
    double = driver.create_pipeline(module, "double", {0: "storage"})
    increment = driver.create_pipeline(module, "increment", {0: "storage"})
    x = driver.create_buffer(4 * 100)
    start = np.arange(100, dtype=np.uint32)
    driver.write_buffer(x, 0, start)
    driver.dispatch_many([
        DispatchCommand(double, {0: x}, 2),
        (increment, {0: x}, (2, 1, 1)),
        DispatchCommand(double, {0: x}, (2,)),
    ])
    assert np.array_equal(np.frombuffer(driver.read_buffer(x), np.uint32), (start * 2 + 1) * 2)


def test_queue_order_holds_across_writes_dispatches_and_waits(driver):
    module = driver.compile(AFFINE_WGSL)
    increment = driver.create_pipeline(module, "increment", {0: "storage"})
    x = driver.create_buffer(16)
    driver.write_buffer(x, 0, np.array([10, 20, 30, 40], np.uint32))
    driver.dispatch(increment, {0: x}, 1)
    driver.write_buffer(x, 0, np.array([7], np.uint32))
    driver.dispatch(increment, {0: x}, 1)
    driver.submit_and_wait()
    assert list(np.frombuffer(driver.read_buffer(x), np.uint32)) == [8, 22, 32, 42]


def test_async_readback_lets_the_event_loop_run(driver):
    n = 1 << 21  # a few milliseconds of work on lavapipe
    bufs = [driver.create_buffer(4 * n) for _ in range(3)]
    ones = np.ones(n, np.float32)
    driver.write_buffer(bufs[0], 0, ones)
    driver.write_buffer(bufs[1], 0, ones)
    pipeline = _vector_add(driver)

    async def scenario():
        done = asyncio.Event()
        ticks = 0

        async def read():
            for _ in range(24):  # tens of milliseconds of GPU work, so the read must wait on an idle machine too
                driver.dispatch(pipeline, dict(enumerate(bufs)), n // 64)
            data = await driver.read_buffer_async(bufs[2], 4 * (n - 4), 16)
            done.set()
            return data

        async def ticker():
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.0005)

        data, _ = await asyncio.gather(read(), ticker())
        return data, ticks

    data, ticks = asyncio.run(scenario())
    assert list(np.frombuffer(data, np.float32)) == [2.0] * 4
    assert ticks >= 1, "the event loop was blocked while the GPU worked"
    for buf in bufs:
        driver.destroy_buffer(buf)


def test_a_binding_at_the_storage_binding_limit(driver):
    limit = driver.limit("maxStorageBufferBindingSize")
    size = min(limit, 256 << 20)  # at most 256 MiB on this machine
    count = size // 4
    pipeline = driver.create_pipeline(driver.compile(INDEX_FILL_WGSL), "main", {0: "storage", 1: "uniform"})
    params = driver.create_buffer(16, BufferUsage.UNIFORM | BufferUsage.COPY_DST)
    driver.write_buffer(params, 0, np.array([count, 5, 0, 0], np.uint32))
    big = driver.create_buffer(size + 256)
    groups = split_workgroups(-(-count // 256), driver.limit("maxComputeWorkgroupsPerDimension"))
    driver.dispatch(pipeline, {0: BufferBinding(big, 256, size), 1: params}, groups)
    for index in (0, count // 2 + 3, count - 4):
        got = np.frombuffer(driver.read_buffer(big, 256 + 4 * index, 16), np.uint32)
        assert list(got) == list(range(index + 5, index + 9))
    assert bytes(driver.read_buffer(big, 0, 256)) == bytes(256)
    if size == limit:
        with pytest.raises(ExecutionFailed, match="maxStorageBufferBindingSize"):
            driver.dispatch(pipeline, {0: big, 1: params}, groups)
    driver.destroy_buffer(big)
    driver.destroy_buffer(params)


def test_bad_dispatches_are_refused_before_encoding(driver):
    pipeline = _vector_add(driver)
    bufs = [driver.create_buffer(256) for _ in range(3)]
    bindings = dict(enumerate(bufs))
    with pytest.raises(ExecutionFailed, match=r"missing"):
        driver.dispatch(pipeline, {0: bufs[0], 1: bufs[1]}, 1)
    with pytest.raises(ExecutionFailed, match="maxComputeWorkgroupsPerDimension"):
        driver.dispatch(pipeline, bindings, (driver.limit("maxComputeWorkgroupsPerDimension") + 1, 1, 1))
    with pytest.raises(ExecutionFailed, match="minStorageBufferOffsetAlignment"):
        driver.dispatch(pipeline, {**bindings, 2: BufferBinding(bufs[2], 4, 64)}, 1)
    uniform = driver.create_buffer(256, BufferUsage.UNIFORM | BufferUsage.COPY_DST)
    with pytest.raises(InvalidBuffer, match="lacks usage STORAGE"):
        driver.dispatch(pipeline, {**bindings, 2: uniform}, 1)
    driver.write_buffer(bufs[2], 0, np.full(64, 9, np.float32))
    with pytest.raises(InvalidBuffer, match="destroyed"):
        driver.destroy_buffer(bufs[0])
        driver.dispatch_many([(pipeline, {**bindings, 0: bufs[1]}, 1), (pipeline, bindings, 1)])
    assert np.array_equal(np.frombuffer(driver.read_buffer(bufs[2]), np.float32), np.full(64, 9, np.float32))


def test_a_destroyed_buffer_is_never_served_from_the_bind_group_cache(driver):
    pipeline = _vector_add(driver)
    a, b = driver.create_buffer(256), driver.create_buffer(256)
    driver.write_buffer(a, 0, np.full(64, 1, np.float32))
    driver.write_buffer(b, 0, np.full(64, 2, np.float32))
    out = driver.create_buffer(256)
    driver.dispatch(pipeline, {0: a, 1: b, 2: out}, 1)
    driver.destroy_buffer(out)
    fresh = driver.create_buffer(256)
    driver.dispatch(pipeline, {0: a, 1: b, 2: fresh}, 1)
    assert np.array_equal(np.frombuffer(driver.read_buffer(fresh), np.float32), np.full(64, 3, np.float32))


def test_split_workgroups_covers_the_count_within_the_limit():
    assert split_workgroups(10, 65535) == (10, 1, 1)
    x, y, z = split_workgroups(131073, 65535)
    assert max(x, y, z) <= 65535 and x * y * z >= 131073 and (x, z) == (65535, 1)
    x, y, z = split_workgroups(20, 4)
    assert (x, y, z) == (4, 4, 2)
    with pytest.raises(ExecutionFailed, match="maxComputeWorkgroupsPerDimension"):
        split_workgroups(65, 4)


def test_objects_of_another_driver_are_refused(driver):
    from webgpu_backend import default_driver
    other = default_driver(optional_features=())
    try:
        pipeline = _vector_add(driver)
        buffers = {b: other.create_buffer(256) for b in range(3)}
        with pytest.raises(ExecutionFailed, match="not created by this driver"):
            other.dispatch(pipeline, buffers, 1)
        with pytest.raises(ExecutionFailed, match="compiled by this driver"):
            other.create_pipeline(driver.compile(VECTOR_ADD_WGSL), "main", VECTOR_ADD_LAYOUT)
        with pytest.raises(InvalidBuffer, match="another driver"):
            driver.read_buffer(buffers[0])
    finally:
        other.close()
    with pytest.raises(ExecutionFailed, match="closed"):
        other.create_buffer(16)
