"""Tests of the WebGPU backend (WebGpuBackend): host API, code generator, kernels, traps, accuracy."""
