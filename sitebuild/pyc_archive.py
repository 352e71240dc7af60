"""Bytecode added to a zip of Python sources (a wheel, or a zip on ``sys.path``), compiled by the running Python.

``add_bytecode`` compiles every ``.py`` member of the archive and adds its bytecode as an *unchecked
hash-based* ``.pyc`` (PEP 552): the import system uses it without looking at the source's time or hash,
so a wheel unpacked at any time, or a zip whose members carry any date, imports without compiling. The
sources stay (tracebacks and ``inspect`` read them). In a wheel each ``.pyc`` goes to ``__pycache__``
under the running interpreter's cache tag and is listed in ``RECORD`` (without a hash, as the wheel
format allows for ``.pyc`` files); in a zip imported by ``zipimport`` it goes beside its source
(``json/decoder.pyc``), where zipimport looks first.

The bytecode is the running interpreter's: sitebuild runs this module inside the site's Pyodide
(``lab_bytecode``), so its CPython and the browser's are the same. Standard library only, no package
imports: it is also run from its source text.
"""

from __future__ import annotations

import importlib.util
import io
import marshal
import sys
import zipfile
from typing import Collection

__all__ = ["add_bytecode", "unchecked_pyc"]

#: PEP 552's flags word of a hash-based .pyc whose source is never checked
_UNCHECKED_HASH = (0b01).to_bytes(4, "little")


def unchecked_pyc(source: bytes, filename: str) -> bytes:
    """The unchecked hash-based ``.pyc`` of ``source`` compiled as ``filename`` by the running Python
    (its magic number, the flags, the source's hash, the marshalled code). Raises SyntaxError or
    ValueError for a source that does not compile."""
    code = compile(source, filename, "exec", dont_inherit=True)
    return importlib.util.MAGIC_NUMBER + _UNCHECKED_HASH + importlib.util.source_hash(source) + marshal.dumps(code)


def _pyc_name(member: str, zip_root: str | None) -> str:
    if zip_root is not None:
        return member + "c"
    head, _, tail = member.rpartition("/")
    return f"{head}/__pycache__/{tail[:-3]}.{sys.implementation.cache_tag}.pyc".lstrip("/")


def add_bytecode(path: str, zip_root: str | None = None, only: Collection[str] | None = None) -> list[int]:
    """Rewrite the zip at ``path`` with an unchecked ``.pyc`` for each ``.py`` member that has none (of
    those named in ``only``, when given); returns ``[compiled, skipped]`` (skipped: sources that do not
    compile, e.g. another Python's syntax).

    ``zip_root`` is the path the zip will be imported from (``sys.path``'s ``/lib/python314.zip``): the
    bytecode then goes beside each source and names it ``zip_root/member`` (what zipimport would
    compile it as); without it the zip is a wheel (``__pycache__``, ``RECORD``). Reads the whole archive;
    raises OSError or zipfile.BadZipFile for a file that is not a readable zip.
    """
    with zipfile.ZipFile(path) as source:
        members = source.infolist()
        names = {info.filename for info in members}
        contents = {info.filename: source.read(info) for info in members}
    out = io.BytesIO()
    compiled, skipped, added = 0, 0, []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in members:
            member = info.filename
            if zip_root is None and member.endswith(".dist-info/RECORD"):
                continue  # written last, with the bytecode listed
            target.writestr(info, contents[member])
            pyc = _pyc_name(member, zip_root)
            if not member.endswith(".py") or pyc in names or (only is not None and member not in only):
                continue
            try:
                bytecode = unchecked_pyc(contents[member], f"{zip_root}/{member}" if zip_root else member)
            except (SyntaxError, ValueError):
                skipped += 1
                continue
            target.writestr(zipfile.ZipInfo(pyc, date_time=info.date_time), bytecode, zipfile.ZIP_DEFLATED)
            added.append(pyc)
            compiled += 1
        for info in members:
            if zip_root is None and info.filename.endswith(".dist-info/RECORD"):
                listed = contents[info.filename].decode("utf-8").rstrip("\n") + "\n"
                target.writestr(info, (listed + "".join(f"{pyc},,\n" for pyc in added)).encode("utf-8"))
    with open(path, "wb") as file:
        file.write(out.getvalue())
    return [compiled, skipped]
