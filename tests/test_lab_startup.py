"""The lab kernel's start, natively: its packages preloaded through Pyodide's lock (sitebuild.lab_preload)
and the bytecode added to archives (sitebuild.pyc_archive, sitebuild.lab_bytecode). The browser side is
tests/web/test_lab.py."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sitebuild import lab, lab_bytecode
from sitebuild.lab_bytecode import STDLIB_ZIP, BytecodeError, add_site_bytecode, cache_key, start_key
from sitebuild.lab_preload import KERNEL_START_PACKAGES, check_worker_start, file_sha256, lock_entry
from sitebuild.pyc_archive import add_bytecode

#: the kernel extension installed here (the ``lab`` extra)
_STATIC = Path(sys.prefix) / lab.INSTALLED_KERNEL_STATIC
_TAG = sys.implementation.cache_tag


def _zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return path


def _run(code: str, path: Path) -> str:
    """``code``'s output in a fresh interpreter with ``path`` first on sys.path (no bytecode written)."""
    done = subprocess.run([sys.executable, "-B", "-c", f"import sys; sys.path.insert(0, {str(path)!r}); {code}"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_kernel_settings_preload_every_start_package():
    packages = lab.kernel_settings("atlas-web")["loadPyodideOptions"]["packages"]
    assert packages == [*KERNEL_START_PACKAGES, "atlas-web"]
    assert {"micropip", "piplite", "pyodide-kernel", "ipython"} <= set(packages)


def test_the_installed_workers_skip_exactly_the_preloaded_packages(tmp_path):
    names = check_worker_start(_STATIC)
    assert len(names) == 2 and any(name.startswith("coincident.worker.") for name in names), names
    for script in _STATIC.glob("*.worker.*.js"):
        (tmp_path / script.name).write_text(script.read_text(encoding="utf-8").replace(
            '"jedi","ipython"]', '"jedi","ipython","ipywidgets"]'), encoding="utf-8")
    with pytest.raises(ValueError, match=r'worker\..*"ipython"\]\) occurs 0 times, not once'):
        check_worker_start(tmp_path)
    with pytest.raises(ValueError, match="no kernel worker"):
        check_worker_start(tmp_path / "missing")


def test_a_lock_entry_names_the_wheel_its_hash_and_top_level_packages(tmp_path):
    wheel = _zip(tmp_path / "demo_pkg-1.2-py3-none-any.whl",
                 {"demo_pkg/__init__.py": "", "demo_pkg/sub/__init__.py": "", "other/__init__.py": "",
                  "single.py": ""})
    entry = lock_entry(wheel, "demo-pkg", ["b", "a"])
    assert entry["file_name"] == wheel.name and entry["version"] == "1.2" and entry["depends"] == ["a", "b"]
    assert entry["imports"] == ["demo_pkg", "other"] and entry["sha256"] == file_sha256(wheel)


def test_wheel_bytecode_is_unchecked_and_listed_in_record(tmp_path):
    wheel = _zip(tmp_path / "demo-1.0-py3-none-any.whl",
                 {"demo/__init__.py": "VALUE = 'compiled'\n", "demo/broken.py": "def (:\n",
                  "demo-1.0.dist-info/RECORD": "demo/__init__.py,sha256=x,20\n"})
    assert add_bytecode(str(wheel)) == [1, 1]  # the broken source is skipped, not fatal
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        record = archive.read("demo-1.0.dist-info/RECORD").decode()
    pyc = f"demo/__pycache__/__init__.{_TAG}.pyc"
    assert pyc in names and "demo/__init__.py" in names and f"{pyc},,\n" in record
    assert add_bytecode(str(wheel)) == [0, 1]  # a second pass adds nothing
    partial = _zip(tmp_path / "part-1.0-py3-none-any.whl", {"part/__init__.py": "", "part/unused.py": ""})
    assert add_bytecode(str(partial), only={"part/__init__.py"}) == [1, 0]
    assert {n for n in zipfile.ZipFile(partial).namelist() if n.endswith(".pyc")} == {
        f"part/__pycache__/__init__.{_TAG}.pyc"}
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    (unpacked / "demo" / "__init__.py").write_text("VALUE = 'from source'\n")  # never checked: the .pyc wins
    assert _run("import demo; print(demo.VALUE)", unpacked) == "compiled"


def test_zip_bytecode_lies_beside_its_source_and_names_it(tmp_path):
    stdlib = _zip(tmp_path / "lib.zip", {"mod.py": "import sys\nVALUE = 'compiled'\n"})
    assert add_bytecode(str(stdlib), zip_root=str(stdlib)) == [1, 0]
    with zipfile.ZipFile(stdlib) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    assert set(members) == {"mod.py", "mod.pyc"}
    members["mod.py"] = b"VALUE = 'from source'\n"
    with zipfile.ZipFile(stdlib, "w") as archive:  # a different source: zipimport takes the .pyc
        for name, data in members.items():
            archive.writestr(name, data)
    assert _run("import mod; print(mod.VALUE, mod.sys.__name__)", stdlib) == "compiled sys"
    # tracebacks name the source in the zip, as when zipimport compiled it
    assert _run("import mod; print(mod.__spec__.loader.get_code('mod').co_filename)", stdlib) == f"{stdlib}/mod.py"


def _fake_pyodide(tmp_path: Path) -> Path:
    pyodide = tmp_path / "pyodide"
    pyodide.mkdir()
    (pyodide / "pyodide-lock.json").write_text(json.dumps({"info": {"python": "3.14.2"}, "packages": {}}))
    _zip(pyodide / STDLIB_ZIP, {"mod.py": "VALUE = 1\n"})
    return pyodide


def test_site_bytecode_comes_from_the_cache_without_node(tmp_path):
    pyodide = _fake_pyodide(tmp_path)
    wheel = _zip(pyodide / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": ""})
    start = {"packages": ["demo"], "imports": ["demo"]}
    with pytest.raises(BytecodeError, match="no-such-node is not on PATH"):
        add_site_bytecode(pyodide, [wheel], tmp_path / "cache", **start, node="no-such-node", log=lambda m: None)
    # a cache holding both results (here: each archive compiled natively under the name it would get)
    cache = tmp_path / "cache"
    names = {pyodide / STDLIB_ZIP: cache_key(pyodide / STDLIB_ZIP, "3.14.2"),
             wheel: f"{start_key([wheel], '3.14.2', **start)}-{wheel.name}"}
    assert start_key([wheel], "3.14.2", ["demo"], ["demo", "other"]) not in names[wheel]  # the start matters
    for archive, root in ((pyodide / STDLIB_ZIP, "/lib/python314.zip"), (wheel, None)):
        compiled = tmp_path / archive.name
        compiled.write_bytes(archive.read_bytes())
        add_bytecode(str(compiled), zip_root=root)
        (cache / names[archive]).write_bytes(compiled.read_bytes())
    killed = cache / f"{names[wheel]}.4194305.abcd1234.part"  # a copy cut off by a killed build (no such pid)
    killed.write_bytes(b"half a wheel")
    done = add_site_bytecode(pyodide, [wheel], cache, **start, node="no-such-node", log=lambda m: None)
    assert done == {"compiled": [], "cached": sorted([STDLIB_ZIP, wheel.name])}
    assert not killed.exists()
    assert "mod.pyc" in zipfile.ZipFile(pyodide / STDLIB_ZIP).namelist()
    assert f"demo/__pycache__/__init__.{_TAG}.pyc" in zipfile.ZipFile(wheel).namelist()



def test_the_bytecode_cache_key_follows_the_code_that_makes_it(tmp_path, monkeypatch):
    archive = _zip(tmp_path / "a.zip", {"mod.py": "VALUE = 1\n"})
    wheel = _zip(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": ""})
    keys = (cache_key(archive, "3.14.2"), start_key([wheel], "3.14.2", ["demo"], ["demo"]))
    changed = tmp_path / "pyc_archive.py"  # pyc_archive edited: what it writes may differ
    changed.write_text(Path(lab_bytecode.pyc_archive.__file__).read_text() + "\n# changed\n")
    monkeypatch.setattr(lab_bytecode.pyc_archive, "__file__", str(changed))
    assert cache_key(archive, "3.14.2") not in keys
    assert start_key([wheel], "3.14.2", ["demo"], ["demo"]) not in keys
    monkeypatch.undo()
    monkeypatch.setattr(lab_bytecode, "_NODE_SCRIPT", lab_bytecode._NODE_SCRIPT + "\n// changed\n")
    assert cache_key(archive, "3.14.2") not in keys  # the Node script chooses what is compiled
    assert start_key([wheel], "3.14.2", ["demo"], ["demo"]) not in keys


def test_two_builds_filling_one_cache_entry_copy_under_names_of_their_own(tmp_path, monkeypatch):
    pyodide = _fake_pyodide(tmp_path)
    stdlib_copy = (pyodide / STDLIB_ZIP).read_bytes()
    copied_to: list[Path] = []
    copyfile = lab_bytecode.shutil.copyfile

    def record(source, target):
        copied_to.append(Path(target))
        return copyfile(source, target)

    def node_compiles(command, **kwargs):  # Node's run, reporting each job done and leaving its copy as it is
        jobs = json.loads(command[5])
        return subprocess.CompletedProcess(command, 0, "".join(json.dumps([n, [1, 0]]) + "\n" for n, _ in jobs), "")

    monkeypatch.setattr(lab_bytecode.shutil, "copyfile", record)
    monkeypatch.setattr(lab_bytecode.subprocess, "run", node_compiles)
    cache = tmp_path / "cache"
    parts = []
    for _ in range(2):  # two builds, each missing the cache
        (pyodide / STDLIB_ZIP).write_bytes(stdlib_copy)
        for old in cache.glob("*"):
            old.unlink()
        copied_to.clear()
        done = add_site_bytecode(pyodide, [], cache, packages=[], imports=[], node=sys.executable, log=lambda m: None)
        assert done == {"compiled": [STDLIB_ZIP], "cached": []}
        parts.append({path for path in copied_to if path.parent == cache})
    assert len(parts[0]) == 1 and parts[0].isdisjoint(parts[1])
    assert [path.name for path in cache.iterdir()] == [cache_key(pyodide / STDLIB_ZIP, "3.14.2")]  # no part left


def test_a_hung_lab_build_step_is_a_lab_build_error(monkeypatch):
    monkeypatch.setattr(lab, "_TOOL_TIMEOUT_S", 0.5)
    with pytest.raises(lab.LabBuildError, match="sleeping took over 0.5 s") as raised:
        lab._run([sys.executable, "-c", "import time; time.sleep(5)"], "sleeping", lambda m: None)
    assert isinstance(raised.value.__cause__, subprocess.TimeoutExpired)
