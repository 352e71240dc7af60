"""The KernelBackend, the transformer and the translators without NumPy (as in Pyodide offline), on every
backend that starts without it (natively here only webgpu: the reference and the native wasm runner
import NumPy); values checked against Python arithmetic written here."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CODE = textwrap.dedent("""
    import sys
    sys.modules["numpy"] = None  # as if NumPy were not installed
    import math
    from atlas_web.kernels import KernelBackend
    from atlas_web.kernels.transformer import Transformer, TransformerConfig, init_weights
    from atlas_web.registry import discover_backends, get_backend
    from atlas_web.translate import circuit_to_program
    ran, tokens = 0, set()
    for name in [s.name for s in discover_backends() if s.available]:
        try:
            device = get_backend(name)
        except Exception:
            continue
        kb = KernelBackend(device)
        assert kb.matmul_vec([[1, 2], [3, 4]], [0.5, 1]).tolist() == [2.5, 5.5]
        x = kb.tensor([1.0, 2.0, 3.0])
        kb.softmax(x)
        e = [math.exp(v - 3) for v in (1, 2, 3)]
        assert all(abs(a - b / sum(e)) < 1e-6 for a, b in zip(x.tolist(), e))
        program, bindings = circuit_to_program({"wires": {"a": {"shape": [3], "dtype": "float32"}},
            "gates": [{"op": "mul", "in": ["a", "a"], "out": "b"}], "outputs": ["b"]})
        assert bindings.run(program, device, {"a": [1, -2, 3]})["b"].tolist() == [1.0, 4.0, 9.0]
        config = TransformerConfig(vocab=50, d_model=32, layers=1, heads=2, kv_heads=1, intermediate=64, max_seq=8)
        model = Transformer(kb, config, init_weights(config, 1, device))
        tokens.add(tuple(model.generate([3, 4], 3)))
        device.close()
        ran += 1
    assert len(tokens) == 1, tokens  # the same tokens on every backend
    print(ran)
""")


def test_kernels_and_translators_work_without_numpy():
    result = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) >= 1
