"""No module imports another module's private (``_``-prefixed) name: what one module uses of another is public
there (in its ``__all__``, with a docstring). Scans every Python file of the repository's packages, tests,
benchmarks and demo with ``ast`` (nothing is imported)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("atlas_web", "wasm_backend", "webgpu_backend", "benchmarks", "tests", "demo", "examples", "sitebuild",
            "webdemo")


def private_imports(path: Path, root: Path = ROOT) -> set[tuple[str, str, str]]:
    """``(file relative to root, module, name)`` of each ``from <project module> import _name`` in ``path``
    (dunders allowed)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = "." * node.level + (node.module or "")
        if node.level == 0 and module.split(".")[0] not in PACKAGES:
            continue  # another distribution's private names are its business
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                found.add((path.relative_to(root).as_posix(), module, alias.name))
    return found


def test_private_imports_finds_what_it_should(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from .a import _x, y, __version__\nfrom atlas_web.b import _z\nfrom numpy import _w\n")
    assert {(m, n) for _, m, n in private_imports(sample, tmp_path)} == {(".a", "_x"), ("atlas_web.b", "_z")}


def test_no_module_imports_a_private_name_of_another():
    found = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found |= private_imports(path)
    assert found == set()
