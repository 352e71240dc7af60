"""docs/backends.md is generated from every backend's documentation hook (``Backend.documentation()``): it
must be current, and each backend's section must say what the backend itself answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from atlas_web import Backend
from atlas_web.docs_backends import BackendDocumentation, collect_documentation, render_backends_md
from atlas_web.isa import OPCODE_TABLE, Type
from atlas_web.registry import discover_backends, get_backend, load_backend_class

DOC = Path(__file__).resolve().parents[1] / "docs" / "backends.md"


def test_backends_md_is_current():
    assert DOC.read_text() == render_backends_md(), \
        "docs/backends.md is stale: run `python -m atlas_web.docs_backends > docs/backends.md`"


def test_a_backend_that_supports_nothing_gets_no_letter_and_lists_what_it_leaves_out():
    nothing = BackendDocumentation("none", "n", lambda info, ty: False, lambda op, ty: False,
                                   unsupported={"FMA": "no fused multiply-add on this device"})
    text = render_backends_md([nothing])
    rows = [line for line in text.splitlines() if line.startswith("| ") and "instruction" not in line]
    assert len(rows) >= len(OPCODE_TABLE)
    assert all("n" not in cell for row in rows for cell in row.split("|")[2:])
    assert "- FMA: no fused multiply-add on this device" in text


def test_the_default_hook_gives_no_column():
    assert Backend.documentation() is None
    assert [d.name for d in collect_documentation()] == [
        name for name in ("cpu", "wasm", "webgpu") if _loads(name)]


def _loads(name: str) -> bool:
    try:
        load_backend_class(name)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("name", [s.name for s in discover_backends() if s.available])
def test_each_section_agrees_with_its_backend(name):
    """The matrix column and the ulp table of every available backend are what the backend answers."""
    backend = get_backend(name)
    try:
        doc = type(backend).documentation()
        for info in OPCODE_TABLE:
            for ty in sorted(info.types, key=lambda t: t.code) or [None]:
                assert doc.supports(info, ty) == backend.supports_op(info, ty), (name, info.name, ty)
        for (op, ty), ulps in doc.ulps.items():
            if "." not in op:  # instruction rows (cooperative operations are keyed "Instruction.Operation")
                assert backend.ulp_tolerance(op, Type[ty]) >= ulps, (name, op, ty)
    finally:
        backend.close()
