"""Bytecode for the site's Pyodide, compiled at build time by that Pyodide under Node.

The npm Pyodide's ``python_stdlib.zip`` and the wheels from the package index hold Python sources only,
and Pyodide keeps no bytecode between page loads: every start of the lab's kernel compiled the standard
library modules Python boots with, micropip, IPython, prompt_toolkit, pygments, jedi... (about two thirds
of its start here). ``add_site_bytecode`` adds unchecked ``.pyc`` files (``pyc_archive``) to the
standard library zip and to the given wheels, compiled by the site's own Pyodide (the browser's CPython)
run with Node. In the wheels only the modules the kernel's start imports get bytecode: each file more
in a wheel is a file more to unpack at every start (compiling every module doubled the unpacking).
Results are cached by the inputs' sha256 and Pyodide's Python version, so a rebuild compiles only
what changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from . import pyc_archive
from .lab_preload import file_sha256
from .pyodide_lock import LOCK_NAME
from .scratch import remove_leftovers, scratch_file

__all__ = ["BytecodeError", "STDLIB_ZIP", "add_site_bytecode", "cache_key", "start_key"]

#: Pyodide's standard library, in its directory
STDLIB_ZIP = "python_stdlib.zip"
#: part of every cache key (with the source of pyc_archive and of _NODE_SCRIPT, see _format)
_FORMAT = "pyc1"
#: how long Node may take to boot Pyodide and compile (about 25 s for everything on 2 busy cores)
_NODE_TIMEOUT_S = 600
#: run by Node: boot the site's Pyodide with ``packages``, import ``imports`` and note the files of
#: site-packages they loaded (``started``), mount the work directory at /host and compile each job there
_NODE_SCRIPT = r"""
import { readFileSync } from 'node:fs';
const [pyodideDir, hostDir, moduleFile, jobsJson, startJson] = process.argv.slice(2);
const { packages, imports } = JSON.parse(startJson);
const { loadPyodide } = await import(pyodideDir + '/pyodide.mjs');
const pyodide = await loadPyodide({ indexURL: pyodideDir + '/', packages });
pyodide.FS.mkdirTree('/host');
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: hostDir }, '/host');
const scope = pyodide.globals.get('dict')();
pyodide.runPython(readFileSync(moduleFile, 'utf8'), { globals: scope });
await pyodide.runPythonAsync(imports.map((name) => `import ${name}`).join('\n'), { globals: scope });
scope.set('want', imports.length > 0);
pyodide.runPython(`
import site, sys
from pathlib import Path
stdlib_root = next(p for p in sys.path if p.endswith('.zip'))
_site = Path(site.getsitepackages()[0])  # sysconfig's purelib reads //lib/... here
started = frozenset(str(Path(m.__file__).relative_to(_site)) for m in list(sys.modules.values())
                    if getattr(m, '__file__', None) and Path(m.__file__).is_relative_to(_site))
if want and not started:
    raise RuntimeError('the start imported no module of site-packages: no wheel would get bytecode')
`, { globals: scope });
for (const [name, isStdlib] of JSON.parse(jobsJson)) {
  scope.set('job', '/host/' + name);
  const call = isStdlib ? 'add_bytecode(job, stdlib_root)' : 'add_bytecode(job, None, started)';
  console.log(JSON.stringify([name, pyodide.runPython(call, { globals: scope }).toJs()]));
}
"""


class BytecodeError(Exception):
    """The bytecode could not be compiled (no Node, Pyodide failed under it); the message says why."""


def _format() -> str:
    """_FORMAT and a hash of what makes the bytecode (pyc_archive's source, _NODE_SCRIPT): a change to either
    misses the cache instead of reusing what the old code wrote."""
    makers = Path(pyc_archive.__file__).read_bytes() + b"\0" + _NODE_SCRIPT.encode()
    return f"{_FORMAT}-{hashlib.sha256(makers).hexdigest()[:12]}"


def cache_key(archive: Path, python: str) -> str:
    """The file name of ``archive``'s bytecode in the cache: its sha256, Pyodide's Python version, the format
    (_format: with the code that makes the bytecode)."""
    return f"{file_sha256(archive)[:40]}-py{python}-{_format()}{archive.suffix}"


def start_key(wheels: Sequence[Path], python: str, packages: Sequence[str], imports: Sequence[str]) -> str:
    """The prefix of the wheels' names in the cache: a hash of every wheel, the packages loaded and the
    modules imported at start (which modules get bytecode depends on all of them), Python and the format
    (_format)."""
    digest = hashlib.sha256(json.dumps([python, _format(), list(packages), list(imports)]).encode())
    for wheel in wheels:
        digest.update(wheel.name.encode() + b"\0" + bytes.fromhex(file_sha256(wheel)))
    return digest.hexdigest()[:40]


def add_site_bytecode(pyodide_dir: Path, wheels: Sequence[Path], cache_dir: Path, *, packages: Sequence[str],
                      imports: Sequence[str], node: str = "node",
                      log: Callable[[str], None] = print) -> dict[str, list[str]]:
    """Rewrite ``pyodide_dir``'s standard library zip (every module) and ``wheels`` (pure-Python wheels that
    lie in ``pyodide_dir`` under the names its lock gives them) in place with bytecode; in the wheels only
    for the modules that loading ``packages`` (lock names) and importing ``imports`` load, as the lab's
    kernel does at start: the others would only make every start unpack more files. Results are kept in
    ``cache_dir``. Returns ``{"compiled": [...], "cached": [...]}`` (file names). Raises BytecodeError when
    Node is missing or fails (its output's tail in the message)."""
    pyodide_dir = Path(pyodide_dir).resolve()
    python = json.loads((pyodide_dir / LOCK_NAME).read_text(encoding="utf-8"))["info"]["python"]
    cache_dir.mkdir(parents=True, exist_ok=True)
    remove_leftovers(cache_dir)  # the half-copied results of builds killed while storing them
    stdlib = pyodide_dir / STDLIB_ZIP
    prefix = start_key(wheels, python, packages, imports)
    results = {stdlib: cache_dir / cache_key(stdlib, python),
               **{Path(wheel): cache_dir / f"{prefix}-{Path(wheel).name}" for wheel in wheels}}
    todo = [(archive, archive == stdlib) for archive, result in results.items() if not result.exists()]
    if todo:
        wheel_jobs = any(not is_stdlib for _, is_stdlib in todo)
        start = {"packages": list(packages) if wheel_jobs else [], "imports": list(imports) if wheel_jobs else []}
        _compile_with_node(pyodide_dir, todo, results, start, node, log)
    for archive, result in results.items():
        shutil.copyfile(result, archive)
    compiled = {archive.name for archive, _ in todo}
    return {"compiled": sorted(compiled), "cached": sorted(a.name for a in results if a.name not in compiled)}


def _compile_with_node(pyodide_dir: Path, todo: list[tuple[Path, bool]], results: dict[Path, Path], start: dict,
                       node: str, log: Callable[[str], None]) -> None:
    """Compile ``todo`` (archive, is the stdlib zip) in copies under a work directory, one Node run that
    starts as ``start`` says, and store each copy at ``results[archive]``."""
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
        command = [executable, str(script), str(pyodide_dir), str(host), pyc_archive.__file__, json.dumps(jobs),
                   json.dumps(start)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=_NODE_TIMEOUT_S)
        except subprocess.TimeoutExpired as error:
            raise BytecodeError(f"Node did not compile the bytecode within {_NODE_TIMEOUT_S} s") from error
        reported = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
        if done.returncode != 0 or len(reported) != len(jobs):
            lines = [line[:300] for line in (done.stderr or done.stdout).strip().splitlines() if line[:300].strip()]
            tail = "\n".join(lines[-15:])  # a line may be a whole minified bundle: each is cut
            raise BytecodeError(f"compiling the bytecode in Pyodide under Node failed (exit {done.returncode}, "
                                f"{len(reported)} of {len(jobs)} archives done):\n{tail}")
        for (archive, _), (name, _) in zip(todo, jobs):
            # a name of its own: a build cut off here leaves no truncated file in the cache, and two builds
            # filling the same entry at once do not write into one another's copy
            with scratch_file(results[archive].parent, results[archive].name) as part:
                shutil.copyfile(host / name, part)
                os.replace(part, results[archive])
        total = sum(counts[0] for _, counts in reported)
        log(f"compiled the bytecode of {len(jobs)} archives ({total} modules) in the site's Pyodide")
