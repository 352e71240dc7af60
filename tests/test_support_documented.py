"""Nothing goes missing silently: every (row, type) of the opcode table, and every cooperative operation, that a
registered backend does not support (neither a lane rule, a cooperative rule nor a default expansion: its
documentation hook answers from its rule tables as its ``supports_op`` does, tests/test_docs_backends.py) is in that
backend's documented-unsupported list (its ``documentation().unsupported`` / ``unsupported_types``, which
docs/backends.md shows), and nothing listed there is in fact supported. Documentation needs no device, so every
registered backend is checked on every machine; one whose class does not load fails here."""

from __future__ import annotations

import pytest

from atlas_web.docs_backends import BackendDocumentation
from atlas_web.isa import OPCODE_TABLE, Type
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES, OPERATION_ENUMS
from atlas_web.registry import load_backend_class, registered_backends


def _sorted(types):
    return sorted(types, key=lambda t: t.code)


def _unsupported(doc: BackendDocumentation, table=OPCODE_TABLE) -> dict[str, set]:
    """operation key -> the types (None: untyped) ``doc``'s backend does not support it for."""
    out: dict[str, set] = {}
    for info in table:
        for ty in _sorted(info.types) or [None]:
            if not doc.supports(info, ty):
                out.setdefault(info.name, set()).add(ty)
    for name, enum in OPERATION_ENUMS.items():
        for operation in enum:
            for ty in _sorted(COOPERATIVE_OPERATION_TYPES[operation]):
                if not doc.supports_operation(operation, ty):
                    out.setdefault(f"{name}.{operation.name}", set()).add(ty)
    return out


def problems(doc: BackendDocumentation, table=OPCODE_TABLE) -> tuple[dict, list]:
    """(row or operation -> types neither supported nor documented, documented entries that are supported)."""
    missing = _unsupported(doc, table)
    undocumented = {key: sorted(str(t) for t in types - set(doc.unsupported_types))
                    for key, types in missing.items() if key not in doc.unsupported}
    stale = [key for key in doc.unsupported if key not in missing]
    stale += [ty.name for ty in doc.unsupported_types if not any(ty in types for types in missing.values())]
    return {k: v for k, v in undocumented.items() if v}, stale


@pytest.mark.parametrize("name", registered_backends())
def test_what_a_backend_does_not_support_is_documented(name):
    doc = load_backend_class(name).documentation()
    assert doc is not None, f"{name} has no documentation hook"
    undocumented, stale = problems(doc)
    assert not undocumented, f"{name} neither supports nor documents these (row or operation -> types): {undocumented}"
    assert not stale, f"{name} documents as unsupported what it supports: {stale}"


def test_a_row_without_a_rule_or_an_entry_is_found_and_an_entry_for_a_supported_row_is_stale():
    fma = next(info for info in OPCODE_TABLE if info.name == "FMA")
    add = next(info for info in OPCODE_TABLE if info.name == "ADD")
    no_f64 = BackendDocumentation("some", "s", lambda info, ty: not (info is fma and ty is Type.F64),
                                  lambda op, ty: True,
                                  unsupported={"ADD": "stale"})
    undocumented, stale = problems(no_f64, (fma, add))
    assert undocumented == {"FMA": ["Type.F64"]} and stale == ["ADD"]
    listed = BackendDocumentation("some", "s", no_f64.supports, no_f64.supports_operation,
                                  unsupported_types={Type.F64: "no f64"})
    assert problems(listed, (fma, add)) == ({}, [])
