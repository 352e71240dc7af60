"""atlas_web.host_env: the private XDG runtime directory a native GPU stack expects."""

from __future__ import annotations

import os

from atlas_web.host_env import ensure_runtime_dir, private_runtime_dir


def test_ensure_runtime_dir_sets_a_private_directory_only_when_unset():
    environ: dict[str, str] = {}
    ensure_runtime_dir(environ)
    path = environ["XDG_RUNTIME_DIR"]
    assert path == private_runtime_dir() and os.path.isdir(path)
    assert os.stat(path).st_mode & 0o777 == 0o700
    environ = {"XDG_RUNTIME_DIR": "/somewhere/else"}
    ensure_runtime_dir(environ)
    assert environ == {"XDG_RUNTIME_DIR": "/somewhere/else"}
