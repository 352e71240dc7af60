"""The driver's device facts, driver selection and buffer copies, on a real adapter."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.webgpu.gpu import require_adapter

require_adapter()

from atlas_web.errors import AllocationFailed, ExecutionFailed, InvalidBuffer  # noqa: E402
from webgpu_backend import REQUIRED_LIMITS, BufferUsage, driver_class  # noqa: E402
from webgpu_backend.driver import limit_name  # noqa: E402
from webgpu_backend.drivers import DRIVERS  # noqa: E402
from webgpu_backend.drivers.wgpu_native import WgpuNativeDriver, available_adapters, rank_adapter  # noqa: E402


def test_native_platform_picks_wgpu_and_never_imports_js():
    assert driver_class() is WgpuNativeDriver
    assert DRIVERS["emscripten"][0] == "webgpu_backend.drivers.js_webgpu"
    assert "js" not in sys.modules


def test_adapter_info_names_the_device_and_engine(driver):
    info = driver.adapter_info()
    assert set(info) >= {"vendor", "architecture", "device", "description", "backend", "adapter_type", "engine"}
    assert info["device"] and info["backend"] in {"Vulkan", "Metal", "D3D12", "OpenGL"}
    assert info["engine"].startswith("wgpu-native")


def test_prefers_a_native_api_over_opengl_and_a_gpu_over_a_cpu():
    lavapipe_vulkan = {"adapter_type": "CPU", "backend_type": "Vulkan"}
    llvmpipe_gl = {"adapter_type": "CPU", "backend_type": "OpenGL"}
    discrete = {"adapter_type": "DiscreteGPU", "backend_type": "Vulkan"}
    ranked = sorted([llvmpipe_gl, lavapipe_vulkan, discrete], key=rank_adapter)
    assert ranked == [discrete, lavapipe_vulkan, llvmpipe_gl]
    best = min(available_adapters(), key=lambda a: rank_adapter(a.info))
    vulkan_exists = any(a.info["backend_type"] == "Vulkan" for a in available_adapters())
    assert best.info["backend_type"] == "Vulkan" or not vulkan_exists


def test_limits_are_the_adapters_not_the_defaults(driver):
    assert all(isinstance(driver.limits[name], int) for name in REQUIRED_LIMITS)
    adapter_limits = {limit_name(k): v for k, v in driver._adapter.limits.items()}
    for name in ("maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize",
                 "maxComputeInvocationsPerWorkgroup", "maxStorageBuffersPerShaderStage"):
        assert driver.limit(name) == adapter_limits[name], name
    with pytest.raises(ExecutionFailed, match="maxNoSuchThing"):
        driver.limit("maxNoSuchThing")


def test_limit_names_are_webgpu_camel_case():
    assert limit_name("max-storage-buffer-binding-size") == "maxStorageBufferBindingSize"
    assert limit_name("min_uniform_buffer_offset_alignment") == "minUniformBufferOffsetAlignment"


def test_round_trip_numpy_bytes_and_offsets(driver):
    buf = driver.create_buffer(4096)
    data = np.arange(1024, dtype=np.float32) * 0.5
    driver.write_buffer(buf, 0, data)
    assert np.array_equal(np.frombuffer(driver.read_buffer(buf), np.float32), data)
    driver.write_buffer(buf, 16, b"\x01\x02\x03\x04\x05\x06\x07\x08")
    assert bytes(driver.read_buffer(buf, 16, 8)) == b"\x01\x02\x03\x04\x05\x06\x07\x08"
    assert bytes(driver.read_buffer(buf, 8, 8)) == data[2:4].tobytes()
    driver.destroy_buffer(buf)


def test_unaligned_writes_and_reads_keep_the_neighbouring_bytes(driver):
    buf = driver.create_buffer(13)  # not a multiple of 4 either
    driver.write_buffer(buf, 0, bytes(range(100, 113)))
    driver.write_buffer(buf, 3, b"\xaa\xbb\xcc")
    expected = bytearray(range(100, 113))
    expected[3:6] = b"\xaa\xbb\xcc"
    assert bytes(driver.read_buffer(buf)) == bytes(expected)
    assert bytes(driver.read_buffer(buf, 5, 7)) == bytes(expected[5:12])
    driver.write_buffer(buf, 12, b"\x07")
    expected[12] = 7
    assert bytes(driver.read_buffer(buf, 11)) == bytes(expected[11:])
    driver.write_buffer(buf, 1, bytes(range(1, 11)))  # a head word, a whole word and a tail word
    expected[1:11] = bytes(range(1, 11))
    assert bytes(driver.read_buffer(buf)) == bytes(expected)


def test_new_buffers_are_zero_and_clear_and_copy_work(driver):
    a, b = driver.create_buffer(64), driver.create_buffer(64)
    assert bytes(driver.read_buffer(a)) == bytes(64)
    driver.write_buffer(a, 0, bytes(range(64)))
    driver.copy_buffer(a, 8, b, 16, 32)
    driver.clear_buffer(a, 4, 8)
    assert bytes(driver.read_buffer(b)) == bytes(16) + bytes(range(8, 40)) + bytes(16)
    assert bytes(driver.read_buffer(a, 0, 16)) == bytes(range(4)) + bytes(8) + bytes(range(12, 16))


def test_non_contiguous_data_is_written_as_its_values(driver):
    buf = driver.create_buffer(32)
    strided = np.arange(16, dtype=np.int32)[::2]
    driver.write_buffer(buf, 0, strided)
    assert np.array_equal(np.frombuffer(driver.read_buffer(buf), np.int32), strided)


def test_bad_buffer_use_raises_the_documented_errors(driver):
    buf = driver.create_buffer(16)
    with pytest.raises(InvalidBuffer, match="outside buffer"):
        driver.read_buffer(buf, 8, 16)
    with pytest.raises(InvalidBuffer, match="outside buffer"):
        driver.write_buffer(buf, 12, b"12345678")
    with pytest.raises(InvalidBuffer, match="offset must be a non-negative int"):
        driver.read_buffer(buf, -4, 4)
    with pytest.raises(InvalidBuffer, match="multiples of 4"):
        driver.copy_buffer(buf, 2, buf, 8, 4)
    uniform = driver.create_buffer(16, BufferUsage.UNIFORM | BufferUsage.COPY_DST)
    with pytest.raises(InvalidBuffer, match="lacks usage COPY_SRC"):
        driver.read_buffer(uniform)
    driver.destroy_buffer(buf)
    driver.destroy_buffer(buf)  # twice is allowed
    with pytest.raises(InvalidBuffer, match="destroyed"):
        driver.read_buffer(buf)
    with pytest.raises(InvalidBuffer, match="GpuBuffer"):
        driver.write_buffer(object(), 0, b"1234")


def test_allocation_limits_name_the_limit(driver):
    with pytest.raises(AllocationFailed, match="maxBufferSize"):
        driver.create_buffer(driver.limit("maxBufferSize") + 1)
    with pytest.raises(AllocationFailed, match="positive int"):
        driver.create_buffer(0)
    with pytest.raises(ExecutionFailed, match="usage"):
        driver.create_buffer(16, 0x1)  # MAP_READ is not offered



def test_a_read_back_whose_copy_fails_returns_its_staging_buffer_to_the_pool(driver, monkeypatch):
    buf = driver.create_buffer(256)
    driver.write_buffer(buf, 0, bytes(range(256)))
    driver.read_buffer(buf)                       # one staging buffer now idle in the pool
    idle = list(driver._staging._free)

    def refused(record, what):                    # the engine refuses the copy's submission (fault injected:
        raise ExecutionFailed(f"{what}: refused")  # a real refusal, e.g. device loss, cannot be provoked safely)
    monkeypatch.setattr(driver, "_submit_now", refused)
    with pytest.raises(ExecutionFailed, match="reading 256 bytes back"):
        driver.read_buffer(buf)
    monkeypatch.undo()
    assert driver._staging._free == idle          # the staging buffer was taken, then given back
    assert bytes(driver.read_buffer(buf)) == bytes(range(256))
    driver.destroy_buffer(buf)
