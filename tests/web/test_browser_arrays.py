"""``atlas_web.numpy`` in headless Chromium (Pyodide, no NumPy there): the README's relu-and-dot, eager and
under ``jit``, and a counter-based random draw on wasm and webgpu give the numbers they give natively
(the native side computes them here with the same backends' code: wasm bit for bit, the random
uniforms bit for bit everywhere, and jit equal to eager in the page)."""

from __future__ import annotations

import numpy as np

import atlas_web.numpy as anp
from atlas_web.registry import get_backend

from .conftest import run_python

BROWSER_BACKENDS = ("wasm", "webgpu")
SIZE = 100_000

PAGE_CODE = f"""
import atlas_web.numpy as anp
from atlas_web.registry import get_backend
result = {{}}
for name in {BROWSER_BACKENDS!r}:
    with get_backend(name) as device:
        x = anp.linspace(-1, 1, {SIZE}, device=device)
        relu_dot = anp.jit(lambda v: anp.dot(anp.relu(2 * v - 0.5), v))
        fused = relu_dot(x)
        eager = anp.dot(anp.relu(2 * x - 0.5), x)
        draw = anp.random.uniform((16,), -1.0, 1.0, key=anp.random.key(3), device=device)
        result[name] = {{
            "jit": list(await fused.to_host_async()), "eager": list(await eager.to_host_async()),
            "steps": [kind for kind, _ in relu_dot.trace_steps(x)],
            "uniform": list(await draw.to_host_async()), "has_numpy": anp.array([1.0]).to_host().__class__.__name__,
        }}
"""


def test_relu_dot_jit_and_random_give_the_native_numbers(backends_page):
    got = run_python(backends_page, PAGE_CODE)
    with get_backend("wasm") as wasm:
        x = anp.linspace(-1, 1, SIZE, device=wasm)
        native_wasm = anp.jit(lambda v: anp.dot(anp.relu(2 * v - 0.5), v))(x).item()
        uniform = anp.random.uniform((16,), -1.0, 1.0, key=anp.random.key(3), device=wasm).to_host()
    xs = np.linspace(-1, 1, SIZE, dtype=np.float32)
    numpy_value = float(np.dot(np.maximum(np.float32(2) * xs - np.float32(0.5), 0), xs))
    for name in BROWSER_BACKENDS:
        page = got[name]
        assert page["jit"] == page["eager"], name                  # fused = eager, in the page too
        assert page["steps"] == ["FusedMapNode", "CoopReduceNode"], name
        assert abs(page["jit"][0] - numpy_value) <= 1e-4 * abs(numpy_value), name
        assert np.float32(page["uniform"]).tobytes() == uniform.tobytes(), name
    assert got["wasm"]["jit"][0] == native_wasm
    assert got["wasm"]["has_numpy"] == "array"   # no NumPy in Pyodide: array.array comes back
