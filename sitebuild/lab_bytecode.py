"""Bytecode for the site's Pyodide, compiled at build time by that Pyodide under Node.

The npm Pyodide's ``python_stdlib.zip`` and the wheels from the package index hold Python sources only,
and Pyodide keeps no bytecode between page loads: every start of the lab's kernel compiled the standard
library modules Python boots with, micropip, IPython, prompt_toolkit, pygments, jedi... (about two thirds
of its start here). ``add_site_bytecode`` adds unchecked ``.pyc`` files (``pyc_archive``) to the
standard library zip and to the given wheels, compiled by the site's own Pyodide (the browser's CPython)
run with Node, and keeps each result in a cache keyed by the input's sha256 and Pyodide's Python
version, so a rebuild compiles only what changed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from . import pyc_archive

__all__ = ["BytecodeError", "STDLIB_ZIP", "add_site_bytecode", "cache_key"]

#: Pyodide's standard library, in its directory
STDLIB_ZIP = "python_stdlib.zip"
#: part of every cache key: a change to what pyc_archive writes changes it
_FORMAT = "pyc1"
#: how long Node may take to boot Pyodide and compile (about 25 s for everything on 2 busy cores)
_NODE_TIMEOUT_S = 600
#: run by Node: boot the site's Pyodide, mount the work directory at /host, compile each job there
_NODE_SCRIPT = r"""
import { readFileSync } from 'node:fs';
const [pyodideDir, hostDir, moduleFile, jobsJson] = process.argv.slice(2);
const { loadPyodide } = await import(pyodideDir + '/pyodide.mjs');
const pyodide = await loadPyodide({ indexURL: pyodideDir + '/' });
pyodide.FS.mkdirTree('/host');
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: hostDir }, '/host');
const scope = pyodide.globals.get('dict')();
pyodide.runPython(readFileSync(moduleFile, 'utf8'), { globals: scope });
const stdlibRoot = pyodide.runPython("import sys; next(p for p in sys.path if p.endswith('.zip'))");
for (const [name, isStdlib] of JSON.parse(jobsJson)) {
  // undefined, not null, becomes None (null is pyodide.ffi.jsnull)
  const counts = scope.get('add_bytecode')('/host/' + name, isStdlib ? stdlibRoot : undefined).toJs();
  console.log(JSON.stringify([name, counts]));
}
"""


class BytecodeError(Exception):
    """The bytecode could not be compiled (no Node, Pyodide failed under it); the message says why."""


def cache_key(archive: Path, python: str) -> str:
    """The file name of ``archive``'s bytecode in the cache: its sha256, Pyodide's Python version, the format."""
    return f"{hashlib.sha256(archive.read_bytes()).hexdigest()[:40]}-py{python}-{_FORMAT}{archive.suffix}"


def add_site_bytecode(pyodide_dir: Path, wheels: Iterable[Path], cache_dir: Path, *, node: str = "node",
                      log: Callable[[str], None] = print) -> dict[str, list[str]]:
    """Rewrite ``pyodide_dir``'s standard library zip and ``wheels`` (paths of pure-Python wheels) in place
    with their bytecode; results are kept in ``cache_dir``. Returns ``{"compiled": [...], "cached": [...]}``
    (file names). Raises BytecodeError when Node is missing or fails (its output's tail in the message)."""
    pyodide_dir = Path(pyodide_dir).resolve()
    python = json.loads((pyodide_dir / "pyodide-lock.json").read_text(encoding="utf-8"))["info"]["python"]
    cache_dir.mkdir(parents=True, exist_ok=True)
    archives = [(pyodide_dir / STDLIB_ZIP, True), *((Path(w), False) for w in wheels)]
    keys = {archive: cache_key(archive, python) for archive, _ in archives}
    todo = [(archive, is_stdlib) for archive, is_stdlib in archives if not (cache_dir / keys[archive]).exists()]
    if todo:
        _compile_with_node(pyodide_dir, todo, {a: cache_dir / keys[a] for a, _ in todo}, node, log)
    for archive, _ in archives:
        shutil.copyfile(cache_dir / keys[archive], archive)
    compiled = {archive.name for archive, _ in todo}
    return {"compiled": sorted(compiled), "cached": sorted(a.name for a, _ in archives if a.name not in compiled)}


def _compile_with_node(pyodide_dir: Path, todo: list[tuple[Path, bool]], results: dict[Path, Path], node: str,
                       log: Callable[[str], None]) -> None:
    """Compile ``todo`` (archive, is the stdlib zip) in copies under a work directory, one Node run, and
    store each copy at ``results[archive]``."""
    executable = shutil.which(node)
    if executable is None:
        raise BytecodeError(f"{node} is not on PATH: Node runs the site's Pyodide to compile the bytecode")
    with tempfile.TemporaryDirectory(prefix="atlas-bytecode-") as work:
        host = Path(work)
        jobs = []
        for index, (archive, is_stdlib) in enumerate(todo):
            name = f"{index}-{archive.name}"
            shutil.copyfile(archive, host / name)
            jobs.append([name, is_stdlib])
        script = host / "compile.mjs"
        script.write_text(_NODE_SCRIPT, encoding="utf-8")
        command = [executable, str(script), str(pyodide_dir), str(host), pyc_archive.__file__, json.dumps(jobs)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=_NODE_TIMEOUT_S)
        except subprocess.TimeoutExpired as error:
            raise BytecodeError(f"Node did not compile the bytecode within {_NODE_TIMEOUT_S} s") from error
        reported = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
        if done.returncode != 0 or len(reported) != len(jobs):
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
            raise BytecodeError(f"compiling the bytecode in Pyodide under Node failed (exit {done.returncode}, "
                                f"{len(reported)} of {len(jobs)} archives done):\n{tail}")
        for (archive, _), (name, _) in zip(todo, jobs):
            part = results[archive].with_name(results[archive].name + ".part")
            shutil.copyfile(host / name, part)
            part.replace(results[archive])  # a build cut off here leaves no truncated file in the cache
        total = sum(counts[0] for _, counts in reported)
        log(f"compiled the bytecode of {len(jobs)} archives ({total} modules) in the site's Pyodide")
