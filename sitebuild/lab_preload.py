"""The lab kernel's start packages, loaded from Pyodide's lock instead of installed one by one.

At every start the Pyodide kernel's worker (jupyterlite-pyodide-kernel 0.8.x, ``initPackageManager`` and
``initKernel``) loads micropip, micropip-installs piplite, then piplite-installs ipykernel, comm,
pyodide-kernel, jedi and ipython in turn, each resolved by micropip against piplite's index, and only
skips a name that ``loadPyodideOptions.packages`` lists. Listing all of them there, with each one in
``pyodide-lock.json``, has ``loadPyodide`` fetch every wheel while the runtime boots and unpack them in
one ``loadPackage``: no resolution at start. ``check_worker_start`` makes sure the bundled worker still
skips exactly these names (another pyodide-kernel release may change them).
"""

from __future__ import annotations

import hashlib
import re
import zipfile
from pathlib import Path
from typing import Iterable

__all__ = ["KERNEL_START_PACKAGES", "check_worker_start", "file_sha256", "lock_entry", "normalize_name", "wheel_imports"]

#: what the worker loads with micropip (the first two) and piplite (the rest) unless preloaded
_MICROPIP_STEPS = ("micropip", "piplite")
_PIPLITE_STEPS = ("ipykernel", "comm", "pyodide-kernel", "jedi", "ipython")
#: the names the kernel's worker installs at start unless ``loadPyodideOptions.packages`` lists them
KERNEL_START_PACKAGES = _MICROPIP_STEPS + _PIPLITE_STEPS
#: the minified checks in the worker bundles (``<list>.includes(name)||`` and the piplite loop's array)
_WORKER_CHECKS = (*(f'.includes("{name}")||' for name in _MICROPIP_STEPS),
                  "of[" + ",".join(f'"{name}"' for name in _PIPLITE_STEPS) + "])")


def check_worker_start(static_dir: Path) -> list[str]:
    """The kernel's worker bundles (``*.worker.*.js`` directly under ``static_dir``, sorted names), each
    checked to skip exactly KERNEL_START_PACKAGES when preloaded. Read-only.

    Raises ValueError when there is no worker bundle or a check is not found exactly once in one (another
    pyodide-kernel release: read its ``initPackageManager``/``initKernel`` before changing the pin).
    """
    workers = sorted(Path(static_dir).glob("*.worker.*.js"))
    if not workers:
        raise ValueError(f"no kernel worker (*.worker.*.js) in {static_dir}")
    for worker in workers:
        text = worker.read_text(encoding="utf-8")
        for check in _WORKER_CHECKS:
            if text.count(check) != 1:
                raise ValueError(f"{worker.name}: the start check {check} occurs {text.count(check)} times, "
                                 f"not once")
    return [worker.name for worker in workers]


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file's bytes (what the lock's ``sha256`` holds)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def normalize_name(name: str) -> str:
    """A package name as Pyodide's lock and micropip compare them (PEP 503: runs of ``-_.`` to ``-``, lower case)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_imports(wheel: Path) -> list[str]:
    """The top-level packages of a wheel (directories with an ``__init__.py``), sorted."""
    with zipfile.ZipFile(wheel) as archive:
        return sorted({n.split("/")[0] for n in archive.namelist()
                       if n.endswith("/__init__.py") and n.count("/") == 1})


def lock_entry(wheel: Path, name: str, depends: Iterable[str]) -> dict:
    """The ``pyodide-lock.json`` entry of a pure-Python wheel that lies beside Pyodide under its own file
    name: its version from the file name, its sha256, its top-level packages and ``depends`` (lock names)."""
    return {"name": name, "version": wheel.name.split("-")[1], "file_name": wheel.name, "install_dir": "site",
            "sha256": file_sha256(wheel), "package_type": "package",
            "imports": wheel_imports(wheel), "depends": sorted(depends), "unvendored_tests": False,
            "shared_library": False}
