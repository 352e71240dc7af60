"""The backends the conformance suite compares with the reference: every registered one but the reference.

A registered backend whose probe fails makes ``compiled_backends()`` raise (each conformance module then fails to
collect, with the probe's reason), so a backend that stops importing or starting cannot drop out of the suite
silently. Where a backend truly cannot exist on the machine, name it in the environment variable
``ATLAS_CONFORMANCE_WITHOUT`` (comma-separated, e.g. ``webgpu`` on a machine without Vulkan): the suite then runs
without it and says so in its summary (conftest.py; ``WITHOUT`` holds the reasons). CI names none.
"""

from __future__ import annotations

import os

from atlas_web import Backend

__all__ = ["compiled_backends", "WITHOUT", "ConformanceBackendMissing"]

#: backend name -> probe failure, for the backends ATLAS_CONFORMANCE_WITHOUT let the suite run without
WITHOUT: dict[str, str] = {}


class ConformanceBackendMissing(RuntimeError):
    """A registered backend's probe failed and ATLAS_CONFORMANCE_WITHOUT does not name it."""


def _allowed_missing() -> set[str]:
    return {name.strip() for name in os.environ.get("ATLAS_CONFORMANCE_WITHOUT", "").split(",") if name.strip()}


def compiled_backends() -> dict[str, Backend]:
    """name -> a started backend, for every registered backend except "cpu". Raises ConformanceBackendMissing
    (with the probe's reason) for one that is not available, unless ATLAS_CONFORMANCE_WITHOUT names it."""
    from atlas_web.registry import discover_backends, get_backend
    out: dict[str, Backend] = {}
    allowed = _allowed_missing()
    for status in discover_backends():
        if status.name == "cpu":
            continue
        if not status.available:
            if status.name not in allowed:
                raise ConformanceBackendMissing(
                    f"backend {status.name!r} is registered but not available: {status.reason} (set "
                    f"ATLAS_CONFORMANCE_WITHOUT={status.name} only where it cannot exist on this machine)")
            WITHOUT[status.name] = status.reason
            continue
        out[status.name] = get_backend(status.name)
    return out


def refuses_unsupported(backend: Backend, name: str, ty, run) -> bool:
    """True, after checking that ``run(backend)`` raises UnsupportedOperation, when ``backend`` does not support
    instruction ``name`` for ``ty`` (asked through supports(), never by the backend's name); False when it
    does (the caller then compares it)."""
    import pytest

    from atlas_web import UnsupportedOperation
    if backend.supports(name, ty):
        return False
    with pytest.raises(UnsupportedOperation):
        run(backend)
    return True
