"""atlas_web.numpy without NumPy (as in Pyodide offline): arrays from lists and array.array, results as
array.array and lists, on a backend that runs without NumPy (the wasm backend where it can start)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CODE = textwrap.dedent("""
    import sys
    sys.modules["numpy"] = None  # as if NumPy were not installed
    import array
    import atlas_web.numpy as anp
    from atlas_web.registry import discover_backends, get_backend
    names = [s.name for s in discover_backends() if s.available]
    ran = 0
    for name in names:
        try:
            device = get_backend(name)
        except Exception:
            continue  # the reference backend needs NumPy
        x = anp.array(array.array("f", [-1.0, 0.0, 0.5, 1.0]), device=device)
        y = anp.relu(2 * x - 0.5)
        host = y.to_host()
        assert isinstance(host, array.array) and host.typecode == "f", host
        assert host.tolist() == [0.0, 0.0, 0.5, 1.5]
        assert anp.dot(y, x).item() == 1.75
        assert (x.reshape(2, 2).T > 0).tolist() == [[False, True], [False, True]]
        assert anp.arange(4, device=device).sum(axis=0).item() == 6
        ran += 1
    print(ran)
""")


def test_arrays_work_without_numpy():
    result = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) >= 1
