"""The process environment a native GPU stack expects: a private XDG runtime directory.

Mesa's Vulkan loader (lavapipe, the GPU drivers) prints ``error: XDG_RUNTIME_DIR
is invalid or not set`` once per device when the variable is missing, as it is
in containers, CI and ``sudo`` shells. Standard library only.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import MutableMapping

__all__ = ["private_runtime_dir", "ensure_runtime_dir"]


def private_runtime_dir() -> str:
    """A runtime directory private to this user (mode 0700), made once under the temp dir.

    Raises OSError when it cannot be made.
    """
    path = Path(tempfile.gettempdir()) / f"atlas-web-runtime-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return str(path)


def ensure_runtime_dir(environ: MutableMapping[str, str] | None = None) -> None:
    """Set ``XDG_RUNTIME_DIR`` in ``environ`` (default: this process's, which children inherit)
    to ``private_runtime_dir()`` when it is unset or empty; leaves a set one alone. Never raises:
    where no directory can be made the variable stays unset (Mesa then only prints its line)."""
    target = os.environ if environ is None else environ
    if target.get("XDG_RUNTIME_DIR"):
        return
    try:
        target["XDG_RUNTIME_DIR"] = private_runtime_dir()
    except OSError:
        pass
