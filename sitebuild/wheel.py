"""Pure-Python wheels (PEP 427, tag py3-none-any) written with the standard library.

Why not ``pip wheel``: offline, the project's virtual environment has no
``wheel`` package (setuptools cannot run ``bdist_wheel`` without build
isolation), and with isolation the build takes ~25 s, needs the index and
leaves a ``build/lib`` whose stale files would end up in later wheels. A
pure-Python wheel is a zip of the package sources plus three metadata files,
so it is written here directly and deterministically: the same sources give
byte-identical wheels (fixed timestamps, sorted entries).

The package set follows ``[tool.setuptools.packages.find]`` of pyproject.toml:
every directory with an ``__init__.py`` whose dotted name matches one of the
``include`` patterns; its ``*.py`` files are shipped (the packages hold no data
files).
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import io
import re
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

__all__ = ["ProjectMetadata", "WheelError", "project_metadata", "find_packages", "write_wheel", "wheel_filename",
           "WHEEL_TAG"]

#: the only tag written: pure Python, any interpreter of Python 3
WHEEL_TAG = "py3-none-any"
#: the zip timestamp of every entry (the earliest a zip can hold), so that wheels are reproducible
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


class WheelError(Exception):
    """pyproject.toml lacks what a wheel needs, or a package named is not a package directory."""


@dataclass(frozen=True)
class ProjectMetadata:
    """The core metadata of a distribution and the packages its wheel holds."""

    name: str
    version: str
    packages: tuple[str, ...]
    summary: str = ""
    requires_python: str | None = None
    requires_dist: tuple[str, ...] = ()
    classifiers: tuple[str, ...] = ()
    scripts: Mapping[str, str] = field(default_factory=dict)
    description: str = ""


def find_packages(root: Path, patterns: Iterable[str]) -> list[str]:
    """Dotted names of the package directories under ``root`` that match ``patterns`` (fnmatch), sorted.

    A directory is a package when it has an ``__init__.py``; a subpackage is
    found only inside a package (as setuptools' find_packages does).
    """
    patterns = tuple(patterns)
    found: list[str] = []

    def walk(directory: Path, dotted: str) -> None:
        if not (directory / "__init__.py").is_file():
            return
        if any(fnmatch.fnmatchcase(dotted, pattern) for pattern in patterns):
            found.append(dotted)
        for child in sorted(directory.iterdir()):
            if child.is_dir() and child.name.isidentifier():
                walk(child, f"{dotted}.{child.name}")

    for top in sorted(Path(root).iterdir()):
        if top.is_dir() and top.name.isidentifier():
            walk(top, top.name)
    return sorted(found)


def _requirements(project: Mapping) -> tuple[str, ...]:
    lines = list(project.get("dependencies", []))
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines += [f'{requirement}; extra == "{extra}"' for requirement in requirements]
    return tuple(lines)


def project_metadata(root: Path) -> ProjectMetadata:
    """The metadata of the project at ``root`` from its pyproject.toml (README.md as the description).

    Raises WheelError when ``[project]`` has no name or version.
    """
    root = Path(root)
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    project = config.get("project", {})
    if "name" not in project or "version" not in project:
        raise WheelError(f"{root / 'pyproject.toml'}: [project] needs a static name and version")
    patterns = config.get("tool", {}).get("setuptools", {}).get("packages", {}).get("find", {}).get("include", [])
    readme = root / project["readme"] if isinstance(project.get("readme"), str) else None
    return ProjectMetadata(
        name=project["name"], version=project["version"], packages=tuple(find_packages(root, patterns)),
        summary=project.get("description", ""), requires_python=project.get("requires-python"),
        requires_dist=_requirements(project), classifiers=tuple(project.get("classifiers", ())),
        scripts=dict(project.get("scripts", {})),
        description=readme.read_text(encoding="utf-8") if readme is not None and readme.is_file() else "")


def _escaped(name: str) -> str:
    """The distribution name as wheel file names spell it (runs of -_. become _)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def wheel_filename(name: str, version: str) -> str:
    """``{name}-{version}-py3-none-any.whl`` with the name escaped as PEP 427 asks."""
    return f"{_escaped(name)}-{version}-{WHEEL_TAG}.whl"


def _metadata_text(meta: ProjectMetadata) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {meta.name}", f"Version: {meta.version}"]
    if meta.summary:
        lines.append(f"Summary: {meta.summary}")
    if meta.requires_python:
        lines.append(f"Requires-Python: {meta.requires_python}")
    lines += [f"Classifier: {classifier}" for classifier in meta.classifiers]
    extras = sorted({m.group(1) for r in meta.requires_dist if (m := re.search(r'extra == "([^"]+)"', r))})
    lines += [f"Provides-Extra: {extra}" for extra in extras]
    lines += [f"Requires-Dist: {requirement}" for requirement in meta.requires_dist]
    if meta.description:
        lines.append("Description-Content-Type: text/markdown")
        return "\n".join(lines) + "\n\n" + meta.description
    return "\n".join(lines) + "\n"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _package_files(root: Path, packages: Iterable[str]) -> list[tuple[str, bytes]]:
    files = []
    for package in packages:
        directory = Path(root, *package.split("."))
        if not (directory / "__init__.py").is_file():
            raise WheelError(f"{package!r} is not a package: {directory} has no __init__.py")
        for source in sorted(directory.glob("*.py")):
            files.append((source.relative_to(root).as_posix(), source.read_bytes()))
    return files


def write_wheel(meta: ProjectMetadata, root: Path, out_dir: Path) -> Path:
    """Write the wheel of ``meta.packages`` (sources under ``root``) into ``out_dir``; returns its path.

    The wheel holds every ``*.py`` of each package and ``{dist}.dist-info``
    with METADATA, WHEEL, entry_points.txt (console scripts, when any),
    top_level.txt and RECORD. Raises WheelError for a name in ``meta.packages``
    that is not a package directory.
    """
    files = _package_files(Path(root), meta.packages)
    dist_info = f"{_escaped(meta.name)}-{meta.version}.dist-info"
    metadata = {
        "METADATA": _metadata_text(meta),
        "WHEEL": f"Wheel-Version: 1.0\nGenerator: sitebuild (atlas-web)\nRoot-Is-Purelib: true\nTag: {WHEEL_TAG}\n",
        "top_level.txt": "".join(f"{name}\n" for name in sorted({p.split(".")[0] for p in meta.packages})),
    }
    if meta.scripts:
        metadata["entry_points.txt"] = "[console_scripts]\n" + "".join(
            f"{name} = {target}\n" for name, target in sorted(meta.scripts.items()))
    files += [(f"{dist_info}/{name}", text.encode("utf-8")) for name, text in sorted(metadata.items())]
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files)
    files.append((f"{dist_info}/RECORD", (record + f"{dist_info}/RECORD,,\n").encode("utf-8")))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, data in files:
            info = zipfile.ZipInfo(path, date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / wheel_filename(meta.name, meta.version)
    target.write_bytes(buffer.getvalue())
    return target
