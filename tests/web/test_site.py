"""The built site over HTTP: layout, manifest, MIME types and cross-origin isolation headers."""

from __future__ import annotations

import urllib.error
import urllib.request
import zipfile

import pytest

import sitebuild
from sitebuild.server import ISOLATION_HEADERS

EXPECTED_TYPES = {
    "index.html": "text/html",
    "boot.js": "text/javascript",
    "worker.js": "text/javascript",
    "style.css": "text/css",
    "site.json": "application/json",
    "pyodide/pyodide.mjs": "text/javascript",
    "pyodide/pyodide.asm.mjs": "text/javascript",
    "pyodide/pyodide.asm.wasm": "application/wasm",
    "pyodide/pyodide-lock.json": "application/json",
    "pyodide/python_stdlib.zip": "application/zip",
}


def _head(url: str):
    with urllib.request.urlopen(urllib.request.Request(url, method="HEAD")) as response:
        return response.status, response.headers


@pytest.mark.parametrize("path", sorted(EXPECTED_TYPES))
def test_files_are_served_with_their_type_and_the_isolation_headers(site_url, path):
    status, headers = _head(site_url + path)
    assert status == 200
    assert headers["Content-Type"].split(";")[0] == EXPECTED_TYPES[path]
    for name, value in ISOLATION_HEADERS.items():
        assert headers[name] == value


def test_a_missing_file_is_a_404_with_the_headers_too(site_url):
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(site_url + "no-such-file.js")
    assert caught.value.code == 404
    assert caught.value.headers["Cross-Origin-Embedder-Policy"] == "require-corp"


def test_manifest_names_pyodide_and_pure_python_wheels(site_dir):
    manifest = sitebuild.read_manifest(site_dir)
    assert manifest.pyodide_version == sitebuild.PYODIDE_VERSION == "314.0.7"
    for name in sitebuild.PYODIDE_FILES:
        assert (site_dir / manifest.pyodide_path / name).is_file()
    assert [w.rsplit("/", 1)[1] for w in manifest.wheels] == [
        f"atlas_web-{manifest.project_version}-py3-none-any.whl",
        f"atlas_web_demo-{manifest.project_version}-py3-none-any.whl"]
    with zipfile.ZipFile(site_dir / manifest.wheels[0]) as wheel:
        names = wheel.namelist()
    assert "atlas_web/__init__.py" in names and "atlas_web/isa/opcodes.py" in names
    assert not any(name.startswith(("examples/", "webdemo/", "tests/")) for name in names)
    with zipfile.ZipFile(site_dir / manifest.wheels[1]) as wheel:
        tops = {name.split("/")[0] for name in wheel.namelist()}
    assert {"examples", "webdemo"} <= tops and "atlas_web" not in tops


def test_our_files_point_at_no_other_origin(site_dir):
    for path in site_dir.iterdir():
        if path.suffix in {".html", ".js", ".css", ".json"}:
            text = path.read_text(encoding="utf-8")
            assert "http://" not in text.replace("http://www.w3.org/", "") and "https://" not in text, path
