"""The JupyterLite deployment of the site: ``<site>/lab/``, running fully offline.

JupyterLite's Pyodide kernel loads Pyodide from a CDN by default and then asks
Pyodide's lock for micropip, IPython and their dependencies, which the npm
Pyodide does not ship. ``build_lab`` therefore

1. points the kernel at the site's own Pyodide (``<site>/pyodide/``),
2. fetches the pure-Python wheels the kernel needs from the package index
   once (cached), puts those the lock names next to Pyodide with the lock's
   sha256 rewritten to the fetched files (Pyodide repacks its wheels, so
   the index's differ), and adds the others (``comm``, and the extension's
   own piplite, ipykernel and pyodide-kernel) to the lock,
3. adds the atlas-web wheel to the lock and has the kernel load it and all
   its start packages from the lock as Pyodide boots (``lab_preload``: no
   micropip/piplite installs one by one at every start), so ``import
   atlas_web`` works in the first cell (``%pip install atlas-web`` also
   works: piplite indexes the wheel),
4. adds bytecode to Pyodide's standard library and to the modules of the
   kernel's wheels that its start imports (atlas-web's copy beside Pyodide
   too), compiled by the site's Pyodide under Node (``lab_bytecode``;
   cached): the kernel, and the page's Pyodide, no longer compile them at
   every start,
5. copies the example notebooks (``notebooks/`` of the project) into the lab
   and runs ``jupyter lite build`` with a Python that has jupyterlite-core and
   jupyterlite-pyodide-kernel (the ``lab`` extra),
6. makes the kernel's page-worker bridge race-free (``lab_coincident``: the
   bundled coincident 1.2.3 let a busy machine stall the kernel for ever),
7. keeps a direct ``micropip.install`` in the kernel to the lab's own indexes, as
   ``%pip install`` is (``lab_micropip``: micropip would otherwise ask pypi.org).

Standard library only; the Python given does the JupyterLite work, Node the bytecode.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Iterable

from .lab_bytecode import BytecodeError, add_site_bytecode
from .lab_coincident import patch_coincident
from .lab_micropip import route_micropip
from .lab_preload import KERNEL_START_PACKAGES, check_worker_start, file_sha256, lock_entry
from .lab_preload import normalize_name as _normalize
from .pyodide_lock import LOCK_NAME

__all__ = ["LAB_DIR", "NOTEBOOKS_DIR", "KERNEL_START_IMPORTS", "KERNEL_PLUGIN", "KERNEL_STATIC",
           "INSTALLED_KERNEL_STATIC", "LabBuildError", "build_lab", "kernel_settings"]

#: where the lab goes inside the site
LAB_DIR = "lab"
#: the project's example notebooks, copied into the lab's files
NOTEBOOKS_DIR = "notebooks"
#: what the kernel's start imports (its worker's initPackageManager and initKernel) and the first cell
KERNEL_START_IMPORTS = ("micropip", "piplite.piplite", "pyodide_kernel", "atlas_web")
#: the JupyterLite plugin that runs the Pyodide kernel
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
#: the kernel extension's scripts as installed, under the Python's prefix (the ``lab`` extra)
INSTALLED_KERNEL_STATIC = Path("share/jupyter/labextensions/@jupyterlite/pyodide-kernel-extension/static")
#: the kernel extension's bundled wheels, under the Python's prefix
_KERNEL_WHEELS = INSTALLED_KERNEL_STATIC / "pypi"
#: the kernel extension's scripts in the built lab (under LAB_DIR)
KERNEL_STATIC = Path("extensions/@jupyterlite/pyodide-kernel-extension/static")
#: the lab's pages are lab/<app>/index.html: the site's Pyodide is two levels up from them
_PYODIDE_FROM_LAB_PAGES = "../../pyodide/pyodide.mjs"
#: the Python version of the npm Pyodide (wheels are fetched for it)
_PYODIDE_PYTHON = "3.14"
#: how long one step run by _run may take (a pip download or the lite build: seconds; a hung index is not)
_TOOL_TIMEOUT_S = 600


class LabBuildError(Exception):
    """The lab could not be built; the message says which step and why."""


def kernel_settings(atlas_package: str) -> dict:
    """The kernel plugin's settings: the site's Pyodide, no fallback to the public index, and the kernel's
    start packages and the atlas-web package (its name in Pyodide's lock) loaded as Pyodide boots."""
    return {"pyodideUrl": _PYODIDE_FROM_LAB_PAGES, "disablePyPIFallback": True,
            "loadPyodideOptions": {"packages": [*KERNEL_START_PACKAGES, atlas_package]}}


def _requirements(wheel: Path) -> list[str]:
    """The names a wheel requires unconditionally (Requires-Dist without an ``extra`` marker)."""
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode("utf-8")
    names = []
    for line in text.splitlines():
        if line.startswith("Requires-Dist:"):
            spec, _, marker = line[len("Requires-Dist:"):].partition(";")
            if "extra" not in marker:
                names.append(_normalize(re.split(r"[\s<>=!~(\[]", spec.strip(), maxsplit=1)[0]))
    return names


def _lock_closure(lock: dict, roots: Iterable[str]) -> list[str]:
    """The lock's package names reachable from ``roots`` through their ``depends``, sorted."""
    packages = {_normalize(name): name for name in lock["packages"]}
    seen: set[str] = set()
    todo = [_normalize(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen or name not in packages:
            continue
        seen.add(name)
        todo.extend(_normalize(d) for d in lock["packages"][packages[name]]["depends"])
    return sorted(packages[name] for name in seen)


def _run(command: list[str], what: str, log: Callable[[str], None], cwd: Path | None = None) -> None:
    """Run ``command`` (a step of the build: pip, jupyter lite); raises LabBuildError when it fails or
    outlives _TOOL_TIMEOUT_S (it is killed then)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=_TOOL_TIMEOUT_S)
    except subprocess.TimeoutExpired as error:
        raise LabBuildError(f"{what} took over {_TOOL_TIMEOUT_S:g} s: {' '.join(command)}") from error
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise LabBuildError(f"{what} failed (exit {done.returncode}): {' '.join(command)}\n{tail}")
    log(what)


def _fetch(python: str, cache: Path, requirement: str, pattern: str, log: Callable[[str], None]) -> Path:
    """The cached wheel matching ``pattern`` (a glob), fetched from the index for Pyodide's Python when
    missing. Raises LabBuildError when the index has no pure-Python wheel for ``requirement``."""
    found = sorted(cache.glob(pattern))
    if not found:
        _run([python, "-m", "pip", "download", "--disable-pip-version-check", "--quiet", "--no-deps",
              "--only-binary=:all:", "--python-version", _PYODIDE_PYTHON, "--dest", str(cache), requirement],
             f"fetched {requirement} for the lab's kernel", log)
        found = sorted(cache.glob(pattern))
        if not found:
            raise LabBuildError(f"the index gave no wheel named {pattern} for {requirement}")
    return found[-1]


def build_lab(root: Path, site_dir: Path, *, python: str, cache_dir: Path,
              log: Callable[[str], None] = print) -> dict:
    """Build the lab into ``site_dir/lab`` of an assembled site (Pyodide in ``site_dir/pyodide``, the
    atlas-web wheel in ``site_dir/wheels``), rewriting ``site_dir/pyodide/pyodide-lock.json``.

    ``python`` runs pip and ``jupyter lite build`` (it needs the ``lab`` extra); ``cache_dir`` keeps the
    fetched wheels between builds. Returns what was bundled: ``{"lock": [the lock's names given wheels],
    "notebooks": [...]}``. Raises LabBuildError (a missing tool, a wheel the index lacks, a requirement
    neither the lock nor the index gives, a kernel whose worker no longer preloads as expected, a failed
    build).
    """
    site_dir, root, cache_dir = Path(site_dir).resolve(), Path(root).resolve(), Path(cache_dir).resolve()
    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        prefix = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                                timeout=_TOOL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise LabBuildError(f"{python} could not be run: {error}") from error
    kernel_wheels = Path(prefix.stdout.strip()) / _KERNEL_WHEELS
    if prefix.returncode != 0 or not kernel_wheels.is_dir():
        raise LabBuildError(f"{python} has no jupyterlite-pyodide-kernel (install atlas-web[lab]): "
                            f"{kernel_wheels} is missing")
    lock_path = site_dir / "pyodide" / LOCK_NAME
    lock = json.loads(lock_path.read_text(encoding="utf-8"))
    bundled = {_normalize(w.name.split("-")[0]): w for w in kernel_wheels.glob("*.whl")}
    own = _bundled_closure(bundled, KERNEL_START_PACKAGES)
    wanted = ({_normalize(name) for name in KERNEL_START_PACKAGES}
              | {name for wheel in own.values() for name in _requirements(wheel)}) - own.keys()
    in_lock = {_normalize(name) for name in lock["packages"]}
    lock_names = _lock_closure(lock, [w for w in wanted if w in in_lock])
    for name in lock_names:
        entry = lock["packages"][name]
        wheel = _fetch(python, cache_dir, f"{name}=={entry['version']}", entry["file_name"], log)
        shutil.copyfile(wheel, site_dir / "pyodide" / entry["file_name"])
        entry["sha256"] = file_sha256(wheel)
    fetched = {name: _fetch(python, cache_dir, name, f"{name.replace('-', '_')}-*.whl", log)
               for name in sorted(wanted - in_lock)}
    added = _add_wheels(lock, site_dir, {**fetched, **own})
    atlas = _add_project_wheel(lock, site_dir)
    preloaded = [*lock_names, *added, atlas["name"]]
    kernel_files = [site_dir / "pyodide" / lock["packages"][name]["file_name"] for name in preloaded]
    lock_path.write_text(json.dumps(lock), encoding="utf-8")  # the bytecode's Pyodide loads them as the kernel
    try:
        add_site_bytecode(site_dir / "pyodide", kernel_files, cache_dir / "bytecode",
                          packages=kernel_settings(atlas["name"])["loadPyodideOptions"]["packages"],
                          imports=KERNEL_START_IMPORTS, log=log)
    except BytecodeError as error:
        raise LabBuildError(f"the kernel's bytecode could not be compiled: {error}") from error
    for name, path in zip(preloaded, kernel_files):
        lock["packages"][name]["sha256"] = file_sha256(path)
    lock_path.write_text(json.dumps(lock), encoding="utf-8")
    notebooks = sorted((root / NOTEBOOKS_DIR).glob("*.ipynb"))
    with tempfile.TemporaryDirectory(prefix="atlas-lab-") as work:
        lite = Path(work)
        (lite / "files").mkdir()
        for notebook in notebooks:
            shutil.copyfile(notebook, lite / "files" / notebook.name)
        config = {"jupyter-config-data": {"exposeAppInBrowser": "true",
                                          "litePluginSettings": {KERNEL_PLUGIN: kernel_settings(atlas["name"])}}}
        (lite / "jupyter-lite.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        wheels = [str(site_dir / atlas["wheel_path"])]
        (lite / "jupyter_lite_config.json").write_text(
            json.dumps({"PipliteAddon": {"piplite_urls": wheels}}, indent=2), encoding="utf-8")
        _run([python, "-c", "import sys; from jupyterlite_core.app import main; sys.exit(main())",
              "build", "--lite-dir", str(lite), "--output-dir", str(site_dir / LAB_DIR)],
             f"built the lab in {site_dir / LAB_DIR}", log, cwd=lite)  # its task database stays in the temp dir
    try:
        patched = patch_coincident(site_dir / LAB_DIR / KERNEL_STATIC)
    except ValueError as error:
        raise LabBuildError(f"the kernel's bridge could not be made race-free: {error}") from error
    log(f"made the kernel's bridge race-free in {', '.join(patched) or 'no file (already done)'}")
    try:
        routed = route_micropip(site_dir / LAB_DIR / KERNEL_STATIC)
    except ValueError as error:
        raise LabBuildError(f"the kernel's micropip cannot be kept to the lab's indexes: {error}") from error
    log(f"the kernel's micropip resolves from the lab's indexes ({', '.join(routed) or 'already routed'})")
    try:
        workers = check_worker_start(site_dir / LAB_DIR / KERNEL_STATIC)
    except ValueError as error:
        raise LabBuildError(f"the kernel's start packages cannot be preloaded: {error}") from error
    log(f"the kernel's start packages load from Pyodide's lock ({', '.join(workers)} skip their installs)")
    return {"lock": sorted(preloaded), "notebooks": [n.name for n in notebooks]}


def _bundled_closure(bundled: dict[str, Path], roots: Iterable[str]) -> dict[str, Path]:
    """The kernel extension's own wheels (``bundled``: normalized name -> wheel) reachable from ``roots``
    through their requirements: ``{normalized name: wheel}``."""
    found: dict[str, Path] = {}
    todo = [_normalize(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in bundled and name not in found:
            found[name] = bundled[name]
            todo.extend(_requirements(bundled[name]))
    return found


def _add_wheels(lock: dict, site_dir: Path, wheels: dict[str, Path]) -> list[str]:
    """Put ``wheels`` (lock name -> wheel) next to Pyodide and into the lock, their requirements as
    ``depends``; returns their names. Raises LabBuildError for a requirement the lock would not have."""
    names = {**{_normalize(name): name for name in lock["packages"]}, **{name: name for name in wheels}}
    for name, wheel in wheels.items():
        missing = [r for r in _requirements(wheel) if r not in names]
        if missing:
            raise LabBuildError(f"{wheel.name} requires {', '.join(missing)}, which Pyodide's lock lacks")
        shutil.copyfile(wheel, site_dir / "pyodide" / wheel.name)
        lock["packages"][name] = lock_entry(wheel, name, (names[r] for r in _requirements(wheel)))
    return sorted(wheels)


def _add_project_wheel(lock: dict, site_dir: Path) -> dict:
    """Put the atlas-web wheel next to Pyodide and into the lock, so the kernel can load it at start.

    Returns ``{"name": lock name, "wheel_path": path of the wheel relative to the site}``.
    """
    wheel = next(iter(sorted((site_dir / "wheels").glob("atlas_web-*-py3-none-any.whl"))), None)
    if wheel is None:
        raise LabBuildError(f"no atlas_web wheel in {site_dir / 'wheels'}: assemble the site first")
    shutil.copyfile(wheel, site_dir / "pyodide" / wheel.name)
    lock["packages"]["atlas-web"] = lock_entry(wheel, "atlas-web", [])
    return {"name": "atlas-web", "wheel_path": f"wheels/{wheel.name}"}
