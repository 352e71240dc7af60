"""The launcher's and the driver's caches stay bounded, and what leaves them is released (issue 17 item 6:
memory growth with many distinct programs): an evicted pipeline is dropped by the driver's caches and by
the recorded launches, so the engine frees it. Checked by the objects' lifetimes, not RSS
(benchmarks/memory_growth.py measures that)."""

from __future__ import annotations

import gc
import weakref

from atlas_web import LaunchConfig
from atlas_web.isa import Type
from webgpu_backend import WebGpuBackend
from webgpu_backend import compiler, launcher as launcher_module

from tests.verify_programs import constant_store


def test_evicted_pipelines_are_released(gpu_driver, monkeypatch):
    monkeypatch.setattr(launcher_module, "_MAX_PIPELINES", 2)
    backend = WebGpuBackend(driver=gpu_driver)
    launcher = backend._launcher
    out = backend.allocate_buffer(4)
    pipelines = []
    for value in range(6):
        backend.execute_program(constant_store(value, out), LaunchConfig.linear(1))
        assert backend.copy_typed_from(out, Type.U32).tolist() == [value]
        newest = launcher._pipelines.values()[-1]
        pipelines.append((weakref.ref(newest.native), newest.key))   # the engine's pipeline
        del newest
        sizes = launcher.cache_sizes
        assert sizes["launcher_pipelines"] <= 2 and sizes["records"] <= launcher_module._MAX_RECORDS
    gc.collect()
    released = [ref() is None for ref, _key in pipelines]
    assert released == [True] * 4 + [False] * 2
    assert all(key not in gpu_driver._pipelines for _ref, key in pipelines[:4])
    backend.execute_program(constant_store(0, out), LaunchConfig.linear(1))    # an evicted program builds again
    assert backend.copy_typed_from(out, Type.U32).tolist() == [0]
    backend.close()


def test_release_pipeline_drops_the_pipeline_its_bind_groups_and_its_module(gpu_driver):
    source = "@group(0) @binding(0) var<storage, read_write> x: array<u32>;\n" \
             "@compute @workgroup_size(1) fn main() { x[0] = 7u; }\n"
    module = gpu_driver.compile(source)
    pipeline = gpu_driver.create_pipeline(module, "main", {0: "storage"})
    buffer = gpu_driver.create_buffer(4)
    gpu_driver.dispatch(pipeline, {0: buffer})
    assert bytes(gpu_driver.read_buffer(buffer)) == (7).to_bytes(4, "little")
    groups = gpu_driver.cache_sizes["bind_groups"]
    gpu_driver.release_pipeline(pipeline)
    gpu_driver.release_pipeline(pipeline)                                # twice: nothing more happens
    assert pipeline.key not in gpu_driver._pipelines and module.digest not in gpu_driver._modules
    assert gpu_driver.cache_sizes["bind_groups"] == groups - 1
    assert gpu_driver.create_pipeline(gpu_driver.compile(source), "main", {0: "storage"}) is not pipeline
    gpu_driver.destroy_buffer(buffer)


def test_a_program_keeps_the_stage_shaders_of_its_last_launch_shapes_only(webgpu, monkeypatch):
    monkeypatch.setattr(compiler, "SHADER_SHAPES", 3)
    out = webgpu.allocate_buffer(4)
    program = constant_store(5, out)
    for lanes in range(1, 7):
        webgpu.execute_program(program, LaunchConfig.linear(lanes))
    compiled = webgpu._pipeline.compile(program, {}).plans["webgpu"]
    assert len(compiled._shaders) == 3
    assert webgpu.copy_typed_from(out, Type.U32).tolist() == [5]
    webgpu.free_buffer(out)
