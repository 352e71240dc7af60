"""sitebuild natively: wheels, Pyodide fetching (with a stand-in npm), the server, and build.py's site commands."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path

import pytest

import sitebuild
from sitebuild import pyodide_dist, pyodide_lock, scratch, snapshot
from sitebuild.wheel import ProjectMetadata, find_packages, project_metadata, wheel_filename, write_wheel

ROOT = Path(__file__).resolve().parent.parent


# ---- wheels -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def project_wheel(tmp_path_factory) -> Path:
    return write_wheel(project_metadata(ROOT), ROOT, tmp_path_factory.mktemp("wheel"))


def test_project_metadata_follows_pyproject():
    meta = project_metadata(ROOT)
    assert (meta.name, meta.requires_python) == ("atlas-web", ">=3.11")
    assert "atlas_web" in meta.packages and "atlas_web.isa" in meta.packages
    assert not {"examples", "webdemo", "tests", "sitebuild", "demo"} & set(meta.packages)
    assert 'numpy>=1.26; extra == "cpu"' in meta.requires_dist


def test_find_packages_needs_init_files_and_matching_names(tmp_path):
    for path in ("a/__init__.py", "a/sub/__init__.py", "a/data/x.py", "b/__init__.py", "c/x.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert find_packages(tmp_path, ["a", "a.*"]) == ["a", "a.sub"]
    assert find_packages(tmp_path, ["b", "c"]) == ["b"]  # c has no __init__.py


def test_the_wheel_is_pure_python_with_a_valid_record(project_wheel):
    assert project_wheel.name == "atlas_web-0.1.0-py3-none-any.whl" == wheel_filename("atlas-web", "0.1.0")
    with zipfile.ZipFile(project_wheel) as wheel:
        names = wheel.namelist()
        info = "atlas_web-0.1.0.dist-info"
        assert wheel.read(f"{info}/WHEEL").decode().splitlines()[2:] == ["Root-Is-Purelib: true",
                                                                        "Tag: py3-none-any"]
        metadata = wheel.read(f"{info}/METADATA").decode()
        assert "Name: atlas-web\nVersion: 0.1.0\n" in metadata and "Provides-Extra: wasm" in metadata
        assert "atlas-web = atlas_web.__main__:main" in wheel.read(f"{info}/entry_points.txt").decode()
        rows = list(csv.reader(io.StringIO(wheel.read(f"{info}/RECORD").decode())))
        assert sorted(row[0] for row in rows) == sorted(names)
        for path, digest, size in rows:
            if path.endswith("RECORD"):
                assert digest == size == ""
                continue
            data = wheel.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (f"sha256={expected}", len(data)), path
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "atlas_web").rglob("*.py")}
    assert sources <= set(names)
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)


def test_wheels_are_reproducible(tmp_path):
    project = tmp_path / "project"
    (project / "pkg" / "sub").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "Some.Thing"\nversion = "2.0"\ndependencies = ["x>=1"]\n'
        '[tool.setuptools.packages.find]\ninclude = ["pkg", "pkg.*"]\n')
    for name in ("pkg/__init__.py", "pkg/a.py", "pkg/sub/__init__.py"):
        (project / name).write_text(f"# {name}\n")
    first = write_wheel(project_metadata(project), project, tmp_path / "one")
    os.utime(project / "pkg" / "a.py", (1_000_000_000, 1_000_000_000))  # file times do not matter
    second = write_wheel(project_metadata(project), project, tmp_path / "two")
    assert first.name == "some_thing-2.0-py3-none-any.whl"
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as wheel:
        assert wheel.namelist()[:3] == ["pkg/__init__.py", "pkg/a.py", "pkg/sub/__init__.py"]
        assert "Requires-Dist: x>=1" in wheel.read("some_thing-2.0.dist-info/METADATA").decode()


def test_pip_installs_the_wheel_and_it_imports(project_wheel, tmp_path):
    target = tmp_path / "site-packages"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--target", str(target), str(project_wheel)], check=True)
    code = "import atlas_web, sys; print(atlas_web.__file__)"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(target)},
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert out.startswith(str(target))
    assert (target / "atlas_web-0.1.0.dist-info" / "RECORD").is_file()


def test_a_name_that_is_no_package_is_refused(tmp_path):
    meta = ProjectMetadata(name="x", version="1", packages=("missing",))
    with pytest.raises(sitebuild.WheelError, match="'missing' is not a package"):
        write_wheel(meta, tmp_path, tmp_path)


# ---- Pyodide from npm (a stand-in npm: no network in tests) ------------------------------------

def _fake_npm(directory: Path, version: str) -> Path:
    """An ``npm`` that answers ``pack`` with a tarball like Pyodide's and counts its calls."""
    package = io.BytesIO()
    with tarfile.open(fileobj=package, mode="w:gz") as archive:
        for name in pyodide_dist.PYODIDE_FILES:
            data = json.dumps({"name": "pyodide", "version": version}).encode() if name == "package.json" \
                else f"contents of {name}".encode()
            member = tarfile.TarInfo(f"package/{name}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    (directory / "pyodide.tgz").write_bytes(package.getvalue())
    script = directory / "npm"
    script.write_text(
        "#!/bin/sh\n"
        f'echo call >> "{directory}/calls"\n'
        'dest=""; while [ $# -gt 0 ]; do [ "$1" = "--pack-destination" ] && dest="$2"; shift; done\n'
        f'cp "{directory}/pyodide.tgz" "$dest/pyodide-{pyodide_dist.PYODIDE_VERSION}.tgz"\n'
        f'echo \'[{{"filename": "pyodide-{pyodide_dist.PYODIDE_VERSION}.tgz"}}]\'\n')
    script.chmod(0o755)
    return script


def _dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _plant_leftovers(directory: Path, stem: str) -> tuple[Path, Path]:
    """(a scratch directory of a killed build, a scratch file of this running one) named as sitebuild.scratch
    names them, in ``directory``."""
    dead = directory / f"{stem}.{_dead_pid()}.abcd1234{scratch.SCRATCH_SUFFIX}"
    (dead / "half").mkdir(parents=True)
    (dead / "half" / "written").write_bytes(b"x" * 100)
    live = directory / f"{stem}.{os.getpid()}.efgh5678{scratch.SCRATCH_SUFFIX}"
    live.write_bytes(b"being written")
    return dead, live


def test_scratch_entries_of_killed_builds_are_removed_and_others_kept(tmp_path):
    dead, live = _plant_leftovers(tmp_path, "site.zip")
    old = tmp_path / f"site.zip.{os.getpid()}.ijkl9012{scratch.SCRATCH_SUFFIX}"  # a reused pid: too old to be live
    old.write_bytes(b"")
    os.utime(old, (0, 0))
    other_stem = tmp_path / f"other.{_dead_pid()}.mnop3456{scratch.SCRATCH_SUFFIX}"
    other_stem.write_bytes(b"")
    for kept in ("notes.part", "x.123.part", "site.zip", f"site.zip.{_dead_pid()}.abcd1234.tmp"):
        (tmp_path / kept).write_bytes(b"not scratch")
    assert sorted(scratch.remove_leftovers(tmp_path, "site.zip")) == sorted([dead, old])
    assert live.exists() and other_stem.exists()
    assert scratch.remove_leftovers(tmp_path) == [other_stem]
    assert scratch.remove_leftovers(tmp_path / "missing") == []
    with scratch.scratch_file(tmp_path / "new", "result.whl") as part:
        assert part.parent == tmp_path / "new" and part.name.startswith(f"result.whl.{os.getpid()}.")
    assert not part.exists()  # the body did not rename it: removed
    with pytest.raises(RuntimeError), scratch.scratch_directory(tmp_path, "dir") as made:
        (made / "file").write_bytes(b"")
        raise RuntimeError("the build failed")
    assert not made.exists()


def test_pyodide_is_fetched_once_and_then_reused(tmp_path):
    npm = _fake_npm(tmp_path, pyodide_dist.PYODIDE_VERSION)
    cache = tmp_path / "cache"
    target = sitebuild.ensure_pyodide(cache, npm=str(npm), log=lambda message: None)
    assert target == pyodide_dist.pyodide_cache_path(cache.resolve())
    assert (target / "pyodide.asm.wasm").read_text() == "contents of pyodide.asm.wasm"
    dead, live = _plant_leftovers(cache.resolve(), target.name)  # an unpack killed midway, one still running
    assert sitebuild.ensure_pyodide(cache, npm=str(npm), log=lambda message: None) == target
    assert (tmp_path / "calls").read_text().count("call") == 1
    assert not dead.exists() and live.exists()


def test_another_pyodide_version_is_refused(tmp_path):
    npm = _fake_npm(tmp_path, "0.26.0")
    with pytest.raises(sitebuild.PyodideFetchError, match="holds Pyodide '0.26.0'"):
        sitebuild.ensure_pyodide(tmp_path / "cache", npm=str(npm), log=lambda message: None)
    assert not pyodide_dist.pyodide_cache_path((tmp_path / "cache").resolve()).exists()
    assert not list((tmp_path / "cache").glob(f"*{scratch.SCRATCH_SUFFIX}"))


def test_a_missing_npm_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(sitebuild.PyodideFetchError, match="apt-get install npm"):
        sitebuild.ensure_pyodide(tmp_path / "cache", log=lambda message: None)


# ---- the server -------------------------------------------------------------------------------

def test_server_types_headers_and_missing_site(tmp_path):
    (tmp_path / "m.wasm").write_bytes(b"\0asm\1\0\0\0")
    (tmp_path / "a.mjs").write_text("export {};")
    with sitebuild.start_server(tmp_path) as server:
        assert server.url.startswith("http://127.0.0.1:")
        for name, content_type in (("m.wasm", "application/wasm"), ("a.mjs", "text/javascript")):
            with urllib.request.urlopen(server.url + name) as response:
                assert response.headers["Content-Type"] == content_type
                assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"
                assert response.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    with pytest.raises(FileNotFoundError, match="build it first"):
        sitebuild.SiteServer(tmp_path / "nothing")


# ---- the memory snapshot (making one needs Chromium: tests/web/test_snapshot.py) ------------------------------

def _snapshot_site(directory: Path, wheel: bytes) -> Path:
    (directory / "wheels").mkdir(parents=True)
    (directory / "wheels" / "w.whl").write_bytes(wheel)
    (directory / "worker.js").write_text("// worker")
    (directory / snapshot.STDLIB_IN_SITE).parent.mkdir()
    (directory / snapshot.STDLIB_IN_SITE).write_bytes(b"stdlib")
    (directory / snapshot.LOCK_IN_SITE).write_text('{"packages": {}}')
    return directory


def test_the_snapshot_key_follows_the_wheels_the_worker_the_stdlib_and_the_lock(tmp_path):
    first = _snapshot_site(tmp_path / "a", b"one")
    key = snapshot.snapshot_key(first, ["wheels/w.whl"], "webdemo.page")
    assert key == snapshot.snapshot_key(_snapshot_site(tmp_path / "b", b"one"), ["wheels/w.whl"], "webdemo.page")
    assert key != snapshot.snapshot_key(_snapshot_site(tmp_path / "c", b"two"), ["wheels/w.whl"], "webdemo.page")
    assert key != snapshot.snapshot_key(first, ["wheels/w.whl"], "other.module")
    (first / "worker.js").write_text("// another worker")
    assert key != snapshot.snapshot_key(first, ["wheels/w.whl"], "webdemo.page")
    key = snapshot.snapshot_key(first, ["wheels/w.whl"], "webdemo.page")
    (first / snapshot.STDLIB_IN_SITE).write_bytes(b"stdlib with bytecode")  # the lab's build rewrites it
    assert key != snapshot.snapshot_key(first, ["wheels/w.whl"], "webdemo.page")
    key = snapshot.snapshot_key(first, ["wheels/w.whl"], "webdemo.page")
    (first / snapshot.LOCK_IN_SITE).write_text('{"packages": {"numpy": {}}}')  # the build prunes it
    assert key != snapshot.snapshot_key(first, ["wheels/w.whl"], "webdemo.page")


def test_a_packed_snapshot_holds_its_key_and_a_16_byte_aligned_payload():
    packed = snapshot.pack_snapshot("k" * 5, b"payload")
    assert packed[:8] == snapshot.SNAPSHOT_MAGIC and packed[12:17] == b"kkkkk"
    assert len(packed) % 16 == len(b"payload") % 16 and snapshot.payload_of(packed) == b"payload"


def test_a_cached_snapshot_is_used_and_a_missing_browser_is_said(tmp_path, monkeypatch):
    site = _snapshot_site(tmp_path / "site", b"wheel")
    key = snapshot.snapshot_key(site, ["wheels/w.whl"], "webdemo.page")
    said: list[str] = []
    # without Chromium no snapshot is made: the site is built without, and the log says why
    monkeypatch.setattr(snapshot, "CHROMIUM", tmp_path / "no-chromium")
    assert snapshot.ensure_snapshot(site, ["wheels/w.whl"], "webdemo.page", python=sys.executable,
                                    cache_dir=tmp_path / "cache", log=said.append) is None
    assert "no memory snapshot" in said[0] and "no-chromium is missing" in said[0]
    assert not (site / sitebuild.SNAPSHOT_NAME).exists()
    (tmp_path / "cache").mkdir()
    dead, live = _plant_leftovers(tmp_path / "cache", "snapshot")  # a build killed while making one, one making one
    (tmp_path / "cache" / f"{key}.snapshot").write_bytes(snapshot.pack_snapshot(key, b"made before"))
    (tmp_path / "cache" / f"{key}.features").write_text("jspi wasm-gc\n")
    made = snapshot.ensure_snapshot(site, ["wheels/w.whl"], "webdemo.page", python=sys.executable,
                                    cache_dir=tmp_path / "cache", log=said.append)
    assert made == snapshot.Snapshot(path=sitebuild.SNAPSHOT_NAME, key=key, features="jspi wasm-gc")
    assert snapshot.payload_of((site / sitebuild.SNAPSHOT_NAME).read_bytes()) == b"made before"
    assert not dead.exists() and live.exists()


def test_a_hung_snapshot_maker_is_a_snapshot_error(tmp_path, monkeypatch):
    site = _snapshot_site(tmp_path / "site", b"wheel")
    monkeypatch.setattr(snapshot, "_browser_missing", lambda python: "")

    def hangs(command, **kwargs):
        raise subprocess.TimeoutExpired(command, kwargs["timeout"])

    monkeypatch.setattr(snapshot.subprocess, "run", hangs)
    with pytest.raises(snapshot.SnapshotError, match="took over") as raised:
        snapshot.ensure_snapshot(site, ["wheels/w.whl"], "webdemo.page", python=sys.executable,
                                 cache_dir=tmp_path / "cache", log=lambda m: None)
    assert isinstance(raised.value.__cause__, subprocess.TimeoutExpired)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []  # no scratch directory left behind


def test_every_chromium_is_launched_headless_with_the_shared_flags(tmp_path):
    from sitebuild.chromium import CHROMIUM, CHROMIUM_ARGS, launch, launch_persistent

    class Chromium:  # stands for playwright.chromium: records the call instead of starting a browser
        def launch_persistent_context(self, profile, **options):
            self.call = (profile, options)
            return "context"

        def launch(self, **options):
            self.call = options
            return "browser"

    playwright = type("Playwright", (), {"chromium": Chromium()})()
    assert launch_persistent(playwright, tmp_path / "profile", viewport={"width": 9, "height": 9}) == "context"
    assert playwright.chromium.call == (str(tmp_path / "profile"), {
        "executable_path": str(CHROMIUM), "headless": True, "args": list(CHROMIUM_ARGS),
        "viewport": {"width": 9, "height": 9}})
    assert launch(playwright) == "browser"
    assert playwright.chromium.call == {"executable_path": str(CHROMIUM), "headless": True, "args": list(CHROMIUM_ARGS)}
    callers = [ROOT / "tests/web/conftest.py", ROOT / "sitebuild/snapshot.py", *(
        ROOT / "benchmarks" / name for name in ("browser_threads.py", "browser_vs_native.py", "lab_ready.py",
                                                "peers/run.py"))]
    direct = re.compile(r"chromium\.launch(_persistent_context)?\(")
    assert [path.name for path in callers if direct.search(path.read_text())] == []


# ---- build.py site / serve --------------------------------------------------------------------

def _cached_pyodide() -> Path:
    path = pyodide_dist.pyodide_cache_path(ROOT / ".cache" / "npm")
    if not (path / ".complete").is_file():
        pytest.fail("Pyodide is not in .cache/npm: `python3 build.py test` fetches it before the tests")
    return path


def test_build_py_serve_prints_the_url_and_stops_on_ctrl_c(tmp_path):
    _cached_pyodide()
    subprocess.run([sys.executable, "build.py", "site"], cwd=ROOT, check=True, capture_output=True)
    # the built lock lists only what the site ships (the npm lock's numpy and the like are gone)
    pyodide = ROOT / "www" / "dist" / "pyodide"
    lock = json.loads((pyodide / pyodide_lock.LOCK_NAME).read_text(encoding="utf-8"))
    assert "numpy" in json.loads((_cached_pyodide() / pyodide_lock.LOCK_NAME).read_text(encoding="utf-8"))["packages"]
    assert "numpy" not in lock["packages"] and pyodide_lock.unshipped_entries(lock, pyodide) == {}
    for entry in lock["packages"].values():  # the check itself, spelled out: each file shipped with its hash
        assert hashlib.sha256((pyodide / entry["file_name"]).read_bytes()).hexdigest() == entry["sha256"]
    process = subprocess.Popen([sys.executable, "build.py", "serve", "--no-build", "--port", "0"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = process.stdout.readline()
        assert "serving" in line and "(Ctrl-C to stop)" in line
        url = line.split(" at ")[1].split()[0]
        with urllib.request.urlopen(url + "site.json") as response:
            assert json.load(response)["pyodide_version"] == sitebuild.PYODIDE_VERSION
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
    assert process.returncode == 0 and "stopped" in out


def test_the_lock_is_pruned_to_the_files_shipped_with_their_hashes(tmp_path):
    """An entry stays when its file is beside the lock with the lock's sha256 and what it depends on stays."""
    (tmp_path / "a-1-py3-none-any.whl").write_bytes(b"a")
    (tmp_path / "b-1-py3-none-any.whl").write_bytes(b"b")
    (tmp_path / "c-1-py3-none-any.whl").write_bytes(b"changed after the lock was written")
    digest = {name: hashlib.sha256(name.encode()).hexdigest() for name in "abc"}
    packages = {"A_pkg": {"file_name": "a-1-py3-none-any.whl", "sha256": digest["a"], "depends": []},
                "b": {"file_name": "b-1-py3-none-any.whl", "sha256": digest["b"], "depends": ["a-pkg"]},
                "c": {"file_name": "c-1-py3-none-any.whl", "sha256": digest["c"], "depends": []},
                "numpy": {"file_name": "numpy-2.3-cp314-cp314-pyemscripten_2026_0_wasm32.whl", "sha256": "0",
                          "depends": []},
                "uses-numpy": {"file_name": "b-1-py3-none-any.whl", "sha256": digest["b"], "depends": ["numpy"]},
                "elsewhere": {"file_name": "../b-1-py3-none-any.whl", "sha256": digest["b"], "depends": []}}
    lock = {"info": {"arch": "wasm32"}, "packages": packages}
    (tmp_path / pyodide_lock.LOCK_NAME).write_text(json.dumps(lock))
    reasons = pyodide_lock.unshipped_entries(lock, tmp_path)
    assert sorted(reasons) == ["c", "elsewhere", "numpy", "uses-numpy"], reasons
    assert "sha256" in reasons["c"] and "not in the site" in reasons["numpy"] and "numpy" in reasons["uses-numpy"]
    assert pyodide_lock.prune_lock(tmp_path) == ["c", "elsewhere", "numpy", "uses-numpy"]
    pruned = json.loads((tmp_path / pyodide_lock.LOCK_NAME).read_text())
    assert pruned == {"info": {"arch": "wasm32"}, "packages": {k: packages[k] for k in ("A_pkg", "b")}}
    assert pyodide_lock.prune_lock(tmp_path) == []


# ---- the lab (sitebuild.lab): the pieces that need no browser -------------------------------------

def _wheel_with_requirements(path: Path, lines: list[str]) -> Path:
    import zipfile
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\n" + "".join(
            f"Requires-Dist: {line}\n" for line in lines))
    return path


def test_lab_reads_unconditional_requirements_and_the_lock_closure(tmp_path):
    from sitebuild import lab
    wheel = _wheel_with_requirements(tmp_path / "demo-1.0-py3-none-any.whl",
                                     ["comm", "IPython (>=8)", "pytest ; extra == 'test'", "six>=1; python_version>'3'"])
    assert lab._requirements(wheel) == ["comm", "ipython", "six"]
    lock = {"packages": {"ipython": {"depends": ["traitlets", "Pygments"]}, "traitlets": {"depends": []},
                         "Pygments": {"depends": []}, "numpy": {"depends": []}, "micropip": {"depends": []}}}
    assert lab._lock_closure(lock, ["micropip", "IPython", "not-in-lock"]) == ["Pygments", "ipython", "micropip",
                                                                                  "traitlets"]
    settings = lab.kernel_settings("atlas-web")
    assert settings["disablePyPIFallback"] is True and settings["loadPyodideOptions"]["packages"][-1] == "atlas-web"
    assert settings["pyodideUrl"] == "../../pyodide/pyodide.mjs"  # from lab/<app>/index.html to the site's Pyodide


def test_lab_refuses_a_python_without_jupyterlite(tmp_path):
    from sitebuild import lab
    with pytest.raises(lab.LabBuildError, match="jupyterlite-pyodide-kernel"):
        lab.build_lab(tmp_path, tmp_path, python="/bin/false", cache_dir=tmp_path / "cache", log=lambda m: None)


def _installed_kernel_static(tmp_path: Path) -> Path:
    """A copy of the scripts and the piplite wheel of the kernel extension installed here (the ``lab`` extra),
    laid out as its ``static/`` in a built lab."""
    from sitebuild.lab import INSTALLED_KERNEL_STATIC
    installed = Path(sys.prefix) / INSTALLED_KERNEL_STATIC
    static = tmp_path / "static"
    (static / "pypi").mkdir(parents=True)
    for source in (*installed.glob("*.js"), *installed.glob("pypi/piplite-*.whl")):
        (static / source.relative_to(installed)).write_bytes(source.read_bytes())
    return static


def _node_checks(path: Path, text: str) -> None:
    """Assert that ``text`` is valid JavaScript as an ES module (written to ``path``, a .mjs file)."""
    path.write_text(text, encoding="utf-8")
    checked = subprocess.run(["node", "--check", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr[-2000:]


def test_lab_makes_the_bundled_coincident_race_free(tmp_path):
    """The kernel extension installed here (the ``lab`` extra) bundles coincident twice (the page's chunk and
    the worker); each gets the three rewrites once, stays valid JavaScript, and a second pass leaves it."""
    from sitebuild.lab_coincident import (COINCIDENT_MARKER, HANDOFF_REWRITES, bundled_coincident, is_patched,
                                          patch_coincident, unpatched_bundles)
    static = _installed_kernel_static(tmp_path)
    bundles = bundled_coincident(static)
    before = {p: p.read_bytes() for p in bundles}
    assert len(bundles) == 2 and unpatched_bundles(static) == bundles  # the lab's check fails on these...
    assert not any(is_patched(p.read_text(encoding="utf-8")) for p in bundles)
    assert {p: p.read_bytes() for p in bundles} == before  # ...and leaves them as they were
    rewritten = patch_coincident(static)
    assert unpatched_bundles(static) == [] and all(is_patched(p.read_text(encoding="utf-8")) for p in bundles)
    assert len(rewritten) == 2 and any(name.startswith("coincident.worker.") for name in rewritten), rewritten
    for name in rewritten:
        text = (static / name).read_text(encoding="utf-8")
        assert text.count("Atomics.store(") == 2 and text.count("Promise.resolve(w.value)") == 1
        _node_checks(tmp_path / f"{name}.mjs", text)  # the worker is an ES module; the page's chunk a plain script
    assert patch_coincident(static) == []
    (static / "other.js").write_text(f'const key = "{COINCIDENT_MARKER}";', encoding="utf-8")
    with pytest.raises(ValueError, match=f"other.js: '{HANDOFF_REWRITES[0][0]}' matched 0 times"):
        patch_coincident(static)
    with pytest.raises(ValueError, match="no bundled coincident"):
        patch_coincident(tmp_path)


def test_lab_routes_the_kernels_micropip_through_piplites_indexes(tmp_path):
    """Every bundle of the installed kernel extension that starts piplite (the two workers and the page's chunk)
    gets MICROPIP_ROUTE once, after piplite's index URLs, in Python that still compiles, and stays valid
    JavaScript; a second pass leaves them; a bundle whose start code is not as expected is refused."""
    import textwrap
    from sitebuild.lab_micropip import MICROPIP_ROUTE, route_micropip, unrouted_bundles
    static = _installed_kernel_static(tmp_path)
    bundles = unrouted_bundles(static)
    assert len(bundles) == 3 and any(p.name.startswith("coincident.worker.") for p in bundles), bundles
    assert sorted(route_micropip(static)) == sorted(p.name for p in bundles) and unrouted_bundles(static) == []
    for bundle in bundles:
        text = bundle.read_text(encoding="utf-8")
        route = text.index(MICROPIP_ROUTE)
        python = text[text.rindex("`", 0, route) + 1:text.index("`", route)]  # the template literal run at start
        python = textwrap.dedent(re.sub(r"\$\{[^}]*\}", "None", python))
        assert python.splitlines()[-2:] == ["piplite.piplite._PIPLITE_URLS = None", MICROPIP_ROUTE], python
        compile(python, bundle.name, "exec")
        _node_checks(tmp_path / f"{bundle.name}.mjs", text)
    assert route_micropip(static) == []
    (static / "other.js").write_text("run(`\n  piplite.piplite._PIPLITE_URLS = ${urls}\n`)", encoding="utf-8")
    with pytest.raises(ValueError, match="other.js: piplite's start code occurs 0 times"):
        route_micropip(static)


def test_bridge_races_are_the_console_lines_with_a_race_signature():
    """One list of the bridge races' console signatures (the lab test and benchmarks/lab_bridge_stress.py read it)."""
    from sitebuild.lab_coincident import bridge_races
    console = ["Pyodide has suffered a fatal error. Please report this to the Pyodide maintainers.",
               "SyntaxError: Expected double-quoted property name in JSON at position 7",
               "Uncaught TypeError: A(...).value.then is not a function", "Failed to load resource: 404"]
    assert bridge_races(console) == console[:3]
    assert bridge_races([]) == []
