"""Backend selection, DeviceInfo and the inference memory estimate (the seed's Mistral 7B example)."""

from __future__ import annotations

import pytest

from atlas_web.errors import AllocationFailed, ArrayError
from atlas_web.kernels import (BackendPreference, KernelBackend, best_available_backend, device_info,
                               estimate_inference_memory, init_backend_with_memory_check, init_kernel_backend)


def test_mistral_7b_estimate():
    e = estimate_inference_memory(4096, 14336, 32, 32000, 32, 8, 4096, 4)
    # per layer: q, o 4096^2 each; k, v 4096 x 1024 each; gate/up/down 4096 x 14336; two norms
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    params = 32 * per_layer + 2 * 32000 * 4096 + 4096
    assert e.parameters == params == 7_241_732_096
    assert e.weight_bytes == 4 * params
    assert e.kv_cache_bytes == 2 * 32 * 4096 * 1024 * 4 == 1 << 30
    assert e.total_bytes == e.weight_bytes + e.kv_cache_bytes + e.activation_bytes
    assert 27.9 < e.total_gb() < 28.1


def test_estimate_rejects_bad_sizes():
    with pytest.raises(ArrayError, match="heads=0"):
        estimate_inference_memory(4096, 14336, 32, 32000, 0, 8, 4096, 4)
    with pytest.raises(ArrayError, match="kv_heads 3 must divide heads"):
        estimate_inference_memory(4096, 14336, 32, 32000, 32, 3, 4096, 4)


def test_device_info(device):
    info = device_info(device)
    assert info.index == 0 and info.name.startswith(device.name)
    assert info.total_memory is None or info.free_memory <= info.total_memory
    assert info.unified_memory == (device.device_info()["device_type"] != "gpu")


def test_preference_selection_and_memory_check():
    kb = init_kernel_backend(BackendPreference.CPU)
    try:
        assert isinstance(kb, KernelBackend) and kb.name() == "cpu"
    finally:
        kb.device.close()
    best = best_available_backend()
    try:
        assert best.name() in ("webgpu", "wasm", "cpu")
    finally:
        best.device.close()
    small = estimate_inference_memory(256, 512, 2, 1000, 4, 2, 64, 4)
    kb = init_backend_with_memory_check(BackendPreference.CPU, small)
    try:
        assert kb.name() == "cpu"
    finally:
        kb.device.close()
    mistral = estimate_inference_memory(4096, 14336, 32, 32000, 32, 8, 4096, 4)
    with pytest.raises(AllocationFailed):
        init_backend_with_memory_check(BackendPreference.CPU, mistral.total_bytes * 1000)
