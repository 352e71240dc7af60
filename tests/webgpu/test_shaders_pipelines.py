"""WGSL compilation through the engine's validator, its errors, and the module and pipeline caches."""

from __future__ import annotations

import pickle

import pytest

from tests.webgpu.gpu import VECTOR_ADD_LAYOUT, VECTOR_ADD_WGSL, require_adapter

require_adapter()

from atlas_web.errors import ExecutionFailed  # noqa: E402
from webgpu_backend import BindingKind, BindingSpec, ShaderCompilationError  # noqa: E402


def test_valid_wgsl_compiles_and_is_cached_by_digest(driver):
    module = driver.compile(VECTOR_ADD_WGSL)
    assert len(module.digest) == 64 and module.source == VECTOR_ADD_WGSL
    assert driver.compile(str(VECTOR_ADD_WGSL)) is module
    assert driver.compile(VECTOR_ADD_WGSL + "\n") is not module


def test_a_parse_error_shows_the_message_and_the_line(driver):
    source = "@compute @workgroup_size(1)\nfn main() {\n    let x: i32 = 1.5;\n}\n"
    with pytest.raises(ShaderCompilationError) as caught:
        driver.compile(source)
    err = caught.value
    assert isinstance(err, ExecutionFailed)
    assert err.stage == "module" and err.line == 3 and err.column is not None
    assert err.source_line == "    let x: i32 = 1.5;"
    assert "i32" in err.compiler_message
    text = str(err)
    assert "line 3" in text and "3 |     let x: i32 = 1.5;" in text and "compiler message:" in text


def test_a_validation_error_points_at_its_line(driver):
    source = ("@group(0) @binding(0) var<storage, read> a: array<f32>;\n"
              "@compute @workgroup_size(1)\nfn main() {\n    a[0] = 1.0;\n}\n")
    with pytest.raises(ShaderCompilationError) as caught:
        driver.compile(source)
    assert caught.value.line == 4 and caught.value.source_line == "    a[0] = 1.0;"
    assert "not permitted" in caught.value.compiler_message


def test_the_error_survives_pickling(driver):
    with pytest.raises(ShaderCompilationError) as caught:
        driver.compile("fn main( {")
    again = pickle.loads(pickle.dumps(caught.value))
    assert (again.line, again.column, again.source_line) == (caught.value.line, caught.value.column, "fn main( {")
    assert str(again) == str(caught.value)


def test_pipelines_are_cached_by_digest_entry_and_layout(driver):
    module = driver.compile(VECTOR_ADD_WGSL)
    pipeline = driver.create_pipeline(module, "main", VECTOR_ADD_LAYOUT)
    same_layout = [BindingSpec(2, BindingKind.STORAGE), (0, "read-only-storage"), (1, BindingKind.READ_ONLY_STORAGE)]
    assert driver.create_pipeline(driver.compile(VECTOR_ADD_WGSL), "main", same_layout) is pipeline
    assert pipeline.key == (module.digest, "main", pipeline.layout)


def test_other_entry_points_and_layouts_get_other_pipelines(driver):
    source = ("@group(0) @binding(0) var<storage, read_write> x: array<u32>;\n"
              "@compute @workgroup_size(1) fn first() { x[0] = 1u; }\n"
              "@compute @workgroup_size(1) fn second() { x[0] = 2u; }\n")
    module = driver.compile(source)
    first = driver.create_pipeline(module, "first", {0: "storage"})
    assert driver.create_pipeline(module, "second", {0: "storage"}) is not first
    assert driver.create_pipeline(module, "first", {0: "storage", 1: "uniform"}) is not first
    assert driver.create_pipeline(module, "first", [(0, "storage")]) is first


def test_pipeline_errors_name_the_entry_point_or_the_mismatch(driver):
    module = driver.compile(VECTOR_ADD_WGSL)
    with pytest.raises(ShaderCompilationError, match="nope") as caught:
        driver.create_pipeline(module, "nope", VECTOR_ADD_LAYOUT)
    assert caught.value.stage == "pipeline"
    with pytest.raises(ShaderCompilationError) as caught:
        driver.create_pipeline(module, "main", {0: "read-only-storage", 1: "read-only-storage", 2: "uniform"})
    assert "binding: 2" in caught.value.compiler_message


def test_malformed_layouts_are_refused_before_the_engine(driver):
    module = driver.compile(VECTOR_ADD_WGSL)
    with pytest.raises(ExecutionFailed, match="kind one of"):
        driver.create_pipeline(module, "main", {0: "texture"})
    with pytest.raises(ExecutionFailed, match="twice"):
        driver.create_pipeline(module, "main", [(0, "storage"), (0, "uniform")])
    too_many = {b: "storage" for b in range(driver.limit("maxStorageBuffersPerShaderStage") + 1)}
    with pytest.raises(ExecutionFailed, match="maxStorageBuffersPerShaderStage"):
        driver.create_pipeline(module, "main", too_many)
