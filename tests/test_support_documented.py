"""Nothing goes missing silently: every (row, type) of the opcode table, and every cooperative operation, that an
available backend does not support (its ``supports_op``) is in that backend's documented-unsupported list (its
``documentation().unsupported`` / ``unsupported_types``, which docs/backends.md shows), and nothing listed there is
in fact supported."""

from __future__ import annotations

import pytest

from atlas_web.isa import OPCODE_TABLE
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES, OPERATION_ENUMS
from atlas_web.registry import discover_backends, get_backend


def _sorted(types):
    return sorted(types, key=lambda t: t.code)


def _unsupported(backend, doc) -> dict[str, set]:
    """operation key -> the types (None: untyped) ``backend`` does not support it for (cooperative operations:
    as its documentation answers; tests/test_docs_backends.py checks that against the backend)."""
    out: dict[str, set] = {}
    for info in OPCODE_TABLE:
        for ty in _sorted(info.types) or [None]:
            if not backend.supports_op(info, ty):
                out.setdefault(info.name, set()).add(ty)
    for name, enum in OPERATION_ENUMS.items():
        for operation in enum:
            for ty in _sorted(COOPERATIVE_OPERATION_TYPES[operation]):
                if not doc.supports_operation(operation, ty):
                    out.setdefault(f"{name}.{operation.name}", set()).add(ty)
    return out


@pytest.mark.parametrize("name", [s.name for s in discover_backends() if s.available])
def test_what_a_backend_does_not_support_is_documented(name):
    backend = get_backend(name)
    try:
        doc = type(backend).documentation()
        assert doc is not None, f"{name} has no documentation hook"
        missing = _unsupported(backend, doc)
        undocumented = {key: sorted(str(t) for t in types - set(doc.unsupported_types))
                        for key, types in missing.items() if key not in doc.unsupported}
        assert not {k: v for k, v in undocumented.items() if v}, \
            f"{name} neither supports nor documents these (row or operation -> types): {undocumented}"
        stale = [key for key in doc.unsupported if key not in missing]
        stale += [ty.name for ty in doc.unsupported_types if not any(ty in types for types in missing.values())]
        assert not stale, f"{name} documents as unsupported what it supports: {stale}"
    finally:
        backend.close()
