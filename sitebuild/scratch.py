"""Scratch entries: what the build writes under a temporary name before moving it into place.

The build's caches (the unpacked Pyodide, the kernel's bytecode, the memory
snapshots) and the built site are written under a temporary name in the
directory they end up in and then renamed, so no reader ever sees half a file.
A build that is killed (SIGKILL, a CI timeout, a lost machine) runs no
``finally``, and its scratch entries stay behind: 22 MB per snapshot. Each
scratch name therefore says which process made it,
``<stem>.<pid>.<random>.part``, and every writer calls ``remove_leftovers`` on
its directory before writing: an entry whose process is gone is removed (its
build cannot finish it), and so is one older than LEFTOVER_AGE_S (a process id
reused since, or a cache copied from another machine). Entries of a build still
running -- the caches are shared by every checkout here -- are left alone. A
process id is this machine's: a cache directory must not be shared live with
builds that see another process table (another machine, a container with its
own process ids), whose running entries would look like leftovers.
Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Iterator

__all__ = ["SCRATCH_SUFFIX", "LEFTOVER_AGE_S", "scratch_directory", "scratch_file", "remove_leftovers"]

#: how every scratch name ends
SCRATCH_SUFFIX = ".part"
#: a scratch entry older than this is a leftover even when its process id is alive (longer than any build)
LEFTOVER_AGE_S = 24 * 3600
#: ``<stem>.<pid>.<random>.part``: the random part is tempfile's (8 characters, no dot)
_NAME = re.compile(r"^(?P<stem>.+)\.(?P<pid>[0-9]+)\.[^.]+" + re.escape(SCRATCH_SUFFIX) + "$")


def _prefix(stem: str) -> str:
    return f"{stem}.{os.getpid()}."


@contextlib.contextmanager
def scratch_directory(parent: Path, stem: str) -> Iterator[Path]:
    """A new, empty directory ``<stem>.<pid>.<random>.part`` in ``parent`` (made if missing) for the body to
    fill and rename into place; removed on the way out when it is still there. Raises OSError."""
    Path(parent).mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=_prefix(stem), suffix=SCRATCH_SUFFIX, dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def scratch_file(parent: Path, stem: str) -> Iterator[Path]:
    """A new, empty file ``<stem>.<pid>.<random>.part`` in ``parent`` for the body to fill and rename; removed
    on the way out when it is still there (the body failed). Raises OSError."""
    Path(parent).mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=_prefix(stem), suffix=SCRATCH_SUFFIX, dir=parent)
    os.close(handle)
    try:
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)


def _process_is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    except (OverflowError, OSError):  # no such process id can exist here
        return True
    return False


def remove_leftovers(parent: Path, stem: str | None = None, *, max_age_s: float = LEFTOVER_AGE_S) -> list[Path]:
    """Remove the scratch entries of ``parent`` (those of ``stem`` only, when given) that a killed build left:
    their process is gone, or they are older than ``max_age_s``. Other names are never touched, nor are the
    entries of a process still running (this one's included) that are younger. Returns what was removed; a
    missing ``parent`` has none. An entry that vanishes meanwhile (another build removed it) is skipped."""
    removed = []
    try:
        entries = list(Path(parent).iterdir())
    except FileNotFoundError:
        return removed
    now = time.time()
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None or (stem is not None and match["stem"] != stem):
            continue
        try:
            old = now - entry.lstat().st_mtime > max_age_s
            if not (old or _process_is_gone(int(match["pid"]))):
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except FileNotFoundError:
            continue
        removed.append(entry)
    return removed
