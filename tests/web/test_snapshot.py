"""The page boots its Python from the site's memory snapshot (sitebuild.snapshot), and a snapshot that cannot be
used -- a corrupt file, one whose files cannot be written back once its memory is restored, one made for other
wheels -- makes it start Python normally and say why, never a blank page."""

from __future__ import annotations

import json
import re
import struct

import pytest

import sitebuild
from sitebuild.snapshot import pack_snapshot, payload_of

from .conftest import open_page, run_python

#: what the restored Python must still do: wait on a promise (JS Promise Integration survives the snapshot), import
#: a module the snapshot did not (the wheels' files are installed again), and hold the first result's modules
_RESTORED = """
from pyodide.ffi import can_run_sync, run_sync
import js, sys
import wasm_backend
result = [can_run_sync(), run_sync(js.Promise.resolve(7)), "webdemo.preload" in sys.modules,
          "examples.collatz" in sys.modules]
"""


def test_the_demo_page_boots_from_the_memory_snapshot(demo, site_dir):
    page, log = demo
    manifest = sitebuild.read_manifest(site_dir)
    assert manifest.snapshot_path == sitebuild.SNAPSHOT_NAME and manifest.snapshot_features
    packed = (site_dir / manifest.snapshot_path).read_bytes()
    assert packed == pack_snapshot(manifest.snapshot_key, payload_of(packed))
    assert page.evaluate("[document.body.dataset.boot, window.atlasWeb.boot.source]") == ["snapshot", "snapshot"]
    assert "memory snapshot" in page.inner_text("#boot-timings")
    assert run_python(page, _RESTORED) == [True, 7, True, True]
    assert log.errors == []


def test_pages_restored_from_one_snapshot_draw_different_random_numbers(demo, browser, site_url):
    """The snapshot holds the maker's state of Python's random module (atlas_web imports it): the worker reseeds
    it after restoring, so two pages do not draw the same numbers."""
    draw = "import random, sys\nresult = ['random' in sys.modules, random.getrandbits(64)]"
    other, log = open_page(browser, site_url + "index.html", "window.atlasWeb && window.atlasWeb.ready")
    try:
        assert other.evaluate("window.atlasWeb.boot.source") == "snapshot"
        theirs = run_python(other, draw)
    finally:
        other.close()
    ours = run_python(demo[0], draw)
    assert ours[0] and theirs[0], "the snapshot no longer holds the random module: this test checks nothing"
    assert ours[1] != theirs[1]
    assert log.errors == []


def _variant(site_dir, target, **replaced: bytes):
    """A copy of the site at ``target``: symbolic links to ``site_dir``'s entries but the files in ``replaced``
    (name -> bytes)."""
    target.mkdir()
    for entry in site_dir.iterdir():
        if entry.name in replaced:
            (target / entry.name).write_bytes(replaced[entry.name])
        else:
            (target / entry.name).symlink_to(entry)
    return target


def _unpacked(site_dir) -> tuple[str, dict, bytes]:
    """(the key, the JSON index, the bytes the index's offsets count from) of the site's snapshot. The payload's
    layout is worker.js's packPayload: a u32 length, a JSON index, from the next multiple of 16 the files and the
    memory's chunks."""
    payload = payload_of((site_dir / sitebuild.SNAPSHOT_NAME).read_bytes())
    (length,) = struct.unpack_from("<I", payload)
    return (sitebuild.read_manifest(site_dir).snapshot_key, json.loads(payload[4:4 + length]),
            payload[-(-(4 + length) // 16) * 16:])


def _repacked(key: str, index: dict, data: bytes) -> dict[str, bytes]:
    """The snapshot file holding ``index`` and ``data`` (_unpacked's inverse)."""
    text = json.dumps(index).encode()
    head = struct.pack("<I", len(text)) + text
    return {sitebuild.SNAPSHOT_NAME: pack_snapshot(key, head + bytes(-len(head) % 16) + data)}


def _corrupt_snapshot(site_dir) -> dict[str, bytes]:
    """The snapshot with its key and files intact but Pyodide's memory without its magic number (Pyodide refuses
    to restore it)."""
    key, index, data = _unpacked(site_dir)
    memory = index["memory"]["offset"]
    data = data[:memory] + b"\0\0\0\0" + data[memory + 4:]  # the first chunk (Pyodide's header) is never all zeros
    return _repacked(key, index, data)


def _damaged_file_list(site_dir) -> dict[str, bytes]:
    """The snapshot with its key and memory intact but its first file's path cut to the site-packages directory:
    Pyodide restores the memory, then the worker cannot write that file back (a directory is there)."""
    key, index, data = _unpacked(site_dir)
    path = index["files"][0][0]
    index["files"][0][0] = path[:path.index("/site-packages/") + len("/site-packages")]
    return _repacked(key, index, data)


def _truncated_snapshot(site_dir) -> dict[str, bytes]:
    """The snapshot cut short by 64 KiB (an interrupted upload): its key and index intact, the end of Pyodide's
    memory missing."""
    packed = (site_dir / sitebuild.SNAPSHOT_NAME).read_bytes()
    return {sitebuild.SNAPSHOT_NAME: packed[:-65536]}


def _other_key(site_dir) -> dict[str, bytes]:
    """site.json naming another key than the snapshot's (as if the wheels changed and the snapshot did not)."""
    manifest = json.loads((site_dir / sitebuild.MANIFEST_NAME).read_text(encoding="utf-8"))
    manifest["snapshot_key"] = "0" * 64
    return {sitebuild.MANIFEST_NAME: json.dumps(manifest).encode()}


#: reasons are regular expressions: the damaged file list's names the path and Emscripten's errno (its FS errors
#: carry no message)
@pytest.mark.parametrize(("variant", "reason"), [(_corrupt_snapshot, "invalid magic number"),
                                                 (_damaged_file_list, "writing the snapshot's files back failed: "
                                                                      r"/\S+/site-packages: file system error \d+"),
                                                 (_truncated_snapshot, "the file is truncated"),
                                                 (_other_key, "made for other wheels or another Pyodide")])
def test_an_unusable_snapshot_starts_python_normally_and_says_why(browser, site_dir, tmp_path, variant, reason):
    served = _variant(site_dir, tmp_path / "site", **variant(site_dir))
    with sitebuild.start_server(served) as server:
        page, log = open_page(browser, server.url + "index.html", "window.atlasWeb && window.atlasWeb.ready")
        try:
            boot = page.evaluate("window.atlasWeb.boot")
            rows = page.eval_on_selector_all("#checks-body tr", "rows => rows.map(r => r.dataset.ok)")
            shown = page.inner_text("#boot-timings")
        finally:
            page.close()
    assert boot["source"] == "normal" and re.search(reason, boot["note"]), boot  # reason: a regular expression
    assert re.search(reason, shown), shown
    assert rows == ["true"] * 5
    assert log.errors == []
