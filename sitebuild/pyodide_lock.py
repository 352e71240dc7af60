"""The site's ``pyodide-lock.json`` pruned to the packages whose files the site ships.

Pyodide's npm lock lists every package of the Pyodide distribution (numpy and the other compiled ones),
whose wheels live on Pyodide's CDN, which the offline site neither ships nor reaches. Left in the lock,
``pyodide.loadPackage("numpy")``, ``micropip.install("numpy")`` and the lab's ``%pip install numpy``
take the lock's word, fail to fetch the wheel and only say so in the browser's console. Pruned, they
answer as for any unknown package: ``loadPackage`` rejects with "No known package with name 'numpy'",
and the lab's piplite (PyPI fallback disabled) raises "numpy could not be installed: PyPI fallback is
disabled".
"""

from __future__ import annotations

import json
from pathlib import Path

from .lab_preload import file_sha256, normalize_name

__all__ = ["LOCK_NAME", "unshipped_entries", "prune_lock"]

#: the lock's file name, beside Pyodide's other files
LOCK_NAME = "pyodide-lock.json"


def unshipped_entries(lock: dict, pyodide_dir: Path) -> dict[str, str]:
    """The lock's entries the site does not ship, each with why: ``{name: reason}``.

    An entry is shipped when its ``file_name`` is a plain file name of a file in ``pyodide_dir`` whose
    sha256 is the entry's, and every package it ``depends`` on is shipped (Pyodide normalizes those
    names). Read-only.
    """
    directory = Path(pyodide_dir)
    reasons: dict[str, str] = {}
    for name, entry in lock["packages"].items():
        file_name = entry.get("file_name", "")
        path = directory / file_name
        if not file_name or Path(file_name).name != file_name or not path.is_file():
            reasons[name] = f"{file_name or 'no file'} is not in the site"
        elif file_sha256(path) != entry.get("sha256"):
            reasons[name] = f"{file_name}'s sha256 is not the lock's"
    normalized = {normalize_name(name): name for name in lock["packages"]}
    changed = True
    while changed:  # a package whose dependency is not shipped cannot be loaded either
        changed = False
        for name, entry in lock["packages"].items():
            if name in reasons:
                continue
            missing = [d for d in entry.get("depends", ()) if normalized.get(normalize_name(d)) in reasons
                       or normalize_name(d) not in normalized]
            if missing:
                reasons[name] = f"it depends on {', '.join(sorted(missing))}, which the site does not ship"
                changed = True
    return reasons


def prune_lock(pyodide_dir: Path) -> list[str]:
    """Rewrite ``pyodide_dir/LOCK_NAME`` without the entries unshipped_entries finds; returns their names,
    sorted. Raises OSError or ValueError (not JSON) for a missing or broken lock."""
    path = Path(pyodide_dir) / LOCK_NAME
    lock = json.loads(path.read_text(encoding="utf-8"))
    dropped = sorted(unshipped_entries(lock, pyodide_dir))
    for name in dropped:
        del lock["packages"][name]
    path.write_text(json.dumps(lock), encoding="utf-8")
    return dropped
