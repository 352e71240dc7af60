"""Pyodide from its npm package, fetched once with ``npm pack`` into a cache directory.

The site serves these files itself (no CDN): the page must work on a machine
with no network once the site is built. ``ensure_pyodide`` is idempotent: a
complete copy (marked by a stamp file written last) is reused as it is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Callable

from .scratch import remove_leftovers, scratch_directory

__all__ = ["PYODIDE_VERSION", "PYODIDE_PACKAGE", "PYODIDE_FILES", "PyodideFetchError", "ensure_pyodide",
           "pyodide_cache_path"]

#: the Pyodide release the site ships (Python 3.14)
PYODIDE_VERSION = "314.0.7"
#: the npm package spec fetched
PYODIDE_PACKAGE = f"pyodide@{PYODIDE_VERSION}"
#: the files of the npm package the page loads: the ES module loader, the runtime, the standard
#: library and the lock file (it lists Pyodide's whole distribution; the site's build keeps only the entries
#: whose files the site ships: sitebuild.pyodide_lock)
PYODIDE_FILES: tuple[str, ...] = (
    "pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json", "package.json",
)
_STAMP = ".complete"


class PyodideFetchError(Exception):
    """npm is missing, ``npm pack`` failed, or the package is not the expected Pyodide release."""


def pyodide_cache_path(cache_dir: Path) -> Path:
    """Where the unpacked files of PYODIDE_VERSION live inside ``cache_dir``."""
    return Path(cache_dir) / f"pyodide-{PYODIDE_VERSION}"


def _is_complete(target: Path) -> bool:
    return (target / _STAMP).is_file() and all((target / name).is_file() for name in PYODIDE_FILES)


def _npm_pack(npm: str, cache_dir: Path, log: Callable[[str], None]) -> Path:
    """Run ``npm pack`` for PYODIDE_PACKAGE into ``cache_dir``; returns the tarball. Raises PyodideFetchError."""
    command = [npm, "pack", PYODIDE_PACKAGE, "--json", "--pack-destination", str(cache_dir),
               "--cache", str(cache_dir / "_cacache")]
    log("$ " + " ".join(command))
    result = subprocess.run(command, capture_output=True, text=True, cwd=cache_dir)
    if result.returncode != 0:
        raise PyodideFetchError(f"npm pack {PYODIDE_PACKAGE} failed with exit status {result.returncode}: "
                                f"{result.stderr.strip()[-2000:]}")
    try:
        filename = json.loads(result.stdout)[0]["filename"]
    except (ValueError, LookupError, TypeError) as exc:
        raise PyodideFetchError(f"npm pack printed no package description: {result.stdout[:500]!r}") from exc
    tarball = cache_dir / Path(filename).name
    if not tarball.is_file():
        raise PyodideFetchError(f"npm pack reported {filename!r} but {tarball} does not exist")
    return tarball


def _unpack(tarball: Path, target: Path) -> None:
    """Extract PYODIDE_FILES from the npm tarball into ``target`` (replaced whole, stamp written last)."""
    with scratch_directory(target.parent, target.name) as staging:
        with tarfile.open(tarball, "r:gz") as archive:
            for name in PYODIDE_FILES:
                try:
                    member = archive.getmember(f"package/{name}")
                except KeyError:
                    raise PyodideFetchError(f"{tarball.name} has no package/{name}: not a Pyodide "
                                            f"{PYODIDE_VERSION} npm package") from None
                source = archive.extractfile(member)
                if source is None:
                    raise PyodideFetchError(f"{tarball.name}: package/{name} is not a regular file")
                with source, open(staging / name, "wb") as out:
                    shutil.copyfileobj(source, out)
        version = json.loads((staging / "package.json").read_text()).get("version")
        if version != PYODIDE_VERSION:
            raise PyodideFetchError(f"{tarball.name} holds Pyodide {version!r}, expected {PYODIDE_VERSION}")
        (staging / _STAMP).write_text(PYODIDE_VERSION + "\n")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)


def ensure_pyodide(cache_dir: Path, *, npm: str | None = None, log: Callable[[str], None] = print) -> Path:
    """The directory holding PYODIDE_FILES of Pyodide PYODIDE_VERSION, fetched with npm when not cached.

    ``npm`` is the npm executable (default: the one on PATH). Raises
    PyodideFetchError when npm is missing or fails, or when the package is not
    the expected release. Nothing is fetched when the cache is complete.
    """
    cache_dir = Path(cache_dir).resolve()
    target = pyodide_cache_path(cache_dir)
    remove_leftovers(cache_dir, target.name)  # the half-unpacked copies of builds killed while unpacking
    if _is_complete(target):
        return target
    npm = npm or shutil.which("npm")
    if npm is None:
        raise PyodideFetchError("npm is not installed (Debian: apt-get install npm); it fetches Pyodide "
                                f"{PYODIDE_VERSION} once into {cache_dir}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    tarball = cache_dir / f"pyodide-{PYODIDE_VERSION}.tgz"
    if not tarball.is_file():
        tarball = _npm_pack(npm, cache_dir, log)
    try:
        _unpack(tarball, target)
    except (tarfile.TarError, OSError, ValueError) as exc:
        tarball.unlink(missing_ok=True)  # a broken download is fetched again next time
        raise PyodideFetchError(f"cannot unpack {tarball.name}: {exc}") from exc
    log(f"Pyodide {PYODIDE_VERSION} unpacked into {target}")
    return target
