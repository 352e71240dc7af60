"""Building and serving atlas-web's static browser demo (standard library only).

``build.py`` dispatches here; nothing in this package imports atlas_web, so the
site can be built before the project is installed anywhere.

- ``pyodide_dist``: Pyodide from its npm package, fetched once into a cache;
- ``wheel``: pure-Python wheels (PEP 427) of the project and of the demo code;
- ``assemble``: www/ + Pyodide + the wheels -> www/dist/, with a manifest;
- ``lab``: the JupyterLite lab under www/dist/lab/, running offline on the site's Pyodide;
- ``snapshot``: the memory snapshot of the page's Python the page boots from, made in headless Chromium
  (``chromium``: the browser and flags the build, the tests and the benchmarks launch);
- ``scratch``: the temporary names the caches and the site are written under, and the removal of those a
  killed build left;
- ``server``: a static server with the MIME types and cross-origin isolation
  headers the page needs, in the foreground or in a thread.
"""

from __future__ import annotations

from .lab import LAB_DIR, LabBuildError, build_lab
from .assemble import DEMO_PACKAGES, MANIFEST_NAME, SiteManifest, build_site, read_manifest
from .pyodide_dist import PYODIDE_FILES, PYODIDE_VERSION, PyodideFetchError, ensure_pyodide
from .snapshot import SNAPSHOT_NAME, SnapshotError
from .server import RunningServer, SiteRequestHandler, SiteServer, serve_forever, start_server
from .wheel import ProjectMetadata, WheelError, project_metadata, write_wheel

__all__ = [
    "build_site", "read_manifest", "SiteManifest", "MANIFEST_NAME", "DEMO_PACKAGES",
    "ensure_pyodide", "PYODIDE_VERSION", "PYODIDE_FILES", "PyodideFetchError",
    "SiteServer", "SiteRequestHandler", "RunningServer", "start_server", "serve_forever",
    "ProjectMetadata", "project_metadata", "write_wheel", "WheelError", "build_lab", "LabBuildError", "LAB_DIR",
    "SNAPSHOT_NAME", "SnapshotError",
]
