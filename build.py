#!/usr/bin/env python3
"""atlas-web build script (standard library only).

    python3 build.py demo [--size N] [--backend NAME]   run the examples on every available backend
    python3 build.py test [PYTEST ARGS...]              run the whole test suite
    python3 build.py site                               build the static browser demo and lab into www/dist
    python3 build.py serve [--port N]                   build the site and serve it on 127.0.0.1

demo and test first prepare the environment, each step skipped when already done:
the Debian packages in SYSTEM_REQUIREMENTS (installed with apt-get when missing
and running as root), the virtual environment .venv, and an editable install of
atlas-web with the extras in EXTRAS (redone only when pyproject.toml, the set of
packages or the Python version changes). test also installs TEST_REQUIREMENTS
(Chromium for the browser tests) and fetches Pyodide once into .cache/npm.
site and serve also prepare the environment (the lab extra builds the JupyterLite
lab) and need npm (Pyodide is fetched once); the site is assembled by the
standard-library package ``sitebuild``; demo also builds and serves it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the core is standard library only: build.py may use it before any install
from atlas_web.host_env import ensure_runtime_dir  # noqa: E402
VENV = ROOT / ".venv"
VENV_PYTHON = VENV / "bin" / "python"
#: the extras installed into .venv
EXTRAS = ("test", "wasm", "webgpu", "lab")
#: written into .venv after a successful install; holds the hash of what was installed
STAMP = VENV / ".atlas-web-installed"


class BuildError(Exception):
    """A step failed; the message says which and what to do."""


def say(message: str) -> None:
    print(f"build.py: {message}", flush=True)


def run(command: Sequence[str | os.PathLike], *, env: dict | None = None, check: bool = True) -> int:
    """Run ``command`` in the repository root, echoing it; raises BuildError when it fails and ``check``."""
    say("$ " + " ".join(str(part) for part in command))
    merged = {**os.environ, **(env or {})}
    ensure_runtime_dir(merged)  # Mesa's Vulkan loader prints an error line per device without one
    code = subprocess.run([str(part) for part in command], cwd=ROOT, env=merged).returncode
    if check and code != 0:
        raise BuildError(f"command failed with exit status {code}: {' '.join(map(str, command))}")
    return code


# ---- system requirements ------------------------------------------------------------------

def debian_package_installed(package: str) -> bool:
    """Whether dpkg reports ``package`` as installed."""
    result = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    # the status is "<want> <error> <state>", e.g. "install ok installed"
    return result.returncode == 0 and result.stdout.split()[-1:] == ["installed"]


def module_available(name: str) -> Callable[[str], bool]:
    """A presence check that passes when this Python can import ``name`` (whatever the package)."""
    return lambda package: importlib.util.find_spec(name) is not None


def command_available(name: str) -> Callable[[str], bool]:
    """A presence check that passes when the command ``name`` is on PATH (whoever installed it)."""
    return lambda package: shutil.which(name) is not None


@dataclass(frozen=True)
class SystemRequirement:
    """A Debian package the build needs, why, and how to tell it is there (default: dpkg)."""

    package: str
    reason: str
    present: Callable[[str], bool] = debian_package_installed

    def is_present(self) -> bool:
        return self.present(self.package)


#: npm fetches Pyodide for the browser site once (any npm on PATH will do)
NPM_REQUIREMENT = SystemRequirement("npm", "fetches Pyodide for the browser demo (www/dist) once",
                                    command_available("npm"))

#: Debian packages installed when missing (extend this table; nothing else changes)
SYSTEM_REQUIREMENTS: tuple[SystemRequirement, ...] = (
    SystemRequirement(f"python{sys.version_info.major}.{sys.version_info.minor}-venv",
                      "python3 -m venv (Debian ships ensurepip separately)", module_available("ensurepip")),
    SystemRequirement("mesa-vulkan-drivers", "Vulkan on the CPU (lavapipe) for the webgpu backend"),
    NPM_REQUIREMENT,
)

#: Debian packages only the test command needs (the browser tests drive Debian's Chromium)
TEST_REQUIREMENTS: tuple[SystemRequirement, ...] = (
    SystemRequirement("chromium", "headless browser for tests/web (Playwright drives /usr/bin/chromium)"),
)


def missing_requirements(requirements: Sequence[SystemRequirement] = SYSTEM_REQUIREMENTS) -> list[SystemRequirement]:
    """The requirements that are not present (none where dpkg does not exist: not a Debian system)."""
    if shutil.which("dpkg-query") is None:
        return []
    return [requirement for requirement in requirements if not requirement.is_present()]


def apt_commands(packages: Sequence[str]) -> list[list[str]]:
    """The apt-get commands that install ``packages``: update first, then install."""
    return [["apt-get", "update"], ["apt-get", "install", "-y", *packages]]


def ensure_system_requirements(requirements: Sequence[SystemRequirement] = SYSTEM_REQUIREMENTS) -> None:
    """Install the missing ``requirements`` (default SYSTEM_REQUIREMENTS) with apt-get when running as root.

    Without root or apt-get, prints what is missing and how to install it, and
    goes on (the tests that need a package then fail with their own message).
    Raises BuildError when apt-get fails.
    """
    missing = missing_requirements(requirements)
    if not missing:
        return
    packages = [requirement.package for requirement in missing]
    for requirement in missing:
        say(f"missing Debian package {requirement.package}: {requirement.reason}")
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        say("not root (or no apt-get): install them with: apt-get install -y " + " ".join(packages))
        return
    for command in apt_commands(packages):
        run(command, env={"DEBIAN_FRONTEND": "noninteractive"})
    importlib.invalidate_caches()


# ---- virtual environment -------------------------------------------------------------------

def project_packages() -> list[str]:
    """The top-level packages present that pyproject.toml's package discovery includes."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    names = sorted({pattern for pattern in patterns if "." not in pattern and "*" not in pattern})
    return [name for name in names if (ROOT / name / "__init__.py").is_file()]


def install_fingerprint() -> str:
    """A hash of what the editable install depends on: pyproject.toml, the packages present
    (an editable install only maps the top-level packages it saw), the extras and the Python version."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    digest.update(repr((project_packages(), EXTRAS, sys.version_info[:2])).encode())
    return digest.hexdigest()


def venv_is_usable() -> bool:
    """Whether .venv has a Python with pip."""
    if not VENV_PYTHON.exists():
        return False
    return subprocess.run([str(VENV_PYTHON), "-m", "pip", "--version"], capture_output=True).returncode == 0


def ensure_environment() -> None:
    """System packages, then .venv with ``-e .[EXTRAS]`` installed; each skipped when already done."""
    ensure_system_requirements()
    fingerprint = install_fingerprint()
    if STAMP.exists() and STAMP.read_text().strip() == fingerprint and VENV_PYTHON.exists():
        return
    if not venv_is_usable():
        run([sys.executable, "-m", "venv", "--clear", VENV])
    run([VENV_PYTHON, "-m", "pip", "install", "--disable-pip-version-check", "-e", f".[{','.join(EXTRAS)}]"])
    STAMP.write_text(fingerprint + "\n")


# ---- the browser site ------------------------------------------------------------------------

SITE_DIR = ROOT / "www" / "dist"
#: where npm keeps the Pyodide package (gitignored)
NPM_CACHE = ROOT / ".cache" / "npm"


def sitebuild():
    """The standard-library package that assembles and serves the site (imported from the repository)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import sitebuild as package
    return package


def build_site() -> None:
    """Build the site, with the JupyterLite lab and the page's memory snapshot, into SITE_DIR (the environment
    first: the lab needs the venv's jupyterlite, the snapshot its Playwright and Chromium, without which the
    page starts Python without one); raises BuildError when Pyodide, a wheel, the lab or the snapshot cannot
    be made."""
    ensure_environment()
    site = sitebuild()
    try:
        site.build_site(ROOT, SITE_DIR, cache_dir=NPM_CACHE, lab_python=str(VENV_PYTHON),
                        snapshot_python=str(VENV_PYTHON), log=say)
    except (site.PyodideFetchError, site.WheelError, site.LabBuildError, site.SnapshotError, OSError) as exc:
        raise BuildError(f"building the site failed: {exc}") from exc


def server_arguments(prog: str, description: str) -> argparse.ArgumentParser:
    """The options every command that serves the site takes."""
    parser = argparse.ArgumentParser(prog=f"python3 build.py {prog}", description=description, allow_abbrev=False)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    return parser


# ---- commands ------------------------------------------------------------------------------

def command_test(args: Sequence[str]) -> int:
    """Run the whole pytest suite with the venv's Python; extra arguments go to pytest.

    Installs what the browser tests need first: TEST_REQUIREMENTS (Chromium),
    playwright (in the test extra) and Pyodide (npm, cached).
    """
    ensure_environment()
    ensure_system_requirements(TEST_REQUIREMENTS)
    site = sitebuild()
    try:
        site.ensure_pyodide(NPM_CACHE, log=say)
    except site.PyodideFetchError as exc:
        raise BuildError(str(exc)) from exc
    return run([VENV_PYTHON, "-m", "pytest", *args], check=False)


def command_site(args: Sequence[str]) -> int:
    """Build the static site into www/dist, with the JupyterLite lab in www/dist/lab."""
    argparse.ArgumentParser(prog="python3 build.py site", description=command_site.__doc__).parse_args(args)
    ensure_system_requirements([NPM_REQUIREMENT])
    build_site()
    return 0


def command_serve(args: Sequence[str]) -> int:
    """Build the site and serve it until Ctrl-C (--no-build serves www/dist as it is)."""
    parser = server_arguments("serve", command_serve.__doc__)
    parser.add_argument("--no-build", action="store_true", help="serve www/dist without rebuilding it")
    options = parser.parse_args(args)
    if not options.no_build:
        ensure_system_requirements([NPM_REQUIREMENT])
        build_site()
    try:
        sitebuild().serve_forever(SITE_DIR, options.host, options.port, say=say)
    except OSError as exc:
        raise BuildError(f"cannot serve on {options.host}:{options.port}: {exc}") from exc
    return 0


def command_demo(args: Sequence[str]) -> int:
    """Build and serve the browser site, print its URL, and run every example on every available backend
    natively (other arguments go to ``python -m demo``). Keeps serving until Ctrl-C when run from a terminal."""
    parser = server_arguments("demo", command_demo.__doc__)
    parser.add_argument("--no-site", action="store_true", help="only the native demo")
    parser.add_argument("--no-wait", action="store_true", help="stop serving when the native demo ends")
    options, demo_args = parser.parse_known_args(args)
    ensure_environment()
    if options.no_site:
        return run([VENV_PYTHON, "-m", "demo", *demo_args], check=False)
    build_site()
    try:
        server = sitebuild().start_server(SITE_DIR, options.host, options.port)
    except OSError as exc:
        raise BuildError(f"cannot serve on {options.host}:{options.port}: {exc}") from exc
    with server:
        say(f"the browser demo is at {server.url}")
        status = run([VENV_PYTHON, "-m", "demo", *demo_args], check=False)
        if options.no_wait or not sys.stdin.isatty():
            say("native demo done; the site server stops (run `python3 build.py serve` to keep it up)")
            return status
        say(f"the browser demo is still at {server.url} (Ctrl-C to stop)")
        try:
            server.thread.join()
        except KeyboardInterrupt:
            say("stopped")
    return status


#: command name -> (one-line help, handler taking the remaining arguments, returning the exit status)
COMMANDS: dict[str, tuple[str, Callable[[Sequence[str]], int]]] = {
    "demo": ("build and serve the browser demo, print its URL, and run the examples natively on every available "
             "backend (--size N, --backend NAME, --port N, --no-site, --no-wait)", command_demo),
    "test": ("run the whole test suite (extra arguments are passed to pytest)", command_test),
    "site": ("build the static browser demo into www/dist (Pyodide from npm, the wheels)", command_site),
    "serve": ("build the site and serve it on 127.0.0.1 until Ctrl-C (--port N, --host H, --no-build)",
              command_serve),
}


def build_parser() -> argparse.ArgumentParser:
    commands = "\n".join(f"  {name:<6} {summary}" for name, (summary, _) in COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="python3 build.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__.split("\n\n")[0], epilog="commands:\n" + commands)
    parser.add_argument("command", choices=COMMANDS, metavar="COMMAND", help="one of: " + ", ".join(COMMANDS))
    parser.add_argument("args", nargs=argparse.REMAINDER, help="passed on to the command")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command][1](args.args)
    except BuildError as exc:
        say(f"error: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
