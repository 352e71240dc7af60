"""Assemble the static site: www/ + Pyodide + the wheels -> www/dist/ (or any directory).

Layout of the built site::

    index.html, boot.js, worker.js, style.css, notebook.html, notebook.js   copied from www/
    pyodide/          the Pyodide files (PYODIDE_FILES), from the npm cache (with the lab: the kernel's
                      wheels and atlas-web's, the lock naming them, and bytecode in the kernel's
                      wheels and in python_stdlib.zip, which the page's Pyodide uses too); the lock
                      lists only packages whose files are here (sitebuild.pyodide_lock)
    lab/              the JupyterLite lab with the example notebooks (sitebuild.lab), when asked for
    wheels/           atlas_web-<v>-py3-none-any.whl        the project (atlas_web and the backends)
                      atlas_web_demo-<v>-py3-none-any.whl   the page's Python (webdemo) and the examples
    python.snapshot   Pyodide's memory with the wheels installed and the first result's modules imported
                      (sitebuild.snapshot; made in headless Chromium when ``snapshot_python`` is given)
    site.json         the manifest worker.js reads: Pyodide's path, the wheels, the module to start, the snapshot

The site is built in a sibling staging directory and moved into place at the
end, so a half-built site is never served (the staging directory of a build
that was killed is removed by the next: sitebuild.scratch).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from .lab import LAB_DIR, build_lab
from .pyodide_dist import PYODIDE_FILES, PYODIDE_VERSION, ensure_pyodide
from .pyodide_lock import prune_lock
from .scratch import remove_leftovers, scratch_directory
from .snapshot import ensure_snapshot
from .wheel import ProjectMetadata, find_packages, project_metadata, write_wheel

__all__ = ["MANIFEST_NAME", "DEMO_PACKAGES", "DEMO_DISTRIBUTION", "ENTRY_MODULE", "SiteManifest", "build_site",
           "read_manifest", "demo_metadata"]

#: the manifest worker.js (the page's Web Worker) fetches first
MANIFEST_NAME = "site.json"
#: the top-level packages of the demo wheel: the page's Python and the example programs
DEMO_PACKAGES: tuple[str, ...] = ("webdemo", "examples")
#: the distribution name of the demo wheel (a site artifact, not published)
DEMO_DISTRIBUTION = "atlas-web-demo"
#: the module whose ``start()`` coroutine worker.js awaits once the wheels are installed
ENTRY_MODULE = "webdemo.page"
_PYODIDE_DIR = "pyodide"
_WHEEL_DIR = "wheels"


@dataclass(frozen=True)
class SiteManifest:
    """What site.json says: relative URLs of Pyodide and the wheels, and the module to start."""

    pyodide_version: str
    pyodide_path: str
    wheels: tuple[str, ...]
    entry_module: str
    project_name: str
    project_version: str
    python_packages: tuple[str, ...]
    #: the JupyterLite lab's directory ("lab/"), or "" when the site was built without it
    lab_path: str = ""
    #: the memory snapshot worker.js boots from (sitebuild.snapshot), "" when the site has none; its key (the
    #: file must carry the same) and the runtime features it was made with (worker.js restores it only there)
    snapshot_path: str = ""
    snapshot_key: str = ""
    snapshot_features: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"


def read_manifest(site_dir: Path) -> SiteManifest:
    """The manifest of a built site; raises FileNotFoundError when there is none, ValueError when malformed."""
    data = json.loads((Path(site_dir) / MANIFEST_NAME).read_text(encoding="utf-8"))
    try:
        return SiteManifest(**{key: tuple(value) if isinstance(value, list) else value for key, value in data.items()})
    except TypeError as exc:
        raise ValueError(f"{MANIFEST_NAME} of {site_dir} does not match SiteManifest: {exc}") from None


def demo_metadata(root: Path, project: ProjectMetadata) -> ProjectMetadata:
    """The demo wheel's metadata: DEMO_PACKAGES and their subpackages, requiring this exact project version."""
    return ProjectMetadata(
        name=DEMO_DISTRIBUTION, version=project.version,
        packages=tuple(find_packages(root, [p for top in DEMO_PACKAGES for p in (top, f"{top}.*")])),
        summary="The atlas-web browser demo (webdemo) and the example programs (examples)",
        requires_python=project.requires_python, requires_dist=(f"{project.name}=={project.version}",))


def _copy_static(www: Path, staging: Path, dist_dir: Path) -> None:
    """Copy www/ into ``staging``, leaving out the built site itself and hidden files."""
    for source in sorted(www.rglob("*")):
        relative = source.relative_to(www)
        if source.resolve() == dist_dir.resolve() or dist_dir.resolve() in source.resolve().parents:
            continue
        if any(part.startswith(".") for part in relative.parts) or not source.is_file():
            continue
        target = staging / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def build_site(root: Path, dist_dir: Path | None = None, *, cache_dir: Path | None = None,
               lab_python: str | None = None, snapshot_python: str | None = None,
               log: Callable[[str], None] = print) -> SiteManifest:
    """Build the site of the project at ``root`` into ``dist_dir`` (default ``root/www/dist``).

    ``cache_dir`` holds the npm download (default ``root/.cache/npm``). With
    ``lab_python`` (a Python with the ``lab`` extra) the JupyterLite lab is
    built too, under ``lab/`` (see sitebuild.lab; the wheels it fetches are
    cached beside the npm cache). With ``snapshot_python`` (a Python with
    Playwright) the page's memory snapshot is made in headless Chromium, or
    taken from the ``snapshots`` cache beside the npm cache (sitebuild.snapshot);
    without it, or without Chromium, the page starts Python without one.
    Returns the manifest written. Raises PyodideFetchError when Pyodide cannot
    be fetched, WheelError for a bad pyproject.toml, LabBuildError when the lab
    cannot be built, SnapshotError when the snapshot cannot be made, OSError
    for file errors.
    """
    root = Path(root).resolve()
    www = root / "www"
    dist_dir = Path(dist_dir).resolve() if dist_dir is not None else www / "dist"
    npm_cache = Path(cache_dir) if cache_dir is not None else root / ".cache" / "npm"
    pyodide_dir = ensure_pyodide(npm_cache, log=log)
    project = project_metadata(root)
    demo = demo_metadata(root, project)
    remove_leftovers(dist_dir.parent, f".{dist_dir.name}")  # the staging directories of builds killed midway
    with scratch_directory(dist_dir.parent, f".{dist_dir.name}") as staging:
        _copy_static(www, staging, dist_dir)
        (staging / _PYODIDE_DIR).mkdir()
        for name in PYODIDE_FILES:
            shutil.copyfile(pyodide_dir / name, staging / _PYODIDE_DIR / name)
        wheels = tuple(f"{_WHEEL_DIR}/{write_wheel(meta, root, staging / _WHEEL_DIR).name}" for meta in (project, demo))
        lab_path = ""
        if lab_python is not None:
            build_lab(root, staging, python=lab_python, cache_dir=npm_cache.parent / "lab-wheels", log=log)
            lab_path = f"{LAB_DIR}/"
        dropped = prune_lock(staging / _PYODIDE_DIR)
        log(f"Pyodide's lock lists only what the site ships ({len(dropped)} packages it does not ship dropped)")
        manifest = SiteManifest(
            pyodide_version=PYODIDE_VERSION, pyodide_path=f"{_PYODIDE_DIR}/", wheels=wheels,
            entry_module=ENTRY_MODULE, project_name=project.name, project_version=project.version,
            python_packages=tuple(sorted({p.split(".")[0] for p in project.packages + demo.packages})),
            lab_path=lab_path)
        (staging / MANIFEST_NAME).write_text(manifest.to_json(), encoding="utf-8")
        snapshot = None if snapshot_python is None else ensure_snapshot(
            staging, wheels, ENTRY_MODULE, python=snapshot_python, cache_dir=npm_cache.parent / "snapshots", log=log)
        if snapshot is not None:
            manifest = replace(manifest, snapshot_path=snapshot.path, snapshot_key=snapshot.key,
                               snapshot_features=snapshot.features)
            (staging / MANIFEST_NAME).write_text(manifest.to_json(), encoding="utf-8")
        staging.chmod(0o755)
        if dist_dir.exists():
            shutil.rmtree(dist_dir)
        os.replace(staging, dist_dir)
    log(f"site built in {dist_dir}: Pyodide {PYODIDE_VERSION}, {', '.join(manifest.wheels)}"
        + (f", memory snapshot for {manifest.snapshot_features}" if manifest.snapshot_path else ", no memory snapshot"))
    return manifest
