"""Importing the WebGPU backend imports no engine: the driver module is chosen and imported on demand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_imports_neither_wgpu_nor_js_nor_numpy():
    code = ("import sys, webgpu_backend; "
            "print(sorted(m for m in ('wgpu', 'js', 'numpy', 'pyodide') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
