"""The backends the conformance suite compares with the reference: every available one but the reference."""

from __future__ import annotations

from atlas_web import Backend


def compiled_backends() -> dict[str, Backend]:
    """name -> a started backend, for every available registered backend except "cpu"."""
    from atlas_web.registry import discover_backends, get_backend
    out: dict[str, Backend] = {}
    for status in discover_backends():
        if status.available and status.name != "cpu":
            out[status.name] = get_backend(status.name)
    return out
