"""The page's memory snapshot: Pyodide with our wheels installed and the first result's modules imported.

Starting CPython in Pyodide is most of the page's load (seconds of compute
after the files arrive). A memory snapshot (Pyodide's ``_makeSnapshot`` /
``makeMemorySnapshot`` / ``_loadSnapshot``) is the wasm memory of a Python that
already started: www/worker.js restores it, writes back the files of
site-packages (the wheels as installed: Pyodide's file system lives in JS, not
in the wasm memory, so the worker ships them in the same file) and starts the
page with the modules of the first result already imported (webdemo.preload).

The snapshot is made at build time **in headless Chromium** (CHROMIUM, through
Playwright, in a subprocess: ``python -m sitebuild.snapshot SITE OUT``), by
the worker itself in its ``make-snapshot`` mode, so it holds exactly what the
worker would hold. It cannot be made in Node: a snapshot keeps choices CPython
and Pyodide make at start-up from the runtime's features -- whether JS Promise
Integration exists (Pyodide's run_sync; Node 20 has none, so a Node snapshot's
run_sync raises "WebAssembly stack switching not supported in this JavaScript
runtime") and CPython's wasm call trampoline (wasm GC; Node 20 has none, so a
Node snapshot keeps the JS trampoline and Chromium's JSPI traps with
"SuspendError: trying to suspend JS frames"). The worker therefore restores a
snapshot only where its own features (worker.js snapshotFeatures, recorded
here as ``features``) are the maker's, and falls back to a normal start
otherwise or when restoring fails.

The file (SNAPSHOT_NAME) is SNAPSHOT_MAGIC, the key's length (u32, little
endian), the key (UTF-8) and, from the next multiple of 16, the worker's
payload (worker.js packPayload: the files of site-packages and Pyodide's
snapshot less its all-zero 64 KiB chunks; 22 MB). It is not compressed: gzip
makes it 8 MB, but inflating that in the worker (DecompressionStream) took
0.5 s on this 2-core machine, more than moving the bytes from a local server or
the HTTP cache; a host that compresses its responses sends it compressed
anyway. The key (``snapshot_key``) is a hash of the Pyodide release, the
wheels, worker.js, the standard library zip, Pyodide's lock and the entry module: site.json names it and the worker
refuses a file with another key. Made snapshots are cached under the build's
cache directory by key (``<key>.snapshot`` and ``<key>.features``; the
CACHE_KEPT newest are kept; made in a scratch directory beside them, see
sitebuild.scratch), so a rebuild with the same wheels costs nothing; a
miss costs one Chromium boot of Pyodide (~10 s on an idle 2-core machine).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence
from urllib.parse import unquote

from .chromium import CHROMIUM, launch
from .lab_bytecode import STDLIB_ZIP
from .lab_preload import file_sha256
from .pyodide_dist import PYODIDE_VERSION
from .pyodide_lock import LOCK_NAME
from .scratch import remove_leftovers, scratch_directory
from .server import ISOLATION_HEADERS, start_server

__all__ = ["SNAPSHOT_NAME", "SNAPSHOT_MAGIC", "MAKE_TIMEOUT_S", "Snapshot", "SnapshotError", "snapshot_key",
           "ensure_snapshot", "make_snapshot", "pack_snapshot", "payload_of", "CACHE_KEPT"]

#: the snapshot's file in the built site
SNAPSHOT_NAME = "python.snapshot"
#: Pyodide's standard library zip in the built site (part of the key)
STDLIB_IN_SITE = f"pyodide/{STDLIB_ZIP}"
#: Pyodide's lock in the built site (part of the key: Pyodide reads it as it boots, and the build prunes it)
LOCK_IN_SITE = f"pyodide/{LOCK_NAME}"
#: the first 8 bytes of SNAPSHOT_NAME (worker.js checks them)
SNAPSHOT_MAGIC = b"ATLASNAP"
#: how many made snapshots the cache keeps (the newest)
CACHE_KEPT = 3
#: how long making the snapshot may take: one Pyodide boot, ~10 s idle, minutes on 2 busy cores
MAKE_TIMEOUT_S = 420
#: how long importing Playwright in the snapshot's Python may take (a second or two on busy cores)
_PROBE_TIMEOUT_S = 120
_MAKER_PAGE = "__make_snapshot__.html"
_UPLOAD = "__snapshot__"
#: the page the build opens: it starts worker.js in its make-snapshot mode and posts the snapshot back
_MAKER_HTML = f"""<!doctype html><meta charset="utf-8"><title>making the snapshot</title>
<script type="module">
const worker = new Worker("worker.js?make-snapshot", {{ type: "module" }});
worker.onerror = (event) => {{ window.snapshotResult = {{ failed: event.message || "the worker did not start" }}; }};
worker.onmessage = async ({{ data }}) => {{
  if (data.failed) window.snapshotResult = {{ failed: data.failed }};
  if (!data.snapshot) return;
  try {{
    const response = await fetch("{_UPLOAD}?features=" + encodeURIComponent(data.features),
                                 {{ method: "POST", body: data.snapshot }});
    window.snapshotResult = response.ok ? {{ done: true }} : {{ failed: `upload: HTTP ${{response.status}}` }};
  }} catch (error) {{  // the connection failed: say so now rather than when MAKE_TIMEOUT_S runs out
    window.snapshotResult = {{ failed: `upload: ${{error && error.message ? error.message : error}}` }};
  }}
}};
</script>"""


class SnapshotError(Exception):
    """Making the snapshot failed: the browser could not start, the worker failed, or it took too long."""


@dataclass(frozen=True)
class Snapshot:
    """A snapshot in the built site: its file name, key and the runtime features it was made with."""

    path: str
    key: str
    features: str


def snapshot_key(site_dir: Path, wheels: Sequence[str], entry_module: str) -> str:
    """The hash naming one snapshot: PYODIDE_VERSION, the wheels' bytes, worker.js's bytes, the bytes of
    Pyodide's standard library zip (the lab's build adds bytecode to it, and the snapshot's zipimport holds
    its member offsets), the bytes of Pyodide's lock (the build rewrites it; the booted Python's package
    hints come from it) and the entry module."""
    digest = hashlib.sha256(f"atlas-web snapshot 1\0{PYODIDE_VERSION}\0{entry_module}\0".encode())
    for relative in (*wheels, "worker.js", STDLIB_IN_SITE, LOCK_IN_SITE):
        digest.update(relative.encode() + b"\0" + bytes.fromhex(file_sha256(Path(site_dir) / relative)))
    return digest.hexdigest()


def pack_snapshot(key: str, payload: bytes) -> bytes:
    """SNAPSHOT_NAME's bytes: SNAPSHOT_MAGIC, the key's length and bytes, zeros up to a multiple of 16 (Pyodide
    reads the memory inside ``payload`` through a Uint32Array), the worker's ``payload``."""
    header = SNAPSHOT_MAGIC + struct.pack("<I", len(key.encode())) + key.encode()
    return header + bytes(-len(header) % 16) + payload


def payload_of(packed: bytes) -> bytes:
    """The worker's payload inside SNAPSHOT_NAME's bytes ``packed`` (pack_snapshot's inverse, less the key)."""
    (length,) = struct.unpack_from("<I", packed, len(SNAPSHOT_MAGIC))
    return packed[-(-(12 + length) // 16) * 16:]


def _prune(cache_dir: Path) -> None:
    """Keep the CACHE_KEPT newest snapshots of ``cache_dir`` (each is ~22 MB)."""
    made = sorted(cache_dir.glob("*.snapshot"), key=lambda path: path.stat().st_mtime, reverse=True)
    for old in made[CACHE_KEPT:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".features").unlink(missing_ok=True)


def _browser_missing(python: str) -> str:
    """Why ``python`` cannot make a snapshot here ("" when it can)."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (`python3 build.py test` installs Debian's chromium)"
    try:
        probe = subprocess.run([python, "-c", "import playwright.sync_api"], capture_output=True, text=True,
                               timeout=_PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"{python} did not import Playwright within {_PROBE_TIMEOUT_S} s"
    if probe.returncode != 0:
        return f"{python} has no Playwright (the test extra)"
    return ""


def ensure_snapshot(site_dir: Path, wheels: Sequence[str], entry_module: str, *, python: str, cache_dir: Path,
                    log: Callable[[str], None] = print) -> Snapshot | None:
    """Put the snapshot of the site at ``site_dir`` (its site.json and wheels written) into it as SNAPSHOT_NAME.

    Taken from ``cache_dir`` when one with the same key was made before, else
    made with ``python`` (a Python with Playwright) in CHROMIUM. Returns None,
    saying why through ``log``, when there is no Chromium or Playwright (the
    site then boots without a snapshot). Raises SnapshotError when making it
    fails or its subprocess outlives MAKE_TIMEOUT_S (plus a minute; killed
    then), OSError for file errors.
    """
    site_dir, cache_dir = Path(site_dir), Path(cache_dir)
    remove_leftovers(cache_dir)  # the scratch directories of builds killed while making a snapshot
    key = snapshot_key(site_dir, wheels, entry_module)
    packed, features_file = cache_dir / f"{key}.snapshot", cache_dir / f"{key}.features"
    if not (packed.is_file() and features_file.is_file()):
        missing = _browser_missing(python)
        if missing:
            log(f"no memory snapshot (the page starts Python without one): {missing}")
            return None
        with scratch_directory(cache_dir, "snapshot") as scratch:
            out = scratch / "snapshot"
            command = [python, "-m", "sitebuild.snapshot", str(site_dir), str(out), key]
            try:
                result = subprocess.run(command, cwd=Path(__file__).resolve().parents[1], capture_output=True,
                                        text=True, timeout=MAKE_TIMEOUT_S + 60)
            except subprocess.TimeoutExpired as error:  # the maker itself hung (its own wait is MAKE_TIMEOUT_S)
                raise SnapshotError(f"making the memory snapshot took over {MAKE_TIMEOUT_S + 60} s: {command}") \
                    from error
            if result.returncode != 0:
                raise SnapshotError(f"making the memory snapshot failed: {result.stderr.strip()[-3000:]}")
            os.replace(out.with_suffix(".features"), features_file)
            os.replace(out, packed)
        _prune(cache_dir)
        log(f"memory snapshot made in {CHROMIUM.name} ({packed.stat().st_size} bytes)")
    shutil.copyfile(packed, site_dir / SNAPSHOT_NAME)
    return Snapshot(path=SNAPSHOT_NAME, key=key, features=features_file.read_text(encoding="utf-8").strip())


def make_snapshot(site_dir: Path, timeout_s: float = MAKE_TIMEOUT_S) -> tuple[bytes, str]:
    """(the worker's payload: site-packages' files and Pyodide's snapshot, the features worker.js reported) of
    the site at ``site_dir``, made by its worker in CHROMIUM (Playwright needed). Raises SnapshotError when the worker fails or takes over ``timeout_s``."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    uploaded: dict[str, object] = {}

    def receive(route) -> None:
        request = route.request
        uploaded["payload"] = request.post_data_buffer
        uploaded["features"] = request.url.split("features=", 1)[1]
        route.fulfill(status=200, headers=dict(ISOLATION_HEADERS), body="ok")

    with start_server(Path(site_dir)) as server, sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = browser.new_page()
            page.route(server.url + _MAKER_PAGE, lambda route: route.fulfill(
                status=200, headers={**ISOLATION_HEADERS, "Content-Type": "text/html; charset=utf-8"},
                body=_MAKER_HTML))
            page.route(server.url + _UPLOAD + "*", receive)
            page.goto(server.url + _MAKER_PAGE)
            try:
                page.wait_for_function("window.snapshotResult", timeout=timeout_s * 1000, polling=200)
            except PlaywrightError as exc:
                raise SnapshotError(f"the worker made no snapshot within {timeout_s:g} s: {exc}") from None
            outcome = page.evaluate("window.snapshotResult")
            if outcome.get("failed"):
                raise SnapshotError(f"the worker could not make the snapshot: {outcome['failed']}")
        finally:
            browser.close()
    return bytes(uploaded["payload"]), unquote(str(uploaded["features"]))


def main(argv: list[str] | None = None) -> int:
    """``python -m sitebuild.snapshot SITE OUT KEY``: make the snapshot of SITE, write OUT (packed with KEY,
    see pack_snapshot) and OUT.features."""
    site, out, key = (argv if argv is not None else sys.argv[1:])
    payload, features = make_snapshot(Path(site))
    out_path = Path(out)
    out_path.with_suffix(".features").write_text(features + "\n", encoding="utf-8")
    out_path.write_bytes(pack_snapshot(key, payload))
    print(json.dumps({"bytes": len(payload), "features": features}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
