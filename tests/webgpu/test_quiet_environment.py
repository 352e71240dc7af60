"""Opening WebGPU natively prints nothing about the environment (Mesa's XDG_RUNTIME_DIR line)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.webgpu.gpu import require_adapter

require_adapter()

ROOT = Path(__file__).resolve().parents[2]


def test_a_process_without_xdg_runtime_dir_opens_webgpu_quietly():
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    code = ("from atlas_web.registry import get_backend\n"
            "backend = get_backend('webgpu')\n"
            "print(backend.device_info()['device_type'])\n"
            "backend.close()\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "XDG_RUNTIME_DIR" not in done.stderr + done.stdout
    assert done.stdout.strip() in ("gpu", "software-gpu")
