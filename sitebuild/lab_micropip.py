"""``micropip.install`` in the lab's kernel resolves from the lab's own package indexes, as ``%pip install`` does.

At start the Pyodide kernel's worker (jupyterlite-pyodide-kernel 0.8.x, ``initPackageManager``) configures
piplite: its indexes (the lab's ``all.json`` files: the atlas-web wheel, the kernel extension's wheels) and,
with ``disablePyPIFallback`` (sitebuild.lab.kernel_settings), no fallback to pypi.org. ``%pip install x``
goes through piplite, which routes micropip's package query (``micropip.package_index.query_package``) to
those indexes only while it installs. A direct ``await micropip.install("x")`` does not: micropip asks
https://pypi.org/simple, which the offline lab cannot reach (a network error) and which, online, would
install what the site does not ship.

``route_micropip`` adds one line (MICROPIP_ROUTE) to that start code in every bundle holding it: micropip's
query becomes piplite's (``piplite.piplite._query_package``) for the kernel's life, so ``micropip.install`` finds
what the lab ships (Pyodide's lock first, then the lab's indexes) and names any other package as not installable
(piplite's ``PiplitePyPIDisabled``: "x could not be installed: PyPI fallback is disabled"), whatever
``index_urls`` it is given. Neither
``micropip.set_index_urls`` nor the kernel's settings can do it: micropip reads an index per package (PEP 503 /
691 or PyPI's JSON API), piplite's ``all.json`` is one file for all of them, and the kernel has no start-code
setting. piplite's ``%pip`` keeps working: it patches the same name for its install and puts ours back.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

__all__ = ["MICROPIP_ROUTE", "route_micropip", "unrouted_bundles"]

#: where the worker's start code sets piplite's indexes (inside a JS template literal of Python lines)
_PIPLITE_URLS = re.compile(r"(\n[ \t]*)piplite\.piplite\._PIPLITE_URLS = \$\{JSON\.stringify\(\w+\)\}")
#: the Python line added after it (at the same indentation)
MICROPIP_ROUTE = ("import micropip.package_index; "
                  "micropip.package_index.query_package = piplite.piplite._query_package")
#: piplite's function the route names, as its module defines it (checked in the extension's piplite wheel)
_QUERY_DEFINITION = "async def _query_package("


def _start_bundles(static_dir: Path) -> list[Path]:
    """The scripts directly under ``static_dir`` that hold the worker's piplite start code, sorted."""
    return sorted(p for p in Path(static_dir).glob("*.js") if "piplite.piplite._PIPLITE_URLS" in p.read_text(
        encoding="utf-8"))


def unrouted_bundles(static_dir: Path) -> list[Path]:
    """The bundles of ``_start_bundles`` that do not route micropip's query yet (read-only)."""
    return [p for p in _start_bundles(static_dir) if MICROPIP_ROUTE not in p.read_text(encoding="utf-8")]


def _check_piplite(static_dir: Path) -> None:
    """Raise ValueError unless the extension's piplite wheel (``static_dir/pypi``) defines the routed function."""
    wheels = sorted(Path(static_dir).glob("pypi/piplite-*.whl"))
    if not wheels:
        raise ValueError(f"no piplite wheel in {Path(static_dir) / 'pypi'}")
    with zipfile.ZipFile(wheels[-1]) as archive:
        source = archive.read("piplite/piplite.py").decode("utf-8")
    if _QUERY_DEFINITION not in source:
        raise ValueError(f"{wheels[-1].name} defines no {_QUERY_DEFINITION.rstrip('(')}: micropip cannot be "
                         "routed through it (another pyodide-kernel release: read its piplite.py)")


def route_micropip(static_dir: Path) -> list[str]:
    """Add MICROPIP_ROUTE to the worker's start code in every bundle under ``static_dir`` (the kernel
    extension's ``static/`` in the built lab) that holds it; returns the names of the files changed now
    (those already routed are left as they are).

    Raises ValueError when no bundle holds the start code, one holds it other than once, or the extension's
    piplite no longer defines the function routed to (another pyodide-kernel release).
    """
    bundles = _start_bundles(static_dir)
    if not bundles:
        raise ValueError(f"no kernel bundle in {static_dir} sets piplite.piplite._PIPLITE_URLS")
    _check_piplite(static_dir)
    changed = []
    for bundle in bundles:
        text = bundle.read_text(encoding="utf-8")
        if MICROPIP_ROUTE in text:
            continue
        text, count = _PIPLITE_URLS.subn(lambda match: match[0] + match[1] + MICROPIP_ROUTE, text)
        if count != 1:
            raise ValueError(f"{bundle.name}: piplite's start code occurs {count} times, not once")
        bundle.write_text(text, encoding="utf-8")
        changed.append(bundle.name)
    return changed
